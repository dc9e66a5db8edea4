//! The v6 per-task context manifest as upstream `context_manifest.py` derives it (`dwp context
//! manifest|freshness|accounting`): identity, authorization carried verbatim, repository rules
//! with invariant status, the task's closure decisions, in-window evidence with pointer checks,
//! the next-action ladder, the dead-end digest, the inputs fingerprint and history triggers.
//!
//! Pure: the caller reads the files (touched-surface hashes, the run fingerprints of
//! `evidence.jsonl`, whether an evidence pointer resolves) and passes them in. Nothing here reads
//! a clock; `as_of` is the last record's position.

use std::collections::BTreeMap;
use std::fmt;

use canonical_json::{Finite, Map, Value};

use crate::outcomes::{CONTROL_KINDS, closure};
use crate::projection::{criterion_states, find_task, seq_of, task_start_seq_of};
use crate::py::{repr_str, str_of, str_opt};

/// The manifest schema URL.
pub const SCHEMA: &str = "https://deepworkplan.com/schema/context-manifest/v6.json";
/// The `derived_by` identity (upstream's, so manifests compare byte for byte).
pub const IDENTITY: &str = "dwp context_manifest.py";
/// Sections a caller can never prune.
pub const MANDATORY_SECTIONS: [&str; 3] = ["authorization", "repository_rules", "acceptance"];
/// At most this many dead ends are carried (the latest).
pub const DEAD_END_CAP: usize = 50;

/// Why a manifest, a freshness verdict or an accounting was refused (`ERROR:`, exit 1).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ContextError {
    /// The task is not declared by the contract.
    UnknownTask(String),
    /// `--sections` left out mandatory sections.
    MandatoryPruned(Vec<String>),
    /// The contract declares no task (accounting needs one).
    NoTasks,
    /// A freshness summary without `inputs_fingerprint`.
    Unattributable,
}

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContextError::UnknownTask(t) => write!(
                f,
                "task {} is not in the contract - the manifest never guesses a task the plan did \
                 not declare",
                repr_str(t)
            ),
            ContextError::MandatoryPruned(missing) => write!(
                f,
                "the manifest never drops mandatory section(s) {} - context pruning cannot hide \
                 the acceptance or authorization boundary",
                missing.join(", ")
            ),
            ContextError::NoTasks => f.write_str("the contract declares no tasks"),
            ContextError::Unattributable => f.write_str(
                "the summary carries no inputs_fingerprint - an unattributable summary is stale \
                 by construction",
            ),
        }
    }
}

impl std::error::Error for ContextError {}

/// Touched-surface content hashes: repository-relative path → sha256 (`None`: missing on disk).
pub type SurfaceHashes = BTreeMap<String, Option<String>>;

/// What the caller read from disk for one manifest.
pub struct Inputs<'a> {
    /// The live contract.
    pub contract: &'a Value,
    /// Its id.
    pub contract_id: &'a str,
    /// Archived then live events.
    pub events: &'a [Value],
    /// The task's touched-surface hashes.
    pub files: &'a SurfaceHashes,
    /// `seq` → run fingerprint, from the reuse cache (`evidence.jsonl`).
    pub run_fingerprints: &'a BTreeMap<i64, Value>,
    /// Whether an evidence pointer resolves to a file (plan folder, then repository).
    pub pointer_resolves: &'a dyn Fn(&str) -> bool,
}

impl fmt::Debug for Inputs<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inputs")
            .field("contract_id", &self.contract_id)
            .field("events", &self.events.len())
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

fn field(v: &Value, key: &str) -> Value {
    v.get(key).cloned().unwrap_or(Value::Null)
}

fn type_of(v: &Value) -> Option<&str> {
    v.str_at("type")
}

/// The task, or [`ContextError::UnknownTask`].
///
/// # Errors
/// The task is not declared.
pub fn task_of<'a>(contract: &'a Value, task: &str) -> Result<&'a Value, ContextError> {
    find_task(contract, task).ok_or_else(|| ContextError::UnknownTask(task.to_owned()))
}

