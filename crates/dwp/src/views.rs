//! Generated Markdown views (upstream `views.py`): pure, byte-stable renderings of the
//! journal and the snapshot, each behind an identity marker line.

use canonical_json::Value;

use crate::projection::{PROVENANCE_TYPES, seq_of};
use crate::py::{str_of, str_opt, truthy};
use crate::validate::EVIDENCE_TYPES;

/// Every view, in `--all` order.
pub const VIEWS: [&str; 4] = ["tasks", "evidence", "audit", "completion"];
/// The views rendered without `--view`/`--all`.
pub const DEFAULT_VIEWS: [&str; 3] = ["tasks", "evidence", "audit"];
/// The prefix every machine-rendered view starts with.
pub const MARKER_PREFIX: &str = "<!-- dwp-view:";
/// The audit view's line when nothing was refused (upstream wording, in Markdown italics).
pub const NO_REFUSALS: &str = "_No refusals recorded — this records that nothing was proposed, \
    not that nothing would have been refused._";

const DASH: &str = "—";

/// The marker line of a view.
pub fn marker(name: &str, contract_id: &str, snapshot_sha256: &str, rendered_at: &str) -> String {
    format!(
        "{MARKER_PREFIX} {name} | contract:{} | snapshot:{} | rendered-at:{rendered_at} -->",
        crate::py::head(contract_id, 16),
        crate::py::head(snapshot_sha256, 16)
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

/// Python `'%s' % d.get(key)`: `None` when absent.
fn get(v: &Value, key: &str) -> String {
    str_opt(v.get(key))
}

/// Python `'%s' % d.get(key, default)`: the default only when the key is absent.
fn get_or(v: &Value, key: &str, default: &str) -> String {
    v.get(key).map_or_else(|| default.to_owned(), str_of)
}

/// Python `'%s' % (d.get(key) or '—')`.
fn or_dash(v: &Value, key: &str) -> String {
    let x = v.get(key);
    if truthy(x) { x.map(str_of).unwrap_or_default() } else { DASH.to_owned() }
}

/// Upstream `_md`: `str(text or '')` with `|` escaped and newlines flattened.
fn md(v: Option<&Value>) -> String {
    if truthy(v) {
        v.map(str_of).unwrap_or_default().replace('|', "\\|").replace('\n', " ")
    } else {
        String::new()
    }
}

fn table(out: &mut Vec<String>, header: &[&str]) {
    out.push(format!("| {} |", header.join(" | ")));
    out.push(format!("|{}", "---|".repeat(header.len())));
}

/// The body of one view (without the marker); `None` for an unknown view name. The text is
/// upstream `views.render_view`'s byte for byte (headings, cells, footers).
pub fn render_view(name: &str, events: &[Value], snapshot: &Value) -> Option<String> {
    let mut lines: Vec<String> = Vec::new();
    let tasks = snapshot.get("tasks").and_then(Value::as_array).unwrap_or(&[]);
    match name {
        "tasks" => {
            lines.extend(["# Task table".to_owned(), String::new()]);
            table(&mut lines, &["Task", "Title", "Status", "Started at"]);
            for t in tasks {
                lines.push(format!(
                    "| {} | {} | {} | {} |",
                    get(t, "id"),
                    md(t.get("title")),
                    get(t, "status"),
                    or_dash(t, "started_seq")
                ));
            }
            // Each task's recorded refusals beside it (issue 30), only when there are any, so a
            // plan without refusals renders the upstream view byte for byte.
            let index = crate::status::Refusals::new(events);
            let refused: Vec<(String, usize, String)> = tasks
                .iter()
                .filter_map(|t| {
                    let id = get(t, "id");
                    let (shown, total) = index.of(&id);
                    let last = shown.last().map(|r| get(r, "seq")).unwrap_or_default();
                    (total > 0).then_some((id, total, last))
                })
                .collect();
            if !refused.is_empty() {
                lines.extend([
                    String::new(),
                    "Refusals recorded per task (the audit view lists them):".to_owned(),
                    String::new(),
                ]);
                for (id, total, last) in refused {
                    lines.push(format!("- {id}: {total} refusal(s), the last at seq {last}"));
                }
            }
            lines.extend([
                String::new(),
                "_Pure projection of the snapshot; statuses are derived, never narrated._"
                    .to_owned(),
            ]);
        }
        "evidence" => {
            lines.extend(["# Evidence index".to_owned(), String::new()]);
            table(&mut lines, &["Seq", "Type", "Trust", "Subject", "Exit", "Pointer"]);
            for e in events {
                if !e
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| EVIDENCE_TYPES.contains(&t))
                {
                    continue;
                }
                let subject = [e.get("criterion"), e.get("limit_id")]
                    .into_iter()
                    .find(|v| truthy(*v))
                    .flatten()
                    .map(str_of)
                    .unwrap_or_default();
                lines.push(format!(
                    "| {} | {} | {} | {} | {} | {} |",
                    get(e, "seq"),
                    get(e, "type"),
                    get_or(e, "trust", DASH),
                    subject,
                    get_or(e, "exit_code", DASH),
                    get_or(e, "evidence_path", DASH)
                ));
            }
            if lines.len() == 4 {
                lines.push(format!("|{}", format!(" {DASH} |").repeat(6)));
            }
            lines.extend([
                String::new(),
                "_Every evidence item with its trust label; a checksum proves byte identity, \
                 not the truth of a claim._"
                    .to_owned(),
            ]);
        }
        "audit" => {
            let of = |t: &str| -> Vec<&Value> {
                events.iter().filter(|e| e.get("type").and_then(Value::as_str) == Some(t)).collect()
            };
            let refusals = of("refusal");
            let interventions = of("intervention");
            lines.extend(["# Refusals and interventions".to_owned(), String::new()]);
            lines.extend([format!("## Refusals ({})", refusals.len()), String::new()]);
            for e in &refusals {
                lines.push(format!(
                    "- seq {} — {} at {}: {}",
                    get(e, "seq"),
                    get(e, "subject"),
                    get(e, "stage"),
                    get(e, "reason")
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
                    get(e, "seq"),
                    get(e, "category"),
                    get(e, "description"),
                    get(e, "question")
                ));
            }
            if interventions.is_empty() {
                lines.push("_No interventions recorded._".to_owned());
            }
        }
        "completion" => {
            lines.extend(["# Completion profile".to_owned(), String::new()]);
            table(&mut lines, &["Task", "Criterion", "Satisfied", "Mechanism", "Pointer"]);
            for t in tasks {
                for c in t.get("criteria").and_then(Value::as_array).unwrap_or(&[]) {
                    let done = truthy(c.get("satisfied"));
                    let (mech, pointer) = if done {
                        (
                            format!(
                                "evidence (seq {}, trust {})",
                                get(c, "via_seq"),
                                get(c, "trust")
                            ),
                            or_dash(c, "evidence_path"),
                        )
                    } else {
                        ("open".to_owned(), DASH.to_owned())
                    };
                    lines.push(format!(
                        "| {} | {} | {} | {mech} | {pointer} |",
                        get(t, "id"),
                        get(c, "criterion"),
                        if done { "yes" } else { "no" }
                    ));
                }
            }
            lines.extend([
                String::new(),
                "_Per criterion: the closing mechanism — the evidence item with its trust label \
                 — never a bare claim (A4). Reconciled-authority closures are v6.0 amendments \
                 until lifecycle wiring renders them here._"
                    .to_owned(),
            ]);
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
