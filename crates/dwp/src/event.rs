//! Compact journal events: what the read paths (`ledger project`, `scheduler ready`,
//! `outcomes receipt`) keep of each line.
//!
//! A read path checks every journal line as strictly as the full parser does (a line that is
//! not strict JSON ends the good prefix) but reads only a handful of top-level members: every
//! event moves the journal position (`type`, `seq`, `ts`), and only the few event types a
//! command decides on are needed whole, and then only the members the rules read
//! ([`FIELDS`]). [`Compact::parse`] does that with [`canonical_json::skim`]: no tree, no
//! string copied; [`Compact::to_value`] builds the small object the rules of
//! [`crate::projection`], [`crate::scheduler`] and [`crate::outcomes`] take, for the events a
//! command keeps.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use canonical_json::{Integer, Limits, Map, Number, ParseError, Value, Wanted};

/// The top-level members the read paths look at. Every rule over kept events reads only these
/// (a new rule that reads another member adds it here).
pub const FIELDS: [&str; 23] = [
    // Every event: its kind, position and time.
    "type",
    "seq",
    "ts",
    // task_start, gate_run, control_pair: satisfaction and closure.
    "task",
    "criterion",
    "trust",
    "exit_code",
    "evidence_path",
    "command",
    "verdict",
    // approval, amendment, reconciliation: invalidation and authority.
    "contract_id",
    "note",
    "evidence_invalidated",
    "authority",
    "original_criterion",
    "revised_criterion",
    "trigger",
    "editor",
    // resource_sample, intervention: the snapshot's resources and checkpoint.
    "limit_id",
    "value",
    "category",
    "question",
    // observation: review states.
    "statement",
];

/// Why an event's `seq` is not a journal position. A journal position is a JSON integer (no
/// fraction, no exponent: `1e3` and `1.0` are numbers, not integers) from 1 to `i64::MAX`;
/// this is the one definition the writer, every reader and `verify` share ([`valid_seq`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SeqProblem {
    /// No `seq` member (or not an object at all).
    Missing,
    /// A string, a fraction, an exponent form, `null`, ….
    NotInteger,
    /// Zero or negative.
    NotPositive,
    /// 2^63 or more: it cannot be held, so it would read as some other number.
    TooLarge,
}

impl std::fmt::Display for SeqProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SeqProblem::Missing => "seq is missing",
            SeqProblem::NotInteger => "seq is not an integer",
            SeqProblem::NotPositive => "seq is not positive",
            SeqProblem::TooLarge => "seq does not fit in 63 bits (at most 9223372036854775807)",
        })
    }
}

/// The journal position `seq` holds, or why it holds none (see [`SeqProblem`]).
///
/// # Errors
/// The member is missing, not an integer, not positive, or 2^63 or more.
pub fn valid_seq(seq: Option<&Value>) -> Result<i64, SeqProblem> {
    match seq {
        None => Err(SeqProblem::Missing),
        Some(Value::Number(Number::Int(Integer::Small(n)))) if *n >= 1 => Ok(*n),
        Some(Value::Number(Number::Int(Integer::Small(_)))) => Err(SeqProblem::NotPositive),
        Some(Value::Number(Number::Int(Integer::Big(big)))) if big.is_negative() => {
            Err(SeqProblem::NotPositive)
        }
        Some(Value::Number(Number::Int(_))) => Err(SeqProblem::TooLarge),
        Some(_) => Err(SeqProblem::NotInteger),
    }
}

/// Why a parsed journal line is not a record: not an object, or no valid [`valid_seq`].
pub fn record_problem(event: &Value) -> Option<SeqProblem> {
    match event {
        Value::Object(map) => valid_seq(map.get("seq")).err(),
        _ => Some(SeqProblem::Missing),
    }
}

/// The one rule for a DWP journal line, shared by the writer, the readers and `verify`: strict
/// JSON ([`canonical_json::parse`]), an object, whose `seq` is a journal position
/// ([`valid_seq`]). `None` for anything else.
pub fn record(line: &[u8]) -> Option<Value> {
    canonical_json::parse(line).ok().filter(|event| record_problem(event).is_none())
}

/// [`record`] as a yes/no line validator (the shape of the `journal` crate's `Validator`):
/// the same rule, checked with the compact parser (no tree is built).
pub fn is_record(line: &[u8]) -> bool {
    Compact::parse(line).is_ok_and(|event| event.checked_seq().is_ok())
}

/// Event types that are render provenance and never move the snapshot.
pub const PROVENANCE_TYPES: [&str; 1] = ["view_render"];