/// The task's declared touched surface (entries as written; the caller expands directories).
pub fn surface_entries(task: &Value) -> Vec<String> {
    task.get("touched_surface")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// sha256 over `{"contract_id", "files"}` in Python's compact sorted form.
pub fn inputs_fingerprint(contract_id: &str, files: &SurfaceHashes) -> String {
    let files: Map = files
        .iter()
        .map(|(k, v)| (k.clone(), v.as_deref().map_or(Value::Null, Value::from)))
        .collect();
    let body =
        Value::object([("contract_id", contract_id.into()), ("files", Value::Object(files))]);
    let bytes =
        canonical_json::to_python(&body, canonical_json::PyFormat::COMPACT).unwrap_or_default();
    canonical_json::digest::sha256_hex(&bytes)
}

fn approvals_of(events: &[Value], contract_id: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| type_of(e) == Some("approval") && e.str_at("contract_id") == Some(contract_id))
        .map(|e| {
            Value::object([
                ("authority", field(e, "authority")),
                ("mechanism", field(e, "mechanism")),
                ("ts", field(e, "ts")),
                ("seq", field(e, "seq")),
            ])
        })
        .collect()
}

/// The latest task_start, else the latest approval, else 0 (upstream `reference_position`).
fn reference_position(events: &[Value]) -> i64 {
    let latest = |t: &str| events.iter().filter(|e| type_of(e) == Some(t)).map(seq_of).max();
    latest("task_start").or_else(|| latest("approval")).unwrap_or(0)
}

/// Per declared invariant: `state` (pass, fail, stale, unevaluated), `seq` and, for a current
/// evaluation, its `detail` statement (upstream `scheduler.invariant_status`).
pub fn invariant_status(contract: &Value, events: &[Value]) -> BTreeMap<String, Value> {
    let ids: Vec<String> = contract
        .get("invariants")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(|i| i.str_at("id").map(str::to_owned))
        .collect();
    let mut latest: BTreeMap<&str, (i64, &str, &str)> = BTreeMap::new();
    for e in events.iter().filter(|e| type_of(e) == Some("observation")) {
        let Some(statement) = e.str_at("statement") else { continue };
        for iid in &ids {
            let Some(verdict) =
                statement.strip_prefix(iid.as_str()).and_then(|r| r.strip_prefix(": "))
            else {
                continue;
            };
            let outcome = if verdict == "pass" {
                "pass"
            } else if verdict == "fail" || verdict.starts_with("fail:") {
                "fail"
            } else {
                continue;
            };
            let seq = seq_of(e);
            if latest.get(iid.as_str()).is_none_or(|(s, _, _)| seq >= *s) {
                latest.insert(iid, (seq, outcome, statement));
            }
        }
    }
    let reference = reference_position(events);
    let mut out = BTreeMap::new();
    for iid in &ids {
        let status = match latest.get(iid.as_str()) {
            None => Value::object([("state", "unevaluated".into()), ("seq", Value::Null)]),
            Some((seq, _, _)) if *seq < reference => {
                Value::object([("state", "stale".into()), ("seq", (*seq).into())])
            }
            Some((seq, outcome, statement)) => Value::object([
                ("state", (*outcome).into()),
                ("seq", (*seq).into()),
                ("detail", (*statement).into()),
            ]),
        };
        out.insert(iid.clone(), status);
    }
    out
}

