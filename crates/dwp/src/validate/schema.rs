//! Schema URLs, the closed vocabularies and the records generation.

use canonical_json::Value;

/// v6 contract schema URL.
pub const CONTRACT_URL_V6: &str = "https://deepworkplan.com/schema/plan-contract/v6.json";
/// v7 contract schema URL.
pub const CONTRACT_URL_V7: &str = "https://deepworkplan.com/schema/plan-contract/v7.json";
/// v6 journal-event schema URL.
pub const JOURNAL_URL_V6: &str = "https://deepworkplan.com/schema/journal-event/v6.json";
/// v7 journal-event schema URL.
pub const JOURNAL_URL_V7: &str = "https://deepworkplan.com/schema/journal-event/v7.json";

/// The closed adaptation kinds.
pub const ADAPTATION_KINDS: [&str; 5] = ["split", "reorder", "insert", "change_strategy", "retry"];
/// The two approval mechanisms.
pub const MECHANISMS: [&str; 2] = ["plan_authorship", "pre_authorization"];
/// The closed intervention taxonomy.
pub const INTERVENTION_CATEGORIES: [&str; 4] =
    ["missing_intent", "new_authority", "environment_repair", "engineering_rescue"];
/// The closed capability set.
pub const CAPABILITIES: [&str; 9] = [
    "gate_command_exec",
    "fs_write_plan_scope",
    "fs_write_repo_scope",
    "git_operations",
    "network_access",
    "host_adapter_metering",
    "agent_delegation",
    "context_export",
    "model_routing",
];
/// Trust labels.
pub const TRUST_LABELS: [&str; 3] = ["observed", "imported", "asserted"];
/// Actor kinds that may carry `observed`.
pub const EXECUTING_ACTORS: [&str; 2] = ["helper", "host_adapter"];
/// The v6 event catalog, in upstream order.
pub const EVENT_TYPES_V6: [&str; 14] = [
    "task_start",
    "approval",
    "gate_run",
    "observation",
    "adaptation",
    "amendment",
    "intervention",
    "resource_sample",
    "control_pair",
    "selection",
    "refusal",
    "view_render",
    "reconciliation",
    "journal_repair",
];
/// Types whose payload carries evidence (and a trust label).
pub const EVIDENCE_TYPES: [&str; 4] =
    ["gate_run", "observation", "resource_sample", "control_pair"];

/// A records generation, decided only by schema URLs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    /// `plan-contract/v6` / `journal-event/v6`.
    V6,
    /// `plan-contract/v7` / `journal-event/v7`.
    V7,
}

impl Generation {
    /// `"v6"` / `"v7"`.
    pub fn label(self) -> &'static str {
        match self {
            Generation::V6 => "v6",
            Generation::V7 => "v7",
        }
    }

    /// The journal-event URL of this generation.
    pub fn journal_url(self) -> &'static str {
        match self {
            Generation::V6 => JOURNAL_URL_V6,
            Generation::V7 => JOURNAL_URL_V7,
        }
    }

    /// The contract URL of this generation.
    pub fn contract_url(self) -> &'static str {
        match self {
            Generation::V6 => CONTRACT_URL_V6,
            Generation::V7 => CONTRACT_URL_V7,
        }
    }

    /// The ledger identity string (`dwp-ledger/6.0` or `dwp-ledger/7.0`).
    pub fn ledger_identity(self) -> &'static str {
        match self {
            Generation::V6 => "dwp-ledger/6.0",
            Generation::V7 => "dwp-ledger/7.0",
        }
    }
}

/// The generation of a contract from its `schema` URL.
pub fn contract_generation(doc: &Value) -> Option<Generation> {
    match doc.get("schema").and_then(Value::as_str) {
        Some(CONTRACT_URL_V6) => Some(Generation::V6),
        Some(CONTRACT_URL_V7) => Some(Generation::V7),
        _ => None,
    }
}

/// The generation of a journal event from its `schema` URL.
pub fn event_generation(event: &Value) -> Option<Generation> {
    match event.get("schema").and_then(Value::as_str) {
        Some(JOURNAL_URL_V6) => Some(Generation::V6),
        Some(JOURNAL_URL_V7) => Some(Generation::V7),
        _ => None,
    }
}

/// The journal URL a contract's events must carry (v6 when the contract's URL is unknown).
pub fn journal_url_for(contract: &Value) -> &'static str {
    contract_generation(contract).unwrap_or(Generation::V6).journal_url()
}

/// The fields of an `adaptation` event besides the envelope and the scheduler's own
/// `decision`/`reason` (what an `adapt` proposal may carry).
pub const ADAPTATION_FIELDS: [&str; 12] = [
    "kind",
    "trigger_observation",
    "evidence_artifact",
    "hypothesis",
    "action",
    "rationale",
    "affected_tasks",
    "affected_criteria",
    "authority",
    "evidence_invalidated",
    "evidence_preserved",
    "resource_impact",
];
