//! `dwp verify PLAN`: a read-only conformance check of a plan's records, in the upstream
//! checker's `[x]` / `[ ]` / `[~]` form with a verdict.

use std::collections::HashMap;
use std::path::Path;

use canonical_json::Value;
use dwp::contract::contract_id;
use dwp::projection;
use dwp::validate::{self, Generation};

use crate::files::read_json_named;
use crate::plan::{
    FolderGeneration, JOURNAL_NAME, MANIFEST_URL_V6, MANIFEST_URL_V7, Plan, detect_generation,
};
use crate::reader::inspect_journal;

/// One check line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// `[x] …`
    Pass(String),
    /// `[ ] …` (an issue)
    Fail(String),
    /// `[~] …` (advisory)
    Advisory(String),
}

impl Check {
    /// The printed line.
    pub fn line(&self) -> String {
        match self {
            Check::Pass(m) => format!("[x] {m}"),
            Check::Fail(m) => format!("[ ] {m}"),
            Check::Advisory(m) => format!("[~] {m}"),
        }
    }
}

/// The checks of one plan folder; an issue is any [`Check::Fail`].
pub fn verify(dir: &Path) -> Vec<Check> {
    let mut checks = Vec::new();
    match detect_generation(dir) {
        FolderGeneration::Legacy => {
            checks.push(Check::Advisory(
                "v5 plan: its records belong to the v5 lifecycle (not checked by the v6 reader)"
                    .to_owned(),
            ));
            return checks;
        }
        FolderGeneration::Unknown => {
            checks.push(Check::Fail("no v6/v7 manifest or contract in the plan folder".to_owned()));
            return checks;
        }
        _ => {}
    }
    let plan = match Plan::load(dir) {
        Ok(p) => p,
        Err(e) => {
            checks.push(Check::Fail(format!("live contract: {e}")));
            return checks;
        }
    };
    let gen_label = plan.generation.label();
    // Manifest pairing: the pointer names a revision of this plan's contract chain.
    let mut chain: HashMap<String, Value> = HashMap::new();
    let mut chain_ok = true;
    let mut candidates = vec![dir.join("contract.json")];
    if let Ok(rd) = std::fs::read_dir(dir.join("contracts")) {
        let mut names: Vec<_> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.ends_with(".json") && !n.starts_with('.')
                })
            })
            .collect();
        names.sort();
        candidates.extend(names);
    }
    for path in candidates.into_iter().filter(|p| p.is_file()) {
        match read_json_named(&path) {
            Ok(doc) => match contract_id(&doc) {
                Ok(id) => {
                    let stamped = doc.get("contract_id").and_then(Value::as_str);
                    if stamped.is_some_and(|s| s != id) {
                        chain_ok = false;
                        checks.push(Check::Fail(format!(
                            "{} carries contract_id {} but its content hashes to {}",
                            path.display(),
                            stamped.unwrap_or(""),
                            id
                        )));
                    }
                    chain.insert(id, doc);
                }
                Err(e) => checks.push(Check::Fail(format!("{}: {e}", path.display()))),
            },
            Err(e) => checks.push(Check::Fail(e.to_string())),
        }
    }
    match read_json_named(&dir.join("manifest.json")) {
        Err(e) => checks.push(Check::Fail(format!("manifest: {e}"))),
        Ok(manifest) => {
            let url = manifest.get("schema").and_then(Value::as_str);
            let expected = match plan.generation {
                Generation::V6 => MANIFEST_URL_V6,
                Generation::V7 => MANIFEST_URL_V7,
            };
            let pointer = manifest.pointer("/contract/id").and_then(Value::as_str).unwrap_or("");
            if url != Some(expected) {
                let found = if url == Some(MANIFEST_URL_V6) {
                    "v6"
                } else if url == Some(MANIFEST_URL_V7) {
                    "v7"
                } else {
                    "foreign"
                };
                checks.push(Check::Fail(format!(
                    "manifest.json is {found} but the live contract is {gen_label}"
                )));
            } else if !chain.contains_key(pointer) {
                checks.push(Check::Fail(format!(
                    "manifest pointer {} is no revision of this plan's contract",
                    dwp::py::head(pointer, 12)
                )));
            } else {
                checks.push(Check::Pass(format!(
                    "{gen_label} manifest pairs with a {gen_label} contract"
                )));
            }
        }
    }
    let mut errors = validate::contract_errors(&plan.contract, Some(&chain));
    if plan.contract.get("revision").and_then(Value::as_i64).unwrap_or(1) <= 1 {
        errors = validate::contract_errors(&plan.contract, None);
    }
    match errors.first() {
        Some(e) => checks.push(Check::Fail(format!("live contract invalid: {e}"))),
        None if chain_ok => checks.push(Check::Pass(format!(
            "live contract valid (revision {}; {} revision(s) checked; {})",
            dwp::py::str_opt(plan.contract.get("revision")),
            chain.len().max(1),
            dwp::py::head(&plan.contract_id, 12)
        ))),
        None => {}
    }
    // Journal.
    let view = match inspect_journal(&dir.join(JOURNAL_NAME)) {
        Ok(v) => v,
        Err(e) => {
            checks.push(Check::Fail(format!("journal: {e}")));
            return checks;
        }
    };
    if let Some((at, cause)) = view.torn {
        checks.push(Check::Fail(format!("torn tail at byte {at} ({cause})")));
    }
    // A damaged line (one that is not a torn final line, or whose seq is no journal position:
    // the one rule of `dwp::event::record`): the events after it are not read.
    if let Some(damaged) = &view.damaged {
        checks.push(Check::Fail(format!(
            "journal line {} (byte {}) is damaged: {} — no event after it is read; see `dwp \
             ledger repair`",
            damaged.line, damaged.byte_offset, damaged.reason
        )));
    }
    if view.framing {
        checks.push(Check::Advisory(
            "the last journal line lacks its newline (the writer repairs the framing)".to_owned(),
        ));
    }
    let mut events = match plan.archived_events() {
        Ok(e) => e,
        Err(e) => {
            checks.push(Check::Fail(e.to_string()));
            Vec::new()
        }
    };
    events.extend(view.events);
    let backwards =
        events.windows(2).find(|w| projection::seq_of(&w[1]) <= projection::seq_of(&w[0]));
    // (The seq as written, not as a number: a seq that is no journal position never reads as 0.)
    let seq_text = |e: &Value| e.get("seq").map_or_else(|| "(none)".to_owned(), dwp::py::repr);
    match backwards {
        Some(w) => checks.push(Check::Fail(format!(
            "positions never go backwards: seq {} follows {}",
            seq_text(&w[1]),
            seq_text(&w[0])
        ))),
        None => checks.push(Check::Pass("positions never go backwards".to_owned())),
    }
    // The contract's task index once, not a search of its tasks per event.
    let index = validate::TaskIndex::new(Some(&plan.contract));
    let journal_errors: Vec<String> = events
        .iter()
        .flat_map(|e| {
            validate::journal_event_errors_with(e, Some(&plan.contract), &index)
                .into_iter()
                .map(move |m| format!("seq {}: {m}", seq_text(e)))
        })
        .collect();
    match journal_errors.first() {
        Some(first) => checks.push(Check::Fail(format!(
            "journal invalid ({} error(s)); first: {first}",
            journal_errors.len()
        ))),
        None => checks.push(Check::Pass(format!("journal valid ({} events)", events.len()))),
    }
    checks.extend(cited_path_checks(&plan, &events));
    checks.extend(refusal_checks(&events));
    let approved = events.iter().any(|e| {
        e.get("type").and_then(Value::as_str) == Some("approval")
            && e.get("contract_id").and_then(Value::as_str) == Some(plan.contract_id.as_str())
    });
    checks.push(if approved {
        Check::Pass("an approval cites the live contract id".to_owned())
    } else {
        Check::Fail("no approval cites the live contract id".to_owned())
    });
    let state_path = dir.join("state.json");
    if state_path.is_file() {
        let snapshot =
            projection::snapshot(&plan.contract, &plan.contract_id, &events, &plan.archives());
        let expected = canonical_json::to_python_pretty(&snapshot).unwrap_or_default();
        match std::fs::read(&state_path) {
            Ok(bytes) if bytes == expected => {
                checks.push(Check::Pass("state.json agrees with the journal".to_owned()));
            }
            Ok(_) => checks.push(Check::Advisory(
                "state.json is stale against the journal (re-project with `dwp ledger project`)"
                    .to_owned(),
            )),
            Err(e) => checks.push(Check::Fail(format!("state.json: {e}"))),
        }
    } else {
        checks.push(Check::Advisory("no state.json yet (never projected)".to_owned()));
    }
    let tasks = plan.contract.get("tasks").and_then(Value::as_array).unwrap_or(&[]);
    // One evidence index for every task (a search of the events per task was tasks x events).
    let done = projection::complete_tasks(&plan.contract, &events).len();
    checks.push(Check::Pass(format!(
        "{done}/{} tasks completed (derived from gate evidence)",
        tasks.len()
    )));
    checks
}