/// The dead-end digest: failed gates, the latest refusal per (subject, stage), refused
/// adaptations and non-discriminating controls, over all history; a failed gate leaves only
/// when the same run fingerprint later passed, and a control from a superseded revision is
/// marked `aged_out` (kept). The latest [`DEAD_END_CAP`] by seq.
pub fn dead_ends(
    events: &[Value],
    contract_id: &str,
    run_fingerprints: &BTreeMap<i64, Value>,
) -> Vec<Value> {
    let mut passing: Vec<&Value> = Vec::new();
    let mut entries: Vec<Value> = Vec::new();
    let mut refusals: Vec<((Value, Value), Value)> = Vec::new();
    for e in events {
        let seq = seq_of(e);
        match type_of(e) {
            Some("gate_run") => {
                let fp = run_fingerprints.get(&seq);
                if e.get("exit_code").and_then(Value::as_i64) == Some(0) {
                    if let Some(fp) = fp.filter(|f| crate::py::truthy(Some(f))) {
                        passing.push(fp);
                    }
                    continue;
                }
                entries.push(Value::object([
                    ("kind", "failed_gate".into()),
                    ("seq", seq.into()),
                    ("ts", field(e, "ts")),
                    ("task", field(e, "task")),
                    ("criterion", field(e, "criterion")),
                    ("command", field(e, "command")),
                    ("exit_code", field(e, "exit_code")),
                    ("cause", field(e, "evidence_path")),
                    ("run_fingerprint", fp.cloned().unwrap_or(Value::Null)),
                ]));
            }
            Some("refusal") => {
                let key = (field(e, "subject"), field(e, "stage"));
                let entry = Value::object([
                    ("kind", "refusal".into()),
                    ("seq", seq.into()),
                    ("ts", field(e, "ts")),
                    ("subject", field(e, "subject")),
                    ("stage", field(e, "stage")),
                    ("reason", field(e, "reason")),
                    ("cause", format!("journal seq {seq}").into()),
                ]);
                // A dict keeps its first insertion position while the value is replaced.
                match refusals.iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => slot.1 = entry,
                    None => refusals.push((key, entry)),
                }
            }
            Some("adaptation") if e.str_at("decision") == Some("refused") => {
                entries.push(Value::object([
                    ("kind", "refused_adaptation".into()),
                    ("seq", seq.into()),
                    ("ts", field(e, "ts")),
                    ("subject", format!("{} adaptation", str_opt(e.get("kind"))).into()),
                    ("reason", field(e, "reason")),
                    ("cause", format!("journal seq {seq}").into()),
                ]));
            }
            Some("control_pair") if e.str_at("verdict") == Some("non_discriminating") => {
                entries.push(Value::object([
                    ("kind", "non_discriminating_control".into()),
                    ("seq", seq.into()),
                    ("ts", field(e, "ts")),
                    ("criterion", field(e, "criterion")),
                    ("verdict", field(e, "verdict")),
                    ("cause", field(e, "evidence_path")),
                    ("recorded_contract_id", field(e, "contract_id")),
                ]));
            }
            _ => {}
        }
    }
    let mut kept: Vec<Value> = Vec::new();
    for mut entry in entries {
        let kind = entry.str_at("kind").unwrap_or("").to_owned();
        if kind == "failed_gate"
            && entry.get("run_fingerprint").is_some_and(|fp| passing.contains(&fp))
        {
            continue;
        }
        if kind == "non_discriminating_control"
            && entry.str_at("recorded_contract_id") != Some(contract_id)
            && let Some(map) = entry.as_object_mut()
        {
            map.insert("aged_out".to_owned(), "superseded contract revision".into());
        }
        kept.push(entry);
    }
    kept.extend(refusals.into_iter().map(|(_, v)| v));
    kept.sort_by_key(seq_of);
    let skip = kept.len().saturating_sub(DEAD_END_CAP);
    kept.split_off(skip)
}

