//! The one-pass canonicalizer on several threads, for one large document.
//!
//! A large document is nearly always one long array somewhere (a recipe's nodes, a catalog's
//! entries), and the elements of an array are written independently of each other. So the
//! input is cut at `jobs - 1` guesses: when the main pass enters an array near the top whose
//! first element is an object, the first place after `i/jobs` of the way through where a `,`
//! is followed by that element's opening up to its first key (`{"id"`, say) *may* start an
//! element of the same array. A worker thread writes the elements
//! from its guess on, as if it were one (into its own part of the caller's buffer), until the
//! array's `]` or until it reaches the next guess at an element start of its own array. The
//! main thread runs the ordinary pass from the start; whenever it stands at the start of an
//! array element exactly where a guess was made, that guess was right (the text from there on
//! is elements of this very array, whatever the worker believed), so it takes the worker's
//! bytes as they are and goes on after them. A wrong guess (inside a string, inside an object,
//! past the array) is never adopted: the main pass walks over it and writes those bytes
//! itself, in the buffer part the worker had. Nothing about correctness rests on a guess.
//!
//! Output parts stay where they were written: the result is a list of ranges of the caller's
//! buffer, in order (written out with one `write` each, never copied together). An object whose
//! members span parts is reordered across them.
//!
//! Work: each thread's pass is linear in what it reads and its reorders share a budget of 32
//! times its part, so the whole is at most `jobs` linear passes; looking for guesses reads at
//! most the input's length in all, however many arrays are tried; the wall time is about one
//! part when the guesses hold.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{Scope, ScopedJoinHandle};

use super::{Canon, Fixed, GiveUp, Out, reorder_budget, wide_copy};
use crate::parse::Limits;

/// Documents below this size run on one thread (a thread costs more than it saves).
pub(crate) const MIN_SPLIT_BYTES: usize = 1 << 20;

/// How far past its mark a guess is looked for.
const SEARCH_BYTES: usize = 1 << 22;

/// Arrays tried for a split, and how deep they may sit (a long array is near the top).
const SPLIT_TRIES: usize = 8;
const MAX_SPLIT_DEPTH: usize = 4;

/// The longest first key a signature holds.
const MAX_SIGNATURE: usize = 64;

/// What a worker wrote: its bytes fill the start of its part.
#[derive(Clone, Copy, Debug)]
struct Done {
    /// Where the main pass goes on: the array's `]`, or the next guess (an element start).
    stop: usize,
    /// Bytes written.
    len: usize,
    /// The deepest container it entered, counted from its array.
    deepest: usize,
}

type Worker<'b, 's> = ScopedJoinHandle<'s, (&'b mut [u8], Result<Done, GiveUp>)>;

/// A worker still to be met, at its guess `at` (where its part of the buffer starts too).
struct Pending<'b, 's> {
    at: usize,
    worker: Worker<'b, 's>,
}

/// One part of the caller's buffer: `buf` starts at offset `at` of it.
struct Segment<'b> {
    at: usize,
    buf: &'b mut [u8],
    used: usize,
}

/// The main pass's output: the parts it holds so far (its own first, then each worker's in
/// order, adopted or taken over). It writes into `cur`, held apart so that writing costs what
/// [`Fixed`] costs; `done` are the parts before it, `later` parts after it that a reorder
/// emptied (they are filled again before any worker's part is taken).
struct Segmented<'b, 's, 'e> {
    done: Vec<Segment<'b>>,
    cur: Segment<'b>,
    later: VecDeque<Segment<'b>>,
    /// Bytes in `done`.
    before: usize,
    full: bool,
    pending: VecDeque<Pending<'b, 's>>,
    /// Until the workers start: what starting them takes.
    spawner: Option<Spawner<'s, 'e>>,
}

/// The workers not yet started: they start at the first array that looks long (see
/// [`Segmented::enter_array`]).
struct Spawner<'s, 'e> {
    scope: &'s Scope<'s, 'e>,
    text: &'s str,
    limits: Limits,
    jobs: usize,
    cancel: &'s AtomicBool,
    /// Arrays still to try.
    tries: usize,
    /// Bytes the search for guesses may still read.
    search: usize,
}

