//! A strict JSON parser (RFC 8259 plus the I-JSON rules both standards need).

use std::collections::btree_map::Entry;
use std::fmt;

use crate::scan::{STRING_STOP, stop_mask};
use crate::value::{Finite, Integer, Map, Number, Value};
use crate::write::{WriteError, to_jcs};

pub(crate) mod jcs;
mod skim;

pub use skim::{Wanted, skim, skim_prefix_text, skim_text};

/// Limits applied while parsing untrusted input.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Maximum nesting of arrays and objects. Documents from the upstream tools nest up to
    /// 128 levels; the default allows 512.
    pub max_depth: usize,
    /// Maximum input size in bytes.
    pub max_bytes: usize,
}

/// Default maximum nesting depth.
pub const DEFAULT_MAX_DEPTH: usize = 512;
/// Default maximum input size (64 MiB).
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_depth: DEFAULT_MAX_DEPTH, max_bytes: DEFAULT_MAX_BYTES }
    }
}

/// Why a document was rejected, and where (byte offset into the input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// What went wrong.
    pub kind: ParseErrorKind,
    /// Byte offset of the offending input.
    pub offset: usize,
}

/// The kinds of parse failure.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The input ended inside a value.
    UnexpectedEnd,
    /// A byte that cannot start or continue the current construct.
    UnexpectedByte(u8),
    /// Non-whitespace after the top-level value.
    TrailingData,
    /// An object repeats a key (JCS and I-JSON forbid this; serde_json would keep the last one).
    DuplicateKey(String),
    /// A `\u` escape that leaves a lone UTF-16 surrogate.
    LoneSurrogate,
    /// A malformed escape sequence.
    InvalidEscape,
    /// A raw control character (below U+0020) inside a string.
    ControlCharacter,
    /// Bytes that are not UTF-8.
    InvalidUtf8,
    /// A malformed number (leading zeros, missing digits, ...).
    InvalidNumber,
    /// A number too large for a double (NaN and Infinity are not JSON either).
    NumberOutOfRange,
    /// Nesting deeper than the limit.
    TooDeep(usize),
    /// Input larger than the limit.
    TooLarge(usize),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ParseErrorKind::UnexpectedEnd => write!(f, "unexpected end of input")?,
            ParseErrorKind::UnexpectedByte(b) if b.is_ascii_graphic() => {
                write!(f, "unexpected character '{}'", *b as char)?;
            }
            ParseErrorKind::UnexpectedByte(b) => write!(f, "unexpected byte 0x{b:02x}")?,
            ParseErrorKind::TrailingData => write!(f, "trailing data after the JSON value")?,
            ParseErrorKind::DuplicateKey(k) => write!(f, "duplicate object key {k:?}")?,
            ParseErrorKind::LoneSurrogate => write!(f, "lone UTF-16 surrogate in \\u escape")?,
            ParseErrorKind::InvalidEscape => write!(f, "invalid escape sequence")?,
            ParseErrorKind::ControlCharacter => {
                write!(f, "unescaped control character in string")?;
            }
            ParseErrorKind::InvalidUtf8 => write!(f, "invalid UTF-8")?,
            ParseErrorKind::InvalidNumber => write!(f, "invalid number")?,
            ParseErrorKind::NumberOutOfRange => write!(f, "number out of range")?,
            ParseErrorKind::TooDeep(max) => write!(f, "nesting deeper than {max} levels")?,
            ParseErrorKind::TooLarge(max) => write!(f, "input larger than {max} bytes")?,
        }
        write!(f, " at byte {}", self.offset)
    }
}

impl std::error::Error for ParseError {}

/// Parses one JSON document with the default [`Limits`].
///
/// # Errors
/// Any deviation from strict JSON: see [`ParseErrorKind`].
pub fn parse(input: &[u8]) -> Result<Value, ParseError> {
    parse_with(input, Limits::default())
}

