//! Observable outcomes (upstream `outcomes.py`): per-criterion closure with its mechanism,
//! review states, control-pair verdicts and the verification receipt document.
//!
//! Pure over (contract, events): the receipt's digests of files on disk are passed in.

use std::fmt;

use canonical_json::{Map, Value};

use crate::projection::{self, seq_of};

/// The closed review-state set (`REVIEW: <state>[: finding]`).
pub const REVIEW_STATES: [&str; 5] = ["clean", "critical", "missing", "error", "incomplete"];
/// Control kinds that close only on a discriminating pair.
pub const CONTROL_KINDS: [&str; 2] = ["regression", "discrimination"];
/// The actor identity of review observations.
pub const OUTCOMES_IDENTITY: &str = "dwp outcomes.py";
/// The receipt schema URL (not published upstream).
pub const RECEIPT_URL: &str = "https://deepworkplan.com/schema/verification-receipt/v6.json";
/// Recorded with every receipt: what a fresh evaluator context is and is not.
pub const FRESH_CAVEAT: &str = "a fresh evaluator context reduces shared conversational \
    assumptions; it does not guarantee statistically independent errors - recorded as such, \
    never as independence evidence";
/// The fallback note when `--evaluator fresh` is requested without host support.
pub const FRESH_FALLBACK: &str = "host does not report fresh-context support \
    (DWP_FRESH_EVALUATOR unset) - recorded as the local context, never claimed as fresh";

/// An operator-visible outcomes failure (exit 1).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutcomesError {
    /// A review state outside [`REVIEW_STATES`].
    ReviewState(String),
    /// The receipt document could not be serialized.
    Write(String),
}

impl fmt::Display for OutcomesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutcomesError::ReviewState(s) => write!(
                f,
                "review state {} outside the closed set {}",
                crate::py::repr_str(s),
                REVIEW_STATES.join("/")
            ),
            OutcomesError::Write(e) => write!(f, "receipt: {e}"),
        }
    }
}

impl std::error::Error for OutcomesError {}

fn type_is(event: &Value, etype: &str) -> bool {
    event.str_at("type") == Some(etype)
}

/// The statement of a review observation, or the closed-set refusal.
///
/// # Errors
/// A state outside [`REVIEW_STATES`].
pub fn review_statement(state: &str, finding: Option<&str>) -> Result<String, OutcomesError> {
    if !REVIEW_STATES.contains(&state) {
        return Err(OutcomesError::ReviewState(state.to_owned()));
    }
    Ok(match finding.filter(|f| !f.is_empty()) {
        Some(f) => format!("REVIEW: {state}: {f}"),
        None => format!("REVIEW: {state}"),
    })
}

/// The latest review observation as `{state, finding, seq}`, or `None`.
pub fn review_state(events: &[Value]) -> Option<Value> {
    let mut latest = None;
    for event in events.iter().filter(|e| type_is(e, "observation")) {
        let Some(rest) = event.str_at("statement").and_then(|s| s.strip_prefix("REVIEW: ")) else {
            continue;
        };
        let (state, finding) = match rest.split_once(':') {
            Some((st, f)) => (st, f.trim()),
            None => (rest, ""),
        };
        if REVIEW_STATES.contains(&state) {
            latest = Some(Value::Object(Map::from([
                ("state".to_owned(), state.into()),
                ("finding".to_owned(), finding.into()),
                ("seq".to_owned(), event.get("seq").cloned().unwrap_or(Value::Null)),
            ])));
        }
    }
    latest
}

/// The verdict of a pair: `discriminating` only for (old FAIL, new PASS) with an available,
/// clean old leg; `non_discriminating` for any other available pair; else
/// `control_unavailable`.
pub fn verdict(old: Option<bool>, new_pass: bool) -> &'static str {
    match old {
        Some(false) if new_pass => "discriminating",
        Some(_) => "non_discriminating",
        None => "control_unavailable",
    }
}

/// The task whose `gate_intent` declares the criterion (first wins).
pub fn owner_of<'a>(contract: &'a Value, criterion: &str) -> Option<&'a str> {
    contract.get("tasks").and_then(Value::as_array).unwrap_or(&[]).iter().find_map(|t| {
        projection::intent_criteria(t)
            .iter()
            .any(|c| c.as_str() == Some(criterion))
            .then(|| t.str_at("id"))
            .flatten()
    })
}

