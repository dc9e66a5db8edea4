//! v5 → v6 migration rules (upstream `migrate_v6.py`): the lossless-input check, the task
//! mapping and classes of the preview, and the deterministic anchor contract.
//!
//! Pure: file digests and "does this evidence pointer resolve" are passed in.

use std::fmt;

use canonical_json::{Map, Value};

use crate::py::{is_datetime, repr_opt};
use crate::validate::CONTRACT_URL_V6;

/// The preview document type.
pub const PREVIEW_TYPE: &str = "dwp-migration-preview";
/// The phase-file document type.
pub const PHASE_TYPE: &str = "dwp-migration-phase";
/// The placeholder authority of the preview's anchor contract.
pub const PREVIEW_AUTHORITY: &str = "(set at migrate)";
/// The actor identity of migrated events.
pub const MIGRATE_IDENTITY: &str = "migrate_v6.py";
/// Statuses a v5 task may carry (the axis migration maps).
pub const TASK_STATUSES: [&str; 3] = ["pending", "in_progress", "completed"];
/// v1/v2/v5 manifest URLs.
pub const LEGACY_MANIFESTS: [&str; 3] = [
    "https://deepworkplan.com/schema/plan-manifest/v1.json",
    "https://deepworkplan.com/schema/plan-manifest/v2.json",
    "https://deepworkplan.com/schema/plan-manifest/v5.json",
];
/// A lossy or foreign input.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MigrateError {
    /// The v5 records cannot be mapped without loss (the message names the field).
    Lossy(String),
}

impl fmt::Display for MigrateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MigrateError::Lossy(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for MigrateError {}

fn lossy(msg: impl Into<String>) -> MigrateError {
    MigrateError::Lossy(msg.into())
}

fn strs(items: &[&str]) -> Value {
    Value::Array(items.iter().map(|s| Value::from(*s)).collect())
}

/// Upstream `_slug`: lowercase, every non-alphanumeric character a separator, runs joined by
/// one `-`, at most 24 characters, trimmed, `task` when empty. Letters outside ASCII are kept,
/// as Python's `isalnum` keeps them (the contract then refuses such an id).
pub fn slug(title: &str) -> String {
    let lower: String = title.to_lowercase();
    let replaced: String =
        lower.chars().map(|c| if c.is_alphanumeric() { c } else { '-' }).collect();
    let joined = replaced.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-");
    let cut: String = joined.chars().take(24).collect();
    let trimmed = cut.trim_matches('-');
    if trimmed.is_empty() { "task".to_owned() } else { trimmed.to_owned() }
}

/// sha256 over Python's compact sorted `{"manifest", "state"}`: the pre-authorization digest.
pub fn source_digest(manifest: &Value, state: &Value) -> String {
    let body = Value::object([("manifest", manifest.clone()), ("state", state.clone())]);
    let bytes = canonical_json::to_python_compact(&body).unwrap_or_default();
    canonical_json::digest::sha256_hex(&bytes)
}

/// One mapped v5 task.
#[derive(Clone, Debug)]
pub struct MappedTask {
    /// The v5 integer id.
    pub v5_id: i64,
    /// `T-NN-<slug>` (NN is the v5 id).
    pub v6_id: String,
    /// `AC-tNN-<slug>`.
    pub criterion: String,
    /// The title.
    pub title: String,
    /// The v5 status.
    pub status: String,
    /// `imported`, `re_evidence` or `pending`.
    pub class: &'static str,
    /// The task's record surface: its file locator, else `README.md`.
    pub surface: String,
    /// The gates: `index` (1-based), `command`, `passes`, `exit_code`, `evidence`, `resolvable`.
    pub gates: Vec<Value>,
    /// Why the class is what it is.
    pub reasons: Vec<String>,
    /// The previous task in v5 order (a linear chain).
    pub prerequisite: Option<String>,
}

impl MappedTask {
    /// The accepted evidence of its criterion.
    pub fn accepted(&self) -> &'static [&'static str] {
        if self.class == "imported" { &["imported", "observed"] } else { &["observed"] }
    }

    fn gate_resolvable(gate: &Value) -> bool {
        gate.get("resolvable").and_then(Value::as_bool) == Some(true)
    }
}

fn is_int(v: Option<&Value>) -> Option<i64> {
    match v {
        Some(Value::Number(_)) => v.and_then(Value::as_i64),
        _ => None,
    }
}

