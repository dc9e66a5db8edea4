//! Generated Markdown views (upstream `views.py`): pure, byte-stable renderings of the
//! journal and the snapshot, each behind an identity marker line.

use canonical_json::Value;

use crate::projection::{PROVENANCE_TYPES, seq_of};
use crate::py::str_of;
use crate::validate::EVIDENCE_TYPES;

/// Every view, in `--all` order.
pub const VIEWS: [&str; 4] = ["tasks", "evidence", "audit", "completion"];
/// The views rendered without `--view`/`--all`.
pub const DEFAULT_VIEWS: [&str; 3] = ["tasks", "evidence", "audit"];
/// The prefix every machine-rendered view starts with.
pub const MARKER_PREFIX: &str = "<!-- dwp-view:";
/// The audit view's line when nothing was refused.
pub const NO_REFUSALS: &str = "No refusals recorded — this records that nothing was proposed, \
    not that nothing would have been refused.";

const DASH: &str = "—";

/// The marker line of a view.
pub fn marker(name: &str, contract_id: &str, snapshot_sha256: &str, rendered_at: &str) -> String {
    format!(
        "{MARKER_PREFIX} {name} | contract:{} | snapshot:{} | rendered-at:{rendered_at} -->",
        &contract_id[..contract_id.len().min(16)],
        &snapshot_sha256[..snapshot_sha256.len().min(16)]
    )
}

/// True when a state-bearing (non-provenance) event is newer than the snapshot's positions.
pub fn snapshot_stale(snapshot: &Value, events: &[Value]) -> bool {
    let projected = snapshot
        .get("positions")
        .and_then(Value::as_object)
        .map(|p| p.values().filter_map(|v| v.get("seq").and_then(Value::as_i64)).max().unwrap_or(0))
        .unwrap_or(0);
    let live = events
        .iter()
        .filter(|e| {
            e.get("type").and_then(Value::as_str).is_some_and(|t| !PROVENANCE_TYPES.contains(&t))
        })
        .map(seq_of)
        .max()
        .unwrap_or(0);
    live > projected
}

/// The digest last recorded for a view by a `view_render` event.
pub fn recorded_digest<'a>(events: &'a [Value], name: &str) -> Option<&'a str> {
    events
        .iter()
        .rev()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("view_render"))
        .find_map(|e| e.get("digests").and_then(|d| d.get(name)).and_then(Value::as_str))
}

fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => DASH.to_owned(),
        Some(v) => str_of(v).replace('|', "\\|").replace('\n', " "),
    }
}

fn table(out: &mut Vec<String>, header: &[&str]) {
    out.push(format!("| {} |", header.join(" | ")));
    out.push(format!("|{}", "---|".repeat(header.len())));
}

/// The body of one view (without the marker); `None` for an unknown view name.
pub fn render_view(name: &str, events: &[Value], snapshot: &Value) -> Option<String> {
    let mut lines: Vec<String> = Vec::new();
    let tasks = snapshot.get("tasks").and_then(Value::as_array).unwrap_or(&[]);
    match name {
        "tasks" => {
            lines.extend(["# Tasks".to_owned(), String::new()]);
            table(&mut lines, &["Task", "Title", "Status", "Started at"]);
            for t in tasks {
                lines.push(format!(
                    "| {} | {} | {} | {} |",
                    cell(t.get("id")),
                    cell(t.get("title")),
                    cell(t.get("status")),
                    cell(t.get("started_seq"))
                ));
            }
        }
        "evidence" => {
            lines.extend(["# Evidence".to_owned(), String::new()]);
            table(&mut lines, &["Seq", "Type", "Trust", "Subject", "Exit", "Pointer"]);
            let before = lines.len();
            for e in events {
                if !e
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| EVIDENCE_TYPES.contains(&t))
                {
                    continue;
                }
                let subject = e
                    .get("criterion")
                    .filter(|v| crate::py::truthy(Some(v)))
                    .or_else(|| e.get("limit_id").filter(|v| crate::py::truthy(Some(v))))
                    .map(str_of)
                    .unwrap_or_default();
                lines.push(format!(
                    "| {} | {} | {} | {} | {} | {} |",
                    cell(e.get("seq")),
                    cell(e.get("type")),
                    cell(e.get("trust")),
                    subject.replace('|', "\\|"),
                    cell(e.get("exit_code")),
                    cell(e.get("evidence_path"))
                ));
            }
            if lines.len() == before {
                lines.push(format!("|{}", format!(" {DASH} |").repeat(6)));
            }
        }
        "audit" => {
            let of = |t: &str| -> Vec<&Value> {
                events.iter().filter(|e| e.get("type").and_then(Value::as_str) == Some(t)).collect()
            };
            let refusals = of("refusal");
            let interventions = of("intervention");
            lines.extend(["# Audit".to_owned(), String::new()]);
            lines.extend([format!("## Refusals ({})", refusals.len()), String::new()]);
            for e in &refusals {
                lines.push(format!(
                    "- seq {} — {} at {}: {}",
                    cell(e.get("seq")),
                    cell(e.get("subject")),
                    cell(e.get("stage")),
                    cell(e.get("reason"))
                ));
            }
            if refusals.is_empty() {
                lines.push(NO_REFUSALS.to_owned());
            }
            lines.extend([String::new(), format!("## Interventions ({})", interventions.len())]);
            lines.push(String::new());
            for e in &interventions {
                lines.push(format!(
                    "- seq {} — {}: {} — question: {}",
                    cell(e.get("seq")),
                    cell(e.get("category")),
                    cell(e.get("description")),
                    cell(e.get("question"))
                ));
            }
            if interventions.is_empty() {
                lines.push("No interventions recorded.".to_owned());
            }
        }
        "completion" => {
            lines.extend(["# Completion".to_owned(), String::new()]);
            table(&mut lines, &["Task", "Criterion", "Satisfied", "Mechanism", "Pointer"]);
            for t in tasks {
                for c in t.get("criteria").and_then(Value::as_array).unwrap_or(&[]) {
                    let done = c.get("satisfied").and_then(Value::as_bool) == Some(true);
                    let (mech, pointer) = if done {
                        (
                            format!(
                                "evidence (seq {}, trust {})",
                                cell(c.get("via_seq")),
                                cell(c.get("trust"))
                            ),
                            cell(c.get("evidence_path")),
                        )
                    } else {
                        ("open".to_owned(), DASH.to_owned())
                    };
                    lines.push(format!(
                        "| {} | {} | {} | {mech} | {pointer} |",
                        cell(t.get("id")),
                        cell(c.get("criterion")),
                        if done { "yes" } else { "no" }
                    ));
                }
            }
        }
        _ => return None,
    }
    let mut body = lines.join("\n");
    body.push('\n');
    Some(body)
}

/// The full file content of a view: marker, blank line, body.
pub fn view_file(marker_line: &str, body: &str) -> String {
    format!("{marker_line}\n\n{body}")
}