/// The declared control kind of a criterion (`None` when undeclared).
pub fn control_kind<'a>(contract: &'a Value, criterion: &str) -> Option<&'a str> {
    criteria(contract)
        .iter()
        .find(|c| c.str_at("id") == Some(criterion))
        .and_then(|c| c.get("control"))
        .and_then(|c| c.get("kind"))
        .and_then(Value::as_str)
}

fn criteria(contract: &Value) -> &[Value] {
    contract
        .get("acceptance")
        .and_then(|a| a.get("criteria"))
        .and_then(Value::as_array)
        .unwrap_or(&[])
}

fn text_of(event: &Value, keys: [&str; 2]) -> String {
    keys.iter()
        .map(|k| event.get(k).map(crate::py::str_of).unwrap_or_default())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A JSON value as a set key: its canonical text (equal values, equal keys).
fn value_key(value: &Value) -> String {
    canonical_json::to_python_compact(value)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// The closure's lookups, each built in one pass.
struct Lookups<'a> {
    /// Criterion -> the first task whose `gate_intent` declares it ([`owner_of`]).
    owners: std::collections::HashMap<&'a str, &'a str>,
    /// Task progress (starts, criterion states).
    progress: projection::Progress<'a>,
    /// Criterion -> its `control_pair` events, in journal order.
    pairs: std::collections::HashMap<&'a str, Vec<&'a Value>>,
    /// The seqs (as canonical text) of sign-off `gate_run`s.
    signoff_seqs: std::collections::HashSet<String>,
    /// Criterion -> the last reconciliation whose trigger/editor text names it.
    last_recon: std::collections::HashMap<&'a str, &'a Value>,
    /// Criterion -> the amendments whose original/revised text names it.
    amendments: std::collections::HashMap<&'a str, Vec<&'a Value>>,
}

impl<'a> Lookups<'a> {
    fn new(contract: &'a Value, events: &'a [Value]) -> Lookups<'a> {
        let mut owners = std::collections::HashMap::new();
        for task in contract.get("tasks").and_then(Value::as_array).unwrap_or(&[]) {
            let Some(id) = task.str_at("id") else { continue };
            for c in projection::intent_criteria(task) {
                if let Some(c) = c.as_str() {
                    owners.entry(c).or_insert(id);
                }
            }
        }
        let ids: Vec<&str> = criteria(contract).iter().filter_map(|c| c.str_at("id")).collect();
        // "Does this text name criterion X" for every X at once: one automaton over the ids,
        // run once over each reconciliation and amendment text (a substring search per
        // criterion and event was criteria x events).
        let names = aho_corasick::AhoCorasick::new(&ids).ok();
        let named = |text: &str| -> Vec<&'a str> {
            let Some(names) = &names else { return Vec::new() };
            let mut found: Vec<&'a str> =
                names.find_overlapping_iter(text).map(|m| ids[m.pattern().as_usize()]).collect();
            found.sort_unstable();
            found.dedup();
            found
        };
        let mut pairs: std::collections::HashMap<&str, Vec<&Value>> =
            std::collections::HashMap::new();
        let mut signoff_seqs = std::collections::HashSet::new();
        let mut last_recon = std::collections::HashMap::new();
        let mut amendments: std::collections::HashMap<&str, Vec<&Value>> =
            std::collections::HashMap::new();
        for e in events {
            match e.str_at("type") {
                Some("control_pair") => {
                    if let Some(c) = e.str_at("criterion") {
                        pairs.entry(c).or_default().push(e);
                    }
                }
                Some("gate_run") if e.str_at("command") == Some(SIGNOFF_COMMAND_TEXT) => {
                    signoff_seqs.insert(e.get("seq").map_or_else(String::new, value_key));
                }
                Some("reconciliation") => {
                    for c in named(&text_of(e, ["trigger", "editor"])) {
                        last_recon.insert(c, e);
                    }
                }
                Some("amendment") => {
                    for c in named(&text_of(e, ["original_criterion", "revised_criterion"])) {
                        amendments.entry(c).or_default().push(e);
                    }
                }
                _ => {}
            }
        }
        Lookups {
            owners,
            progress: projection::Progress::new(contract, events),
            pairs,
            signoff_seqs,
            last_recon,
            amendments,
        }
    }
}

/// The command text of a sign-off `gate_run` (asserted evidence, nothing executed).
const SIGNOFF_COMMAND_TEXT: &str = "signoff (asserted, not executed)";