fn next_action(contract_id: &str, events: &[Value], task: &str, mine: &[Value]) -> Value {
    if approvals_of(events, contract_id).is_empty() {
        return Value::object([
            ("step", "approval".into()),
            (
                "action",
                format!(
                    "record the materialization-time approval citing contract_id {} - \
                     task_start is refused without it",
                    crate::py::head(contract_id, 12)
                )
                .into(),
            ),
        ]);
    }
    if task_start_seq_of(events, task).is_none() {
        return Value::object([
            ("step", "start".into()),
            (
                "action",
                format!(
                    "ledger.py --plan <dir> start --task {task} - captures the starting \
                     fingerprint a control pair materializes"
                )
                .into(),
            ),
        ]);
    }
    let satisfied = |c: &Value| c.get("satisfied").and_then(Value::as_bool) == Some(true);
    let mechanism = |c: &Value| c.str_at("mechanism").unwrap_or("").to_owned();
    let criterion = |c: &Value| str_opt(c.get("criterion"));
    let blocked: Vec<&Value> =
        mine.iter().filter(|c| mechanism(c).starts_with("blocked")).collect();
    if !blocked.is_empty() {
        let list: Vec<String> =
            blocked.iter().map(|c| format!("{} ({})", criterion(c), mechanism(c))).collect();
        return Value::object([
            ("step", "authority".into()),
            (
                "action",
                format!(
                    "blocked criteria need an authority act (amendment) or a changed world, not \
                     more evidence: {}",
                    list.join("; ")
                )
                .into(),
            ),
        ]);
    }
    let ids = |list: &[&Value]| Value::Array(list.iter().map(|c| field(c, "criterion")).collect());
    let controlled: Vec<&Value> = mine
        .iter()
        .filter(|c| {
            !satisfied(c) && c.str_at("control_kind").is_some_and(|k| CONTROL_KINDS.contains(&k))
        })
        .collect();
    if let Some(first) = controlled.first() {
        return Value::object([
            ("step", "control".into()),
            (
                "action",
                format!(
                    "execute the declared control pair: outcomes.py --plan <dir> control --task \
                     {task} --criterion {} --command <cmd> --artifact <path>",
                    criterion(first)
                )
                .into(),
            ),
            ("criteria", ids(&controlled)),
        ]);
    }
    let open: Vec<&Value> = mine.iter().filter(|c| !satisfied(c)).collect();
    if let Some(first) = open.first() {
        return Value::object([
            ("step", "evidence".into()),
            (
                "action",
                format!(
                    "produce in-window accepted evidence: ledger.py --plan <dir> gate --task \
                     {task} --criterion {} --json <command>",
                    criterion(first)
                )
                .into(),
            ),
            ("criteria", ids(&open)),
        ]);
    }
    Value::object([
        ("step", "complete".into()),
        (
            "action",
            format!(
                "all criteria satisfied on in-window accepted evidence: ledger.py --plan <dir> \
                 complete --task {task}"
            )
            .into(),
        ),
    ])
}

fn history_triggers(contract: &Value, events: &[Value], task: &str) -> Value {
    let mut triggers =
        vec![Value::object([("trigger", "none".into()), ("loads", "this manifest alone".into())])];
    if let Some(handoff) = contract.pointer("/scheduling/handoff").and_then(Value::as_object)
        && !handoff.is_empty()
    {
        let pairs: Vec<String> =
            handoff.iter().map(|(k, v)| format!("{k}={}", str_of(v))).collect();
        triggers.push(Value::object([
            ("trigger", format!("handoff ({})", pairs.join("; ")).into()),
            ("loads", "state.json + this manifest + the handoff observation".into()),
        ]));
    }
    let amended = events.iter().any(|e| {
        type_of(e) == Some("amendment")
            && e.get("affected_tasks")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|t| t.as_str() == Some(task)))
    });
    if amended {
        triggers.push(Value::object([
            ("trigger", "an amendment affects this task".into()),
            ("loads", "the amendment event and the revised criterion text".into()),
        ]));
    }
    Value::Array(triggers)
}