/// Checks a v5 manifest + state pair and maps its tasks (upstream `analyze_pair`, after
/// `load_v5`'s identity checks). `resolves` answers whether an evidence pointer is a file.
///
/// # Errors
/// A foreign manifest, a torn identity, a malformed `updated_at`, no tasks, a count mismatch,
/// an unmappable task or gate, an unknown status, duplicate numbers.
pub fn map_tasks(
    folder: &str,
    manifest: &Value,
    state: &Value,
    resolves: &dyn Fn(&str) -> bool,
) -> Result<Vec<MappedTask>, MigrateError> {
    let url = manifest.get("schema").and_then(Value::as_str).unwrap_or("");
    if !LEGACY_MANIFESTS.contains(&url) {
        return Err(lossy(format!(
            "manifest.json carries {} - not a v1/v2/v5 plan-manifest generation; this helper \
             migrates v5 plans only",
            repr_opt(manifest.get("schema"))
        )));
    }
    if manifest.get("name").and_then(Value::as_str) != Some(folder) {
        return Err(lossy(format!(
            "manifest name {} does not match the plan folder {} - a torn identity is lossy and \
             is not migrated",
            repr_opt(manifest.get("name")),
            crate::py::repr_str(folder)
        )));
    }
    if state.get("plan").and_then(Value::as_str) != Some(folder) {
        return Err(lossy(format!(
            "state.json plan {} does not match the plan folder {}",
            repr_opt(state.get("plan")),
            crate::py::repr_str(folder)
        )));
    }
    if !state.get("updated_at").and_then(Value::as_str).is_some_and(is_datetime) {
        return Err(lossy(format!(
            "state.json updated_at {} is missing or malformed - it is the deterministic anchor \
             for the synthesized contract timestamps and cannot be invented",
            repr_opt(state.get("updated_at"))
        )));
    }
    let tasks = match state.get("tasks").and_then(Value::as_array) {
        Some(t) if !t.is_empty() => t,
        _ => return Err(lossy("state.json carries no tasks - nothing to map")),
    };
    if let Some(count) = is_int(state.get("task_count"))
        && usize::try_from(count).ok() != Some(tasks.len())
    {
        return Err(lossy(format!(
            "state.json task_count {count} disagrees with {} task records - a torn state is \
             lossy and is not migrated",
            tasks.len()
        )));
    }
    let mut out: Vec<MappedTask> = Vec::new();
    for task in tasks {
        let Some(number) = is_int(task.get("id")).filter(|n| *n >= 1) else {
            return Err(lossy(format!(
                "task {} has a non-integer id - unmappable",
                repr_opt(task.get("id"))
            )));
        };
        let Some(title) =
            task.get("title").and_then(Value::as_str).filter(|t| crate::py::non_blank(t))
        else {
            return Err(lossy(format!("task {number} has no title - unmappable")));
        };
        let status = task.get("status").and_then(Value::as_str).unwrap_or("");
        if !TASK_STATUSES.contains(&status) {
            return Err(lossy(format!(
                "task {number} carries status {} outside {} - the v5 status axis is the thing \
                 migration maps; an unknown value is lossy and is not migrated",
                repr_opt(task.get("status")),
                TASK_STATUSES.join("/")
            )));
        }
        let locator = task.get("locator");
        let surface = match (
            locator.and_then(|l| l.get("kind")).and_then(Value::as_str),
            locator.and_then(|l| l.get("value")).and_then(Value::as_str),
        ) {
            (Some("file"), Some(v)) if crate::py::non_blank(v) => v.to_owned(),
            _ => "README.md".to_owned(),
        };
        let raw = match task.get("gates") {
            Some(g) if !g.is_null() => Some(g),
            _ => task.pointer("/outcome/gates").filter(|g| crate::py::truthy(Some(g))),
        };
        let raw: &[Value] = match raw {
            None => &[],
            Some(Value::Array(list)) => list,
            Some(_) => {
                return Err(lossy(format!("task {number} gates are not a list - unmappable")));
            }
        };
        let mut gates = Vec::new();
        let mut reasons: Vec<String> = Vec::new();
        for (i, gate) in raw.iter().enumerate() {
            let i = i + 1;
            let command =
                gate.get("command").and_then(Value::as_str).filter(|c| crate::py::non_blank(c));
            let Some(command) = command else {
                return Err(lossy(format!("task {number} gate {i} has no command - unmappable")));
            };
            let Some(passes) = gate.get("passes").and_then(Value::as_bool) else {
                return Err(lossy(format!(
                    "task {number} gate {i} carries passes={} - not a boolean; unmappable",
                    repr_opt(gate.get("passes"))
                )));
            };
            let Some(exit_code) = is_int(gate.get("exit_code")) else {
                return Err(lossy(format!(
                    "task {number} gate {i} carries exit_code={} - not an integer; unmappable",
                    repr_opt(gate.get("exit_code"))
                )));
            };
            let evidence = gate.get("evidence").cloned().unwrap_or(Value::Null);
            let resolvable =
                crate::py::truthy(Some(&evidence)) && evidence.as_str().is_some_and(resolves);
            if !resolvable {
                reasons.push(format!(
                    "gate {i} evidence {} does not resolve",
                    crate::py::repr(&evidence)
                ));
            } else if !passes {
                reasons.push(format!("gate {i} recorded passes=false (exit {exit_code})"));
            } else if exit_code != 0 {
                reasons.push(format!("gate {i} claims passes=true with exit {exit_code}"));
            }
            gates.push(Value::object([
                ("index", i.into()),
                ("command", command.into()),
                ("passes", passes.into()),
                ("exit_code", exit_code.into()),
                ("evidence", evidence),
                ("resolvable", resolvable.into()),
            ]));
        }
        let class = if status == "pending" {
            "pending"
        } else if status == "completed" && !gates.is_empty() && reasons.is_empty() {
            "imported"
        } else {
            if status == "in_progress" {
                reasons.insert(
                    0,
                    "v5 recorded the task in_progress - the remaining work is gated under v6"
                        .to_owned(),
                );
            } else if gates.is_empty() {
                reasons.insert(0, "no gate records to import".to_owned());
            }
            "re_evidence"
        };
        let sl = slug(title);
        out.push(MappedTask {
            v5_id: number,
            v6_id: format!("T-{number:02}-{sl}"),
            criterion: format!("AC-t{number:02}-{sl}"),
            title: title.to_owned(),
            status: status.to_owned(),
            class,
            surface,
            gates,
            reasons,
            prerequisite: None,
        });
    }
    let mut numbers: Vec<i64> = out.iter().map(|t| t.v5_id).collect();
    numbers.sort_unstable();
    numbers.dedup();
    if numbers.len() != out.len() {
        return Err(lossy("duplicate task numbers - unmappable"));
    }
    out.sort_by_key(|t| t.v5_id);
    for i in 1..out.len() {
        let previous = out[i - 1].v6_id.clone();
        out[i].prerequisite = Some(previous);
    }
    Ok(out)
}