/// Per-criterion closure decisions and the plan-level review state (upstream `closure`).
pub fn closure(contract: &Value, events: &[Value]) -> Value {
    let invalid = projection::invalidated_before(events);
    let review = review_state(events);
    let mut decisions = Vec::new();
    let mut state_cache: std::collections::HashMap<&str, Vec<Value>> =
        std::collections::HashMap::new();
    let mut no_states: Vec<Value> = Vec::new();
    // Everything the per-criterion decisions look up, gathered in one pass each over the
    // contract and the events (searching them per criterion made the closure criteria x
    // (tasks + events)).
    let lookups = Lookups::new(contract, events);
    for crit in criteria(contract) {
        let Some(cid) = crit.str_at("id") else { continue };
        let owner = lookups.owners.get(cid).copied();
        let kind = crit.get("control").and_then(|c| c.get("kind")).and_then(Value::as_str);
        let mut entry = Map::from([
            ("criterion".to_owned(), cid.into()),
            ("task".to_owned(), owner.map_or(Value::Null, Value::from)),
            ("control_kind".to_owned(), kind.unwrap_or("none").into()),
            ("satisfied".to_owned(), false.into()),
            ("mechanism".to_owned(), "open".into()),
        ]);
        let mut done = false;
        let mut mechanism: String;
        if kind.is_some_and(|k| CONTROL_KINDS.contains(&k)) {
            let floor = owner
                .and_then(|o| lookups.progress.started(o))
                .unwrap_or(0)
                .max(invalid.get(cid).copied().unwrap_or(0));
            let pairs: Vec<&Value> = lookups
                .pairs
                .get(cid)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .copied()
                .filter(|e| seq_of(e) >= floor)
                .collect();
            let observed = |p: &&&Value| p.str_at("trust") == Some("observed");
            if let Some(best) = pairs
                .iter()
                .filter(observed)
                .rfind(|p| p.str_at("verdict") == Some("discriminating"))
            {
                done = true;
                mechanism = "control_pair".to_owned();
                entry.insert("via_seq".to_owned(), best.get("seq").cloned().unwrap_or(Value::Null));
                entry.insert("verdict".to_owned(), "discriminating".into());
                entry.insert(
                    "evidence_path".to_owned(),
                    best.get("evidence_path").cloned().unwrap_or(Value::Null),
                );
            } else if pairs.is_empty() {
                mechanism = "open (no in-window control pair)".to_owned();
            } else if !pairs.iter().any(|p| observed(&p)) {
                mechanism =
                    "open (pair is asserted, not executed - a claim is not behavior)".to_owned();
            } else if pairs.iter().any(|p| p.str_at("verdict") == Some("control_unavailable")) {
                mechanism = "blocked (control unavailable: the pair proves nothing and never \
                             rounds up)"
                    .to_owned();
            } else {
                mechanism = format!(
                    "open (control did not discriminate: {})",
                    pairs.last().map(|p| crate::py::str_opt(p.get("verdict"))).unwrap_or_default()
                );
            }
        } else {
            let states = match owner {
                Some(o) => state_cache
                    .entry(o)
                    .or_insert_with(|| lookups.progress.criterion_states(o).unwrap_or_default()),
                None => &mut no_states,
            };
            let state = states.iter().find(|s| s.str_at("criterion") == Some(cid));
            match state {
                Some(st) if st.get("satisfied").and_then(Value::as_bool) == Some(true) => {
                    done = true;
                    let via = st.get("via_seq").cloned().unwrap_or(Value::Null);
                    let signoff = lookups.signoff_seqs.contains(&value_key(&via));
                    mechanism = if signoff { "signoff" } else { "evidence" }.to_owned();
                    entry.insert("via_seq".to_owned(), via);
                    for key in ["trust", "evidence_path"] {
                        entry.insert(key.to_owned(), st.get(key).cloned().unwrap_or(Value::Null));
                    }
                }
                Some(st)
                    if st
                        .get("stale_seqs")
                        .and_then(Value::as_array)
                        .is_some_and(|a| !a.is_empty()) =>
                {
                    let seqs: Vec<String> = st
                        .get("stale_seqs")
                        .and_then(Value::as_array)
                        .unwrap_or(&[])
                        .iter()
                        .map(crate::py::str_of)
                        .collect();
                    mechanism = format!("open (evidence stale: {})", seqs.join(","));
                }
                _ => mechanism = "open (no in-window accepted evidence)".to_owned(),
            }
        }
        let recon = lookups.last_recon.get(cid).copied();
        if let Some(recon) = recon
            && !done
        {
            let authority = recon.get("authority");
            let amended = lookups
                .amendments
                .get(cid)
                .is_some_and(|list| list.iter().any(|e| e.get("authority") == authority));
            if amended {
                done = true;
                mechanism = "reconciled".to_owned();
                entry.insert("authority".to_owned(), authority.cloned().unwrap_or(Value::Null));
            } else {
                mechanism = "blocked (reconciliation without amendment authority never closes \
                             evidence)"
                    .to_owned();
            }
        }
        entry.insert("satisfied".to_owned(), done.into());
        entry.insert("mechanism".to_owned(), mechanism.into());
        decisions.push(Value::Object(entry));
    }
    let blocked =
        decisions.iter().any(|d| d.str_at("mechanism").is_some_and(|m| m.starts_with("blocked")));
    let critical = review.as_ref().is_some_and(|r| r.str_at("state") == Some("critical"));
    Value::Object(Map::from([
        ("criteria".to_owned(), Value::Array(decisions)),
        ("review".to_owned(), review.unwrap_or(Value::Null)),
        ("review_blocks".to_owned(), critical.into()),
        ("plan_blocked".to_owned(), (blocked || critical).into()),
    ]))
}

