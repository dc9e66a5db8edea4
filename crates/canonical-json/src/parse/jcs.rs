//! Text to RFC 8785 bytes in one pass, without building a [`Value`] tree.
//!
//! The pass reuses the parser's scanners and the JCS writer's pieces: a string without escapes
//! is copied as it stands (JCS would write the same bytes), any other string is decoded and
//! written by the writer, numbers are parsed as the parser does and written by the writer, and
//! each object's members are written as they come and reordered afterwards only when their keys
//! were not already in UTF-16 order. It only ever *succeeds*: any refusal, or anything it does
//! not handle (a big integer, a deep document), makes it give up, and [`crate::canonicalize`]
//! then runs [`crate::parse_with`] and [`crate::to_jcs`], which report the exact error.

use std::borrow::Cow;
use std::cmp::Ordering;

use super::{Limits, Parser};
use crate::value::Value;
use crate::write::{MAX_WRITE_DEPTH, jcs_number, jcs_string, utf16_order};

/// The pass gave up: the slow path will tell why (or that there was nothing wrong).
#[derive(Debug)]
pub(crate) struct GiveUp;

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

struct Canon<'a> {
    parser: Parser<'a>,
    max_depth: usize,
    out: Vec<u8>,
    /// Members of the objects being written, innermost last.
    members: Vec<Member<'a>>,
    /// Where an object's members are copied while they are put in order.
    scratch: Vec<u8>,
    /// Member indices in key order.
    order: Vec<usize>,
}

/// The JCS bytes of `input` if it is valid and JCS can write it; `Err(GiveUp)` otherwise.
pub(crate) fn to_jcs_bytes(input: &[u8], limits: Limits) -> Result<Vec<u8>, GiveUp> {
    if input.len() > limits.max_bytes {
        return Err(GiveUp);
    }
    let text = std::str::from_utf8(input).map_err(|_| GiveUp)?;
    let mut canon = Canon {
        parser: Parser {
            input,
            text: Some(text),
            pos: 0,
            max_depth: limits.max_depth,
            items: Vec::new(),
        },
        // The writer refuses nesting at MAX_WRITE_DEPTH; stay well inside both limits.
        max_depth: limits.max_depth.min(MAX_WRITE_DEPTH - 1),
        out: Vec::with_capacity(input.len()),
        members: Vec::new(),
        scratch: Vec::new(),
        order: Vec::new(),
    };
    canon.parser.skip_ws();
    canon.value(0)?;
    canon.parser.skip_ws();
    if canon.parser.pos != input.len() {
        return Err(GiveUp);
    }
    Ok(canon.out)
}

impl<'a> Canon<'a> {
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
        self.out.extend_from_slice(literal);
        Ok(())
    }

    fn number(&mut self) -> Result<(), GiveUp> {
        let Value::Number(number) = self.parser.number()? else { return Err(GiveUp) };
        // Integers beyond ±(2^53 − 1) are a write error: the slow path reports it.
        jcs_number(&number, &mut self.out).map_err(|_| GiveUp)
    }

    /// Writes the string at `pos` (a value: its text is not needed).
    fn string_value(&mut self) -> Result<(), GiveUp> {
        let start = self.parser.pos + 1;
        self.parser.pos = start;
        self.parser.skip_plain();
        if self.parser.peek() == Some(b'"') {
            // No escape, and the whole input is valid UTF-8: copy it as it stands.
            self.parser.pos += 1;
            self.out.extend_from_slice(&self.parser.input[start - 1..self.parser.pos]);
            return Ok(());
        }
        self.parser.pos = start - 1;
        let text = self.parser.string()?;
        jcs_string(&text, &mut self.out);
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
            self.out.extend_from_slice(&self.parser.input[start - 1..self.parser.pos]);
            return Ok(Cow::Borrowed(run));
        }
        self.parser.pos = start - 1;
        let text = self.parser.string()?;
        jcs_string(&text, &mut self.out);
        Ok(Cow::Owned(text))
    }

    fn array(&mut self, depth: usize) -> Result<(), GiveUp> {
        if depth > self.max_depth {
            return Err(GiveUp);
        }
        self.parser.pos += 1;
        self.out.push(b'[');
        self.parser.skip_ws();
        if self.parser.peek() == Some(b']') {
            self.parser.pos += 1;
            self.out.push(b']');
            return Ok(());
        }
        loop {
            self.parser.skip_ws();
            self.value(depth)?;
            self.parser.skip_ws();
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
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.out[begin..]);
        self.out.truncate(begin);
        for (i, &m) in self.order.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            let member = &members[m];
            self.out.extend_from_slice(&self.scratch[member.start - begin..member.end - begin]);
        }
        Ok(())
    }
}
