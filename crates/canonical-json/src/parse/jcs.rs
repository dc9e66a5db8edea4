//! Text to RFC 8785 bytes in one pass, without building a [`Value`] tree.
//!
//! The pass reuses the parser's scanners and the JCS writer's pieces: a string without escapes
//! is copied as it stands (JCS would write the same bytes), any other string is decoded and
//! written by the writer, numbers are parsed as the parser does and written by the writer, and
//! each object's members are written as they come and reordered afterwards only when their keys
//! were not already in UTF-16 order. A reorder moves the object's bytes once more, so objects
//! out of order inside objects out of order move the same bytes once per level: the moves share
//! one budget (32 times the input), and past it the pass gives up, which keeps the whole of
//! [`crate::canonicalize`] linear in its input (issue 22). It only ever *succeeds*: any refusal, or anything it does
//! not handle (a big integer, a deep document), makes it give up, and [`crate::canonicalize`]
//! then runs [`crate::parse_with`] and [`crate::to_jcs`], which report the exact error.

use std::borrow::Cow;
use std::cmp::Ordering;

pub(crate) mod split;

use super::{Limits, Parser};
use crate::value::{Integer, Number, Value};
use crate::write::{MAX_SAFE_INTEGER, MAX_WRITE_DEPTH, jcs_number, jcs_string, utf16_order};

/// The pass gave up: the slow path will tell why (or that there was nothing wrong).
#[derive(Debug)]
pub(crate) struct GiveUp;

/// Where the pass writes: a growing `Vec`, or a caller's fixed buffer (a large output then
/// lands in memory the caller prepared, huge pages say, instead of a fresh heap block).
pub(crate) trait Out {
    fn len(&self) -> usize;
    fn push(&mut self, byte: u8);
    fn extend(&mut self, bytes: &[u8]);
    fn truncate(&mut self, len: usize);
    /// Appends the bytes written from `start` on to `dst`.
    fn tail_into(&self, start: usize, dst: &mut Vec<u8>);
    /// Writes `input[start..end]`.
    fn copy(&mut self, input: &[u8], start: usize, end: usize) {
        self.extend(input.get(start..end).unwrap_or_default());
    }
    /// At the start of an array element at `pos` (the array at `depth`): the offset where the
    /// pass goes on when the elements from `pos` on were written by another thread (see
    /// `split`), which this output then holds.
    fn adopt(&mut self, _pos: usize, _depth: usize, _max_depth: usize) -> Option<usize> {
        None
    }
    /// Entering an array (at `depth`) whose first element starts at `first`.
    fn enter_array(&mut self, _first: usize, _depth: usize) {}
}

impl Out for Vec<u8> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn push(&mut self, byte: u8) {
        Vec::push(self, byte);
    }
    fn extend(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    fn truncate(&mut self, len: usize) {
        Vec::truncate(self, len);
    }
    fn tail_into(&self, start: usize, dst: &mut Vec<u8>) {
        dst.extend_from_slice(self.get(start..).unwrap_or_default());
    }
}

/// An output borrowed from the caller, who keeps it when the pass gives up (the tests count
/// what was written up to then).
impl<T: Out> Out for &mut T {
    fn len(&self) -> usize {
        T::len(self)
    }
    fn push(&mut self, byte: u8) {
        T::push(self, byte);
    }
    fn extend(&mut self, bytes: &[u8]) {
        T::extend(self, bytes);
    }
    fn truncate(&mut self, len: usize) {
        T::truncate(self, len);
    }
    fn tail_into(&self, start: usize, dst: &mut Vec<u8>) {
        T::tail_into(self, start, dst);
    }
    fn copy(&mut self, input: &[u8], start: usize, end: usize) {
        T::copy(self, input, start, end);
    }
    fn adopt(&mut self, pos: usize, depth: usize, max_depth: usize) -> Option<usize> {
        T::adopt(self, pos, depth, max_depth)
    }
    fn enter_array(&mut self, first: usize, depth: usize) {
        T::enter_array(self, first, depth);
    }
}

/// A caller's buffer, filled from the start. Bytes that do not fit are dropped and `full` is
/// set: the pass then reports [`GiveUp`] and the caller learns the buffer was too small.
pub(crate) struct Fixed<'b> {
    pub(crate) buf: &'b mut [u8],
    pub(crate) len: usize,
    pub(crate) full: bool,
}