/// Derives the manifest. `sections` may leave out optional sections only.
///
/// # Errors
/// A pruned mandatory section, an unknown task.
pub fn manifest(
    inputs: &Inputs<'_>,
    task: &str,
    sections: Option<&[String]>,
) -> Result<Value, ContextError> {
    if let Some(sections) = sections {
        let missing: Vec<String> = MANDATORY_SECTIONS
            .iter()
            .filter(|m| !sections.iter().any(|s| s == *m))
            .map(|m| (*m).to_owned())
            .collect();
        if !missing.is_empty() {
            return Err(ContextError::MandatoryPruned(missing));
        }
    }
    let contract = inputs.contract;
    let events = inputs.events;
    task_of(contract, task)?;
    let closure_all = closure(contract, events);
    let mine: Vec<Value> = closure_all
        .get("criteria")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter(|c| c.str_at("task") == Some(task))
        .cloned()
        .collect();
    let states = criterion_states(contract, events, task).unwrap_or_default();
    let satisfied: Vec<&Value> = states
        .iter()
        .filter(|s| s.get("satisfied").and_then(Value::as_bool) == Some(true))
        .collect();
    let missing_files: Vec<&str> =
        inputs.files.iter().filter(|(_, d)| d.is_none()).map(|(k, _)| k.as_str()).collect();
    let widen = !missing_files.is_empty() || satisfied.is_empty();
    let mut reasons: Vec<Value> = Vec::new();
    if !missing_files.is_empty() {
        reasons.push(
            format!("touched-surface entries missing on disk: {}", missing_files.join(", ")).into(),
        );
    }
    if satisfied.is_empty() {
        reasons.push(
            "no in-window accepted evidence yet - the impact of the surface is unmapped".into(),
        );
    }
    let evidence: Vec<Value> = satisfied
        .iter()
        .map(|s| {
            let pointer = s.str_at("evidence_path");
            Value::object([
                ("criterion", field(s, "criterion")),
                ("seq", field(s, "via_seq")),
                ("trust", field(s, "trust")),
                ("evidence_path", field(s, "evidence_path")),
                ("pointer_resolves", Value::Bool(pointer.is_some_and(inputs.pointer_resolves))),
            ])
        })
        .collect();
    let status = invariant_status(contract, events);
    let invariants: Vec<Value> = contract
        .get("invariants")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .map(|inv| {
            let mut m = Map::new();
            m.insert("id".to_owned(), field(inv, "id"));
            m.insert("statement".to_owned(), field(inv, "statement"));
            if let Some(Value::Object(s)) = inv.str_at("id").and_then(|i| status.get(i)) {
                m.extend(s.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            Value::Object(m)
        })
        .collect();
    let files: Map = inputs
        .files
        .iter()
        .map(|(k, v)| (k.clone(), v.as_deref().map_or(Value::Null, Value::from)))
        .collect();
    let last_seq = events.iter().map(seq_of).max().unwrap_or(0);
    let event_ts = events
        .iter()
        .map(|e| match e.get("ts") {
            None => String::new(),
            Some(v) => str_of(v),
        })
        .max()
        .unwrap_or_default();
    let mut doc = Map::new();
    let mut put = |k: &str, v: Value| {
        doc.insert(k.to_owned(), v);
    };
    put("schema", SCHEMA.into());
    put("derived_by", IDENTITY.into());
    put("plan", field(contract, "plan"));
    put("contract_id", inputs.contract_id.into());
    put("contract_revision", field(contract, "revision"));
    put("task", task.into());
    put("as_of", Value::object([("last_seq", last_seq.into()), ("event_ts", event_ts.into())]));
    put(
        "authorization",
        Value::object([
            ("approvals", Value::Array(approvals_of(events, inputs.contract_id))),
            ("contract_authorization", field(contract, "authorization")),
            ("permissions", field(contract, "permissions")),
        ]),
    );
    put(
        "repository_rules",
        Value::object([
            ("scope", field(contract, "scope")),
            ("invariants", Value::Array(invariants)),
            ("dependencies", field(contract, "dependencies")),
        ]),
    );
    put(
        "touched_surface",
        Value::object([
            ("files", Value::Object(files)),
            ("widen_discovery", Value::Bool(widen)),
            ("widen_reasons", Value::Array(reasons)),
        ]),
    );
    put("acceptance", Value::Array(mine.clone()));
    put("evidence", Value::Array(evidence));
    put("next_action", next_action(inputs.contract_id, events, task, &mine));
    put("dead_ends", Value::Array(dead_ends(events, inputs.contract_id, inputs.run_fingerprints)));
    put(
        "freshness",
        Value::object([
            ("inputs_fingerprint", inputs_fingerprint(inputs.contract_id, inputs.files).into()),
            (
                "rule",
                "a stored fingerprint different from the current one invalidates the summary \
                 that carries it"
                    .into(),
            ),
        ]),
    );
    if sections.is_none_or(|s| s.iter().any(|x| x == "history_triggers")) {
        put("history_triggers", history_triggers(contract, events, task));
    }
    Ok(Value::Object(doc))
}

/// Compares a stored summary's `inputs_fingerprint` with the current one.
///
/// # Errors
/// The summary is not an object carrying a (truthy) `inputs_fingerprint`.
pub fn freshness(summary: &Value, current: &str) -> Result<Value, ContextError> {
    let stored = summary.get("inputs_fingerprint");
    if !crate::py::truthy(stored) {
        return Err(ContextError::Unattributable);
    }
    let stored = stored.cloned().unwrap_or(Value::Null);
    let fresh = stored.as_str() == Some(current);
    Ok(Value::object([
        ("verdict", if fresh { "fresh" } else { "stale" }.into()),
        ("stored", stored),
        ("current", current.into()),
        (
            "reason",
            if fresh {
                "".into()
            } else {
                "inputs changed since the summary was derived - the summary is invalidated, never \
                 silently inherited"
                    .into()
            },
        ),
    ]))
}

/// Seconds since the epoch of a `%Y-%m-%dT%H:%M:%SZ` timestamp (nothing else parses).
fn epoch_seconds(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    if b[16] != b':' || b[19] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = ts.get(r)?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days_in = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let month = usize::try_from(mo).ok().filter(|m| (1..=12).contains(m))?;
    if d < 1 || d > days_in[month - 1] || h > 23 || mi > 59 || s > 61 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let (yy, m) = if mo <= 2 { (y - 1, mo + 9) } else { (y, mo - 3) };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + s)
}

/// Python `round(x, 3)`: correctly rounded from the exact binary value.
fn round3(x: f64) -> f64 {
    format!("{x:.3}").parse().unwrap_or(x)
}

fn span_hours(events: &[Value]) -> Option<f64> {
    let mut stamps: Vec<&str> =
        events.iter().filter_map(|e| e.str_at("ts")).filter(|t| !t.is_empty()).collect();
    if stamps.len() < 2 {
        return None;
    }
    stamps.sort_unstable();
    let first = epoch_seconds(stamps.first()?)?;
    let last = epoch_seconds(stamps.last()?)?;
    #[allow(clippy::cast_precision_loss)]
    let hours = (last - first) as f64 / 3600.0;
    Some(round3(hours))
}

fn latest_sample<'a>(events: &'a [Value], key: &str, want: &str) -> Option<&'a Value> {
    let mut best: Option<&Value> = None;
    for e in events.iter().filter(|e| type_of(e) == Some("resource_sample")) {
        if e.str_at(key) != Some(want) {
            continue;
        }
        if best.is_none_or(|b| seq_of(e) > seq_of(b)) {
            best = Some(e);
        }
    }
    best
}

