//! Checking a document without building it, keeping the raw text of a few top-level members.
//!
//! A journal reader that needs three fields of a 300-byte event still has to know the whole
//! line is strict JSON (a line that is not ends the journal's good prefix). [`skim`] walks the
//! text with the parser's own scanners (strings, escapes, numbers, literals, depth) but builds
//! nothing: no string is copied, no map is filled. Duplicate keys are found by comparing the raw
//! key bytes of each object (decoded only when a key holds an escape). It accepts exactly what
//! [`parse_with`] accepts; on refusal it runs [`parse_with`] so the error (kind and offset) is
//! the parser's, byte for byte.

use std::borrow::Cow;
use std::collections::HashSet;

use super::{Limits, ParseError, ParseErrorKind, Parser, parse_with};
use crate::value::Value;

thread_local! {
    static KEYS: std::cell::RefCell<Vec<Key>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Slots of a [`Wanted`] table (a power of two, at least twice the names it holds).
const SLOTS: usize = 128;

/// The top-level member names a [`skim`] keeps, prepared once: a small open-addressing table
/// keyed by each name's first bytes and length, so a member that is not wanted costs one probe.
#[derive(Clone, Debug)]
pub struct Wanted {
    names: Vec<String>,
    /// `index + 1` of the name in each slot (0: empty).
    slots: Vec<u8>,
}

impl Wanted {
    /// Prepares `names` (at most 63; later ones are ignored, and so is a repeated name).
    pub fn new(names: &[&str]) -> Wanted {
        let mut wanted = Wanted { names: Vec::new(), slots: vec![0; SLOTS] };
        for name in names.iter().take(SLOTS / 2 - 1) {
            if wanted.index(name.as_bytes()).is_some() {
                continue;
            }
            let mut slot = slot_of(tag_of(name.as_bytes()));
            while wanted.slots[slot] != 0 {
                slot = (slot + 1) % SLOTS;
            }
            wanted.names.push((*name).to_owned());
            wanted.slots[slot] = u8::try_from(wanted.names.len()).unwrap_or(0);
        }
        wanted
    }

    /// The names, in the order `found` follows.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Where `key` (decoded) sits in [`Wanted::names`].
    fn index(&self, key: &[u8]) -> Option<usize> {
        let mut slot = slot_of(tag_of(key));
        loop {
            let at = usize::from(*self.slots.get(slot)?);
            if at == 0 {
                return None;
            }
            if self.names.get(at - 1).is_some_and(|n| n.as_bytes() == key) {
                return Some(at - 1);
            }
            slot = (slot + 1) % SLOTS;
        }
    }
}

fn slot_of((word, len): (u64, usize)) -> usize {
    let mixed = (word ^ (len as u64).rotate_left(56)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    usize::try_from(mixed >> 57).unwrap_or(0) % SLOTS
}

/// Objects with more members than this check repeats with a set.
const MANY_KEYS: usize = 32;

/// One object key as it sits in the input: the bytes between its quotes.
#[derive(Clone, Copy)]
struct Key {
    start: usize,
    end: usize,
    escaped: bool,
    /// The first eight bytes and the length: most unequal keys differ here.
    tag: (u64, usize),
}

/// The first (up to) eight bytes of `raw` as a big-endian word (zero-padded), and its length:
/// comparing words compares the keys' first eight bytes in byte order.
fn tag_of(raw: &[u8]) -> (u64, usize) {
    let word = match raw.first_chunk::<8>() {
        Some(first) => *first,
        None => {
            let mut word = [0u8; 8];
            word.iter_mut().zip(raw).for_each(|(w, b)| *w = *b);
            word
        }
    };
    (u64::from_be_bytes(word), raw.len())
}

struct Skimmer<'a, 'w> {
    parser: Parser<'a>,
    /// Keys of the objects being walked, innermost last.
    keys: Vec<Key>,
    /// Where a decoded escape goes (and is forgotten).
    scratch: String,
    /// The top-level member names wanted, and where their values were found.
    wanted: &'w Wanted,
    found: &'w mut [Option<&'a [u8]>],
}

/// Checks that `input` is one strict JSON document (what [`parse_with`] accepts, under the
/// same `limits`) and, when it is an object, sets `found[i]` to the raw text of the value of
/// its member named `wanted.names()[i]` (`None` when absent). Nothing else is built.
///
/// # Errors
/// Exactly the error [`parse_with`] reports for `input`.
///
/// # Panics
/// Never; `found` shorter than `wanted` leaves the extra names unrecorded.
pub fn skim<'a>(
    input: &'a [u8],
    limits: Limits,
    wanted: &Wanted,
    found: &mut [Option<&'a [u8]>],
) -> Result<(), ParseError> {
    match crate::scan::utf8(input) {
        Some(text) => skim_text(text, limits, wanted, found),
        None => {
            found.iter_mut().for_each(|f| *f = None);
            // The parser reports the first error in document order (perhaps before the bytes).
            parse_with(input, limits).map(drop)
        }
    }
}

/// [`skim`] for text already known to be UTF-8 (a journal line its reader has checked).
///
/// # Errors
/// Exactly the error [`parse_with`] reports for `input`.
pub fn skim_text<'a>(
    input: &'a str,
    limits: Limits,
    wanted: &Wanted,
    found: &mut [Option<&'a [u8]>],
) -> Result<(), ParseError> {
    walk(input, limits, wanted, found, false).map(drop)
}

/// [`skim_text`] of the one value at the start of `input` (after any whitespace), what
/// [`super::parse_prefix_text`] would read: returns the offset just past it and leaves what
/// follows alone (a member of a batch line, say).
///
/// # Errors
/// Exactly the error [`super::parse_prefix_text`] reports for `input`.
pub fn skim_prefix_text<'a>(
    input: &'a str,
    limits: Limits,
    wanted: &Wanted,
    found: &mut [Option<&'a [u8]>],
) -> Result<usize, ParseError> {
    walk(input, limits, wanted, found, true)
}

fn walk<'a>(
    input: &'a str,
    limits: Limits,
    wanted: &Wanted,
    found: &mut [Option<&'a [u8]>],
    prefix: bool,
) -> Result<usize, ParseError> {
    found.iter_mut().for_each(|f| *f = None);
    let bytes = input.as_bytes();
    if bytes.len() > limits.max_bytes {
        return Err(ParseError { kind: ParseErrorKind::TooLarge(limits.max_bytes), offset: 0 });
    }
    let mut skimmer = Skimmer {
        parser: Parser {
            input: bytes,
            text: Some(input),
            pos: 0,
            max_depth: limits.max_depth,
            items: Vec::new(),
        },
        // One key buffer per thread, reused by every call (a journal read skims each line).
        keys: KEYS.with(|keys| keys.take()),
        scratch: String::new(),
        wanted,
        found,
    };
    let walked = skimmer.document(prefix);
    let mut keys = std::mem::take(&mut skimmer.keys);
    keys.clear();
    KEYS.with(|cell| cell.replace(keys));
    let walked = match walked {
        Ok(()) => return Ok(skimmer.parser.pos),
        Err(e) => e,
    };
    skimmer.found.iter_mut().for_each(|f| *f = None);
    // The parser names the refusal (kind and offset); it refuses whatever the walk refused.
    let parsed = match prefix {
        true => super::parse_prefix_text(input, limits).map(drop),
        false => parse_with(bytes, limits).map(drop),
    };
    match parsed {
        Err(e) => Err(e),
        Ok(()) => Err(walked),
    }
}

impl<'a> Skimmer<'a, '_> {
    fn document(&mut self, prefix: bool) -> Result<(), ParseError> {
        self.parser.skip_ws();
        if self.parser.peek() == Some(b'{') {
            self.object(1, true)?;
        } else {
            self.value(0)?;
        }
        if prefix {
            return Ok(());
        }
        self.parser.skip_ws();
        if self.parser.pos != self.parser.input.len() {
            return Err(self.parser.error(ParseErrorKind::TrailingData));
        }
        Ok(())
    }

    fn value(&mut self, depth: usize) -> Result<(), ParseError> {
        let p = &mut self.parser;
        match p.peek() {
            None => Err(p.error(ParseErrorKind::UnexpectedEnd)),
            Some(b'{') => self.object(depth + 1, false),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(drop),
            Some(b't') => p.expect_literal(b"true", Value::Null).map(drop),
            Some(b'f') => p.expect_literal(b"false", Value::Null).map(drop),
            Some(b'n') => p.expect_literal(b"null", Value::Null).map(drop),
            Some(b'-' | b'0'..=b'9') => p.number().map(drop),
            Some(_) => Err(p.unexpected()),
        }
    }

    /// Walks a string (the parser sits on its opening quote); true when it holds an escape.
    fn string(&mut self) -> Result<bool, ParseError> {
        let p = &mut self.parser;
        p.pos += 1;
        let mut escaped = false;
        loop {
            p.skip_plain();
            match p.peek() {
                None => return Err(p.error(ParseErrorKind::UnexpectedEnd)),
                Some(b'"') => {
                    p.pos += 1;
                    return Ok(escaped);
                }
                Some(b'\\') => {
                    p.pos += 1;
                    escaped = true;
                    self.scratch.clear();
                    p.escape(&mut self.scratch)?;
                }
                Some(_) => return Err(p.error(ParseErrorKind::ControlCharacter)),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<(), ParseError> {
        self.parser.check_depth(depth)?;
        self.parser.pos += 1;
        self.parser.skip_ws();
        if self.parser.peek() == Some(b']') {
            self.parser.pos += 1;
            return Ok(());
        }
        loop {
            self.parser.skip_ws();
            self.value(depth)?;
            self.parser.skip_ws();
            match self.parser.peek() {
                Some(b',') => self.parser.pos += 1,
                Some(b']') => {
                    self.parser.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.parser.unexpected()),
            }
        }
    }

    fn object(&mut self, depth: usize, top: bool) -> Result<(), ParseError> {
        self.parser.check_depth(depth)?;
        self.parser.pos += 1;
        self.parser.skip_ws();
        if self.parser.peek() == Some(b'}') {
            self.parser.pos += 1;
            return Ok(());
        }
        let base = self.keys.len();
        let walked = self.members(depth, top, base);
        self.keys.truncate(base);
        walked
    }

    fn members(&mut self, depth: usize, top: bool, base: usize) -> Result<(), ParseError> {
        // Past a few dozen members, a set finds repeats (a pairwise check would be quadratic).
        let mut many: Option<HashSet<Cow<'a, str>>> = None;
        // While plain keys come in strictly increasing byte order (sorted writers: Python's
        // `sort_keys`, JCS), none can repeat an earlier one: comparing with the previous key
        // is the whole check.
        let mut sorted = true;
        loop {
            self.parser.skip_ws();
            if self.parser.peek() != Some(b'"') {
                return Err(self.parser.unexpected());
            }
            let start = self.parser.pos + 1;
            let escaped = self.string()?;
            let end = self.parser.pos - 1;
            let tag = tag_of(&self.parser.input[start..end]);
            let key = Key { start, end, escaped, tag };
            self.parser.skip_ws();
            if self.parser.peek() != Some(b':') {
                return Err(self.parser.unexpected());
            }
            self.parser.pos += 1;
            self.parser.skip_ws();
            let value_start = self.parser.pos;
            self.value(depth)?;
            if sorted {
                sorted = !key.escaped
                    && self.keys[base..].last().is_none_or(|prev| self.before(*prev, key));
            }
            let repeated = match many.as_mut() {
                _ if sorted => false,
                Some(set) => !set.insert(self.key_text(key)),
                None => self.duplicate(base, key),
            };
            if repeated {
                return Err(self.parser.error(ParseErrorKind::DuplicateKey(String::new())));
            }
            if many.is_none() && self.keys.len() - base >= MANY_KEYS {
                let set = self.keys[base..].iter().map(|&k| self.key_text(k)).collect();
                many = Some(set);
            }
            self.keys.push(key);
            if top {
                self.record(key, value_start);
            }
            self.parser.skip_ws();
            match self.parser.peek() {
                Some(b',') => self.parser.pos += 1,
                Some(b'}') => {
                    self.parser.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.parser.unexpected()),
            }
        }
    }

    /// The decoded text of a key (a slice of the input unless it holds an escape).
    fn key_text(&self, key: Key) -> Cow<'a, str> {
        let input: &'a [u8] = self.parser.input;
        if !key.escaped {
            // The walk only runs on valid UTF-8, and a key's quotes are character boundaries.
            let text = self.parser.text.and_then(|t| t.get(key.start..key.end));
            return Cow::Borrowed(text.unwrap_or_default());
        }
        match parse_with(&input[key.start - 1..key.end + 1], Limits::default()) {
            Ok(Value::String(text)) => Cow::Owned(text),
            _ => Cow::Owned(String::new()),
        }
    }

    /// True when plain `prev` sorts strictly before plain `key` (byte order).
    fn before(&self, prev: Key, key: Key) -> bool {
        if prev.escaped {
            return false;
        }
        match prev.tag.0.cmp(&key.tag.0) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => {
                let input = self.parser.input;
                input[prev.start..prev.end] < input[key.start..key.end]
            }
        }
    }

    /// True when `key` repeats a key already seen in the object whose keys start at `base`.
    fn duplicate(&self, base: usize, key: Key) -> bool {
        let input = self.parser.input;
        let raw = &input[key.start..key.end];
        let seen = &self.keys[base..];
        if !key.escaped && seen.iter().all(|k| !k.escaped) {
            return seen.iter().any(|k| k.tag == key.tag && &input[k.start..k.end] == raw);
        }
        let text = self.key_text(key);
        seen.iter().any(|&k| self.key_text(k) == text)
    }

    fn record(&mut self, key: Key, value_start: usize) {
        let input: &'a [u8] = self.parser.input;
        let at = if key.escaped {
            self.wanted.index(self.key_text(key).as_bytes())
        } else {
            self.wanted.index(&input[key.start..key.end])
        };
        if let Some(slot) = at.and_then(|i| self.found.get_mut(i)) {
            *slot = Some(&input[value_start..self.parser.pos]);
        }
    }
}
