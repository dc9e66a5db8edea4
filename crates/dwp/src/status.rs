//! A plan summary for people (`dwp status`): tasks, criteria, what is next, what is blocked
//! and why. Pure over (contract, contract id, events); the text form is a pure function of
//! the JSON form.

use canonical_json::{Map, Value};

use crate::outcomes::closure;
use crate::projection::{self, seq_of};
use crate::scheduler;

/// The summary document (`dwp status --json`).
pub fn summary(contract: &Value, contract_id: &str, events: &[Value]) -> Value {
    let closed = closure(contract, events);
    let crit_rows = closed.get("criteria").and_then(Value::as_array).unwrap_or(&[]);
    // The closure row of each criterion (first wins, as a search would find it), looked up per
    // intent instead of searched.
    let mut row_of: std::collections::HashMap<&str, &Value> = std::collections::HashMap::new();
    for row in crit_rows {
        if let Some(cid) = row.str_at("criterion") {
            row_of.entry(cid).or_insert(row);
        }
    }
    let ready = scheduler::ready(contract, events);
    let approved = events.iter().any(|e| {
        e.str_at("type") == Some("approval") && e.str_at("contract_id") == Some(contract_id)
    });
    let mut blocked: Vec<Value> = Vec::new();
    if !approved {
        blocked.push(Value::object([
            ("subject", "plan".into()),
            ("reason", "no approval cites the live contract".into()),
        ]));
    }
    let mut tasks = Vec::new();
    // One index of the events for every task (per-task searches were tasks x events).
    let progress = projection::Progress::new(contract, events);
    let refusals = Refusals::new(events);
    // Per task, its delegations still `launched` in their latest event (what
    // `projection::delegations(events, Some(task))` gives one task), from one pass.
    let mut latest: std::collections::HashMap<&str, std::collections::HashMap<String, &Value>> =
        std::collections::HashMap::new();
    for event in events.iter().filter(|e| e.str_at("type") == Some("delegation")) {
        if let Some(task) = event.str_at("task") {
            let id = crate::py::str_opt(event.get("delegation_id"));
            latest.entry(task).or_default().insert(id, event);
        }
    }
    let open_delegations: std::collections::HashMap<&str, usize> = latest
        .iter()
        .map(|(task, by_id)| {
            (*task, by_id.values().filter(|e| e.str_at("state") == Some("launched")).count())
        })
        .collect();
    for task in contract.get("tasks").and_then(Value::as_array).unwrap_or(&[]) {
        let Some(id) = task.str_at("id") else { continue };
        let status = progress.task_status(id);
        let criteria: Vec<Value> = projection::intent_criteria(task)
            .iter()
            .filter_map(|c| c.as_str())
            .map(|cid| {
                let row = row_of.get(cid).copied();
                let mechanism = row.and_then(|r| r.str_at("mechanism")).unwrap_or("open");
                let done =
                    row.and_then(|r| r.get("satisfied")).and_then(Value::as_bool) == Some(true);
                if mechanism.starts_with("blocked") {
                    blocked.push(Value::object([
                        ("subject", cid.into()),
                        ("reason", mechanism.into()),
                    ]));
                }
                Value::object([
                    ("criterion", cid.into()),
                    ("satisfied", done.into()),
                    ("mechanism", mechanism.into()),
                ])
            })
            .collect();
        if status != "completed" {
            for pre in task.get("prerequisites").and_then(Value::as_array).unwrap_or(&[]) {
                let Some(pre) = pre.as_str() else { continue };
                if !progress.task_complete(pre) {
                    blocked.push(Value::object([
                        ("subject", id.into()),
                        ("reason", format!("waits for prerequisite {pre}").into()),
                    ]));
                }
            }
        }
        let open_delegations = open_delegations.get(id).copied().unwrap_or(0);
        if open_delegations > 0 {
            blocked.push(Value::object([
                ("subject", id.into()),
                (
                    "reason",
                    format!("{open_delegations} open delegation(s) - completion waits for them")
                        .into(),
                ),
            ]));
        }
        let mut row = Map::from([
            ("id".to_owned(), id.into()),
            ("title".to_owned(), task.get("title").cloned().unwrap_or(Value::Null)),
            ("status".to_owned(), status.into()),
            ("started_seq".to_owned(), progress.started(id).map_or(Value::Null, Value::from)),
            ("criteria".to_owned(), Value::Array(criteria)),
        ]);
        let (shown, total) = refusals.of(id);
        if total > 0 {
            row.insert("refusals".to_owned(), Value::Array(shown));
            row.insert("refusals_total".to_owned(), total.into());
        }
        tasks.push(Value::Object(row));
    }
    let reference =
        events.iter().filter(|e| e.str_at("type") == Some("task_start")).map(seq_of).max();
    for finding in projection::invariant_findings(contract, events, reference) {
        blocked.push(Value::object([("subject", "invariant".into()), ("reason", finding.into())]));
    }
    if closed.get("review_blocks").and_then(Value::as_bool) == Some(true) {
        blocked.push(Value::object([
            ("subject", "review".into()),
            ("reason", "a critical review blocks plan completion".into()),
        ]));
    }
    let satisfied = crit_rows
        .iter()
        .filter(|r| r.get("satisfied").and_then(Value::as_bool) == Some(true))
        .count();
    let done_tasks = tasks.iter().filter(|t| t.str_at("status") == Some("completed")).count();
    let next: Vec<Value> = ready.iter().filter_map(|r| r.get("task").cloned()).collect();
    let mut doc = Map::from([
        ("plan".to_owned(), contract.get("plan").cloned().unwrap_or(Value::Null)),
        ("contract_id".to_owned(), contract_id.into()),
        ("revision".to_owned(), contract.get("revision").cloned().unwrap_or_else(|| 1i64.into())),
        ("last_seq".to_owned(), events.iter().map(seq_of).max().unwrap_or(0).into()),
        ("approved".to_owned(), approved.into()),
        (
            "totals".to_owned(),
            Value::object([
                ("tasks", tasks.len().into()),
                ("tasks_completed", done_tasks.into()),
                ("criteria", crit_rows.len().into()),
                ("criteria_satisfied", satisfied.into()),
            ]),
        ),
        ("tasks".to_owned(), Value::Array(tasks)),
        ("next".to_owned(), Value::Array(next)),
        ("blocked".to_owned(), Value::Array(blocked)),
    ]);
    doc.insert("review".to_owned(), closed.get("review").cloned().unwrap_or(Value::Null));
    Value::Object(doc)
}