/// The four cost quantities, each from its own source; missing data is `null` with a reason.
/// `manifest_json_bytes` is the measured size of the first task's manifest; `bundle` the
/// declared bundle files with their sizes (`None`: not a file).
pub fn accounting(
    events: &[Value],
    manifest_json_bytes: usize,
    bundle: &[(String, Option<u64>)],
) -> Value {
    let mut bytes = Map::new();
    bytes.insert("manifest_json".to_owned(), manifest_json_bytes.into());
    for (rel, size) in bundle {
        bytes.insert(rel.clone(), size.map_or(Value::Null, Value::from));
    }
    let missing = |reason: &str| {
        Value::object([
            ("value", Value::Null),
            ("status", "missing".into()),
            ("reason", reason.into()),
        ])
    };
    let sample = |e: &Value| {
        Value::object([
            ("value", field(e, "value")),
            ("source", field(e, "source")),
            ("seq", field(e, "seq")),
        ])
    };
    let tokens = latest_sample(events, "unit", "tokens");
    let spend = latest_sample(events, "limit_id", "spend_usd");
    let span = span_hours(events).and_then(Finite::new);
    Value::object([
        (
            "instruction_bytes",
            Value::object([("source", "measured".into()), ("bytes", Value::Object(bytes))]),
        ),
        (
            "provider_tokens",
            tokens.map_or_else(|| missing("no observed token meter sample in the records"), sample),
        ),
        (
            "cost_usd",
            spend.map_or_else(
                || {
                    missing(
                        "no observed spend sample in the records - cost comes only from real \
                         rates, never from bytes",
                    )
                },
                sample,
            ),
        ),
        (
            "wall_clock_hours",
            match span {
                Some(h) => Value::object([
                    ("value", h.into()),
                    ("source", "recorded event ts span".into()),
                ]),
                None => missing("fewer than two timestamped events"),
            },
        ),
        ("never", "bytes are never converted to tokens or money".into()),
    ])
}

