//! Satisfaction semantics and the `state.json` snapshot: pure functions of (contract, events).
//!
//! These reproduce upstream `ledger.py`'s module-level semantics (`criterion_states`,
//! `invariant_findings`, `invalidated_before`, `Writer.snapshot`). Nothing here reads a file
//! or the clock, so the same journal always projects to the same bytes.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use canonical_json::{Map, Number, Value};

use crate::event::{Compact, Tally};
use crate::validate::{Generation, contract_generation};

/// The snapshot schema URL (`state.json`).
pub const SNAPSHOT_URL: &str = "https://deepworkplan.com/schema/plan-snapshot/v6.json";
pub use crate::event::PROVENANCE_TYPES;

/// One retired journal segment (`journal-archive-<first>-<last>.ndjson`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Archive {
    /// The file name, relative to the plan directory.
    pub file: String,
    /// First seq, from the name.
    pub first_seq: u64,
    /// Last seq, from the name.
    pub last_seq: u64,
}

impl Archive {
    /// Parses an archive file name (`journal-archive-NNNNNN-NNNNNN.ndjson`).
    pub fn from_name(name: &str) -> Option<Archive> {
        let rest = name.strip_prefix("journal-archive-")?.strip_suffix(".ndjson")?;
        let (a, b) = rest.split_once('-')?;
        let six = |s: &str| s.len() == 6 && s.bytes().all(|c| c.is_ascii_digit());
        if !six(a) || !six(b) {
            return None;
        }
        Some(Archive {
            file: name.to_owned(),
            first_seq: a.parse().ok()?,
            last_seq: b.parse().ok()?,
        })
    }
}

/// `event.get('seq', 0)` as a number (non-integers count as 0).
pub fn seq_of(event: &Value) -> i64 {
    event.get("seq").and_then(Value::as_i64).unwrap_or(0)
}

fn type_of(event: &Value) -> Option<&str> {
    event.get("type").and_then(Value::as_str)
}

fn int(n: i64) -> Value {
    Value::Number(Number::Int(canonical_json::Integer::Small(n)))
}

fn s(text: &str) -> Value {
    Value::String(text.to_owned())
}

/// The seq of a task's latest `task_start`, if any.
pub fn task_start_seq_of(events: &[Value], task: &str) -> Option<i64> {
    events
        .iter()
        .filter(|e| type_of(e) == Some("task_start") && e.str_at("task") == Some(task))
        .map(seq_of)
        .max()
}

/// The contract's task object by id.
pub fn find_task<'a>(contract: &'a Value, task: &str) -> Option<&'a Value> {
    contract.get("tasks").and_then(Value::as_array)?.iter().find(|t| t.str_at("id") == Some(task))
}

/// The criterion ids a task's `gate_intent` declares, in order.
pub fn intent_criteria(task: &Value) -> Vec<&Value> {
    task.get("gate_intent")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .map(|i| i.get("criterion").unwrap_or(&Value::Null))
        .collect()
}

/// `{criterion: seq}`: evidence recorded before `seq` no longer counts (amendments; an
/// amendment written by `amend` counts only once an approval cites its new contract).
pub fn invalidated_before(events: &[Value]) -> BTreeMap<String, i64> {
    let approved: BTreeSet<&str> = events
        .iter()
        .filter(|e| type_of(e) == Some("approval"))
        .filter_map(|e| e.str_at("contract_id"))
        .collect();
    let mut found: BTreeMap<String, i64> = BTreeMap::new();
    for event in events.iter().filter(|e| type_of(e) == Some("amendment")) {
        if let Some(tag) = amend_tag(event.str_at("note").unwrap_or(""))
            && !approved.contains(tag)
        {
            continue;
        }
        for r in event.get("evidence_invalidated").and_then(Value::as_array).unwrap_or(&[]) {
            if let Some(r) = r.as_str() {
                let entry = found.entry(r.to_owned()).or_insert(0);
                *entry = (*entry).max(seq_of(event));
            }
        }
    }
    found
}