/// How many of a task's most recent refusals a summary shows.
pub const REFUSALS_SHOWN: usize = 5;

/// The recorded refusals whose subject is `task` (or `delegate <task>`, the delegation gate's
/// subject) — the last [`REFUSALS_SHOWN`], oldest first, as `{seq, stage, reason}` — and how
/// many there are in all. For many tasks, build one [`Refusals`] index instead.
pub fn task_refusals(events: &[Value], task: &str) -> (Vec<Value>, usize) {
    Refusals::new(events).of(task)
}

/// The recorded refusals by task, from one pass over the events (a search per task was
/// tasks x events).
#[derive(Debug, Default)]
pub struct Refusals<'a> {
    by_task: std::collections::HashMap<&'a str, Vec<&'a Value>>,
}

impl<'a> Refusals<'a> {
    /// Indexes the `refusal` events of `events` by subject (`T` and `delegate T` alike).
    pub fn new(events: &'a [Value]) -> Refusals<'a> {
        let mut by_task: std::collections::HashMap<&'a str, Vec<&'a Value>> =
            std::collections::HashMap::new();
        for event in events.iter().filter(|e| e.str_at("type") == Some("refusal")) {
            if let Some(subject) = event.str_at("subject") {
                let task = subject.strip_prefix("delegate ").unwrap_or(subject);
                by_task.entry(task).or_default().push(event);
            }
        }
        Refusals { by_task }
    }

    /// A task's last [`REFUSALS_SHOWN`] refusals (oldest first) and their count.
    pub fn of(&self, task: &str) -> (Vec<Value>, usize) {
        let all = self.by_task.get(task).map_or(&[][..], Vec::as_slice);
        let shown = all[all.len().saturating_sub(REFUSALS_SHOWN)..]
            .iter()
            .map(|e| {
                Value::object([
                    ("seq", seq_of(e).into()),
                    ("stage", e.get("stage").cloned().unwrap_or(Value::Null)),
                    ("reason", e.get("reason").cloned().unwrap_or(Value::Null)),
                ])
            })
            .collect();
        (shown, all.len())
    }
}

fn paint(on: bool, code: &str, text: &str) -> String {
    if on { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
}

/// The human form of a [`summary`]; `colour` adds ANSI colours.
pub fn render_text(doc: &Value, colour: bool) -> String {
    let mut out = String::new();
    let n = |p: &str| doc.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let cid = doc.str_at("contract_id").unwrap_or("");
    out.push_str(&format!(
        "{} — revision {} contract {} ({} events)\n",
        paint(colour, "1", doc.str_at("plan").unwrap_or("?")),
        n("/revision"),
        crate::py::head(cid, 12),
        n("/last_seq")
    ));
    out.push_str(&format!(
        "tasks {}/{} completed, criteria {}/{} satisfied\n\n",
        n("/totals/tasks_completed"),
        n("/totals/tasks"),
        n("/totals/criteria_satisfied"),
        n("/totals/criteria")
    ));
    for task in doc.get("tasks").and_then(Value::as_array).unwrap_or(&[]) {
        let status = task.str_at("status").unwrap_or("");
        let code = match status {
            "completed" => "32",
            "in_progress" => "33",
            _ => "2",
        };
        out.push_str(&format!(
            "  {} {} {}\n",
            paint(colour, code, &format!("{status:<11}")),
            task.str_at("id").unwrap_or(""),
            task.str_at("title").unwrap_or("")
        ));
        for c in task.get("criteria").and_then(Value::as_array).unwrap_or(&[]) {
            let done = c.get("satisfied").and_then(Value::as_bool) == Some(true);
            let mark = if done { paint(colour, "32", "✓") } else { paint(colour, "31", "✗") };
            out.push_str(&format!(
                "      {mark} {} — {}\n",
                c.str_at("criterion").unwrap_or(""),
                c.str_at("mechanism").unwrap_or("")
            ));
        }
        let total = task.get("refusals_total").and_then(Value::as_i64).unwrap_or(0);
        if total > 0 {
            out.push_str(&format!(
                "      {} {total} refusal(s) recorded\n",
                paint(colour, "31", "⊘")
            ));
            for r in task.get("refusals").and_then(Value::as_array).unwrap_or(&[]) {
                let reason = r.str_at("reason").unwrap_or("");
                out.push_str(&format!(
                    "        seq {}: {}\n",
                    r.get("seq").and_then(Value::as_i64).unwrap_or(0),
                    crate::py::head(reason, 100)
                ));
            }
        }
    }
    let next: Vec<&str> = doc
        .get("next")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    out.push_str(&format!(
        "\nnext: {}\n",
        if next.is_empty() { "nothing is ready".to_owned() } else { next.join(", ") }
    ));
    let blocked = doc.get("blocked").and_then(Value::as_array).unwrap_or(&[]);
    if blocked.is_empty() {
        out.push_str("blocked: nothing\n");
    } else {
        out.push_str(&format!("{}\n", paint(colour, "31", "blocked:")));
        for b in blocked {
            out.push_str(&format!(
                "  - {}: {}\n",
                b.str_at("subject").unwrap_or(""),
                b.str_at("reason").unwrap_or("")
            ));
        }
    }
    out
}