/// The deterministic Markdown form of a manifest (`manifest --md`).
pub fn render_markdown(doc: &Value) -> String {
    let s = |v: Option<&Value>| str_opt(v);
    let strs = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array).unwrap_or(&[]).iter().map(str_of).collect()
    };
    let mut lines: Vec<String> = vec![
        format!("# Context manifest — {} / {}", s(doc.get("plan")), s(doc.get("task"))),
        String::new(),
        format!(
            "Derived from the records at seq {} ({}). No history is loaded; every line below is \
             a recorded fact or a pointer.",
            s(doc.pointer("/as_of/last_seq")),
            s(doc.pointer("/as_of/event_ts"))
        ),
        String::new(),
        "## Authorization (carried, never summarized)".to_owned(),
        String::new(),
    ];
    for a in doc.pointer("/authorization/approvals").and_then(Value::as_array).unwrap_or(&[]) {
        lines.push(format!(
            "- approval by {} via {} at {} (seq {})",
            s(a.get("authority")),
            s(a.get("mechanism")),
            s(a.get("ts")),
            s(a.get("seq"))
        ));
    }
    for c in strs(doc.pointer("/authorization/contract_authorization/consent_checkpoints")) {
        lines.push(format!("- consent checkpoint: {c}"));
    }
    lines.push(String::new());
    let scope = doc.pointer("/repository_rules/scope");
    lines.extend([
        "## Repository rules".to_owned(),
        String::new(),
        format!(
            "- forbidden operations: {}",
            strs(scope.and_then(|v| v.get("forbidden_operations"))).join(", ")
        ),
        format!(
            "- allowed command classes: {}",
            strs(scope.and_then(|v| v.get("allowed_command_classes"))).join(", ")
        ),
        "- invariants:".to_owned(),
    ]);
    for inv in doc.pointer("/repository_rules/invariants").and_then(Value::as_array).unwrap_or(&[])
    {
        lines.push(format!(
            "  - {} — {} ({})",
            s(inv.get("id")),
            s(inv.get("state")),
            s(inv.get("statement"))
        ));
    }
    lines.extend([String::new(), "## Acceptance".to_owned(), String::new()]);
    for c in doc.get("acceptance").and_then(Value::as_array).unwrap_or(&[]) {
        let state = if c.get("satisfied").and_then(Value::as_bool) == Some(true) {
            format!("satisfied ({})", s(c.get("mechanism")))
        } else {
            s(c.get("mechanism"))
        };
        lines.push(format!("- {}: {state}", s(c.get("criterion"))));
    }
    lines.extend([
        String::new(),
        "## Next action".to_owned(),
        String::new(),
        format!("1. {}", s(doc.pointer("/next_action/action"))),
        String::new(),
    ]);
    let ends = doc.get("dead_ends").and_then(Value::as_array).map_or(&[][..], |v| v);
    if !ends.is_empty() {
        lines.extend(["## Dead ends (recorded — do not retry blindly)".to_owned(), String::new()]);
        for e in ends {
            let note = e
                .get("aged_out")
                .filter(|v| crate::py::truthy(Some(v)))
                .map(|v| format!(" [{}]", str_of(v)))
                .unwrap_or_default();
            let cause =
                e.get("cause").filter(|v| crate::py::truthy(Some(v))).or_else(|| e.get("reason"));
            lines.push(format!(
                "- seq {} {}{note} — {}",
                s(e.get("seq")),
                s(e.get("kind")),
                s(cause)
            ));
        }
    }
    lines.extend([String::new(), "## Touched surface".to_owned(), String::new()]);
    if let Some(files) = doc.pointer("/touched_surface/files").and_then(Value::as_object) {
        // The map is key-ordered, as Python's `sorted(files.items())`.
        for (rel, digest) in files {
            let shown = if crate::py::truthy(Some(digest)) {
                str_of(digest)
            } else {
                "MISSING ON DISK".to_owned()
            };
            lines.push(format!("- {rel}: {shown}"));
        }
    }
    if doc.pointer("/touched_surface/widen_discovery").and_then(Value::as_bool) == Some(true) {
        lines.extend([
            String::new(),
            format!(
                "Discovery is WIDENED: {}",
                strs(doc.pointer("/touched_surface/widen_reasons")).join("; ")
            ),
        ]);
    }
    lines.extend([
        String::new(),
        format!("Freshness fingerprint: `{}`", s(doc.pointer("/freshness/inputs_fingerprint"))),
        String::new(),
    ]);
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(json: &str) -> Value {
        canonical_json::parse(json.as_bytes()).unwrap_or(Value::Null)
    }

    #[test]
    fn timestamps_parse_strictly_and_spans_round_like_python() {
        assert_eq!(epoch_seconds("1970-01-02T00:00:01Z"), Some(86_401));
        assert_eq!(epoch_seconds("2024-02-29T12:00:00Z"), Some(1_709_208_000));
        assert_eq!(epoch_seconds("2023-02-29T12:00:00Z"), None);
        assert_eq!(epoch_seconds("2024-01-01T00:00:00.5Z"), None);
        assert_eq!(epoch_seconds("2024-01-01 00:00:00Z"), None);
        assert_eq!(round3(1.0 / 3.0), 0.333);
        assert_eq!(round3(5.0 / 3600.0), 0.001);
        let events = [
            ev(r#"{"type":"approval","seq":1,"ts":"2026-01-01T00:00:00Z"}"#),
            ev(r#"{"type":"observation","seq":2,"ts":"2026-01-01T01:30:00Z"}"#),
        ];
        assert_eq!(span_hours(&events), Some(1.5));
        assert_eq!(span_hours(&events[..1]), None);
    }

    #[test]
    fn dead_ends_age_out_only_by_proof() {
        let cid = "a".repeat(64);
        let events = [
            ev(r#"{"type":"gate_run","seq":1,"exit_code":1,"evidence_path":"g1.log"}"#),
            ev(r#"{"type":"gate_run","seq":2,"exit_code":1,"evidence_path":"g2.log"}"#),
            ev(r#"{"type":"gate_run","seq":3,"exit_code":0}"#),
            ev(r#"{"type":"refusal","seq":4,"subject":"T-a","stage":"gate","reason":"first"}"#),
            ev(r#"{"type":"refusal","seq":5,"subject":"T-a","stage":"gate","reason":"latest"}"#),
            ev(&format!(
                r#"{{"type":"control_pair","seq":6,"verdict":"non_discriminating","contract_id":"{}"}}"#,
                "b".repeat(64)
            )),
        ];
        let fps: BTreeMap<i64, Value> =
            [(1, "fp-a".into()), (2, "fp-b".into()), (3, "fp-a".into())].into_iter().collect();
        let ends = dead_ends(&events, &cid, &fps);
        let summary: Vec<(i64, String)> =
            ends.iter().map(|e| (seq_of(e), str_opt(e.get("kind")))).collect();
        assert_eq!(
            summary,
            [
                (2, "failed_gate".to_owned()),
                (5, "refusal".to_owned()),
                (6, "non_discriminating_control".to_owned())
            ]
        );
        assert_eq!(ends[1].get("reason").and_then(Value::as_str), Some("latest"));
        assert_eq!(
            ends[2].get("aged_out").and_then(Value::as_str),
            Some("superseded contract revision")
        );
    }
}