/// The contract id in an `amendment to revision N contract <hex64>` note tag.
fn amend_tag(note: &str) -> Option<&str> {
    let mut rest = note;
    while let Some(at) = rest.find("amendment to revision ") {
        let after = &rest[at + "amendment to revision ".len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0
            && let Some(tail) = after[digits..].strip_prefix(" contract ")
            && tail.len() >= 64
            && tail.as_bytes()[..64].iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        {
            return Some(&tail[..64]);
        }
        rest = &rest[at + 1..];
    }
    None
}

/// Satisfaction per `gate_intent` criterion of `task` (upstream `criterion_states`).
///
/// Returns `None` when the task is not in the contract.
pub fn criterion_states(contract: &Value, events: &[Value], task_id: &str) -> Option<Vec<Value>> {
    let index = EvidenceIndex::new(contract, events);
    let task = index.task(task_id)?;
    Some(index.criterion_states(task, task_id, &invalidated_before(events)))
}

/// What the per-task rules read, gathered in one pass over the contract and one over the
/// events, so that a snapshot of T tasks over E events costs T + E (plus each task's own
/// evidence), where searching the events per criterion and the tasks per task cost T x E and
/// T x T.
#[derive(Debug)]
struct EvidenceIndex<'a> {
    /// Task id -> the first task object of that id (as `find_task` finds it).
    tasks: HashMap<&'a str, &'a Value>,
    /// Criterion id -> its accepted evidence labels (the last criterion of an id wins).
    accepted_by: HashMap<&'a str, Vec<&'a str>>,
    /// Task id -> the seq of its latest `task_start`.
    starts: HashMap<&'a str, i64>,
    /// (task id, canonical text of the criterion) -> its `gate_run`s, in journal order.
    runs: HashMap<(&'a str, String), Vec<&'a Value>>,
}

/// A JSON value as a map key: its canonical text (equal values, equal keys).
fn value_key(value: &Value) -> String {
    canonical_json::to_python_compact(value)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// Task progress over one journal, indexed once: [`criterion_states`], [`task_complete`],
/// [`task_status`] and [`task_start_seq_of`] for many tasks at the cost of one pass over the
/// contract and the events (each of those functions alone re-reads both for one task, so a
/// caller asking about every task would pay tasks x events).
#[derive(Debug)]
pub struct Progress<'a> {
    index: EvidenceIndex<'a>,
    invalid: BTreeMap<String, i64>,
}

impl<'a> Progress<'a> {
    /// The progress of `contract`'s tasks over `events`.
    pub fn new(contract: &'a Value, events: &'a [Value]) -> Progress<'a> {
        Progress {
            index: EvidenceIndex::new(contract, events),
            invalid: invalidated_before(events),
        }
    }

    /// As [`criterion_states`].
    pub fn criterion_states(&self, task_id: &str) -> Option<Vec<Value>> {
        let task = self.index.task(task_id)?;
        Some(self.index.criterion_states(task, task_id, &self.invalid))
    }

    /// As [`task_complete`].
    pub fn task_complete(&self, task_id: &str) -> bool {
        self.criterion_states(task_id).is_some_and(|s| s.iter().all(satisfied))
    }

    /// As [`task_start_seq_of`].
    pub fn started(&self, task_id: &str) -> Option<i64> {
        self.index.starts.get(task_id).copied()
    }

    /// As [`task_status`].
    pub fn task_status(&self, task_id: &str) -> &'static str {
        if self.started(task_id).is_none() {
            "pending"
        } else if self.task_complete(task_id) {
            "completed"
        } else {
            "in_progress"
        }
    }

    /// As [`find_task`].
    pub fn task(&self, task_id: &str) -> Option<&'a Value> {
        self.index.task(task_id)
    }
}