/// Inputs of a receipt that live on disk (digests) or in the environment.
#[derive(Clone, Debug, Default)]
pub struct ReceiptSources {
    /// sha256 of the live journal bytes.
    pub journal_sha256: Option<String>,
    /// sha256 of `state.json`.
    pub snapshot_sha256: Option<String>,
    /// `fresh` or `local`.
    pub evaluator: String,
    /// The host reports fresh-context support (`DWP_FRESH_EVALUATOR`).
    pub fresh_supported: bool,
    /// The journal's highest seq, when `events` holds only some of its events (the ones a
    /// [`crate::event::Tally`] keeps); `None`: the highest seq of `events`.
    pub last_seq: Option<i64>,
}

/// The verification receipt, recomputed from the records, with its `receipt_sha256`.
///
/// # Errors
/// A document nested beyond the writer's depth limit.
pub fn receipt(
    contract: &Value,
    contract_id: &str,
    events: &[Value],
    src: &ReceiptSources,
) -> Result<Value, OutcomesError> {
    let result = closure(contract, events);
    let (used, fallback) = if src.evaluator == "fresh" && !src.fresh_supported {
        ("local", Value::from(FRESH_FALLBACK))
    } else {
        (src.evaluator.as_str(), Value::Null)
    };
    let crits = result.get("criteria").and_then(Value::as_array).unwrap_or(&[]);
    let sat =
        crits.iter().filter(|c| c.get("satisfied").and_then(Value::as_bool) == Some(true)).count();
    let blocked = crits
        .iter()
        .filter(|c| c.str_at("mechanism").is_some_and(|m| m.starts_with("blocked")))
        .count();
    let opt = |s: &Option<String>| s.as_deref().map_or(Value::Null, Value::from);
    let mut doc = Map::from([
        ("schema".to_owned(), RECEIPT_URL.into()),
        ("plan".to_owned(), contract.get("plan").cloned().unwrap_or(Value::Null)),
        ("contract_id".to_owned(), contract_id.into()),
        (
            "rendered_from".to_owned(),
            Value::Object(Map::from([
                ("journal_sha256".to_owned(), opt(&src.journal_sha256)),
                ("snapshot".to_owned(), opt(&src.snapshot_sha256)),
                (
                    "last_seq".to_owned(),
                    src.last_seq
                        .unwrap_or_else(|| events.iter().map(seq_of).max().unwrap_or(0))
                        .into(),
                ),
            ])),
        ),
        (
            "evaluator".to_owned(),
            Value::Object(Map::from([
                ("requested".to_owned(), src.evaluator.as_str().into()),
                ("used".to_owned(), used.into()),
                ("fallback".to_owned(), fallback),
                ("caveat".to_owned(), FRESH_CAVEAT.into()),
            ])),
        ),
        (
            "totals".to_owned(),
            Value::Object(Map::from([
                ("criteria".to_owned(), crits.len().into()),
                ("satisfied".to_owned(), sat.into()),
                ("open".to_owned(), crits.len().saturating_sub(sat + blocked).into()),
                ("blocked".to_owned(), blocked.into()),
            ])),
        ),
        ("closure".to_owned(), result),
    ]);
    let body =
        canonical_json::to_python(&Value::Object(doc.clone()), canonical_json::PyFormat::PRETTY)
            .map_err(|e| OutcomesError::Write(e.to_string()))?;
    doc.insert("receipt_sha256".to_owned(), canonical_json::digest::sha256_hex(&body).into());
    Ok(Value::Object(doc))
}