impl Out for Fixed<'_> {
    fn len(&self) -> usize {
        self.len
    }
    fn push(&mut self, byte: u8) {
        match self.buf.get_mut(self.len) {
            Some(slot) => {
                *slot = byte;
                self.len += 1;
            }
            None => self.full = true,
        }
    }
    fn extend(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        match self.buf.get_mut(self.len..end) {
            Some(slots) => {
                slots.copy_from_slice(bytes);
                self.len = end;
            }
            None => self.full = true,
        }
    }
    fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
    fn tail_into(&self, start: usize, dst: &mut Vec<u8>) {
        dst.extend_from_slice(self.buf.get(start..self.len).unwrap_or_default());
    }
    /// Short runs (most strings and numbers) are copied as one 16-byte move where both
    /// buffers have room: the bytes past `end` land beyond `len`, where the next write goes.
    fn copy(&mut self, input: &[u8], start: usize, end: usize) {
        if wide_copy(self.buf, &mut self.len, input, start, end) {
            return;
        }
        self.extend(input.get(start..end).unwrap_or_default());
    }
}

/// Copies a short run `input[start..end]` (16 bytes at most) to `buf[*len..]` as one 16-byte
/// move where both slices have room (the bytes past `end` land beyond the new `*len`, where
/// the next write goes); `false` when it did not (the caller copies it the ordinary way).
pub(crate) fn wide_copy(
    buf: &mut [u8],
    len: &mut usize,
    input: &[u8],
    start: usize,
    end: usize,
) -> bool {
    const WIDE: usize = 16;
    if end - start <= WIDE
        && let (Some(from), Some(to)) =
            (input.get(start..start + WIDE), buf.get_mut(*len..*len + WIDE))
    {
        to.copy_from_slice(from);
        *len += end - start;
        return true;
    }
    false
}

impl From<super::ParseError> for GiveUp {
    fn from(_: super::ParseError) -> GiveUp {
        GiveUp
    }
}

/// One member of an object being written: its decoded key and where its `"key":value` bytes
/// sit in the output.
struct Member<'a> {
    key: Cow<'a, str>,
    start: usize,
    end: usize,
}

struct Canon<'a, O> {
    parser: Parser<'a>,
    max_depth: usize,
    out: O,
    /// Members of the objects being written, innermost last.
    members: Vec<Member<'a>>,
    /// Where an object's members are copied while they are put in order.
    scratch: Vec<u8>,
    /// Member indices in key order.
    order: Vec<usize>,
    /// Where a string with escapes or a number is written before it is copied to `out`.
    piece: Vec<u8>,
    /// Bytes reorders may still move: see the module comment.
    reorder_budget: usize,
    /// The deepest container entered (a worker of [`split`] reports it: its depth counts
    /// from the array it starts in).
    deepest: usize,
}

/// The JCS bytes of `input` if it is valid and JCS can write it; `Err(GiveUp)` otherwise.
pub(crate) fn to_jcs_bytes(input: &[u8], limits: Limits) -> Result<Vec<u8>, GiveUp> {
    write_jcs_bytes(input, limits, Vec::with_capacity(input.len()))
}

/// Bytes the reorders of one pass over `input_len` bytes may move before it gives up: 32
/// times the input. Documents written in insertion order are out of order at every level, so
/// each byte moves once per enclosing object: a budget of twice the input sent a 9.7 MB
/// document unsorted five levels deep to the two-step path (48 ms became 230 ms). Real
/// documents nest far less than 32 levels; past that (up to the parser's 512) the pass
/// gives up after moving at most 32 n bytes, still linear.
pub(crate) fn reorder_budget(input_len: usize) -> usize {
    input_len.saturating_mul(32)
}

/// [`to_jcs_bytes`] into `out`.
pub(crate) fn write_jcs_bytes<O: Out>(input: &[u8], limits: Limits, out: O) -> Result<O, GiveUp> {
    if input.len() > limits.max_bytes {
        return Err(GiveUp);
    }
    let text = crate::scan::utf8(input).ok_or(GiveUp)?;
    Canon::new(text, limits, out, reorder_budget(input.len())).document()
}