impl<'a> EvidenceIndex<'a> {
    fn new(contract: &'a Value, events: &'a [Value]) -> EvidenceIndex<'a> {
        let mut tasks = HashMap::new();
        for task in contract.get("tasks").and_then(Value::as_array).unwrap_or(&[]) {
            if let Some(id) = task.str_at("id") {
                tasks.entry(id).or_insert(task);
            }
        }
        let mut accepted_by = HashMap::new();
        let criteria = contract.get("acceptance").and_then(|a| a.get("criteria"));
        for c in criteria.and_then(Value::as_array).unwrap_or(&[]) {
            if let Some(id) = c.str_at("id") {
                let labels = c
                    .get("accepted_evidence")
                    .and_then(Value::as_array)
                    .unwrap_or(&[])
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                accepted_by.insert(id, labels);
            }
        }
        let mut starts: HashMap<&str, i64> = HashMap::new();
        let mut runs: HashMap<(&str, String), Vec<&Value>> = HashMap::new();
        for event in events {
            match type_of(event) {
                Some("task_start") => {
                    if let Some(task) = event.str_at("task") {
                        let seq = seq_of(event);
                        starts.entry(task).and_modify(|s| *s = (*s).max(seq)).or_insert(seq);
                    }
                }
                Some("gate_run") => {
                    if let (Some(task), Some(criterion)) =
                        (event.str_at("task"), event.get("criterion"))
                    {
                        runs.entry((task, value_key(criterion))).or_default().push(event);
                    }
                }
                _ => {}
            }
        }
        EvidenceIndex { tasks, accepted_by, starts, runs }
    }

    fn task(&self, id: &str) -> Option<&'a Value> {
        self.tasks.get(id).copied()
    }

    fn criterion_states(
        &self,
        task: &Value,
        task_id: &str,
        invalid: &BTreeMap<String, i64>,
    ) -> Vec<Value> {
        let start = self.starts.get(task_id).copied();
        let mut states = Vec::new();
        for cid in intent_criteria(task) {
            let cid_str = cid.as_str();
            let wanted = cid_str.and_then(|c| self.accepted_by.get(c)).cloned().unwrap_or_default();
            let floor = cid_str.and_then(|c| invalid.get(c)).copied().unwrap_or(0);
            let mut best: Option<(i64, &Value)> = None;
            let mut stale = Vec::new();
            let runs = self.runs.get(&(task_id, value_key(cid))).map_or(&[][..], Vec::as_slice);
            for &event in runs {
                let seq = seq_of(event);
                if start.is_none_or(|st| seq < st) || seq < floor {
                    stale.push(event.get("seq").cloned().unwrap_or(Value::Null));
                    continue;
                }
                let trust = event.str_at("trust");
                let passed = event.get("exit_code").and_then(Value::as_i64) == Some(0);
                if trust.is_some_and(|t| wanted.contains(&t))
                    && passed
                    && best.is_none_or(|(b, _)| seq > b)
                {
                    best = Some((seq, event));
                }
            }
            let state = match best {
                Some((seq, event)) => Value::Object(Map::from([
                    ("criterion".to_owned(), cid.clone()),
                    ("satisfied".to_owned(), Value::Bool(true)),
                    ("via_seq".to_owned(), int(seq)),
                    ("trust".to_owned(), event.get("trust").cloned().unwrap_or(Value::Null)),
                    (
                        "evidence_path".to_owned(),
                        event.get("evidence_path").cloned().unwrap_or(Value::Null),
                    ),
                ])),
                None => Value::Object(Map::from([
                    ("criterion".to_owned(), cid.clone()),
                    ("satisfied".to_owned(), Value::Bool(false)),
                    ("started_seq".to_owned(), start.map_or(Value::Null, int)),
                    ("stale_seqs".to_owned(), Value::Array(stale)),
                ])),
            };
            states.push(state);
        }
        states
    }
}

/// The ids of the contract's tasks whose every `gate_intent` criterion has in-window accepted
/// evidence ([`task_complete`] for each task, from one index: linear in tasks + events).
pub fn complete_tasks<'a>(contract: &'a Value, events: &[Value]) -> Vec<&'a str> {
    let index = EvidenceIndex::new(contract, events);
    let invalid = invalidated_before(events);
    let tasks = contract.get("tasks").and_then(Value::as_array).unwrap_or(&[]);
    tasks
        .iter()
        .filter_map(|t| t.str_at("id"))
        .filter(|id| {
            index
                .task(id)
                .is_some_and(|t| index.criterion_states(t, id, &invalid).iter().all(satisfied))
        })
        .collect()
}

fn satisfied(state: &Value) -> bool {
    state.get("satisfied").and_then(Value::as_bool) == Some(true)
}

/// True when every `gate_intent` criterion of the task has in-window accepted evidence.
pub fn task_complete(contract: &Value, events: &[Value], task: &str) -> bool {
    criterion_states(contract, events, task).is_some_and(|s| s.iter().all(satisfied))
}

/// Derived task status: `pending`, `completed` or `in_progress`.
pub fn task_status(contract: &Value, events: &[Value], task: &str) -> &'static str {
    if task_start_seq_of(events, task).is_none() {
        "pending"
    } else if task_complete(contract, events, task) {
        "completed"
    } else {
        "in_progress"
    }
}

