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
/// Statuses a v5 task may carry.
pub const TASK_STATUSES: [&str; 5] = ["pending", "in_progress", "completed", "blocked", "skipped"];
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

fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

fn strs(items: &[&str]) -> Value {
    Value::Array(items.iter().map(|s| Value::from(*s)).collect())
}

/// Lowercase, every run of non-alphanumerics becomes one `-`, trimmed, at most 24 chars.
pub fn slug(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed: String = out.trim_matches('-').chars().take(24).collect();
    let trimmed = trimmed.trim_end_matches('-');
    if trimmed.is_empty() { "task".to_owned() } else { trimmed.to_owned() }
}

/// One mapped v5 task.
#[derive(Clone, Debug)]
pub struct MappedTask {
    /// The v5 integer id.
    pub v5_id: i64,
    /// `T-NN-<slug>`.
    pub v6_id: String,
    /// `AC-tNN-<slug>`.
    pub criterion: String,
    /// The title.
    pub title: String,
    /// The v5 status.
    pub status: String,
    /// `imported`, `re_evidence` or `pending`.
    pub class: &'static str,
    /// The gates with their import decision.
    pub gates: Vec<Value>,
    /// Why the class is what it is.
    pub reasons: Vec<String>,
}

impl MappedTask {
    /// The accepted evidence of its criterion.
    pub fn accepted(&self) -> &'static [&'static str] {
        if self.class == "imported" { &["imported", "observed"] } else { &["observed"] }
    }
}

/// Checks a v5 manifest + state pair and maps its tasks.
///
/// # Errors
/// A lossy input: unknown status, non-int id, missing title, non-bool `passes`, a task count
/// mismatch, a malformed `updated_at`, a name that is not the folder's.
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
            "state.updated_at {} is not an RFC 3339 timestamp",
            repr_opt(state.get("updated_at"))
        )));
    }
    let tasks = state.get("tasks").and_then(Value::as_array).unwrap_or(&[]);
    if tasks.is_empty() {
        return Err(lossy("state.tasks is empty - nothing to migrate"));
    }
    let count = state.get("task_count").and_then(Value::as_i64);
    if count != i64::try_from(tasks.len()).ok() {
        return Err(lossy(format!(
            "state.task_count {} does not match the {} task(s) listed",
            repr_opt(state.get("task_count")),
            tasks.len()
        )));
    }
    let mut out = Vec::new();
    for (i, task) in tasks.iter().enumerate() {
        let Some(id) =
            task.get("id").filter(|v| matches!(v, Value::Number(_))).and_then(Value::as_i64)
        else {
            return Err(lossy(format!(
                "tasks[{i}].id {} is not an integer",
                repr_opt(task.get("id"))
            )));
        };
        let Some(title) =
            task.get("title").and_then(Value::as_str).filter(|t| !t.trim().is_empty())
        else {
            return Err(lossy(format!("task {id} has no title")));
        };
        let status = task.get("status").and_then(Value::as_str).unwrap_or("");
        if !TASK_STATUSES.contains(&status) {
            return Err(lossy(format!(
                "task {id} status {} is outside {}",
                repr_opt(task.get("status")),
                TASK_STATUSES.join("/")
            )));
        }
        let mut gates = Vec::new();
        let mut all_good = true;
        for (gi, gate) in
            task.get("gates").and_then(Value::as_array).unwrap_or(&[]).iter().enumerate()
        {
            let Some(passes) = gate.get("passes").and_then(Value::as_bool) else {
                return Err(lossy(format!(
                    "task {id} gate {gi}: passes {} is not a boolean",
                    repr_opt(gate.get("passes"))
                )));
            };
            let exit = gate.get("exit_code").and_then(Value::as_i64);
            let evidence = gate.get("evidence").and_then(Value::as_str).unwrap_or("");
            let resolved = !evidence.is_empty() && resolves(evidence);
            if !(passes && exit.unwrap_or(0) == 0 && resolved) {
                all_good = false;
            }
            gates.push(obj([
                ("index", gi.into()),
                ("command", gate.get("command").cloned().unwrap_or(Value::Null)),
                ("exit_code", exit.map_or(Value::Null, Value::from)),
                ("passes", passes.into()),
                ("import_as", if resolved { "imported" } else { "asserted" }.into()),
                ("evidence", gate.get("evidence").cloned().unwrap_or(Value::Null)),
            ]));
        }
        let mut reasons = Vec::new();
        let class = if status == "pending" {
            reasons.push("pending in v5".to_owned());
            "pending"
        } else if status == "completed" && !gates.is_empty() && all_good {
            reasons.push("completed with passing gates whose evidence resolves".to_owned());
            "imported"
        } else {
            if status != "completed" {
                reasons.push(format!("v5 status {status}"));
            }
            if gates.is_empty() {
                reasons.push("no gates recorded".to_owned());
            } else if !all_good {
                reasons.push("a gate failed or its evidence does not resolve".to_owned());
            }
            "re_evidence"
        };
        let n = format!("{:02}", i + 1);
        let sl = slug(title);
        out.push(MappedTask {
            v5_id: id,
            v6_id: format!("T-{n}-{sl}"),
            criterion: format!("AC-t{n}-{sl}"),
            title: title.to_owned(),
            status: status.to_owned(),
            class,
            gates,
            reasons,
        });
    }
    Ok(out)
}