/// The event types some read path decides on (snapshot, ready list, receipt); review
/// observations (`REVIEW: …`) are kept too ([`keeps`]).
pub const KEPT_TYPES: [&str; 8] = [
    "task_start",
    "gate_run",
    "approval",
    "amendment",
    "resource_sample",
    "intervention",
    "control_pair",
    "reconciliation",
];

/// True for the events a [`Tally`] keeps: [`KEPT_TYPES`] and review observations. Every rule
/// of the read paths gives the same result over the kept events as over the whole journal
/// (given the journal's last seq and positions, which the tally keeps apart).
pub fn keeps(etype: Option<&str>, statement: Option<&str>) -> bool {
    match etype {
        Some("observation") => statement.is_some_and(|s| s.starts_with("REVIEW: ")),
        Some(t) => KEPT_TYPES.contains(&t),
        None => false,
    }
}

const TYPE: usize = 0;
const SEQ: usize = 1;
const TS: usize = 2;
const STATEMENT: usize = 22;

/// One journal line, checked strictly, with the raw text of its [`FIELDS`].
#[derive(Clone, Debug)]
pub struct Compact<'a> {
    raw: [Option<&'a [u8]>; FIELDS.len()],
}

/// [`FIELDS`], prepared once.
fn wanted() -> &'static Wanted {
    static WANTED: OnceLock<Wanted> = OnceLock::new();
    WANTED.get_or_init(|| Wanted::new(&FIELDS))
}

/// The text of a raw JSON string: borrowed when it holds no escape; `None` when not a string.
fn text(raw: Option<&[u8]>) -> Option<Cow<'_, str>> {
    let raw = raw?;
    let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if !inner.contains(&b'\\') {
        return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
    }
    match canonical_json::parse(raw) {
        Ok(Value::String(s)) => Some(Cow::Owned(s)),
        _ => None,
    }
}

impl<'a> Compact<'a> {
    /// Checks `line` as [`canonical_json::parse`] would and keeps its [`FIELDS`].
    ///
    /// # Errors
    /// The parser's error for a line that is not strict JSON.
    #[inline(always)]
    pub fn parse(line: &'a [u8]) -> Result<Compact<'a>, ParseError> {
        Compact::parse_with(line, Limits::default())
    }

    /// [`Compact::parse`] under explicit limits.
    ///
    /// # Errors
    /// The parser's error for a line that is not strict JSON under `limits`.
    #[inline(always)]
    pub fn parse_with(line: &'a [u8], limits: Limits) -> Result<Compact<'a>, ParseError> {
        let mut raw = [None; FIELDS.len()];
        canonical_json::skim(line, limits, wanted(), &mut raw)?;
        Ok(Compact { raw })
    }

    /// [`Compact::parse`] of a line already known to be UTF-8 (what a journal reader hands on).
    ///
    /// # Errors
    /// The parser's error for a line that is not strict JSON.
    #[inline(always)]
    pub fn parse_text(line: &'a str) -> Result<Compact<'a>, ParseError> {
        let mut raw = [None; FIELDS.len()];
        canonical_json::skim_text(line, Limits::default(), wanted(), &mut raw)?;
        Ok(Compact { raw })
    }

    /// `event.get('type')` when it is a string.
    pub fn etype(&self) -> Option<Cow<'a, str>> {
        text(self.raw[TYPE])
    }

    /// True when the event's type is `etype`.
    pub fn is(&self, etype: &str) -> bool {
        self.etype().is_some_and(|t| t == etype)
    }

    /// `ts` when it is a string.
    pub fn ts(&self) -> Option<Cow<'a, str>> {
        text(self.raw[TS])
    }

    /// `statement` when it is a string.
    pub fn statement(&self) -> Option<Cow<'a, str>> {
        text(self.raw[STATEMENT])
    }

    /// The seq as [`crate::projection::seq_of`] reads it (non-integers count as 0).
    pub fn seq(&self) -> i64 {
        let Some(raw) = self.raw[SEQ] else { return 0 };
        let digits = raw.strip_prefix(b"-").unwrap_or(raw);
        if !digits.is_empty() && digits.len() <= 18 && digits.iter().all(u8::is_ascii_digit) {
            let n = digits.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
            return if digits.len() < raw.len() { -n } else { n };
        }
        canonical_json::parse(raw).ok().and_then(|v| v.as_i64()).unwrap_or(0)
    }

    /// The seq as a journal position, or why it is none (the rule of [`valid_seq`]).
    ///
    /// # Errors
    /// As [`valid_seq`].
    pub fn checked_seq(&self) -> Result<i64, SeqProblem> {
        let Some(raw) = self.raw[SEQ] else { return Err(SeqProblem::Missing) };
        if !raw.is_empty() && raw.len() <= 18 && raw.iter().all(u8::is_ascii_digit) {
            let n = raw.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
            return if n >= 1 { Ok(n) } else { Err(SeqProblem::NotPositive) };
        }
        match canonical_json::parse(raw) {
            Ok(value) => valid_seq(Some(&value)),
            Err(_) => Err(SeqProblem::NotInteger),
        }
    }

