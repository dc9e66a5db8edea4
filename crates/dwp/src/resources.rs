//! Resource controls (upstream `resources.py`): host abilities, counter sources by unit
//! family, the envelope report with reserves, exhaustion holds, reservation settlement and
//! the routing posture. Pure over (contract, events, declared host abilities).

use std::collections::BTreeMap;
use std::fmt;

use canonical_json::{Finite, Map, Value};

use crate::projection::seq_of;
use crate::py::repr_str;

/// The closed set of host abilities.
pub const HOST_CAPABILITIES: [&str; 8] = [
    "stop_agent",
    "meter_spend",
    "meter_tokens",
    "meter_wall_clock",
    "cancel_children",
    "model_routing",
    "subagents",
    "telemetry",
];
/// Reservation dispositions.
pub const SETTLEMENTS: [&str; 2] = ["released", "committed"];
/// The actor identity of resource observations.
pub const RESOURCES_IDENTITY: &str = "dwp resources.py";

/// An operator-visible resources failure (exit 1).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourcesError {
    /// A host ability outside the closed set.
    UnknownCapability(String),
    /// `--caps` is not a JSON object.
    CapsShape,
    /// A limit the contract does not declare.
    UndeclaredLimit(String),
    /// A disposition outside released/committed.
    Disposition(String),
    /// A second, different settlement of one reservation.
    DoubleSettlement {
        /// The reservation key.
        key: String,
        /// The recorded disposition.
        prior: String,
        /// The requested disposition.
        requested: String,
    },
}

impl fmt::Display for ResourcesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourcesError::UnknownCapability(k) => write!(
                f,
                "unknown host capability {} — the closed set is {}; a capability is never invented",
                repr_str(k),
                HOST_CAPABILITIES.join("/")
            ),
            ResourcesError::CapsShape => f.write_str("--caps must be a JSON object"),
            ResourcesError::UndeclaredLimit(l) => write!(
                f,
                "limit {} is not declared in the contract — exhaustion of an undeclared counter \
                 is never recorded",
                repr_str(l)
            ),
            ResourcesError::Disposition(d) => {
                write!(f, "disposition {} outside {}", repr_str(d), SETTLEMENTS.join("/"))
            }
            ResourcesError::DoubleSettlement { key, prior, requested } => write!(
                f,
                "reservation {} already settled as {} — settling again as {} is the \
                 double-charge ambiguity; refuse and investigate",
                repr_str(key),
                repr_str(prior),
                repr_str(requested)
            ),
        }
    }
}

impl std::error::Error for ResourcesError {}

fn type_is(e: &Value, t: &str) -> bool {
    e.str_at("type") == Some(t)
}

fn float(x: f64) -> Value {
    Finite::new(x).map_or(Value::Null, Value::from)
}

fn limits(contract: &Value) -> &[Value] {
    contract.pointer("/resource_envelope/limits").and_then(Value::as_array).unwrap_or(&[])
}

/// Declared host abilities merged onto the all-false floor.
///
/// # Errors
/// A key outside [`HOST_CAPABILITIES`], or a non-object declaration.
pub fn host_capabilities(declared: &Value) -> Result<BTreeMap<String, bool>, ResourcesError> {
    let mut caps: BTreeMap<String, bool> =
        HOST_CAPABILITIES.iter().map(|c| ((*c).to_owned(), false)).collect();
    let Some(map) = declared.as_object() else { return Err(ResourcesError::CapsShape) };
    for (k, v) in map {
        if !HOST_CAPABILITIES.contains(&k.as_str()) {
            return Err(ResourcesError::UnknownCapability(k.clone()));
        }
        caps.insert(k.clone(), crate::py::truthy(Some(v)));
    }
    Ok(caps)
}

/// The caps as a JSON object.
pub fn caps_value(caps: &BTreeMap<String, bool>) -> Value {
    Value::Object(caps.iter().map(|(k, v)| (k.clone(), Value::Bool(*v))).collect())
}

/// `(counter source, host capability)` of a unit, by substring family.
pub fn family_of(unit: &str) -> (Option<&'static str>, Option<&'static str>) {
    let low = format!(" {} ", unit.to_lowercase());
    let families: [(&[&str], &str, Option<&str>); 5] = [
        (&["usd", "$", "cost"], "host", Some("meter_spend")),
        (&["token"], "host", Some("meter_tokens")),
        (&["hour", "wall", "time", " h"], "journal", None),
        (&["retr", "attempt"], "journal", None),
        (&["call", "dispatch", "invocation"], "journal", None),
    ];
    for (names, source, cap) in families {
        if names.iter().any(|n| low.contains(n)) {
            return (Some(source), cap);
        }
    }
    (None, None)
}