impl<'b> Segmented<'b, '_, '_> {
    /// Moves writing to the next part: an emptied later one, or the next worker's (whose
    /// bytes are dropped: the main pass is past its guess or short of room). `false` when
    /// there is none left.
    fn advance(&mut self) -> bool {
        if self.later.is_empty() && self.take_next(None).is_none() {
            return false;
        }
        let Some(next) = self.later.pop_front() else { return false };
        let old = std::mem::replace(&mut self.cur, next);
        self.before += old.used;
        self.done.push(old);
        true
    }

    /// Joins the next worker and puts its part after every part there is (those after the
    /// current one are empty): with its bytes when the pass stands at its guess, at an element
    /// start of an array at `depth`, and its run fits under `max_depth` from there (then the
    /// part becomes the current one and `Some(Some(stop))` says where the pass goes on), else
    /// empty, in `later` (`Some(None)`). `None` when there was no worker left, or it could not
    /// be joined (its part is then lost, and the output is full).
    fn take_next(&mut self, adopt: Option<(usize, usize, usize)>) -> Option<Option<usize>> {
        let next = self.pending.pop_front()?;
        let Ok((buf, done)) = next.worker.join() else {
            self.full = true;
            return None;
        };
        let adopted = match (adopt, done) {
            (Some((pos, depth, max_depth)), Ok(done))
                if pos == next.at && depth + done.deepest <= max_depth =>
            {
                Some(done)
            }
            _ => None,
        };
        let Some(done) = adopted else {
            self.later.push_back(Segment { at: next.at, buf, used: 0 });
            return Some(None);
        };
        // Writing goes on at the end of the adopted bytes.
        let old = std::mem::replace(&mut self.cur, Segment { at: next.at, buf, used: done.len });
        self.before += old.used;
        self.done.push(old);
        self.done.extend(self.later.drain(..));
        Some(Some(done.stop))
    }

    /// The ranges of the caller's buffer that hold the output, in order.
    fn ranges(&self) -> Vec<Range<usize>> {
        self.done
            .iter()
            .chain(std::iter::once(&self.cur))
            .filter(|s| s.used > 0)
            .map(|s| s.at..s.at + s.used)
            .collect()
    }
}

impl<'b: 's, 's> Out for Segmented<'b, 's, '_> {
    fn len(&self) -> usize {
        self.before + self.cur.used
    }

    fn push(&mut self, byte: u8) {
        match self.cur.buf.get_mut(self.cur.used) {
            Some(slot) => {
                *slot = byte;
                self.cur.used += 1;
            }
            None => self.extend(&[byte]),
        }
    }

    /// As [`Fixed`]: a short run is one 16-byte move where both buffers have room.
    fn copy(&mut self, input: &[u8], start: usize, end: usize) {
        if wide_copy(self.cur.buf, &mut self.cur.used, input, start, end) {
            return;
        }
        self.extend(input.get(start..end).unwrap_or_default());
    }

    fn extend(&mut self, mut bytes: &[u8]) {
        loop {
            let used = self.cur.used;
            let n = (self.cur.buf.len() - used).min(bytes.len());
            if let (Some(to), Some(from)) = (self.cur.buf.get_mut(used..used + n), bytes.get(..n)) {
                to.copy_from_slice(from);
                self.cur.used += n;
            }
            bytes = bytes.get(n..).unwrap_or_default();
            if bytes.is_empty() {
                return;
            }
            if !self.advance() {
                self.full = true;
                return;
            }
        }
    }

    fn truncate(&mut self, len: usize) {
        // Back to the part that holds offset `len`; every part after it is emptied.
        while len < self.before {
            let Some(prev) = self.done.pop() else { break };
            self.before -= prev.used;
            let mut emptied = std::mem::replace(&mut self.cur, prev);
            emptied.used = 0;
            self.later.push_front(emptied);
        }
        self.cur.used = self.cur.used.min(len.saturating_sub(self.before));
    }