/// Parses one JSON document with explicit limits.
///
/// # Errors
/// Any deviation from strict JSON: see [`ParseErrorKind`].
pub fn parse_with(input: &[u8], limits: Limits) -> Result<Value, ParseError> {
    if input.len() > limits.max_bytes {
        return Err(ParseError { kind: ParseErrorKind::TooLarge(limits.max_bytes), offset: 0 });
    }
    let mut parser = Parser {
        input,
        // Valid UTF-8 throughout (the usual case) is checked once here, so each string below is a
        // slice of this text; otherwise each string checks its own bytes, and the first invalid
        // one is reported in document order after any earlier syntax error.
        text: crate::scan::utf8(input),
        pos: 0,
        max_depth: limits.max_depth,
        items: Vec::new(),
    };
    parser.skip_ws();
    let value = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != input.len() {
        return Err(parser.error(ParseErrorKind::TrailingData));
    }
    Ok(value)
}

/// Parses the one JSON value at the start of `input` (after any whitespace) and returns it with
/// the offset just past it; what follows is left alone. Reading a value embedded in a larger
/// text this way (a member of a batch line, say) gives what a full parse would give for it.
///
/// # Errors
/// As [`parse_with`], except that trailing data is not an error.
pub fn parse_prefix(input: &[u8], limits: Limits) -> Result<(Value, usize), ParseError> {
    // The value's extent is unknown: each string checks its own bytes.
    prefix(input, None, limits)
}

/// [`parse_prefix`] of text already known to be UTF-8 (a batch line checked once as a whole):
/// strings are slices of it, with no check of their own.
///
/// # Errors
/// As [`parse_prefix`].
pub fn parse_prefix_text(input: &str, limits: Limits) -> Result<(Value, usize), ParseError> {
    prefix(input.as_bytes(), Some(input), limits)
}

fn prefix(input: &[u8], text: Option<&str>, limits: Limits) -> Result<(Value, usize), ParseError> {
    if input.len() > limits.max_bytes {
        return Err(ParseError { kind: ParseErrorKind::TooLarge(limits.max_bytes), offset: 0 });
    }
    let mut parser = Parser { input, text, pos: 0, max_depth: limits.max_depth, items: Vec::new() };
    parser.skip_ws();
    let value = parser.value(0)?;
    Ok((value, parser.pos))
}

/// Why [`canonicalize`] refused its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CanonicalizeError {
    /// Not strict JSON (as [`parse_with`] reports it).
    Parse(ParseError),
    /// Valid JSON that JCS cannot write (as [`to_jcs`] reports it).
    Write(WriteError),
}