/// Every path the records cite (each event's `evidence_path`, each `evidence.jsonl` log) must
/// resolve inside the plan folder or the repository: a record citing `/etc/shadow`, or a
/// symlink out of the repository, fails the plan.
fn cited_path_checks(plan: &Plan, events: &[Value]) -> Vec<Check> {
    let root = plan.repo_root();
    let mut cited: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| {
            let p = e.get("evidence_path").and_then(Value::as_str)?;
            Some((format!("seq {}", projection::seq_of(e)), p.to_owned()))
        })
        .collect();
    if let Ok(raw) = std::fs::read(plan.dir.join(crate::plan::EVIDENCE_NAME)) {
        for (n, line) in raw.split(|b| *b == b'\n').enumerate() {
            if let Some(log) = canonical_json::parse(line)
                .ok()
                .and_then(|rec| rec.get("log").and_then(Value::as_str).map(str::to_owned))
            {
                cited.push((format!("evidence.jsonl line {}", n + 1), log));
            }
        }
    }
    let outside: Vec<String> = cited
        .iter()
        .filter(|(_, p)| {
            matches!(
                crate::evidence::locate(&plan.dir, &root, p),
                crate::evidence::Located::Outside
            )
        })
        .map(|(at, p)| format!("{at}: {}", dwp::refusal::bounded(p)))
        .collect();
    match outside.first() {
        Some(first) => vec![Check::Fail(format!(
            "{} cited path(s) outside the plan and the repository; first: {first}",
            outside.len()
        ))],
        None => vec![Check::Pass(format!(
            "every cited path ({}) lies inside the plan or the repository",
            cited.len()
        ))],
    }
}

/// Each `refusal` is well-formed ([`dwp::refusal::refusal_errors`]).
fn refusal_checks(events: &[Value]) -> Vec<Check> {
    let refusals: Vec<&Value> = events
        .iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("refusal"))
        .collect();
    if refusals.is_empty() {
        return Vec::new();
    }
    let bad: Vec<String> = refusals
        .iter()
        .flat_map(|e| {
            dwp::refusal::refusal_errors(e)
                .into_iter()
                .map(move |m| format!("seq {}: {m}", projection::seq_of(e)))
        })
        .collect();
    match bad.first() {
        Some(first) => {
            vec![Check::Fail(format!("{} malformed refusal(s); first: {first}", bad.len()))]
        }
        None => {
            vec![Check::Pass(format!("{} refusal(s) recorded, each well-formed", refusals.len()))]
        }
    }
}