/// The deterministic v6 contract of a migrated plan (upstream `synthesize_contract`): same v5
/// inputs and authority, same bytes, same id.
pub fn anchor_contract(
    folder: &str,
    manifest: &Value,
    state: &Value,
    tasks: &[MappedTask],
    authority: &str,
) -> Value {
    let updated = state.get("updated_at").cloned().unwrap_or(Value::Null);
    let digest = source_digest(manifest, state);
    let digest12 = crate::py::head(&digest, 12);
    let title = ["title", "name"]
        .iter()
        .filter_map(|k| manifest.get(k))
        .find(|v| crate::py::truthy(Some(v)))
        .cloned()
        .unwrap_or_else(|| Value::from(folder));
    let criteria: Vec<Value> = tasks
        .iter()
        .map(|t| {
            let check = match t.class {
                "imported" => format!(
                    "the imported v5 gate records resolve with exit 0 (source digest {digest12})"
                ),
                "re_evidence" => "the gates re-run under v6 execution and pass - the v5 record \
                                  did not carry closeable evidence"
                    .to_owned(),
                _ => "the task's declared gates pass under v6 execution".to_owned(),
            };
            Value::object([
                ("id", t.criterion.as_str().into()),
                ("statement", t.title.as_str().into()),
                ("observable_check", check.into()),
                ("accepted_evidence", strs(t.accepted())),
            ])
        })
        .collect();
    let task_list: Vec<Value> = tasks
        .iter()
        .map(|t| {
            let first = t.gates.first().and_then(|g| g.get("command")).and_then(Value::as_str);
            let check = first.map_or_else(
                || format!("v5 task record {} (no gate recorded)", t.surface),
                str::to_owned,
            );
            Value::object([
                ("id", t.v6_id.as_str().into()),
                ("title", t.title.as_str().into()),
                (
                    "prerequisites",
                    Value::Array(t.prerequisite.iter().map(|p| p.as_str().into()).collect()),
                ),
                ("touched_surface", strs(&[t.surface.as_str()])),
                (
                    "gate_intent",
                    Value::Array(vec![Value::object([
                        ("criterion", t.criterion.as_str().into()),
                        ("check", check.chars().take(200).collect::<String>().into()),
                    ])]),
                ),
            ])
        })
        .collect();
    let mut doc = Map::new();
    for (k, v) in [
        ("schema", Value::from(CONTRACT_URL_V6)),
        ("spec_version", "6.0.0".into()),
        ("plan", folder.into()),
        ("revision", 1i64.into()),
        ("created_at", updated.clone()),
        ("title", title.clone()),
        (
            "outcome",
            Value::object([
                (
                    "statement",
                    format!("Migrated from v5 plan {folder}: {}", crate::py::str_of(&title)).into(),
                ),
                (
                    "success_definition",
                    "Every remaining criterion closes on its declared evidence class; imported \
                     v5 evidence stands as provenance, never as v6 observation."
                        .into(),
                ),
                (
                    "out_of_scope",
                    strs(&["Re-verification of work completed under the v5 contract (imported \
                            records carry v5 provenance)"]),
                ),
            ]),
        ),
        ("acceptance", Value::object([("criteria", Value::Array(criteria))])),
        ("invariants", Value::Array(Vec::new())),
        (
            "scope",
            Value::object([
                ("allowed_paths", strs(&[format!(".dwp/plans/{folder}/").as_str()])),
                ("allowed_command_classes", strs(&["true"])),
                ("forbidden_operations", strs(&["publication", "force-push", "history-deletion"])),
            ]),
        ),
        (
            "authorization",
            Value::object([
                ("mechanism", "pre_authorization".into()),
                ("authority", authority.into()),
                ("timestamp", updated),
                (
                    "boundaries",
                    format!(
                        "Migrated from a v5 plan: the v5 records (source digest {digest12}) are \
                         the recorded pre-authorization (D3-2). Scope, permissions and the \
                         resource envelope are records-only until amended through refine."
                    )
                    .into(),
                ),
                ("consent_checkpoints", Value::Array(Vec::new())),
            ]),
        ),
        (
            "permissions",
            Value::object([
                ("granted", Value::Array(Vec::new())),
                ("not_granted", strs(&crate::validate::CAPABILITIES)),
            ]),
        ),
        ("dependencies", Value::Array(Vec::new())),
        (
            "resource_envelope",
            Value::object([(
                "limits",
                Value::Array(vec![Value::object([
                    ("id", "v5_unmetered".into()),
                    ("limit", 0i64.into()),
                    ("unit", "unspecified".into()),
                    ("enforcement", "advisory".into()),
                ])]),
            )]),
        ),
        ("tasks", Value::Array(task_list)),
    ] {
        doc.insert(k.to_owned(), v);
    }
    Value::Object(doc)
}

