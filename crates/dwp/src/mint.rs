//! What may be minted into a journal, and how (upstream `ledger.py`'s mint rules and approval
//! gate for `append`).
//!
//! The writer in `dwp-ledger` asks these questions before it writes; each answer is the
//! upstream refusal text (or `None` / `Ok` when the append may proceed). Resolving an evidence
//! pointer on disk is the writer's part; deciding *whether* one is needed is here.

use canonical_json::{Map, Value};

use crate::projection::{self, seq_of};
use crate::py::head;

/// Why `task_start` is refused when no approval cites the live contract (the error text; the
/// recorded `refusal` event carries [`approval_refusal_reason`]).
pub const APPROVAL_MISSING: &str = "task_start refused: no approval event cites the live \
     contract_id — record the materialization-time approval first (mechanism: plan_authorship \
     or pre_authorization)";

/// The claim that counts for a mint rule: the flag, else the same key smuggled inside the
/// payload. Divergence (DWP.md §19.4): a `trust` or `evidence_path` inside `append --json` is
/// subject to the same rules as the flag.
pub fn claimed<'a>(flag: Option<&'a str>, payload: &'a Map, key: &str) -> Option<&'a str> {
    flag.or_else(|| payload.get(key).and_then(Value::as_str))
}

/// The refusal of a raw `append` of `etype` claiming `trust` by `actor`, if any: `gate_run` and
/// `delegation` records have their own producers, and `observed` is minted only by execution.
pub fn raw_append_refusal(etype: &str, trust: Option<&str>, actor: &Value) -> Option<&'static str> {
    if etype == "gate_run" {
        return Some(
            "gate_run records are produced only by the gate executor (ledger.py gate) — a \
             mediated write can never be observed evidence (A1)",
        );
    }
    if etype == "delegation" {
        return Some(
            "delegation records are produced only by `ledger.py delegate` (its gate: v7 \
             contract, agent_delegation grant, parallel_safe marker, enabled transport addon) \
             — a raw append cannot bypass it (V7_CONTRACT.md section 3)",
        );
    }
    if trust == Some("observed") {
        if etype != "resource_sample" {
            return Some(
                "trust=observed is minted only by execution: the gate executor for gate_run \
                 records, or host-adapter metering for resource_sample records. Record this \
                 as asserted with the mediation named (A1)",
            );
        }
        if actor.get("kind").and_then(Value::as_str) != Some("host_adapter") {
            return Some(
                "observed resource samples require a host_adapter actor that read the meter \
                 — agent/helper writers record asserted",
            );
        }
    }
    None
}

/// Whether a record claiming `trust` must cite an artifact that exists (`observed`,
/// `imported`).
pub fn cites_evidence(trust: Option<&str>) -> bool {
    matches!(trust, Some("observed" | "imported"))
}

/// Whether `etype` passes the approval gate (only `task_start` does).
pub fn needs_approval(etype: &str) -> bool {
    etype == "task_start"
}

/// The seq of the first `approval` event citing `contract_id`, if any.
pub fn approval_seq(events: &[Value], contract_id: &str) -> Option<i64> {
    events
        .iter()
        .find(|e| {
            e.get("type").and_then(Value::as_str) == Some("approval")
                && e.get("contract_id").and_then(Value::as_str) == Some(contract_id)
        })
        .map(seq_of)
}

/// The `reason` of the `refusal` event recorded when no approval cites `contract_id`.
pub fn approval_refusal_reason(contract_id: &str) -> String {
    format!("no approval event cites the live contract_id {}", head(contract_id, 12))
}

/// The earlier event an idempotent append of (`etype`, `payload`, `actor`) would repeat, if
/// any (same content key under the same contract).
pub fn duplicate_of<'a>(
    events: &'a [Value],
    etype: &str,
    payload: &Map,
    actor: &Value,
    contract_id: &str,
) -> Option<&'a Value> {
    let key = projection::content_key(
        &Value::String(etype.to_owned()),
        &Value::Object(payload.clone()),
        Some(actor),
        &Value::String(contract_id.to_owned()),
    );
    events.iter().find(|prior| {
        projection::content_key(
            prior.get("type").unwrap_or(&Value::Null),
            &projection::payload_of(prior),
            prior.get("actor"),
            prior.get("contract_id").unwrap_or(&Value::Null),
        ) == key
    })
}