/// Declared invariants not verified for the attempt starting at `start_seq`.
pub fn invariant_findings(
    contract: &Value,
    events: &[Value],
    start_seq: Option<i64>,
) -> Vec<String> {
    let mut findings = Vec::new();
    // The latest evaluation of every invariant id, from one pass: a statement `X: pass`,
    // `X: fail` or `X: fail:…` evaluates X (each `: fail:` in it offers one candidate X), so
    // the ids a statement can evaluate are read off the statement instead of searching the
    // events per invariant (invariants x events).
    let mut latest_of: HashMap<&str, &Value> = HashMap::new();
    for e in events.iter().filter(|e| type_of(e) == Some("observation")) {
        let Some(st) = e.str_at("statement") else { continue };
        for suffix in [": pass", ": fail"] {
            if let Some(iid) = st.strip_suffix(suffix) {
                latest_of.insert(iid, e);
            }
        }
        // (Overlapping occurrences too: `A: fail: fail:` evaluates both `A` and `A: fail`.)
        let mut from = 0;
        while let Some(at) = st.get(from..).and_then(|rest| rest.find(": fail:")) {
            latest_of.insert(&st[..from + at], e);
            from += at + 1;
        }
    }
    for inv in contract.get("invariants").and_then(Value::as_array).unwrap_or(&[]) {
        let Some(iid) = inv.str_at("id") else { continue };
        let pass = format!("{iid}: pass");
        let latest = latest_of.get(iid).copied();
        match latest {
            None => findings.push(format!("{iid} never evaluated")),
            Some(e) if start_seq.is_some_and(|st| seq_of(e) < st) => findings.push(format!(
                "{iid} last evaluated at seq {}, before the task start {}",
                crate::py::str_opt(e.get("seq")),
                start_seq.unwrap_or(0)
            )),
            Some(e) if e.str_at("statement") != Some(pass.as_str()) => {
                findings.push(format!("{iid} failed (seq {})", crate::py::str_opt(e.get("seq"))))
            }
            Some(_) => {}
        }
    }
    findings
}

/// The latest event per `delegation_id` (optionally for one task).
pub fn delegations<'a>(events: &'a [Value], task: Option<&str>) -> BTreeMap<String, &'a Value> {
    let mut latest = BTreeMap::new();
    for event in events.iter().filter(|e| type_of(e) == Some("delegation")) {
        if task.is_some_and(|t| event.str_at("task") != Some(t)) {
            continue;
        }
        latest.insert(crate::py::str_opt(event.get("delegation_id")), event);
    }
    latest
}

/// The `state.json` document (plan-snapshot/v6) for a journal (archived + live events).
pub fn snapshot(
    contract: &Value,
    contract_id: &str,
    events: &[Value],
    archives: &[Archive],
) -> Value {
    let mut tally = Tally::default();
    for event in events {
        tally.feed_value(event);
    }
    snapshot_with(contract, contract_id, archives, tally)
}

/// [`snapshot`] in one pass without holding the journal: feed archived then live events in
/// journal order (or [`Projector::merge`] the [`Tally`] of the live ones), then
/// [`Projector::finish`]. Only the events a [`Tally`] keeps are held; the result is identical
/// to [`snapshot`] over all events.
#[derive(Debug, Default)]
pub struct Projector {
    tally: Tally,
}

impl Projector {
    /// An empty projection.
    pub fn new() -> Projector {
        Projector::default()
    }

    /// Adds the next event (journal order).
    pub fn feed(&mut self, event: &Value) {
        self.tally.feed_value(event);
    }

    /// Adds the next event as a read path keeps it ([`Compact`]): the same projection as
    /// [`Projector::feed`] of the whole event, building an object only for the kept types.
    pub fn feed_compact(&mut self, event: &Compact<'_>) {
        self.tally.feed(event);
    }

    /// Appends the tally of the events that follow the ones fed so far.
    pub fn merge(&mut self, later: Tally) {
        self.tally.merge(later);
    }

    /// The `state.json` document.
    pub fn finish(self, contract: &Value, contract_id: &str, archives: &[Archive]) -> Value {
        snapshot_with(contract, contract_id, archives, self.tally)
    }
}