    fn tail_into(&self, start: usize, dst: &mut Vec<u8>) {
        let mut at = 0;
        for seg in self.done.iter().chain(std::iter::once(&self.cur)) {
            let from = start.saturating_sub(at).min(seg.used);
            dst.extend_from_slice(seg.buf.get(from..seg.used).unwrap_or_default());
            at += seg.used;
        }
    }

    /// The workers start at the first array (of the first few near the top) whose first
    /// element gives guesses near their marks (see [`guesses`]).
    fn enter_array(&mut self, first: usize, depth: usize) {
        if depth > MAX_SPLIT_DEPTH || !self.done.is_empty() || !self.later.is_empty() {
            return;
        }
        let Some(spawner) = self.spawner.as_mut() else { return };
        spawner.tries = spawner.tries.saturating_sub(1);
        let guesses = guesses(spawner.text.as_bytes(), spawner.jobs, first, &mut spawner.search);
        // The main pass's part ends at the first guess: what it wrote so far must fit in it.
        if guesses.first().is_none_or(|&g| g < self.cur.used) {
            if spawner.tries == 0 {
                self.spawner = None;
            }
            return;
        }
        let Some(spawner) = self.spawner.take() else { return };
        let mut rest = std::mem::take(&mut self.cur.buf);
        let mut prev = 0;
        let mut parts = Vec::with_capacity(guesses.len() + 1);
        for &at in &guesses {
            let (part, tail) = rest.split_at_mut(at - prev);
            parts.push(part);
            rest = tail;
            prev = at;
        }
        parts.push(rest);
        let mut parts = parts.into_iter();
        self.cur.buf = parts.next().unwrap_or_default();
        for (i, (part, &at)) in parts.zip(&guesses).enumerate() {
            let stop_at = guesses.get(i + 1).copied().unwrap_or(usize::MAX);
            // A thread the system refuses costs its part of the buffer, nothing else: the
            // output only needs less room than the input, and the fallback path has all it needs.
            if let Some(worker) = spawn(&spawner, part, at, stop_at) {
                self.pending.push_back(Pending { at, worker });
            }
        }
    }

    fn adopt(&mut self, pos: usize, depth: usize, max_depth: usize) -> Option<usize> {
        loop {
            if self.pending.front()?.at > pos {
                return None;
            }
            // The pass is at or past the guess: the worker is joined either way.
            if let Some(stop) = self.take_next(Some((pos, depth, max_depth)))? {
                return Some(stop);
            }
        }
    }
}

/// Where the workers start, for an array whose first element starts at `first`: for each `i`
/// in `1..jobs`, from `i/jobs` of the way on, the first place where an element starts as that
/// one does: a `,`, whitespace, and the same opening up to the end of its first key (`{"id"`,
/// say, whitespace included; an element that is not an object with a plain first key gives no
/// guesses). Strictly increasing; none too far from its mark.
fn guesses(input: &[u8], jobs: usize, first: usize, budget: &mut usize) -> Vec<usize> {
    let Some(signature) = signature(input, first) else { return Vec::new() };
    let share = input.len() / jobs;
    let mut found: Vec<usize> = Vec::new();
    for i in 1..jobs {
        let mark = share * i;
        let from = found.last().map_or(mark, |&last| mark.max(last + 1)).max(first + 1);
        // Within its own share (a guess past the next mark is worth nothing), and within what
        // the search may still read.
        let window = SEARCH_BYTES.min(share).min(*budget);
        *budget -= window;
        let end = input.len().min(from.saturating_add(window));
        let mut at = from;
        while let Some(comma) = input.get(at..end).and_then(|w| w.iter().position(|&b| b == b',')) {
            at += comma + 1;
            let element = at
                + input.get(at..end).map_or(0, |rest| {
                    rest.iter().take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')).count()
                });
            if input.get(element..element + signature.len()) == Some(signature) {
                found.push(element);
                break;
            }
        }
    }
    found
}