fn epoch_seconds(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| ts.get(r).and_then(|s| s.parse::<i64>().ok());
    let (y, mo, d, h, mi, s) =
        (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    Some(timefmt::days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s)
}

/// Counters the journal itself observes (wall-clock span, retries, dispatch calls).
pub fn journal_spent(unit: &str, events: &[Value]) -> Option<f64> {
    let low = unit.to_lowercase();
    if ["hour", "wall", "time"].iter().any(|n| low.contains(n)) || low.contains(" h") {
        let mut stamps: Vec<&str> = events.iter().filter_map(|e| e.str_at("ts")).collect();
        stamps.sort_unstable();
        let (Some(first), Some(last)) = (stamps.first(), stamps.last()) else { return Some(0.0) };
        if stamps.len() < 2 {
            return Some(0.0);
        }
        let span = epoch_seconds(last)? - epoch_seconds(first)?;
        return Some(((span as f64) / 3600.0 * 10_000.0).round() / 10_000.0);
    }
    let runs: Vec<&Value> = events.iter().filter(|e| type_is(e, "gate_run")).collect();
    if low.contains("retr") || low.contains("attempt") {
        let keys: std::collections::BTreeSet<(Option<&str>, Option<&str>)> =
            runs.iter().map(|e| (e.str_at("task"), e.str_at("criterion"))).collect();
        return Some(runs.len().saturating_sub(keys.len()) as f64);
    }
    if ["call", "dispatch", "invocation"].iter().any(|n| low.contains(n)) {
        return Some(events.iter().filter(|e| type_is(e, "selection")).count() as f64);
    }
    None
}

/// `{key: [(disposition, seq)]}` of `RESERVATION: <key>: <disposition>` observations.
pub fn settlements(events: &[Value]) -> BTreeMap<String, Vec<(String, i64)>> {
    let mut found: BTreeMap<String, Vec<(String, i64)>> = BTreeMap::new();
    for e in events.iter().filter(|e| type_is(e, "observation")) {
        let Some(rest) = e.str_at("statement").and_then(|s| s.strip_prefix("RESERVATION: ")) else {
            continue;
        };
        let Some((key, tail)) = rest.split_once(": ") else { continue };
        if key.is_empty() || key.contains(char::is_whitespace) {
            continue;
        }
        let disposition = tail.split_once(": ").map_or(tail, |(d, _)| d);
        if SETTLEMENTS.contains(&disposition) {
            found.entry(key.to_owned()).or_default().push((disposition.to_owned(), seq_of(e)));
        }
    }
    found
}

/// Refuses a settlement that contradicts an earlier one for the same key.
///
/// # Errors
/// A disposition outside the set, or a different prior disposition.
pub fn check_settlement(
    events: &[Value],
    key: &str,
    disposition: &str,
) -> Result<(), ResourcesError> {
    if !SETTLEMENTS.contains(&disposition) {
        return Err(ResourcesError::Disposition(disposition.to_owned()));
    }
    if let Some((prior, _)) =
        settlements(events).get(key).and_then(|v| v.iter().find(|(d, _)| d != disposition))
    {
        return Err(ResourcesError::DoubleSettlement {
            key: key.to_owned(),
            prior: prior.clone(),
            requested: disposition.to_owned(),
        });
    }
    Ok(())
}

/// Pending impact per limit: authorized adaptations' positive declared impact by unit (upstream
/// `scheduler.envelope_status`, which the report composes; released settlements are not
/// subtracted there).
fn pending_by_limit(contract: &Value, events: &[Value]) -> BTreeMap<String, f64> {
    let mut pending: BTreeMap<String, f64> = limits(contract)
        .iter()
        .filter_map(|l| l.str_at("id"))
        .map(|id| (id.to_owned(), 0.0))
        .collect();
    for e in events
        .iter()
        .filter(|e| type_is(e, "adaptation") && e.str_at("decision") == Some("authorized"))
    {
        let Some(impact) = e.get("resource_impact") else { continue };
        let declared = impact.get("declared").and_then(Value::as_f64).unwrap_or(0.0);
        if declared <= 0.0 {
            continue;
        }
        for l in limits(contract) {
            if l.get("unit") == impact.get("unit")
                && let Some(id) = l.str_at("id")
            {
                *pending.entry(id.to_owned()).or_insert(0.0) += declared;
            }
        }
    }
    pending
}

/// The per-limit envelope report with reserves, counter sources and effective modes.
pub fn envelope_report(contract: &Value, events: &[Value], caps: &BTreeMap<String, bool>) -> Value {
    let pending = pending_by_limit(contract, events);
    let mut rows = Vec::new();
    let mut refusal = Value::Null;
    let mut unsupported = Vec::new();
    for limit in limits(contract) {
        let lid = limit.str_at("id").unwrap_or("");
        let unit = limit.str_at("unit").unwrap_or("");
        let value = limit.get("limit").and_then(Value::as_f64);
        // Upstream `limit.get('reserve') or 0`: a missing, null or zero reserve is the int 0.
        let reserve_v = limit
            .get("reserve")
            .filter(|r| crate::py::truthy(Some(r)))
            .cloned()
            .unwrap_or_else(|| 0i64.into());
        let reserve = reserve_v.as_f64().unwrap_or(0.0);
        let (source, cap) = family_of(unit);
        let samples = |observed: bool| {
            events.iter().rev().find(|e| {
                type_is(e, "resource_sample")
                    && e.str_at("limit_id") == Some(lid)
                    && (e.str_at("trust") == Some("observed")) == observed
            })
        };
        // Upstream: the latest observed sample is metered; every other trust is advisory.
        let observed_v = samples(true).and_then(|e| e.get("value")).filter(|v| !v.is_null());
        let observed = observed_v.and_then(Value::as_f64);
        let asserted = samples(false).and_then(|e| e.get("value")).cloned().unwrap_or(Value::Null);
        let mut spent = None;
        let mut spent_v = Value::Null;
        let mode = if limit.str_at("enforcement") == Some("advisory") {
            "advisory (declared advisory)".to_owned()
        } else if source.is_none() {
            format!(
                "advisory (counter family unknown for unit {} — no meter is invented)",
                repr_str(unit)
            )
        } else if source == Some("journal") {
            spent = journal_spent(unit, events);
            spent_v = spent.map_or(Value::Null, float);
            "enforced (journal-computed counter)".to_owned()
        } else if !cap.is_some_and(|c| caps.get(c).copied().unwrap_or(false)) {
            format!(
                "advisory (host cannot meter: no {} capability — enforcement parity is never claimed)",
                cap.unwrap_or("")
            )
        } else if observed_v.is_none() {
            "enforced-pending-only (unmetered spend: a missing counter is not free usage)"
                .to_owned()
        } else {
            spent = Some(observed.unwrap_or(0.0));
            spent_v = observed_v.cloned().unwrap_or(Value::Null);
            "enforced (observed meter sample)".to_owned()
        };
        let p = pending.get(lid).copied().unwrap_or(0.0);
        let ceiling = value.map(|v| v - reserve);
        // Python arithmetic: int - int stays an int, anything else is a float.
        let ceiling_v = match (limit.get("limit").and_then(Value::as_i64), reserve_v.as_i64()) {
            (Some(l), Some(r)) => l.checked_sub(r).map_or(Value::Null, Value::from),
            _ => ceiling.map_or(Value::Null, float),
        };
        let py = |v: &Value| crate::py::str_of(v);
        let over =
            mode.starts_with("enforced") && ceiling.is_some_and(|c| spent.unwrap_or(0.0) + p > c);
        if over && refusal.is_null() {
            refusal = Value::object([
                ("rule", "limit-exhausted".into()),
                (
                    "detail",
                    format!(
                        "enforced limit {} over its dispatchable ceiling: spent {} + pending {} > {} (limit {} - reserve {}){}",
                        repr_str(lid),
                        if spent_v.is_null() { "0.0".to_owned() } else { py(&spent_v) },
                        py(&float(p)),
                        py(&ceiling_v),
                        limit.get("limit").map_or_else(|| "None".to_owned(), py),
                        py(&reserve_v),
                        if spent.is_some() { "" } else { " [unmetered spend: pending-side enforcement only]" }
                    )
                    .into(),
                ),
            ]);
        }
        if source.is_none() {
            unsupported.push(Value::from(lid));
        }
        let mut row = Map::new();
        for (k, v) in [
            ("limit_id", Value::from(lid)),
            ("unit", limit.get("unit").cloned().unwrap_or(Value::Null)),
            ("declared_enforcement", limit.get("enforcement").cloned().unwrap_or(Value::Null)),
            ("effective_mode", mode.into()),
            ("counter_source", source.map_or(Value::Null, Value::from)),
            ("limit", limit.get("limit").cloned().unwrap_or(Value::Null)),
            ("reserve", reserve_v.clone()),
            ("dispatch_ceiling", ceiling_v),
            ("spent", spent_v),
            (
                "spent_source",
                if source == Some("journal") { "journal" } else { "host meter" }.into(),
            ),
            ("asserted_latest", asserted),
            ("pending", float(p)),
            ("over_ceiling", over.into()),
            ("host_capability", cap.map_or(Value::Null, Value::from)),
        ] {
            row.insert(k.to_owned(), v);
        }
        rows.push(Value::Object(row));
    }
    Value::object([
        ("limits", Value::Array(rows)),
        ("refusal", refusal),
        ("host_capabilities", caps_value(caps)),
        ("unsupported_counters", Value::Array(unsupported)),
    ])
}

/// The hold derived from the records: the latest `LIMIT: exhausted` on an enforced limit not
/// followed by `LIMIT: recovered`.
pub fn dispatch_hold(contract: &Value, events: &[Value]) -> Option<Value> {
    let enforced: Vec<&str> = limits(contract)
        .iter()
        .filter(|l| l.str_at("enforcement") == Some("enforced"))
        .filter_map(|l| l.str_at("id"))
        .collect();
    let mut latest: BTreeMap<String, (String, String, i64)> = BTreeMap::new();
    for e in events.iter().filter(|e| type_is(e, "observation")) {
        let Some(rest) = e.str_at("statement").and_then(|s| s.strip_prefix("LIMIT: ")) else {
            continue;
        };
        let Some((state, tail)) = rest.split_once(' ') else { continue };
        if state != "exhausted" && state != "recovered" {
            continue;
        }
        let (id, detail) = tail.split_once(": ").unwrap_or((tail, ""));
        if crate::py::is_limit_id(id) {
            latest.insert(id.to_owned(), (state.to_owned(), detail.to_owned(), seq_of(e)));
        }
    }
    latest
        .into_iter()
        .filter(|(id, (state, _, _))| enforced.contains(&id.as_str()) && state == "exhausted")
        .max_by_key(|(_, (_, _, seq))| *seq)
        .map(|(id, (_, detail, seq))| {
            Value::object([
                ("limit_id", id.into()),
                ("reason", detail.into()),
                ("via_seq", seq.into()),
            ])
        })
}

/// The `LIMIT:` statement for `exhaust`/`recover`.
///
/// # Errors
/// A limit the contract does not declare.
pub fn limit_statement(
    contract: &Value,
    limit_id: &str,
    recover: bool,
    detail: &str,
) -> Result<String, ResourcesError> {
    if !limits(contract).iter().any(|l| l.str_at("id") == Some(limit_id)) {
        return Err(ResourcesError::UndeclaredLimit(limit_id.to_owned()));
    }
    let state = if recover { "recovered" } else { "exhausted" };
    Ok(if detail.is_empty() {
        format!("LIMIT: {state} {limit_id}")
    } else {
        format!("LIMIT: {state} {limit_id}: {detail}")
    })
}

/// The routing posture: model switching and parallel dispatch, each naming the missing side.
pub fn routing_posture(contract: &Value, caps: &BTreeMap<String, bool>) -> Value {
    let granted: Vec<&str> = contract
        .pointer("/permissions/granted")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let has = |c: &str| caps.get(c).copied().unwrap_or(false);
    let mut missing = Vec::new();
    if !granted.contains(&"model_routing") {
        missing.push(Value::from("contract grant model_routing"));
    }
    if !has("model_routing") {
        missing.push(Value::from("host capability model_routing"));
    }
    let mut parallel = Vec::new();
    if !granted.contains(&"agent_delegation") {
        parallel.push(Value::from("contract grant agent_delegation"));
    }
    if !has("subagents") {
        parallel.push(Value::from("host capability subagents"));
    }
    Value::object([
        (
            "model",
            Value::object([
                (
                    "posture",
                    if missing.is_empty() { "switching_authorized" } else { "fixed_model" }.into(),
                ),
                ("missing", Value::Array(missing)),
                ("never_an_efficacy_claim", true.into()),
            ]),
        ),
        (
            "parallel",
            Value::object([
                (
                    "posture",
                    if parallel.is_empty() { "parallel_authorized" } else { "sequential_only" }
                        .into(),
                ),
                ("missing", Value::Array(parallel)),
            ]),
        ),
    ])
}