/// The deterministic v6 contract of a migrated plan.
pub fn anchor_contract(
    folder: &str,
    manifest: &Value,
    state: &Value,
    tasks: &[MappedTask],
    authority: &str,
) -> Value {
    let updated = state.get("updated_at").cloned().unwrap_or(Value::Null);
    let scope_path = format!(".dwp/plans/{folder}/");
    let title = manifest.get("title").and_then(Value::as_str).unwrap_or(folder);
    let criteria: Vec<Value> = tasks
        .iter()
        .map(|t| {
            obj([
                ("id", t.criterion.as_str().into()),
                ("statement", format!("v5 task {}: {}", t.v5_id, t.title).into()),
                (
                    "observable_check",
                    format!("the v5 gates of task {} pass (class {})", t.v5_id, t.class).into(),
                ),
                ("accepted_evidence", strs(t.accepted())),
            ])
        })
        .collect();
    let mut prev: Option<&str> = None;
    let task_list: Vec<Value> = tasks
        .iter()
        .map(|t| {
            let pre = prev.map_or_else(Vec::new, |p| vec![Value::from(p)]);
            prev = Some(t.v6_id.as_str());
            obj([
                ("id", t.v6_id.as_str().into()),
                ("title", t.title.as_str().into()),
                ("prerequisites", Value::Array(pre)),
                ("touched_surface", strs(&[scope_path.as_str()])),
                (
                    "gate_intent",
                    Value::Array(vec![obj([
                        ("criterion", t.criterion.as_str().into()),
                        ("check", "true".into()),
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
        (
            "outcome",
            obj([
                ("statement", format!("{title} (migrated from v5)").into()),
                ("success_definition", "every migrated criterion holds accepted evidence".into()),
                ("out_of_scope", Value::Array(Vec::new())),
            ]),
        ),
        ("acceptance", obj([("criteria", Value::Array(criteria))])),
        ("invariants", Value::Array(Vec::new())),
        (
            "scope",
            obj([
                ("allowed_paths", strs(&[scope_path.as_str()])),
                ("allowed_command_classes", strs(&["true"])),
                ("forbidden_operations", strs(&["rewriting migrated v5 history"])),
            ]),
        ),
        (
            "authorization",
            obj([
                ("mechanism", "pre_authorization".into()),
                ("authority", authority.into()),
                ("timestamp", updated),
                ("boundaries", "records-only migration of the v5 plan folder".into()),
                ("consent_checkpoints", Value::Array(Vec::new())),
            ]),
        ),
        (
            "permissions",
            obj([("granted", Value::Array(Vec::new())), ("not_granted", Value::Array(Vec::new()))]),
        ),
        ("dependencies", Value::Array(Vec::new())),
        (
            "resource_envelope",
            obj([(
                "limits",
                Value::Array(vec![obj([
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

/// The preview document (`migration_v5/PREVIEW.json`).
pub fn preview(
    folder: &str,
    source_digest: &str,
    tasks: &[MappedTask],
    contract_id: &str,
) -> Value {
    let mapping: Vec<Value> = tasks
        .iter()
        .map(|t| {
            obj([
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
                ("gates", Value::Array(t.gates.clone())),
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
    obj([
        ("type", PREVIEW_TYPE.into()),
        ("plan", folder.into()),
        ("source_digest", source_digest.into()),
        ("task_mapping", Value::Array(mapping)),
        ("re_evidence_criteria", of("re_evidence")),
        ("imported_criteria", of("imported")),
        (
            "recorded_assumptions",
            strs(&[
                "v5 task order becomes a linear prerequisite chain",
                "a v5 gate is imported only when it passed with exit 0 and its evidence resolves; otherwise it is asserted",
                "the migrated contract grants nothing and meters nothing",
            ]),
        ),
        ("contract_id", contract_id.into()),
    ])
}