impl fmt::Display for CanonicalizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CanonicalizeError::Parse(e) => e.fmt(f),
            CanonicalizeError::Write(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CanonicalizeError {}

/// The RFC 8785 bytes of a JSON text: `to_jcs(&parse_with(input, limits)?)` with the same
/// result and the same errors, in one pass that builds no [`Value`] tree.
///
/// # Errors
/// What [`parse_with`] or [`to_jcs`] would report.
pub fn canonicalize(input: &[u8], limits: Limits) -> Result<Vec<u8>, CanonicalizeError> {
    if let Ok(bytes) = jcs::to_jcs_bytes(input, limits) {
        return Ok(bytes);
    }
    // The one-pass writer gave up: the two-step path finds the exact error (or, for what the
    // fast pass leaves out, the bytes).
    let value = parse_with(input, limits).map_err(CanonicalizeError::Parse)?;
    to_jcs(&value).map_err(CanonicalizeError::Write)
}

/// [`canonicalize`] into a caller's buffer: `Ok(Some(n))` when the RFC 8785 bytes fill
/// `out[..n]`, `Ok(None)` when they do not fit (what `out` holds is then unspecified).
///
/// A large document's output then lands in memory the caller chose (prepared huge pages, say)
/// instead of a fresh heap block that is faulted in a page at a time. Canonical bytes are never
/// longer than the input plus 21 bytes per number (`1e20` is written `100000000000000000000`),
/// so `input.len()` plus a little is almost always enough: whitespace goes away.
///
/// # Errors
/// What [`parse_with`] or [`to_jcs`] would report.
pub fn canonicalize_into(
    input: &[u8],
    limits: Limits,
    out: &mut [u8],
) -> Result<Option<usize>, CanonicalizeError> {
    let fixed = jcs::Fixed { buf: out, len: 0, full: false };
    match jcs::write_jcs_bytes(input, limits, fixed) {
        Ok(fixed) if fixed.full => return Ok(None),
        Ok(fixed) => return Ok(Some(fixed.len)),
        Err(jcs::GiveUp) => {}
    }
    let value = parse_with(input, limits).map_err(CanonicalizeError::Parse)?;
    let bytes = to_jcs(&value).map_err(CanonicalizeError::Write)?;
    Ok(out.get_mut(..bytes.len()).map(|slots| {
        slots.copy_from_slice(&bytes);
        bytes.len()
    }))
}

/// [`canonicalize_into`] on up to `jobs` threads, for large documents: `Ok(Some(ranges))` when
/// the RFC 8785 bytes are `out[r]` for each range in turn (the parts are written where each
/// thread wrote them, never copied together), `Ok(None)` when they do not fit.
///
/// The threads start at guessed element starts of a long array and only a guess the pass
/// confirms is used (see `parse/jcs/split.rs`), so the bytes and the errors are those of
/// [`canonicalize`] for any `jobs`. Below 1 MiB, with `jobs` under 2 or an `out` shorter than
/// `input`, one thread does it all.
///
/// # Errors
/// What [`parse_with`] or [`to_jcs`] would report.
pub fn canonicalize_into_split(
    input: &[u8],
    limits: Limits,
    out: &mut [u8],
    jobs: usize,
) -> Result<Option<Vec<std::ops::Range<usize>>>, CanonicalizeError> {
    split_into(input, limits, out, jobs, jcs::split::MIN_SPLIT_BYTES)
}

/// [`canonicalize_into_split`] that splits documents of `min_bytes` or more (tests split small
/// ones).
fn split_into(
    input: &[u8],
    limits: Limits,
    out: &mut [u8],
    jobs: usize,
    min_bytes: usize,
) -> Result<Option<Vec<std::ops::Range<usize>>>, CanonicalizeError> {
    if jobs < 2 || input.len() < min_bytes || out.len() < input.len() {
        let written = canonicalize_into(input, limits, out)?;
        return Ok(written.map(|len| std::iter::once(0..len).collect()));
    }
    if input.len() <= limits.max_bytes
        && let Some(text) = crate::scan::utf8(input)
        && let Ok(ranges) = jcs::split::write(text, limits, out, jobs, min_bytes)
    {
        return Ok(ranges);
    }
    let value = parse_with(input, limits).map_err(CanonicalizeError::Parse)?;
    let bytes = to_jcs(&value).map_err(CanonicalizeError::Write)?;
    Ok(out.get_mut(..bytes.len()).map(|slots| {
        slots.copy_from_slice(&bytes);
        std::iter::once(0..bytes.len()).collect()
    }))
}

/// Sixteen spaces, as a little-endian word.
const SPACES: u128 = u128::from_le_bytes([b' '; 16]);

struct Parser<'a> {
    input: &'a [u8],
    /// `input` as text, when all of it is valid UTF-8.
    text: Option<&'a str>,
    pos: usize,
    max_depth: usize,
    /// Elements of the arrays being parsed, innermost last: one buffer for all of them, so an
    /// array costs one exact allocation when it closes.
    items: Vec<Value>,
}