impl<'a, O: Out> Canon<'a, O> {
    fn new(text: &'a str, limits: Limits, out: O, reorder_budget: usize) -> Canon<'a, O> {
        Canon {
            parser: Parser {
                input: text.as_bytes(),
                text: Some(text),
                pos: 0,
                max_depth: limits.max_depth,
                items: Vec::new(),
            },
            // The writer refuses nesting at MAX_WRITE_DEPTH; stay well inside both limits.
            max_depth: limits.max_depth.min(MAX_WRITE_DEPTH - 1),
            out,
            members: Vec::new(),
            scratch: Vec::new(),
            order: Vec::new(),
            piece: Vec::new(),
            reorder_budget,
            deepest: 0,
        }
    }

    /// The whole input as one document.
    fn document(mut self) -> Result<O, GiveUp> {
        self.parser.skip_ws();
        self.value(0)?;
        self.parser.skip_ws();
        if self.parser.pos != self.parser.input.len() {
            return Err(GiveUp);
        }
        Ok(self.out)
    }

    fn value(&mut self, depth: usize) -> Result<(), GiveUp> {
        match self.parser.peek() {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string_value(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(GiveUp),
        }
    }

    fn literal(&mut self, literal: &[u8]) -> Result<(), GiveUp> {
        let pos = self.parser.pos;
        if self.parser.input.get(pos..pos + literal.len()) != Some(literal) {
            return Err(GiveUp);
        }
        self.parser.pos += literal.len();
        self.out.extend(literal);
        Ok(())
    }

    fn number(&mut self) -> Result<(), GiveUp> {
        let start = self.parser.pos;
        let Value::Number(number) = self.parser.number()? else { return Err(GiveUp) };
        if let Number::Int(Integer::Small(n)) = number
            && n != 0
            && n.unsigned_abs() <= MAX_SAFE_INTEGER.unsigned_abs()
        {
            // A JSON integer has no leading zero, sign `+` or exponent: apart from `-0`, its
            // text is what JCS writes.
            self.out.copy(self.parser.input, start, self.parser.pos);
            return Ok(());
        }
        // Integers beyond ±(2^53 − 1) are a write error: the slow path reports it.
        self.piece.clear();
        jcs_number(&number, &mut self.piece).map_err(|_| GiveUp)?;
        self.out.extend(&self.piece);
        Ok(())
    }

    /// Writes the string at `pos` (a value: its text is not needed).
    fn string_value(&mut self) -> Result<(), GiveUp> {
        let start = self.parser.pos + 1;
        self.parser.pos = start;
        self.parser.skip_plain();
        if self.parser.peek() == Some(b'"') {
            // No escape, and the whole input is valid UTF-8: copy it as it stands.
            self.parser.pos += 1;
            self.out.copy(self.parser.input, start - 1, self.parser.pos);
            return Ok(());
        }
        // Escapes: JCS writes the same text with its own escapes, so the string is rewritten
        // escape by escape instead of decoded and encoded again.
        self.out.push(b'"');
        let mut run = start;
        loop {
            self.out.copy(self.parser.input, run, self.parser.pos);
            match self.parser.peek() {
                Some(b'"') => {
                    self.parser.pos += 1;
                    self.out.push(b'"');
                    return Ok(());
                }
                Some(b'\\') => self.escape()?,
                // A control character or the end of input: the slow path says which.
                _ => return Err(GiveUp),
            }
            run = self.parser.pos;
            self.parser.skip_plain();
        }
    }

    /// Writes the escape at `pos` (a `\`) as JCS writes the character it stands for.
    fn escape(&mut self) -> Result<(), GiveUp> {
        let Some(&b) = self.parser.input.get(self.parser.pos + 1) else { return Err(GiveUp) };
        self.parser.pos += 2;
        let c = match b {
            // Kept as they are: JCS escapes these the same way.
            b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => {
                self.out.extend(&[b'\\', b]);
                return Ok(());
            }
            b'/' => '/',
            b'u' => self.parser.unicode_escape()?,
            _ => return Err(GiveUp),
        };
        if u32::from(c) < 0x20 || c == '"' || c == '\\' {
            let mut utf8 = [0u8; 4];
            self.piece.clear();
            jcs_string(c.encode_utf8(&mut utf8), &mut self.piece);
            // Without the quotes `jcs_string` puts around it.
            let escaped = self.piece.get(1..self.piece.len() - 1).ok_or(GiveUp)?;
            self.out.extend(escaped);
        } else {
            self.out.extend(c.encode_utf8(&mut [0u8; 4]).as_bytes());
        }
        Ok(())
    }

    /// Writes the string at `pos` and returns its decoded text (a key).
    fn string(&mut self) -> Result<Cow<'a, str>, GiveUp> {
        let start = self.parser.pos + 1;
        self.parser.pos = start;
        self.parser.skip_plain();
        if self.parser.peek() == Some(b'"') {
            // No escape: the text is a slice of the input, and JCS writes it unchanged.
            let run = self.parser.plain_run(start)?;
            self.parser.pos += 1;
            self.out.copy(self.parser.input, start - 1, self.parser.pos);
            return Ok(Cow::Borrowed(run));
        }
        self.parser.pos = start - 1;
        let text = self.parser.string()?;
        self.piece.clear();
        jcs_string(&text, &mut self.piece);
        self.out.extend(&self.piece);
        Ok(Cow::Owned(text))
    }

    fn array(&mut self, depth: usize) -> Result<(), GiveUp> {
        if depth > self.max_depth {
            return Err(GiveUp);
        }
        self.deepest = self.deepest.max(depth);
        self.parser.pos += 1;
        self.out.push(b'[');
        self.parser.skip_ws();
        if self.parser.peek() == Some(b']') {
            self.parser.pos += 1;
            self.out.push(b']');
            return Ok(());
        }
        self.out.enter_array(self.parser.pos, depth);
        loop {
            self.parser.skip_ws();
            // Elements another thread wrote from here (see `split`): the pass goes on after
            // them, at the array's `]` or at the start of an element after a comma.
            let mut adopted = false;
            while let Some(end) = self.out.adopt(self.parser.pos, depth, self.max_depth) {
                self.parser.pos = end;
                adopted = true;
            }
            if !(adopted && self.parser.peek() == Some(b']')) {
                self.value(depth)?;
                self.parser.skip_ws();
            }
            match self.parser.peek() {
                Some(b',') => {
                    self.parser.pos += 1;
                    self.out.push(b',');
                }
                Some(b']') => {
                    self.parser.pos += 1;
                    self.out.push(b']');
                    return Ok(());
                }
                _ => return Err(GiveUp),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<(), GiveUp> {
        if depth > self.max_depth {
            return Err(GiveUp);
        }
        self.deepest = self.deepest.max(depth);
        self.parser.pos += 1;
        self.out.push(b'{');
        self.parser.skip_ws();
        if self.parser.peek() == Some(b'}') {
            self.parser.pos += 1;
            self.out.push(b'}');
            return Ok(());
        }
        let first = self.members.len();
        // Written as they come, separated by commas: `{m1,m2,...`.
        let mut in_order = true;
        loop {
            self.parser.skip_ws();
            if self.parser.peek() != Some(b'"') {
                return Err(GiveUp);
            }
            let start = self.out.len();
            let key = self.string()?;
            self.parser.skip_ws();
            if self.parser.peek() != Some(b':') {
                return Err(GiveUp);
            }
            self.parser.pos += 1;
            self.out.push(b':');
            self.parser.skip_ws();
            self.value(depth)?;
            if let Some(last) = self.members[first..].last() {
                match utf16_order(&last.key, &key) {
                    Ordering::Less => {}
                    // A duplicate key: the parser reports it.
                    Ordering::Equal => return Err(GiveUp),
                    Ordering::Greater => in_order = false,
                }
            }
            self.members.push(Member { key, start, end: self.out.len() });
            self.parser.skip_ws();
            match self.parser.peek() {
                Some(b',') => {
                    self.parser.pos += 1;
                    self.out.push(b',');
                }
                Some(b'}') => {
                    self.parser.pos += 1;
                    break;
                }
                _ => return Err(GiveUp),
            }
        }
        if !in_order {
            self.reorder(first)?;
        }
        self.members.truncate(first);
        self.out.push(b'}');
        Ok(())
    }

    /// Rewrites the members `self.members[first..]` (the last bytes of the output) in key
    /// order, refusing duplicate keys.
    fn reorder(&mut self, first: usize) -> Result<(), GiveUp> {
        let members = &self.members[first..];
        let Some(begin) = members.first().map(|m| m.start) else { return Ok(()) };
        self.order.clear();
        self.order.extend(0..members.len());
        self.order.sort_by(|&a, &b| utf16_order(&members[a].key, &members[b].key));
        if self.order.windows(2).any(|w| members[w[0]].key == members[w[1]].key) {
            return Err(GiveUp);
        }
        let moved = self.out.len() - begin;
        self.reorder_budget = self.reorder_budget.checked_sub(moved).ok_or(GiveUp)?;
        self.scratch.clear();
        self.out.tail_into(begin, &mut self.scratch);
        self.out.truncate(begin);
        for (i, &m) in self.order.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            let member = &members[m];
            let bytes = self.scratch.get(member.start - begin..member.end - begin);
            self.out.extend(bytes.ok_or(GiveUp)?);
        }
        Ok(())
    }
}