fn snapshot_with(contract: &Value, contract_id: &str, archives: &[Archive], tally: Tally) -> Value {
    let Tally { positions, updated_at, kept: events, .. } = tally;
    let events = &events[..];
    let updated_at = updated_at.as_deref();
    let generation = contract_generation(contract).unwrap_or(Generation::V6);
    let invalid = invalidated_before(events);
    let index = EvidenceIndex::new(contract, events);
    let mut tasks = Vec::new();
    for task in contract.get("tasks").and_then(Value::as_array).unwrap_or(&[]) {
        let Some(id) = task.str_at("id") else { continue };
        let started = index.starts.get(id).copied();
        // (The first task of an id, as upstream's lookup finds it.)
        let states = index
            .task(id)
            .map(|first| index.criterion_states(first, id, &invalid))
            .unwrap_or_default();
        let status = match started {
            None => "pending",
            Some(_) if states.iter().all(satisfied) => "completed",
            Some(_) => "in_progress",
        };
        tasks.push(Value::Object(Map::from([
            ("id".to_owned(), s(id)),
            ("title".to_owned(), task.get("title").cloned().unwrap_or(Value::Null)),
            ("status".to_owned(), s(status)),
            ("started_seq".to_owned(), started.map_or(Value::Null, int)),
            ("criteria".to_owned(), Value::Array(states)),
        ])));
    }
    let mut samples = Map::new();
    for event in events.iter().filter(|e| type_of(e) == Some("resource_sample")) {
        let key = match event.get("limit_id") {
            Some(Value::String(k)) => k.clone(),
            other => crate::py::repr_opt(other).replace("None", "null"),
        };
        samples.insert(
            key,
            Value::Object(Map::from([
                ("value".to_owned(), event.get("value").cloned().unwrap_or(Value::Null)),
                ("seq".to_owned(), event.get("seq").cloned().unwrap_or(Value::Null)),
                ("trust".to_owned(), event.get("trust").cloned().unwrap_or(Value::Null)),
            ])),
        );
    }
    let limits = contract
        .get("resource_envelope")
        .and_then(|r| r.get("limits"))
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    let checkpoint = events
        .iter()
        .rev()
        .find(|e| {
            type_of(e) == Some("intervention") && e.str_at("category") == Some("new_authority")
        })
        .and_then(|e| e.get("question").cloned())
        .unwrap_or(Value::Null);
    let mut state = Map::from([
        ("schema".to_owned(), s(SNAPSHOT_URL)),
        ("plan".to_owned(), contract.get("plan").cloned().unwrap_or(Value::Null)),
        ("contract_id".to_owned(), s(contract_id)),
        (
            "contract_revision".to_owned(),
            contract.get("revision").cloned().unwrap_or_else(|| int(1)),
        ),
        ("generated_by".to_owned(), s(generation.ledger_identity())),
        ("updated_at".to_owned(), s(updated_at.unwrap_or(""))),
        ("tasks".to_owned(), Value::Array(tasks)),
        (
            "positions".to_owned(),
            Value::Object(
                positions
                    .into_iter()
                    .map(|(k, v)| (k, Value::Object(Map::from([("seq".to_owned(), int(v))]))))
                    .collect(),
            ),
        ),
        (
            "resources".to_owned(),
            Value::Object(Map::from([
                ("limits".to_owned(), limits),
                ("latest_samples".to_owned(), Value::Object(samples)),
            ])),
        ),
        ("checkpoint".to_owned(), checkpoint),
        ("blocker".to_owned(), Value::Null),
    ]);
    if !archives.is_empty() {
        state.insert(
            "archives".to_owned(),
            Value::Array(
                archives
                    .iter()
                    .map(|a| {
                        Value::Object(Map::from([
                            ("file".to_owned(), s(&a.file)),
                            (
                                "first_seq".to_owned(),
                                int(i64::try_from(a.first_seq).unwrap_or(i64::MAX)),
                            ),
                            (
                                "last_seq".to_owned(),
                                int(i64::try_from(a.last_seq).unwrap_or(i64::MAX)),
                            ),
                        ]))
                    })
                    .collect(),
            ),
        );
    }
    Value::Object(state)
}

/// Payload of an event: everything but the envelope keys.
pub fn payload_of(event: &Value) -> Value {
    canonical_json::digest::without_top_level(
        event,
        &["schema", "type", "seq", "ts", "plan", "contract_id", "actor", "note"],
    )
}

/// Idempotence content key: sha256 of compact sorted
/// `{type, payload, actor_identity, contract_id}`.
pub fn content_key(
    etype: &Value,
    payload: &Value,
    actor: Option<&Value>,
    contract_id: &Value,
) -> String {
    let body = Value::Object(Map::from([
        ("type".to_owned(), etype.clone()),
        ("payload".to_owned(), payload.clone()),
        (
            "actor_identity".to_owned(),
            actor.and_then(|a| a.get("identity")).cloned().unwrap_or(Value::Null),
        ),
        ("contract_id".to_owned(), contract_id.clone()),
    ]));
    let bytes = canonical_json::to_python_compact(&body).unwrap_or_default();
    canonical_json::digest::sha256_hex(&bytes)
}
