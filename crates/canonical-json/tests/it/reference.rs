//! The parser as it was before the fast rewrite (commit 650da0b), kept verbatim as the
//! reference of the differential tests in `differential.rs`: the fast parser must accept the same
//! documents into the same values and refuse the same inputs with the same error and offset.

use canonical_json::{Finite, Integer, Limits, Map, Number, ParseError, ParseErrorKind, Value};

pub fn parse_with(input: &[u8], limits: Limits) -> Result<Value, ParseError> {
    if input.len() > limits.max_bytes {
        return Err(ParseError { kind: ParseErrorKind::TooLarge(limits.max_bytes), offset: 0 });
    }
    let mut parser = Parser { input, pos: 0, max_depth: limits.max_depth };
    parser.skip_ws();
    let value = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != input.len() {
        return Err(parser.error(ParseErrorKind::TrailingData));
    }
    Ok(value)
}

struct Parser<'a> {
    input: &'a [u8],
    pos: usize,
    max_depth: usize,
}

impl Parser<'_> {
    fn error(&self, kind: ParseErrorKind) -> ParseError {
        ParseError { kind, offset: self.pos }
    }

    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn unexpected(&self) -> ParseError {
        match self.peek() {
            Some(b) => self.error(ParseErrorKind::UnexpectedByte(b)),
            None => self.error(ParseErrorKind::UnexpectedEnd),
        }
    }

    fn expect_literal(&mut self, literal: &[u8], value: Value) -> Result<Value, ParseError> {
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
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
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
            if map.contains_key(&key) {
                return Err(ParseError {
                    kind: ParseErrorKind::DuplicateKey(key),
                    offset: key_offset,
                });
            }
            map.insert(key, value);
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
        let mut unit = 0u16;
        for &d in digits {
            let nibble = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return Err(self.error(ParseErrorKind::InvalidEscape)),
            };
            unit = (unit << 4) | u16::from(nibble);
        }
        self.pos += 4;
        Ok(unit)
    }

    fn string(&mut self) -> Result<String, ParseError> {
        // Skip the opening quote.
        self.pos += 1;
        let mut out = String::new();
        loop {
            let start = self.pos;
            // Fast path: copy a run of plain bytes at once.
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            if self.pos > start {
                match std::str::from_utf8(&self.input[start..self.pos]) {
                    Ok(run) => out.push_str(run),
                    Err(e) => {
                        return Err(ParseError {
                            kind: ParseErrorKind::InvalidUtf8,
                            offset: start + e.valid_up_to(),
                        });
                    }
                }
            }
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
            b'u' => {
                let escape_offset = self.pos - 2;
                let lone =
                    ParseError { kind: ParseErrorKind::LoneSurrogate, offset: escape_offset };
                let first = self.hex4()?;
                match first {
                    0xD800..=0xDBFF => {
                        if self.input.get(self.pos..self.pos + 2) != Some(b"\\u") {
                            return Err(lone);
                        }
                        self.pos += 2;
                        let second = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&second) {
                            return Err(lone);
                        }
                        let code = 0x10000
                            + ((u32::from(first) - 0xD800) << 10)
                            + (u32::from(second) - 0xDC00);
                        char::from_u32(code).ok_or(lone)?
                    }
                    0xDC00..=0xDFFF => return Err(lone),
                    _ => char::from_u32(u32::from(first)).ok_or(lone)?,
                }
            }
            _ => {
                self.pos -= 1;
                return Err(self.error(ParseErrorKind::InvalidEscape));
            }
        };
        out.push(c);
        Ok(())
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        let n_int = self.digits();
        if n_int == 0 {
            return Err(self.error(ParseErrorKind::InvalidNumber));
        }
        if n_int > 1 && self.input[int_start] == b'0' {
            return Err(ParseError { kind: ParseErrorKind::InvalidNumber, offset: int_start });
        }
        let mut is_float = false;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            is_float = true;
            if self.digits() == 0 {
                return Err(self.error(ParseErrorKind::InvalidNumber));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            is_float = true;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error(ParseErrorKind::InvalidNumber));
            }
        }
        // The scanned bytes are ASCII digits, signs, '.', 'e' and 'E' only.
        let text = std::str::from_utf8(&self.input[start..self.pos])
            .map_err(|_| ParseError { kind: ParseErrorKind::InvalidNumber, offset: start })?;
        let out_of_range = ParseError { kind: ParseErrorKind::NumberOutOfRange, offset: start };
        if is_float {
            let x: f64 = text
                .parse()
                .map_err(|_| ParseError { kind: ParseErrorKind::InvalidNumber, offset: start })?;
            let finite = Finite::new(x).ok_or(out_of_range)?;
            Ok(Value::Number(Number::Float(finite)))
        } else {
            let int = Integer::from_decimal(text)
                .ok_or(ParseError { kind: ParseErrorKind::InvalidNumber, offset: start })?;
            Ok(Value::Number(Number::Int(int)))
        }
    }
}