impl<'a> Parser<'a> {
    fn error(&self, kind: ParseErrorKind) -> ParseError {
        ParseError { kind, offset: self.pos }
    }

    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        let input = self.input;
        let mut pos = self.pos;
        loop {
            match input.get(pos) {
                Some(b' ' | b'\t' | b'\r') => pos += 1,
                Some(b'\n') => {
                    pos += 1;
                    // Indentation of pretty-printed documents: the leading spaces of sixteen
                    // bytes counted at once, from the first byte that is not one.
                    while let Some(chunk) = input.get(pos..).and_then(<[u8]>::first_chunk::<16>) {
                        let others = u128::from_le_bytes(*chunk) ^ SPACES;
                        pos += (others.trailing_zeros() / 8) as usize;
                        if others != 0 {
                            break;
                        }
                    }
                }
                _ => break,
            }
        }
        self.pos = pos;
    }

    fn unexpected(&self) -> ParseError {
        match self.peek() {
            Some(b) => self.error(ParseErrorKind::UnexpectedByte(b)),
            None => self.error(ParseErrorKind::UnexpectedEnd),
        }
    }

    fn expect_literal(&mut self, literal: &[u8], value: Value) -> Result<Value, ParseError> {
        if self.input.get(self.pos..self.pos + literal.len()) == Some(literal) {
            self.pos += literal.len();
            return Ok(value);
        }
        // Slow path, only to report the first byte that differs.
        for &expected in literal {
            if self.peek() != Some(expected) {
                return Err(self.unexpected());
            }
            self.pos += 1;
        }
        Ok(value)
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        match self.peek() {
            None => Err(self.error(ParseErrorKind::UnexpectedEnd)),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b't') => self.expect_literal(b"true", Value::Bool(true)),
            Some(b'f') => self.expect_literal(b"false", Value::Bool(false)),
            Some(b'n') => self.expect_literal(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.unexpected()),
        }
    }

    fn check_depth(&self, depth: usize) -> Result<(), ParseError> {
        if depth > self.max_depth {
            return Err(self.error(ParseErrorKind::TooDeep(self.max_depth)));
        }
        Ok(())
    }

    fn array(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.check_depth(depth)?;
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(Vec::new()));
        }
        let start = self.items.len();
        let result = self.array_items(depth);
        // On error the buffer still holds this array's elements; drop them with it.
        let items = self.items.split_off(start);
        result.map(|()| Value::Array(items))
    }

    fn array_items(&mut self, depth: usize) -> Result<(), ParseError> {
        loop {
            self.skip_ws();
            let item = self.value(depth)?;
            self.items.push(item);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.check_depth(depth)?;
        self.pos += 1;
        let mut map = Map::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.unexpected());
            }
            let key_offset = self.pos;
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.unexpected());
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value(depth)?;
            // One search both finds a duplicate and places the new member.
            match map.entry(key) {
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                Entry::Occupied(slot) => {
                    return Err(ParseError {
                        kind: ParseErrorKind::DuplicateKey(slot.key().clone()),
                        offset: key_offset,
                    });
                }
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(map));
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn hex4(&mut self) -> Result<u16, ParseError> {
        let Some(digits) = self.input.get(self.pos..self.pos + 4) else {
            return Err(self.error(ParseErrorKind::InvalidEscape));
        };
        // Four table lookups and one check: a byte that is not a hex digit maps to 0xFF.
        let mut unit = 0u16;
        let mut bad = 0u8;
        for &d in digits {
            let nibble = HEX_DIGIT[usize::from(d)];
            bad |= nibble;
            unit = (unit << 4) | u16::from(nibble & 0x0F);
        }
        if bad & 0xF0 != 0 {
            return Err(self.error(ParseErrorKind::InvalidEscape));
        }
        self.pos += 4;
        Ok(unit)
    }

    /// Moves `pos` to the next `"`, `\` or control character (or the end of input): eight bytes
    /// at a time, the first stop byte of a word found from its mask; the last few bytes of the
    /// input byte by byte.
    fn skip_plain(&mut self) {
        let input = self.input;
        let mut pos = self.pos;
        while let Some(chunk) = input.get(pos..).and_then(<[u8]>::first_chunk::<8>) {
            let mask = stop_mask(u64::from_le_bytes(*chunk));
            if mask != 0 {
                // The lowest flag is the first stop byte (see `stop_mask`).
                self.pos = pos + (mask.trailing_zeros() / 8) as usize;
                return;
            }
            pos += 8;
        }
        while let Some(&b) = input.get(pos) {
            if STRING_STOP[usize::from(b)] {
                break;
            }
            pos += 1;
        }
        self.pos = pos;
    }

    /// The UTF-8 text of `input[start..self.pos]`, a run without `"`, `\` or control bytes.
    fn plain_run(&self, start: usize) -> Result<&'a str, ParseError> {
        // A run starts after and ends before an ASCII byte (or the end), so on valid text it
        // always falls on character boundaries.
        if let Some(run) = self.text.and_then(|text| text.get(start..self.pos)) {
            return Ok(run);
        }
        let input: &'a [u8] = self.input;
        std::str::from_utf8(&input[start..self.pos]).map_err(|e| ParseError {
            kind: ParseErrorKind::InvalidUtf8,
            offset: start + e.valid_up_to(),
        })
    }

    fn string(&mut self) -> Result<String, ParseError> {
        // Skip the opening quote.
        self.pos += 1;
        let start = self.pos;
        self.skip_plain();
        let run = self.plain_run(start)?;
        // Fast path: no escape, so the string is the run itself, allocated once at its size.
        if self.peek() == Some(b'"') {
            let out = run.to_owned();
            self.pos += 1;
            return Ok(out);
        }
        let mut out = String::with_capacity(run.len() + 16);
        out.push_str(run);
        loop {
            match self.peek() {
                None => return Err(self.error(ParseErrorKind::UnexpectedEnd)),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    self.escape(&mut out)?;
                }
                Some(_) => return Err(self.error(ParseErrorKind::ControlCharacter)),
            }
            let start = self.pos;
            self.skip_plain();
            out.push_str(self.plain_run(start)?);
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), ParseError> {
        let Some(b) = self.peek() else {
            return Err(self.error(ParseErrorKind::UnexpectedEnd));
        };
        self.pos += 1;
        let c = match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => self.unicode_escape()?,
            _ => {
                self.pos -= 1;
                return Err(self.error(ParseErrorKind::InvalidEscape));
            }
        };
        out.push(c);
        Ok(())
    }

    /// The character of the `\uXXXX` escape (or surrogate pair) whose `\u` ends at `pos`;
    /// `pos` moves past it. A lone or reversed surrogate is refused at the escape's offset.
    fn unicode_escape(&mut self) -> Result<char, ParseError> {
        let lone = ParseError { kind: ParseErrorKind::LoneSurrogate, offset: self.pos - 2 };
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if self.input.get(self.pos..self.pos + 2) != Some(b"\\u") {
                    return Err(lone);
                }
                self.pos += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(lone);
                }
                0x10000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(second) - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(lone),
            _ => u32::from(first),
        };
        char::from_u32(code).ok_or(lone)
    }

    /// Skips a run of ASCII digits, folding up to 19 significant ones into `acc`.
    ///
    /// Returns how many digits were skipped; `folded` counts the digits that went into `acc`
    /// (leading zeros of an empty `acc` fold for free) and stops growing when `acc` would
    /// overflow, so the caller knows whether `acc` is exact.
    fn digits(&mut self, acc: &mut u64, folded: &mut usize) -> usize {
        let start = self.pos;
        while let Some(&b) = self.input.get(self.pos) {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            if *folded < 19 {
                *acc = *acc * 10 + u64::from(d);
                if *acc != 0 {
                    *folded += 1;
                }
            } else {
                *folded = usize::MAX;
            }
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let int_start = self.pos;
        // Significant digits of the whole mantissa (integer and fraction), while they fit.
        let mut mantissa = 0u64;
        let mut folded = 0usize;
        let n_int = self.digits(&mut mantissa, &mut folded);
        if n_int == 0 {
            return Err(self.error(ParseErrorKind::InvalidNumber));
        }
        if n_int > 1 && self.input[int_start] == b'0' {
            return Err(ParseError { kind: ParseErrorKind::InvalidNumber, offset: int_start });
        }
        let mut is_float = false;
        let mut n_frac = 0;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            is_float = true;
            n_frac = self.digits(&mut mantissa, &mut folded);
            if n_frac == 0 {
                return Err(self.error(ParseErrorKind::InvalidNumber));
            }
        }
        let mut exponent: Option<i64> = Some(0);
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            is_float = true;
            let exp_negative = match self.peek() {
                Some(b'-') => {
                    self.pos += 1;
                    true
                }
                Some(b'+') => {
                    self.pos += 1;
                    false
                }
                _ => false,
            };
            let (mut exp, mut exp_folded) = (0u64, 0usize);
            if self.digits(&mut exp, &mut exp_folded) == 0 {
                return Err(self.error(ParseErrorKind::InvalidNumber));
            }
            // An exponent of 19 or more significant digits is out of any fast path.
            exponent = (exp_folded < 19)
                .then(|| i64::try_from(exp).ok())
                .flatten()
                .map(|e| if exp_negative { -e } else { e });
        }
        let exact = folded <= 19;
        if !is_float {
            // At most 18 significant digits always fit in an i64, either sign.
            if exact && folded <= 18 {
                let magnitude = i64::try_from(mantissa).unwrap_or(i64::MAX);
                let n = if negative { -magnitude } else { magnitude };
                return Ok(Value::Number(Number::Int(Integer::Small(n))));
            }
            let int = Integer::from_decimal(self.number_text(start)?)
                .ok_or(ParseError { kind: ParseErrorKind::InvalidNumber, offset: start })?;
            return Ok(Value::Number(Number::Int(int)));
        }
        let fraction_len = i64::try_from(n_frac).unwrap_or(i64::MAX);
        if let Some(x) = exponent.and_then(|e| fast_float(exact, mantissa, e - fraction_len)) {
            let x = if negative { -x } else { x };
            let finite = Finite::new(x)
                .ok_or(ParseError { kind: ParseErrorKind::NumberOutOfRange, offset: start })?;
            return Ok(Value::Number(Number::Float(finite)));
        }
        let x: f64 = self
            .number_text(start)?
            .parse()
            .map_err(|_| ParseError { kind: ParseErrorKind::InvalidNumber, offset: start })?;
        let finite = Finite::new(x)
            .ok_or(ParseError { kind: ParseErrorKind::NumberOutOfRange, offset: start })?;
        Ok(Value::Number(Number::Float(finite)))
    }

    /// The text of the number that started at `start` (ASCII digits, signs, `.`, `e`, `E`).
    fn number_text(&self, start: usize) -> Result<&str, ParseError> {
        if let Some(text) = self.text.and_then(|text| text.get(start..self.pos)) {
            return Ok(text);
        }
        std::str::from_utf8(&self.input[start..self.pos])
            .map_err(|_| ParseError { kind: ParseErrorKind::InvalidNumber, offset: start })
    }
}

/// The value of each hex digit byte; 0xFF for every other byte.
static HEX_DIGIT: [u8; 256] = {
    let mut table = [0xFF; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// Clinger's fast path: `mantissa × 10^exponent` is correctly rounded by one IEEE operation
/// when the mantissa is exact and below 2^53 and |exponent| ≤ 22 (10^22 is exact in a double).
/// Anything else is left to the standard library's correctly rounding parser.
fn fast_float(exact: bool, mantissa: u64, exponent: i64) -> Option<f64> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    if !exact || mantissa >= 1 << 53 {
        return None;
    }
    // Exact: the mantissa is below 2^53.
    #[allow(clippy::cast_precision_loss)]
    let m = mantissa as f64;
    let power = POW10.get(usize::try_from(exponent.unsigned_abs()).ok()?)?;
    Some(if exponent < 0 { m / power } else { m * power })
}