    /// True for a line the journal rule accepts ([`record`]): strict JSON with a valid seq.
    pub fn is_record(&self) -> bool {
        self.checked_seq().is_ok()
    }

    /// The event as an object of its [`FIELDS`] (what the rules over kept events read).
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        for (name, raw) in FIELDS.iter().zip(self.raw) {
            if let Some(raw) = raw {
                let value = canonical_json::parse(raw).unwrap_or(Value::Null);
                map.insert((*name).to_owned(), value);
            }
        }
        Value::Object(map)
    }
}

/// What the read paths take from a run of journal events, in one pass: the last seq, the
/// snapshot's positions (per type, the highest seq, and the latest `ts`, over every typed
/// event but render provenance) and the events [`keeps`] selects, as [`Compact::to_value`]
/// objects in journal order. Tallies of consecutive runs [`Tally::merge`] into the tally of both.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    /// The highest seq (as [`crate::projection::seq_of`] reads it), 0 for none.
    pub last_seq: i64,
    /// Per event type, the highest seq (types without a positive seq are left out).
    pub positions: BTreeMap<String, i64>,
    /// The latest `ts` of a typed, non-provenance event.
    pub updated_at: Option<String>,
    /// The kept events.
    pub kept: Vec<Value>,
}

impl Tally {
    /// Adds the next event.
    pub fn feed(&mut self, event: &Compact<'_>) {
        let etype = event.etype();
        let statement =
            if etype.as_deref() == Some("observation") { event.statement() } else { None };
        self.note(etype.as_deref(), event.seq(), event.ts().as_deref());
        if keeps(etype.as_deref(), statement.as_deref()) {
            self.kept.push(event.to_value());
        }
    }

    /// Adds the next event, given whole (an archived one).
    pub fn feed_value(&mut self, event: &Value) {
        let etype = event.get("type").and_then(Value::as_str);
        let seq = event.get("seq").and_then(Value::as_i64).unwrap_or(0);
        self.note(etype, seq, event.str_at("ts"));
        if keeps(etype, event.str_at("statement")) {
            self.kept.push(event.clone());
        }
    }

    fn note(&mut self, etype: Option<&str>, seq: i64, ts: Option<&str>) {
        self.last_seq = self.last_seq.max(seq);
        let Some(etype) = etype else { return };
        if PROVENANCE_TYPES.contains(&etype) {
            return;
        }
        match self.positions.get_mut(etype) {
            Some(top) => *top = (*top).max(seq),
            None if !etype.is_empty() && seq > 0 => {
                self.positions.insert(etype.to_owned(), seq);
            }
            None => {}
        }
        if let Some(ts) = ts
            && self.updated_at.as_deref().is_none_or(|u| ts > u)
        {
            self.updated_at = Some(ts.to_owned());
        }
    }

    /// Appends `later`, the tally of the events that follow this one's.
    pub fn merge(&mut self, later: Tally) {
        self.last_seq = self.last_seq.max(later.last_seq);
        for (etype, seq) in later.positions {
            let top = self.positions.entry(etype).or_insert(seq);
            *top = (*top).max(seq);
        }
        if let Some(ts) = later.updated_at
            && self.updated_at.as_deref().is_none_or(|u| ts.as_str() > u)
        {
            self.updated_at = Some(ts);
        }
        self.kept.extend(later.kept);
    }

    /// The tally as a JSON object (what a cache of it stores).
    pub fn to_value(&self) -> Value {
        let positions = self.positions.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect();
        Value::Object(Map::from([
            ("last_seq".to_owned(), self.last_seq.into()),
            ("positions".to_owned(), Value::Object(positions)),
            ("updated_at".to_owned(), self.updated_at.as_deref().map_or(Value::Null, Value::from)),
            ("kept".to_owned(), Value::Array(self.kept.clone())),
        ]))
    }

    /// The tally [`Tally::to_value`] wrote, or `None` for anything else.
    pub fn from_value(value: &Value) -> Option<Tally> {
        let mut positions = BTreeMap::new();
        for (k, v) in value.get("positions")?.as_object()? {
            positions.insert(k.clone(), v.as_i64()?);
        }
        let updated_at = match value.get("updated_at")? {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            _ => return None,
        };
        let kept = value.get("kept")?.as_array()?;
        if !kept.iter().all(|e| matches!(e, Value::Object(_))) {
            return None;
        }
        Some(Tally {
            last_seq: value.get("last_seq")?.as_i64()?,
            positions,
            updated_at,
            kept: kept.to_vec(),
        })
    }
}