/// `{`, whitespace and the first key (with its quotes) of the object at `first`: what the
/// elements of a long array of like objects all start with.
fn signature(input: &[u8], first: usize) -> Option<&[u8]> {
    if input.get(first) != Some(&b'{') {
        return None;
    }
    let key = first
        + 1
        + input
            .get(first + 1..)?
            .iter()
            .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))?;
    if input.get(key) != Some(&b'"') {
        return None;
    }
    let close = key
        + 1
        + input
            .get(key + 1..key + 1 + MAX_SIGNATURE)?
            .iter()
            .position(|&b| b == b'"' || b == b'\\')?;
    (input.get(close) == Some(&b'"')).then(|| input.get(first..=close)).flatten()
}

/// A worker's run: the elements of an array from `start` (an element start) until its `]` or
/// until the element start `stop_at`, written into `out`.
fn elements(
    text: &str,
    limits: Limits,
    start: usize,
    stop_at: usize,
    out: &mut Fixed<'_>,
    cancel: &AtomicBool,
) -> Result<Done, GiveUp> {
    // Its reorders may move 32 times its part (the part is what its bytes fit in).
    let budget = reorder_budget(out.buf.len());
    let mut canon = Canon::new(text, limits, &mut *out, budget);
    canon.parser.pos = start;
    let stop = loop {
        if cancel.load(Ordering::Relaxed) {
            return Err(GiveUp);
        }
        canon.value(0)?;
        canon.parser.skip_ws();
        match canon.parser.peek() {
            Some(b',') => {
                canon.parser.pos += 1;
                canon.out.push(b',');
                canon.parser.skip_ws();
                if canon.parser.pos == stop_at {
                    break stop_at;
                }
            }
            Some(b']') => break canon.parser.pos,
            _ => return Err(GiveUp),
        }
    };
    let deepest = canon.deepest;
    drop(canon);
    if out.full {
        return Err(GiveUp);
    }
    Ok(Done { stop, len: out.len, deepest })
}

/// The canonical bytes of `text` written into `out` by `jobs` threads: the ranges of `out`
/// that hold them, in order; `Ok(None)` when they do not fit; `Err(GiveUp)` as the one-thread
/// pass. `out` must be at least as long as `text`.
/// Documents shorter than `min_bytes` run on one thread.
pub(crate) fn write(
    text: &str,
    limits: Limits,
    out: &mut [u8],
    jobs: usize,
    min_bytes: usize,
) -> Result<Option<Vec<Range<usize>>>, GiveUp> {
    let input = text.as_bytes();
    let split = jobs > 1 && input.len() >= min_bytes && out.len() >= input.len();
    let cancel = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let out = Segmented {
            done: Vec::new(),
            cur: Segment { at: 0, buf: out, used: 0 },
            later: VecDeque::new(),
            before: 0,
            full: false,
            pending: VecDeque::new(),
            spawner: split.then_some(Spawner {
                scope,
                text,
                limits,
                jobs,
                cancel: &cancel,
                tries: SPLIT_TRIES,
                search: input.len(),
            }),
        };
        let written = Canon::new(text, limits, out, reorder_budget(input.len())).document();
        // Workers still running have nothing more to give.
        cancel.store(true, Ordering::Relaxed);
        let out = written?;
        Ok((!out.full).then(|| out.ranges()))
    })
}

/// A worker for `part` (`None` when the system refuses a thread).
fn spawn<'b, 's>(
    spawner: &Spawner<'s, '_>,
    part: &'b mut [u8],
    at: usize,
    stop_at: usize,
) -> Option<Worker<'b, 's>>
where
    'b: 's,
{
    let (text, limits, cancel) = (spawner.text, spawner.limits, spawner.cancel);
    let builder = std::thread::Builder::new().name("canon-split".to_owned());
    let worker = builder.spawn_scoped(spawner.scope, move || {
        let mut fixed = Fixed { buf: &mut *part, len: 0, full: false };
        let done = elements(text, limits, at, stop_at, &mut fixed, cancel);
        (part, done)
    });
    worker.ok()
}

#[cfg(test)]
mod tests;