/// The preview document (`migration_v5/PREVIEW.json`, upstream `build_preview` plus the
/// anchor `contract_id`).
pub fn preview(
    folder: &str,
    source_digest: &str,
    tasks: &[MappedTask],
    contract_id: &str,
) -> Value {
    let mapping: Vec<Value> = tasks
        .iter()
        .map(|t| {
            let gates: Vec<Value> = t
                .gates
                .iter()
                .map(|g| {
                    Value::object([
                        ("index", g.get("index").cloned().unwrap_or(Value::Null)),
                        ("command", g.get("command").cloned().unwrap_or(Value::Null)),
                        ("exit_code", g.get("exit_code").cloned().unwrap_or(Value::Null)),
                        ("passes", g.get("passes").cloned().unwrap_or(Value::Null)),
                        (
                            "import_as",
                            if MappedTask::gate_resolvable(g) { "imported" } else { "asserted" }
                                .into(),
                        ),
                        ("evidence", g.get("evidence").cloned().unwrap_or(Value::Null)),
                    ])
                })
                .collect();
            Value::object([
                ("v5_id", t.v5_id.into()),
                ("v6_id", t.v6_id.as_str().into()),
                ("criterion", t.criterion.as_str().into()),
                ("title", t.title.as_str().into()),
                ("status", t.status.as_str().into()),
                ("class", t.class.into()),
                ("accepted_evidence", strs(t.accepted())),
                (
                    "reasons",
                    Value::Array(t.reasons.iter().map(|r| Value::from(r.as_str())).collect()),
                ),
                ("gates", Value::Array(gates)),
            ])
        })
        .collect();
    let of = |class: &str| -> Value {
        Value::Array(
            tasks
                .iter()
                .filter(|t| t.class == class)
                .map(|t| Value::from(t.criterion.as_str()))
                .collect(),
        )
    };
    Value::object([
        ("type", PREVIEW_TYPE.into()),
        ("plan", folder.into()),
        ("source_digest", source_digest.into()),
        ("task_mapping", Value::Array(mapping)),
        ("re_evidence_criteria", of("re_evidence")),
        ("imported_criteria", of("imported")),
        (
            "recorded_assumptions",
            strs(&[
                "gate cwd and timeout_seconds are not v5 fields; imported records carry the \
                 repository root and the executor default (600s), named here rather than \
                 invented silently",
                "task_start events for non-pending tasks record NO starting fingerprint - v5 \
                 kept none, so control pairs stay honestly unavailable on migrated attempts",
            ]),
        ),
        ("contract_id", contract_id.into()),
    ])
}
