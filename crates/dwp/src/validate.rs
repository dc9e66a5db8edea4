//! Contract and journal-event validation (upstream `contract_v6.py`), v6 and v7.
//!
//! Every function is pure: it takes parsed values and returns the list of upstream message
//! texts (empty = valid). Messages reproduce the upstream wording, including Python `%r`
//! formatting of offending values. Object keys are visited in sorted order (the value model
//! does not keep insertion order), so several `unexpected field` errors in one object may be
//! listed in a different order than upstream.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use canonical_json::{Map, Number, Value};

use crate::contract::{contract_id, revision_content_bytes};
use crate::py::{
    self, is_addon_id, is_criterion_id, is_datetime, is_delegation_id, is_dotted_version, is_hex64,
    is_invariant_id, is_limit_id, is_plan_id, is_prefixed_digest, is_task_id, non_blank, repr,
    repr_opt, repr_str, str_opt, truthy,
};

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

fn is_num(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::Number(_)))
}

fn is_int(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::Number(Number::Int(_))))
}

fn num_lt(v: Option<&Value>, floor: f64) -> bool {
    v.and_then(Value::as_number).is_some_and(|n| n.to_f64() < floor)
}

fn int_ge(v: Option<&Value>, floor: i64) -> bool {
    match v {
        Some(Value::Number(Number::Int(i))) => match i.as_i64() {
            Some(x) => x >= floor,
            None => i.to_f64() > 0.0,
        },
        _ => false,
    }
}

fn str_list(value: Option<&Value>, path: &str, errors: &mut Vec<String>, minimum: usize) -> bool {
    let items = match value.and_then(Value::as_array) {
        Some(items) if items.len() >= minimum => items,
        _ => {
            errors.push(format!(
                "{path}: expected a list with at least {minimum} entr{}",
                if minimum == 1 { "y" } else { "ies" }
            ));
            return false;
        }
    };
    for (i, item) in items.iter().enumerate() {
        if !item.as_str().is_some_and(non_blank) {
            errors.push(format!("{path}[{i}]: expected a non-empty string"));
            return false;
        }
    }
    true
}

#[derive(Clone, Copy)]
enum Kind {
    Str,
    StrAny,
    DateTime,
    Hex64,
}

fn field<'a>(
    doc: &'a Map,
    key: &str,
    kind: Kind,
    path: &str,
    errors: &mut Vec<String>,
    optional: bool,
) -> Option<&'a Value> {
    let Some(value) = doc.get(key) else {
        if !optional {
            errors.push(format!("{path}: missing required field {}", repr_str(key)));
        }
        return None;
    };
    let s = value.as_str();
    let (ok, what) = match kind {
        Kind::Str => (s.is_some_and(non_blank), "expected a non-empty string"),
        Kind::StrAny => (s.is_some(), "expected a string"),
        Kind::DateTime => (s.is_some_and(is_datetime), "expected an RFC 3339 timestamp"),
        Kind::Hex64 => {
            (s.is_some_and(is_hex64), "expected a 64-character lowercase sha256 hex digest")
        }
    };
    if !ok {
        errors.push(format!("{path}.{key}: {what}"));
        return None;
    }
    Some(value)
}

fn field_str<'a>(
    doc: &'a Map,
    key: &str,
    kind: Kind,
    path: &str,
    errors: &mut Vec<String>,
) -> Option<&'a str> {
    field(doc, key, kind, path, errors, false).and_then(Value::as_str)
}

fn closed(obj: &Map, known: &[&str], path: &str, errors: &mut Vec<String>) {
    for key in obj.keys() {
        if !known.contains(&key.as_str()) {
            errors.push(format!("{path}: unexpected field {} (closed object)", repr_str(key)));
        }
    }
}

fn dup_by_str(items: &[Value]) -> bool {
    let set: BTreeSet<String> = items.iter().map(py::str_of).collect();
    set.len() != items.len()
}

// ------------------------------------------------------------------ contract

const CONTRACT_KEYS: [&str; 18] = [
    "schema",
    "spec_version",
    "plan",
    "revision",
    "contract_id",
    "parent_contract_id",
    "created_at",
    "title",
    "outcome",
    "acceptance",
    "invariants",
    "scope",
    "authorization",
    "permissions",
    "dependencies",
    "resource_envelope",
    "scheduling",
    "tasks",
];

const REQUIRED_CONTRACT_KEYS: [&str; 13] = [
    "spec_version",
    "plan",
    "revision",
    "created_at",
    "outcome",
    "acceptance",
    "invariants",
    "scope",
    "authorization",
    "permissions",
    "dependencies",
    "resource_envelope",
    "tasks",
];

/// All validation errors of one contract (`contract_errors`).
///
/// `parents` maps parent `contract_id` → parent document; pass `Some` to check the chain.
pub fn contract_errors(doc: &Value, parents: Option<&HashMap<String, Value>>) -> Vec<String> {
    let mut errors = Vec::new();
    let Some(obj) = doc.as_object() else {
        return vec!["contract: expected a JSON object".to_owned()];
    };
    closed(obj, &CONTRACT_KEYS, "contract", &mut errors);
    let Some(generation) = contract_generation(doc) else {
        errors.push(format!(
            "contract.schema: expected {}, found {} - the v6 contract reader validates v6 \
             contracts only (and their v7 superset {}); older plans keep their recorded \
             lifecycle (section 9.1)",
            repr_str(CONTRACT_URL_V6),
            repr_opt(obj.get("schema")),
            repr_str(CONTRACT_URL_V7)
        ));
        return errors;
    };
    for key in REQUIRED_CONTRACT_KEYS {
        if !obj.contains_key(key) {
            errors.push(format!("contract: missing required field {}", repr_str(key)));
        }
    }
    if !errors.is_empty() {
        return errors;
    }
    if !is_dotted_version(&str_opt(obj.get("spec_version"))) {
        errors.push("contract.spec_version: expected dotted-numeric".to_owned());
    }
    if !is_plan_id(&str_opt(obj.get("plan"))) {
        errors.push("contract.plan: expected a PLAN_* identifier".to_owned());
    }
    let revision_ok = is_int(obj.get("revision")) && int_ge(obj.get("revision"), 1);
    if !revision_ok {
        errors.push("contract.revision: expected an integer >= 1".to_owned());
    }
    if !is_datetime(&str_opt(obj.get("created_at"))) {
        errors.push("contract.created_at: expected an RFC 3339 timestamp".to_owned());
    }
    field(obj, "title", Kind::StrAny, "contract", &mut errors, true);

    if let Some(stamped) = obj.get("contract_id").filter(|v| !v.is_null()) {
        if !is_hex64(&py::str_of(stamped)) {
            errors.push(
                "contract.contract_id: expected a 64-character lowercase sha256 hex digest"
                    .to_owned(),
            );
        } else if contract_id(doc).ok().as_deref() != stamped.as_str() {
            errors.push(
                "contract.contract_id: stamped identity does not match the canonical bytes - a \
                 changed contract is a NEW revision citing parent_contract_id, never an \
                 in-place edit (section 3.1)"
                    .to_owned(),
            );
        }
    }
    let parent = obj.get("parent_contract_id").filter(|v| !v.is_null());
    let revision: i128 = match obj.get("revision") {
        Some(Value::Number(Number::Int(i))) => i.as_i64().map_or(i128::MAX, i128::from),
        _ => 1,
    };
    if revision > 1 && parent.is_none() {
        errors.push(format!(
            "contract.parent_contract_id: required for revision {revision} - a revision must \
             cite the contract it replaces"
        ));
    }
    if revision == 1 && parent.is_some() {
        errors.push(
            "contract.parent_contract_id: a first revision has no parent - drop the field or \
             correct revision"
                .to_owned(),
        );
    }
    if let (Some(parent), Some(parents)) = (parent, parents) {
        let text = py::str_of(parent);
        if !is_hex64(&text) {
            errors.push("contract.parent_contract_id: expected a sha256 hex digest".to_owned());
        } else if let Some(pdoc) = parents.get(&text) {
            let declared = pdoc.get("revision");
            let contiguous = matches!(declared, Some(Value::Number(Number::Int(i)))
                if i.as_i64().map(i128::from) == Some(revision - 1));
            if !contiguous {
                errors.push(format!(
                    "contract.parent_contract_id: parent declares revision {}, expected {} \
                     (chain must be contiguous)",
                    repr_opt(declared),
                    revision - 1
                ));
            }
            if revision_content_bytes(pdoc).ok() == revision_content_bytes(doc).ok() {
                errors.push(
                    "contract: revision content is identical to the parent once chain metadata \
                     is stripped - a revision must change something substantive (section 3.4)"
                        .to_owned(),
                );
            }
        } else {
            errors.push(format!(
                "contract.parent_contract_id: parent {} was not supplied for chain checking - \
                 pass the earlier revision as --parent FILE",
                text.chars().take(12).collect::<String>()
            ));
        }
    }

    outcome_errors(obj, &mut errors);
    let criteria = acceptance_errors(obj, &mut errors);
    invariants_errors(obj, &mut errors);
    scope_errors(obj, &mut errors);
    authorization_errors(obj, &mut errors);
    permissions_errors(obj, &mut errors);
    dependencies_errors(obj, &mut errors);
    envelope_errors(obj, &mut errors);
    scheduling_errors(obj, &mut errors);
    tasks_errors(obj, criteria.as_ref(), &mut errors, generation == Generation::V7);
    errors
}

fn outcome_errors(doc: &Map, errors: &mut Vec<String>) {
    let Some(outcome) = doc.get("outcome").and_then(Value::as_object) else {
        errors.push("contract.outcome: expected an object".to_owned());
        return;
    };
    let path = "contract.outcome";
    closed(outcome, &["statement", "success_definition", "out_of_scope"], path, errors);
    field(outcome, "statement", Kind::Str, path, errors, false);
    field(outcome, "success_definition", Kind::Str, path, errors, false);
    match outcome.get("out_of_scope") {
        None => errors.push(
            "contract.outcome: missing required field 'out_of_scope' (the exclusion list is \
             content)"
                .to_owned(),
        ),
        Some(v) => {
            str_list(Some(v), "contract.outcome.out_of_scope", errors, 0);
        }
    }
}

fn acceptance_errors(doc: &Map, errors: &mut Vec<String>) -> Option<BTreeSet<String>> {
    let Some(acceptance) = doc.get("acceptance").and_then(Value::as_object) else {
        errors.push("contract.acceptance: expected an object".to_owned());
        return None;
    };
    closed(acceptance, &["criteria"], "contract.acceptance", errors);
    let criteria = match acceptance.get("criteria").and_then(Value::as_array) {
        Some(c) if !c.is_empty() => c,
        _ => {
            errors.push("contract.acceptance.criteria: expected a non-empty list".to_owned());
            return None;
        }
    };
    let mut ids = BTreeSet::new();
    for (i, crit) in criteria.iter().enumerate() {
        let path = format!("contract.acceptance.criteria[{i}]");
        let Some(crit) = crit.as_object() else {
            errors.push(format!("{path}: expected an object"));
            continue;
        };
        closed(
            crit,
            &["id", "statement", "observable_check", "accepted_evidence", "control"],
            &path,
            errors,
        );
        if let Some(cid) = field_str(crit, "id", Kind::StrAny, &path, errors) {
            if !is_criterion_id(cid) {
                errors.push(format!("{path}.id: expected an 'AC-<slug>' stable id"));
            } else if ids.contains(cid) {
                errors.push(format!(
                    "{path}.id: duplicate criterion id {} - ids are stable and unique",
                    repr_str(cid)
                ));
            } else {
                ids.insert(cid.to_owned());
            }
        }
        field(crit, "statement", Kind::Str, &path, errors, false);
        field(crit, "observable_check", Kind::Str, &path, errors, false);
        match crit.get("accepted_evidence").and_then(Value::as_array) {
            Some(accepted) if !accepted.is_empty() => {
                for label in accepted {
                    if !label.as_str().is_some_and(|l| TRUST_LABELS.contains(&l)) {
                        errors.push(format!(
                            "{path}.accepted_evidence: unknown trust label {} (closed set: {})",
                            repr(label),
                            TRUST_LABELS.join("/")
                        ));
                    }
                }
                if dup_by_str(accepted) {
                    errors.push(format!("{path}.accepted_evidence: duplicate labels"));
                }
            }
            _ => errors.push(format!(
                "{path}.accepted_evidence: expected a non-empty list of trust labels - every \
                 criterion declares which section-4.5 classes may close it"
            )),
        }
        if let Some(control) = crit.get("control") {
            let cpath = format!("{path}.control");
            match control.as_object() {
                None => errors.push(format!("{cpath}: expected an object")),
                Some(control) => {
                    closed(control, &["kind", "rationale"], &cpath, errors);
                    if let Some(kind) = field_str(control, "kind", Kind::StrAny, &cpath, errors)
                        && !["regression", "discrimination", "exempt"].contains(&kind)
                    {
                        errors.push(format!(
                            "{cpath}.kind: expected regression/discrimination/exempt"
                        ));
                    }
                    field(control, "rationale", Kind::Str, &cpath, errors, false);
                }
            }
        }
    }
    Some(ids)
}

fn invariants_errors(doc: &Map, errors: &mut Vec<String>) {
    let Some(invariants) = doc.get("invariants").and_then(Value::as_array) else {
        errors.push("contract.invariants: expected a list".to_owned());
        return;
    };
    let mut seen = BTreeSet::new();
    for (i, inv) in invariants.iter().enumerate() {
        let path = format!("contract.invariants[{i}]");
        let Some(inv) = inv.as_object() else {
            errors.push(format!("{path}: expected an object"));
            continue;
        };
        closed(inv, &["id", "statement"], &path, errors);
        if let Some(iid) = field_str(inv, "id", Kind::StrAny, &path, errors) {
            if !is_invariant_id(iid) {
                errors.push(format!("{path}.id: expected an 'INV-<slug>' stable id"));
            } else if !seen.insert(iid.to_owned()) {
                errors.push(format!("{path}.id: duplicate invariant id {}", repr_str(iid)));
            }
        }
        field(inv, "statement", Kind::Str, &path, errors, false);
    }
}

fn scope_errors(doc: &Map, errors: &mut Vec<String>) {
    let Some(scope) = doc.get("scope").and_then(Value::as_object) else {
        errors.push("contract.scope: expected an object".to_owned());
        return;
    };
    closed(
        scope,
        &["allowed_paths", "allowed_command_classes", "forbidden_operations"],
        "contract.scope",
        errors,
    );
    if !truthy(scope.get("allowed_paths")) {
        errors.push(
            "contract.scope.allowed_paths: expected a non-empty list - a plan that may touch \
             nothing cannot run"
                .to_owned(),
        );
    } else {
        str_list(scope.get("allowed_paths"), "contract.scope.allowed_paths", errors, 0);
    }
    if !truthy(scope.get("allowed_command_classes")) {
        errors.push(
            "contract.scope.allowed_command_classes: expected a non-empty list - an empty \
             allowlist is undeclared, not unrestricted"
                .to_owned(),
        );
    } else if str_list(
        scope.get("allowed_command_classes"),
        "contract.scope.allowed_command_classes",
        errors,
        0,
    ) && scope
        .get("allowed_command_classes")
        .and_then(Value::as_array)
        .is_some_and(dup_by_str)
    {
        errors.push("contract.scope.allowed_command_classes: duplicate entries".to_owned());
    }
    if !truthy(scope.get("forbidden_operations")) {
        errors.push(
            "contract.scope.forbidden_operations: expected a non-empty list - destructive and \
             outward-facing operations are named explicitly, never implied"
                .to_owned(),
        );
    } else {
        str_list(
            scope.get("forbidden_operations"),
            "contract.scope.forbidden_operations",
            errors,
            0,
        );
    }
}

fn authorization_errors(doc: &Map, errors: &mut Vec<String>) {
    let Some(auth) = doc.get("authorization").and_then(Value::as_object) else {
        errors.push("contract.authorization: expected an object".to_owned());
        return;
    };
    let path = "contract.authorization";
    closed(
        auth,
        &["mechanism", "authority", "timestamp", "boundaries", "consent_checkpoints"],
        path,
        errors,
    );
    if let Some(mechanism) = field_str(auth, "mechanism", Kind::StrAny, path, errors)
        && !MECHANISMS.contains(&mechanism)
    {
        errors.push(format!(
            "contract.authorization.mechanism: unknown value {} - exactly {} exist and \
             migration re-uses 'pre_authorization' (D3-2)",
            repr_str(mechanism),
            MECHANISMS.join(" and ")
        ));
    }
    field(auth, "authority", Kind::Str, path, errors, false);
    field(auth, "timestamp", Kind::DateTime, path, errors, false);
    field(auth, "boundaries", Kind::Str, path, errors, false);
    match auth.get("consent_checkpoints") {
        None => errors.push(
            "contract.authorization: missing required field 'consent_checkpoints' (carried \
             verbatim, even when empty)"
                .to_owned(),
        ),
        Some(v) => {
            str_list(Some(v), "contract.authorization.consent_checkpoints", errors, 0);
        }
    }
}

fn permissions_errors(doc: &Map, errors: &mut Vec<String>) {
    let Some(perms) = doc.get("permissions").and_then(Value::as_object) else {
        errors.push("contract.permissions: expected an object".to_owned());
        return;
    };
    closed(perms, &["granted", "not_granted"], "contract.permissions", errors);
    let empty: &[Value] = &[];
    let granted = perms.get("granted").and_then(Value::as_array).unwrap_or_else(|| {
        errors.push("contract.permissions.granted: expected a list".to_owned());
        empty
    });
    let denied = perms.get("not_granted").and_then(Value::as_array).unwrap_or_else(|| {
        errors.push("contract.permissions.not_granted: expected a list".to_owned());
        empty
    });
    for (list, path) in [(granted, "granted"), (denied, "not_granted")] {
        for cap in list {
            if !cap.as_str().is_some_and(|c| CAPABILITIES.contains(&c)) {
                errors.push(format!(
                    "contract.permissions.{path}: unsupported capability {} - the closed set \
                     is: {}",
                    repr(cap),
                    CAPABILITIES.join(", ")
                ));
            }
        }
        if dup_by_str(list) {
            errors.push(format!("contract.permissions.{path}: duplicate entries"));
        }
    }
    let g: BTreeSet<&str> = granted.iter().filter_map(Value::as_str).collect();
    let d: BTreeSet<&str> = denied.iter().filter_map(Value::as_str).collect();
    let overlap: Vec<String> = g.intersection(&d).map(|s| repr_str(s)).collect();
    if !overlap.is_empty() {
        errors.push(format!(
            "contract.permissions: {} appear{} in BOTH granted and not_granted - the lists \
             must be disjoint",
            overlap.join(", "),
            if overlap.len() > 1 { "s" } else { "" }
        ));
    }
}

fn dependencies_errors(doc: &Map, errors: &mut Vec<String>) {
    let Some(deps) = doc.get("dependencies").and_then(Value::as_array) else {
        errors.push("contract.dependencies: expected a list".to_owned());
        return;
    };
    for (i, dep) in deps.iter().enumerate() {
        let path = format!("contract.dependencies[{i}]");
        let Some(dep) = dep.as_object() else {
            errors.push(format!("{path}: expected an object"));
            continue;
        };
        closed(dep, &["name", "kind", "detail"], &path, errors);
        field(dep, "name", Kind::Str, &path, errors, false);
        if let Some(kind) = field_str(dep, "kind", Kind::StrAny, &path, errors)
            && !["external_system", "credential", "pinned_input"].contains(&kind)
        {
            errors.push(format!("{path}.kind: expected external_system/credential/pinned_input"));
        }
        field(dep, "detail", Kind::Str, &path, errors, false);
    }
}

fn envelope_errors(doc: &Map, errors: &mut Vec<String>) {
    let Some(envelope) = doc.get("resource_envelope").and_then(Value::as_object) else {
        errors.push("contract.resource_envelope: expected an object".to_owned());
        return;
    };
    closed(envelope, &["limits"], "contract.resource_envelope", errors);
    let limits = match envelope.get("limits").and_then(Value::as_array) {
        Some(l) if !l.is_empty() => l,
        _ => {
            errors.push("contract.resource_envelope.limits: expected a non-empty list".to_owned());
            return;
        }
    };
    let mut seen = BTreeSet::new();
    for (i, limit) in limits.iter().enumerate() {
        let path = format!("contract.resource_envelope.limits[{i}]");
        let Some(limit) = limit.as_object() else {
            errors.push(format!("{path}: expected an object"));
            continue;
        };
        closed(
            limit,
            &["id", "limit", "unit", "enforcement", "metering_source", "reserve"],
            &path,
            errors,
        );
        let lid = field(limit, "id", Kind::StrAny, &path, errors, false);
        if let Some(id) = lid.and_then(Value::as_str) {
            if !is_limit_id(id) {
                errors.push(format!("{path}.id: expected a lowercase snake_case id"));
            } else if !seen.insert(id.to_owned()) {
                errors.push(format!("{path}.id: duplicate limit id {}", repr_str(id)));
            }
        }
        let lid_repr = repr_opt(lid);
        let value = limit.get("limit");
        if !is_num(value) || num_lt(value, 0.0) {
            errors.push(format!(
                "{path}.limit (id {lid_repr}): expected a number >= 0 (got {})",
                repr_opt(value)
            ));
        }
        field(limit, "unit", Kind::Str, &path, errors, false);
        if let Some(reserve) = limit.get("reserve") {
            if !is_num(Some(reserve)) || num_lt(Some(reserve), 0.0) {
                errors.push(format!(
                    "{path}.reserve (id {lid_repr}): expected a number >= 0 (got {})",
                    repr(reserve)
                ));
            } else if let (Some(r), Some(l)) =
                (reserve.as_number(), value.and_then(Value::as_number))
                && r.to_f64() > l.to_f64()
            {
                errors.push(format!(
                    "{path}.reserve (id {lid_repr}): reserve {} exceeds the limit {} - a \
                     reserve larger than its limit can never dispatch and is refused at \
                     declaration (section 8)",
                    repr(reserve),
                    repr_opt(value)
                ));
            }
        }
        let enforcement = field_str(limit, "enforcement", Kind::StrAny, &path, errors);
        if let Some(e) = enforcement
            && !["enforced", "advisory"].contains(&e)
        {
            errors.push(format!("{path}.enforcement: expected enforced/advisory"));
        }
        if enforcement == Some("enforced") && !truthy(limit.get("metering_source")) {
            errors.push(format!(
                "{path}: an ENFORCED limit must name its metering source - a host adapter \
                 reading real spend (A5); asserted samples are advisory-only"
            ));
        }
    }
}

fn scheduling_errors(doc: &Map, errors: &mut Vec<String>) {
    let Some(sched) = doc.get("scheduling") else { return };
    let Some(sched) = sched.as_object() else {
        errors.push("contract.scheduling: expected an object".to_owned());
        return;
    };
    let path = "contract.scheduling";
    closed(
        sched,
        &[
            "starvation_threshold_events",
            "max_adaptations_per_task",
            "max_retries_per_gate",
            "handoff",
        ],
        path,
        errors,
    );
    for (key, floor) in [
        ("starvation_threshold_events", 1),
        ("max_adaptations_per_task", 0),
        ("max_retries_per_gate", 0),
    ] {
        if let Some(value) = sched.get(key)
            && !(is_int(Some(value)) && int_ge(Some(value), floor))
        {
            errors.push(format!(
                "{path}.{key}: expected an integer >= {floor} (got {})",
                repr(value)
            ));
        }
    }
    if let Some(handoff) = sched.get("handoff") {
        let hpath = format!("{path}.handoff");
        match handoff.as_object() {
            None => errors.push(format!("{hpath}: expected an object")),
            Some(handoff) => {
                closed(handoff, &["fresh_context", "cross_host_resume"], &hpath, errors);
                for key in ["fresh_context", "cross_host_resume"] {
                    if let Some(v) = handoff.get(key)
                        && !v.as_str().is_some_and(non_blank)
                    {
                        errors
                            .push(format!("{hpath}.{key}: expected a non-empty condition string"));
                    }
                }
            }
        }
    }
}

fn tasks_errors(
    doc: &Map,
    criteria_ids: Option<&BTreeSet<String>>,
    errors: &mut Vec<String>,
    v7: bool,
) {
    let tasks = match doc.get("tasks").and_then(Value::as_array) {
        Some(t) if !t.is_empty() => t,
        _ => {
            errors.push("contract.tasks: expected a non-empty list".to_owned());
            return;
        }
    };
    let mut by_id: Vec<(String, &Map)> = Vec::new();
    for (i, task) in tasks.iter().enumerate() {
        let path = format!("contract.tasks[{i}]");
        let Some(task) = task.as_object() else {
            errors.push(format!("{path}: expected an object"));
            continue;
        };
        let mut known = vec!["id", "title", "prerequisites", "touched_surface", "gate_intent"];
        if v7 {
            known.push("parallel_safe");
            if task.get("parallel_safe").is_some_and(|v| v.as_bool().is_none()) {
                errors.push(format!("{path}.parallel_safe: expected a boolean"));
            }
        }
        closed(task, &known, &path, errors);
        if let Some(tid) = field_str(task, "id", Kind::StrAny, &path, errors) {
            if !is_task_id(tid) {
                errors.push(format!("{path}.id: expected a 'T-<slug>' stable id"));
            } else if by_id.iter().any(|(id, _)| id == tid) {
                errors.push(format!(
                    "{path}.id: duplicate task id {} - ids are stable and survive \
                     splits/reorders",
                    repr_str(tid)
                ));
            } else {
                by_id.push((tid.to_owned(), task));
            }
        }
        field(task, "title", Kind::Str, &path, errors, false);
        match task.get("prerequisites").and_then(Value::as_array) {
            None => errors.push(format!("{path}.prerequisites: expected a list")),
            Some(prereqs) => {
                for r in prereqs {
                    if !r.as_str().is_some_and(is_task_id) {
                        errors.push(format!(
                            "{path}.prerequisites: expected T-* ids, got {}",
                            repr(r)
                        ));
                    }
                }
                if dup_by_str(prereqs) {
                    errors.push(format!("{path}.prerequisites: duplicate entries"));
                }
            }
        }
        if !truthy(task.get("touched_surface")) {
            errors.push(format!(
                "{path}.touched_surface: expected a non-empty list - every task declares the \
                 surface it touches"
            ));
        } else {
            str_list(task.get("touched_surface"), &format!("{path}.touched_surface"), errors, 0);
        }
        match task.get("gate_intent").and_then(Value::as_array) {
            None => errors.push(format!("{path}.gate_intent: expected a list")),
            Some(intent) => {
                for (j, gi) in intent.iter().enumerate() {
                    let gpath = format!("{path}.gate_intent[{j}]");
                    let Some(gi) = gi.as_object() else {
                        errors.push(format!("{gpath}: expected an object"));
                        continue;
                    };
                    closed(gi, &["criterion", "check"], &gpath, errors);
                    if let Some(r) = field_str(gi, "criterion", Kind::StrAny, &gpath, errors) {
                        if !is_criterion_id(r) {
                            errors.push(format!("{gpath}.criterion: expected an AC-* id"));
                        } else if criteria_ids.is_some_and(|ids| !ids.contains(r)) {
                            errors.push(format!(
                                "{gpath}.criterion: references unknown criterion {} (dangling \
                                 gate intent)",
                                repr_str(r)
                            ));
                        }
                    }
                    field(gi, "check", Kind::Str, &gpath, errors, false);
                }
            }
        }
    }
    let index: BTreeMap<&str, usize> =
        by_id.iter().enumerate().map(|(i, (id, _))| (id.as_str(), i)).collect();
    for (tid, task) in &by_id {
        for r in prereq_strs(task) {
            if is_task_id(r) && !index.contains_key(r) {
                errors.push(format!(
                    "contract.tasks: task {tid} lists prerequisite {r} which does not exist \
                     (dangling reference)"
                ));
            }
        }
    }
    for cycle in find_cycles(&by_id, &index) {
        errors.push(format!(
            "contract.tasks: prerequisite cycle detected: {} - the task graph must be a DAG",
            cycle.join(" -> ")
        ));
    }
}

fn prereq_strs(task: &Map) -> impl Iterator<Item = &str> {
    task.get("prerequisites")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(Value::as_str)
}

/// One cycle path per culprit, found by the same iterative DFS as upstream.
fn find_cycles(by_id: &[(String, &Map)], index: &BTreeMap<&str, usize>) -> Vec<Vec<String>> {
    let children_of = |node: usize| -> Vec<usize> {
        by_id
            .get(node)
            .map(|(_, t)| prereq_strs(t).filter_map(|p| index.get(p).copied()).collect())
            .unwrap_or_default()
    };
    let mut cycles = Vec::new();
    let mut state = vec![0u8; by_id.len()];
    for root in 0..by_id.len() {
        if state[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, Vec<usize>, usize)> = vec![(root, children_of(root), 0)];
        state[root] = 1;
        let mut path = vec![root];
        while let Some(top) = stack.len().checked_sub(1) {
            let mut advanced = None;
            loop {
                let (_, children, pos) = &mut stack[top];
                let Some(&child) = children.get(*pos) else { break };
                *pos += 1;
                if state[child] == 1 {
                    if let Some(idx) = path.iter().position(|&p| p == child) {
                        let mut cycle: Vec<String> =
                            path[idx..].iter().map(|&n| by_id[n].0.clone()).collect();
                        cycle.push(by_id[child].0.clone());
                        cycles.push(cycle);
                    }
                } else if state[child] == 0 {
                    advanced = Some(child);
                    break;
                }
            }
            match advanced {
                Some(child) => {
                    state[child] = 1;
                    path.push(child);
                    stack.push((child, children_of(child), 0));
                }
                None => {
                    let (node, _, _) = stack[top];
                    state[node] = 2;
                    stack.pop();
                    path.pop();
                }
            }
        }
    }
    cycles
}

/// Draft-only closability check (`closure_errors`); warnings are appended to `warnings`.
pub fn closure_errors(doc: &Value, warnings: &mut Vec<String>) -> Vec<String> {
    let mut errors = Vec::new();
    let Some(obj) = doc.as_object() else { return errors };
    let mut owned_ids: Vec<Option<&Value>> = Vec::new();
    for task in obj.get("tasks").and_then(Value::as_array).unwrap_or(&[]) {
        for intent in task.get("gate_intent").and_then(Value::as_array).unwrap_or(&[]) {
            if intent.as_object().is_some() {
                owned_ids.push(intent.get("criterion"));
            }
        }
    }
    let criteria = obj
        .get("acceptance")
        .and_then(|a| a.get("criteria"))
        .and_then(Value::as_array)
        .unwrap_or(&[]);
    for crit in criteria {
        let Some(c) = crit.as_object() else { continue };
        let kind = c.get("control").and_then(|k| k.get("kind")).and_then(Value::as_str);
        if matches!(kind, Some("regression" | "discrimination")) {
            continue;
        }
        let id = c.get("id");
        let is_owned = owned_ids.iter().any(|o| match (o, id) {
            (Some(a), Some(b)) => a == &b,
            (None, None) => true,
            _ => false,
        });
        if !is_owned {
            warnings.push(format!(
                "contract.acceptance: {} is declared by no task gate_intent - no gate or \
                 sign-off can close it; it closes only by reconciliation with amendment \
                 authority (declare it in the gate_intent of the task that proves it)",
                str_opt(id)
            ));
            continue;
        }
        let accepted: BTreeSet<String> = c
            .get("accepted_evidence")
            .and_then(Value::as_array)
            .unwrap_or(&[])
            .iter()
            .map(py::str_of)
            .collect();
        if !accepted.contains("observed") && !accepted.contains("asserted") {
            let labels: Vec<&str> = accepted.iter().map(String::as_str).collect();
            errors.push(format!(
                "contract.acceptance: {} accepts only {} and nothing can ever close it: imported \
                 evidence comes only from a migration - accept observed (a gate) or asserted \
                 (ledger.py signoff)",
                str_opt(id),
                labels.join("/")
            ));
        }
    }
    errors
}

/// The gate-command head: basename of the first whitespace-separated word.
pub fn command_head(check: &str) -> String {
    check
        .split_whitespace()
        .next()
        .map(|w| w.rsplit('/').next().unwrap_or(w).to_owned())
        .unwrap_or_default()
}

/// Draft-only gate command check (`gate_command_errors`).
pub fn gate_command_errors(doc: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let Some(obj) = doc.as_object() else { return errors };
    let declared: Vec<&Value> = match obj
        .get("scope")
        .and_then(|s| s.get("allowed_command_classes"))
        .and_then(Value::as_array)
    {
        Some(list) if !list.is_empty() => list.iter().collect(),
        _ => return errors,
    };
    let criteria = obj
        .get("acceptance")
        .and_then(|a| a.get("criteria"))
        .and_then(Value::as_array)
        .unwrap_or(&[]);
    let accepts_observed = |id: Option<&Value>| {
        criteria
            .iter()
            .rev()
            .filter(|c| c.as_object().is_some())
            .find(|c| c.get("id") == id)
            .is_some_and(|c| {
                c.get("accepted_evidence")
                    .and_then(Value::as_array)
                    .is_some_and(|a| a.iter().any(|l| l.as_str() == Some("observed")))
            })
    };
    let mut sorted_declared: Vec<String> = declared.iter().map(|v| repr(v)).collect();
    sorted_declared.sort();
    for task in obj.get("tasks").and_then(Value::as_array).unwrap_or(&[]) {
        if task.as_object().is_none() {
            continue;
        }
        for intent in task.get("gate_intent").and_then(Value::as_array).unwrap_or(&[]) {
            if intent.as_object().is_none() || !accepts_observed(intent.get("criterion")) {
                continue;
            }
            let check = intent.get("check").and_then(Value::as_str);
            let head = check.map(command_head).unwrap_or_default();
            if !declared.iter().any(|d| d.as_str() == Some(head.as_str())) {
                let shown: String = check.unwrap_or("").chars().take(60).collect();
                errors.push(format!(
                    "contract.tasks: {} {} check {} starts with {}, outside \
                     scope.allowed_command_classes [{}] - the gate runner would refuse it. \
                     Declare the command, or wrap shell builtins, VAR=value prefixes and \
                     compound commands as bash -c '...' with bash declared",
                    str_opt(task.get("id")),
                    str_opt(intent.get("criterion")),
                    repr_str(&shown),
                    repr_str(&head),
                    sorted_declared.join(", ")
                ));
            }
        }
    }
    errors
}

// ------------------------------------------------------------------- journal

const ENVELOPE: [&str; 8] = ["schema", "type", "seq", "ts", "plan", "contract_id", "actor", "note"];

fn closed_event(event: &Map, extra: &[&str], errors: &mut Vec<String>) {
    let mut known: Vec<&str> = ENVELOPE.to_vec();
    known.extend_from_slice(extra);
    closed(event, &known, "event", errors);
}

/// All validation errors of one journal event (`journal_event_errors`).
pub fn journal_event_errors(event: &Value, contract: Option<&Value>) -> Vec<String> {
    let mut errors = Vec::new();
    let Some(ev) = event.as_object() else {
        return vec!["journal event: expected a JSON object".to_owned()];
    };
    let expected = contract.map(journal_url_for);
    let generation = event_generation(event);
    let url = ev.get("schema");
    if generation.is_none() || expected.is_some_and(|e| url.and_then(Value::as_str) != Some(e)) {
        errors.push(format!(
            "event.schema: expected {}, found {} - mixed-era records are refused; older plans \
             keep their own tooling (section 9.1)",
            repr_str(expected.unwrap_or(JOURNAL_URL_V6)),
            repr_opt(url)
        ));
        return errors;
    }
    let v7 = generation == Some(Generation::V7);
    let etype = ev.get("type").and_then(Value::as_str);
    let known_type =
        etype.is_some_and(|t| EVENT_TYPES_V6.contains(&t) || (v7 && t == "delegation"));
    let Some(etype) = etype.filter(|_| known_type) else {
        let mut catalog: Vec<&str> = EVENT_TYPES_V6.to_vec();
        if v7 {
            catalog.push("delegation");
        }
        errors.push(format!(
            "event.type: unknown event type {} (closed catalog: {})",
            repr_opt(ev.get("type")),
            catalog.join(", ")
        ));
        return errors;
    };
    if !(is_int(ev.get("seq")) && int_ge(ev.get("seq"), 1)) {
        errors.push("event.seq: expected an integer >= 1".to_owned());
    }
    if !ev.get("ts").and_then(Value::as_str).is_some_and(is_datetime) {
        errors.push(
            "event.ts: expected an RFC 3339 timestamp (the scheduler's clock, A11)".to_owned(),
        );
    }
    if !is_plan_id(&str_opt(ev.get("plan"))) {
        errors.push("event.plan: expected a PLAN_* identifier".to_owned());
    }
    field(ev, "contract_id", Kind::Hex64, "event", &mut errors, false);
    match ev.get("actor").and_then(Value::as_object) {
        None => errors.push("event.actor: expected an object".to_owned()),
        Some(actor) => {
            closed(actor, &["kind", "identity"], "event.actor", &mut errors);
            if !actor
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| ["helper", "agent", "host_adapter", "human"].contains(&k))
            {
                errors
                    .push("event.actor.kind: expected helper/agent/host_adapter/human".to_owned());
            }
            let ok = actor
                .get("identity")
                .and_then(Value::as_str)
                .is_some_and(|s| non_blank(s) && s.chars().count() <= 100);
            if !ok {
                errors.push(
                    "event.actor.identity: expected a non-empty string (<= 100 chars)".to_owned(),
                );
            }
        }
    }
    if let Some(note) = ev.get("note")
        && note.as_str().is_none_or(|s| s.chars().count() > 500)
    {
        errors.push("event.note: expected a string <= 500 chars".to_owned());
    }
    if !errors.is_empty() {
        return errors;
    }
    if let Some(contract) = contract
        && ev.get("plan") != contract.get("plan")
    {
        errors.push(format!(
            "event.plan: {} does not match the contract plan {} - a journal belongs to one plan",
            str_opt(ev.get("plan")),
            str_opt(contract.get("plan"))
        ));
    }
    match etype {
        "task_start" => v_task_start(ev, &mut errors),
        "approval" => v_approval(ev, &mut errors),
        "gate_run" => v_gate_run(ev, &mut errors, contract),
        "observation" => {
            closed_event(ev, &["statement", "trust", "evidence_path"], &mut errors);
            field(ev, "statement", Kind::Str, "event", &mut errors, false);
        }
        "adaptation" => v_adaptation(ev, &mut errors),
        "amendment" => v_amendment(ev, &mut errors),
        "intervention" => v_intervention(ev, &mut errors),
        "resource_sample" => v_resource_sample(ev, &mut errors),
        "control_pair" => v_control_pair(ev, &mut errors),
        "selection" => v_selection(ev, &mut errors),
        "refusal" => v_refusal(ev, &mut errors),
        "view_render" => v_view_render(ev, &mut errors),
        "reconciliation" => {
            closed_event(ev, &["trigger", "editor", "authority"], &mut errors);
            for key in ["trigger", "editor", "authority"] {
                field(ev, key, Kind::Str, "event", &mut errors, false);
            }
        }
        "journal_repair" => {
            closed_event(ev, &["byte_offset", "cause"], &mut errors);
            if !(is_int(ev.get("byte_offset")) && int_ge(ev.get("byte_offset"), 0)) {
                errors.push("event.byte_offset: expected an integer >= 0".to_owned());
            }
            field(ev, "cause", Kind::Str, "event", &mut errors, false);
        }
        _ => v_delegation(ev, &mut errors),
    }
    trust_rules(ev, etype, &mut errors);
    errors
}

fn trust_rules(ev: &Map, etype: &str, errors: &mut Vec<String>) {
    if !EVIDENCE_TYPES.contains(&etype) {
        if ev.contains_key("trust") {
            errors.push(format!(
                "event: trust labels exist only on evidence types ({}), not on {}",
                EVIDENCE_TYPES.join(", "),
                repr_str(etype)
            ));
        }
        return;
    }
    let Some(trust) = ev.get("trust").and_then(Value::as_str).filter(|t| TRUST_LABELS.contains(t))
    else {
        errors.push(format!("event.trust: expected one of {}", TRUST_LABELS.join("/")));
        return;
    };
    if (trust == "observed" || trust == "imported") && !truthy(ev.get("evidence_path")) {
        errors.push(format!(
            "event.evidence_path: required for trust={trust} - evidence must cite a recoverable \
             pointer"
        ));
    }
    let kind = ev.get("actor").and_then(|a| a.get("kind"));
    if trust == "observed"
        && !kind.and_then(Value::as_str).is_some_and(|k| EXECUTING_ACTORS.contains(&k))
    {
        errors.push(format!(
            "event.trust: observed requires a shipped helper or host adapter to have EXECUTED \
             the check, but actor.kind={} only mediates a write - record it as asserted with \
             the mediation named (A1)",
            repr_opt(kind)
        ));
    }
}

fn task_field(ev: &Map, errors: &mut Vec<String>) -> Option<String> {
    let tid = field_str(ev, "task", Kind::StrAny, "event", errors);
    if let Some(t) = tid
        && !is_task_id(t)
    {
        errors.push("event.task: expected a T-* id".to_owned());
    }
    tid.map(str::to_owned)
}

fn fingerprint_errors(fp: Option<&Value>, fpath: &str, errors: &mut Vec<String>) -> Option<String> {
    let Some(fp) = fp.and_then(Value::as_object) else {
        errors.push(format!("{fpath}: expected an object"));
        return None;
    };
    closed(fp, &["revision", "dirty"], fpath, errors);
    field(fp, "revision", Kind::Str, fpath, errors, false);
    match fp.get("dirty").and_then(Value::as_str) {
        Some(d) => Some(d.to_owned()),
        None => {
            errors.push(format!("{fpath}.dirty: expected a string (empty means clean)"));
            None
        }
    }
}

fn v_task_start(ev: &Map, errors: &mut Vec<String>) {
    closed_event(ev, &["task", "fingerprint"], errors);
    task_field(ev, errors);
    if ev.contains_key("fingerprint") {
        fingerprint_errors(ev.get("fingerprint"), "event.fingerprint", errors);
    }
}

fn v_approval(ev: &Map, errors: &mut Vec<String>) {
    closed_event(ev, &["authority", "mechanism", "plan_digest"], errors);
    field(ev, "authority", Kind::Str, "event", errors, false);
    if let Some(m) = field_str(ev, "mechanism", Kind::StrAny, "event", errors)
        && !MECHANISMS.contains(&m)
    {
        errors.push(format!(
            "event.mechanism: unknown value {} - exactly {} exist (D3-2)",
            repr_str(m),
            MECHANISMS.join(" and ")
        ));
    }
    field(ev, "plan_digest", Kind::Hex64, "event", errors, false);
}

fn v_gate_run(ev: &Map, errors: &mut Vec<String>, contract: Option<&Value>) {
    closed_event(
        ev,
        &[
            "command",
            "cwd",
            "env",
            "timeout_seconds",
            "exit_code",
            "trust",
            "evidence_path",
            "criterion",
            "task",
        ],
        errors,
    );
    field(ev, "command", Kind::Str, "event", errors, false);
    field(ev, "cwd", Kind::Str, "event", errors, false);
    if ev.get("env").is_some_and(|e| e.as_object().is_none()) {
        errors.push("event.env: expected an object of declared variables".to_owned());
    }
    let timeout = ev.get("timeout_seconds");
    if !is_num(timeout) || !timeout.and_then(Value::as_number).is_some_and(|n| n.to_f64() > 0.0) {
        errors.push("event.timeout_seconds: expected a number > 0".to_owned());
    }
    if !is_int(ev.get("exit_code")) {
        errors.push("event.exit_code: expected an integer".to_owned());
    }
    let criterion = ev.get("criterion");
    if !criterion.and_then(Value::as_str).is_some_and(is_criterion_id) {
        errors.push("event.criterion: expected an AC-* id".to_owned());
    }
    // A gate run is bound to its task at execution, as the pinned upstream validator requires
    // (its v6 fixture carries the task since da57bb9e).
    let tid = task_field(ev, errors);
    if let (Some(contract), Some(tid), Some(criterion)) = (contract, tid, criterion) {
        let task = contract
            .get("tasks")
            .and_then(Value::as_array)
            .unwrap_or(&[])
            .iter()
            .find(|t| t.get("id").and_then(Value::as_str) == Some(tid.as_str()));
        match task {
            None => errors
                .push(format!("event.task: {} is not a task of this contract", repr_str(&tid))),
            Some(task) => {
                let declared = task
                    .get("gate_intent")
                    .and_then(Value::as_array)
                    .unwrap_or(&[])
                    .iter()
                    .any(|i| i.get("criterion") == Some(criterion));
                if !declared {
                    errors.push(format!(
                        "event.criterion: {} is not declared in task {tid} gate_intent - a gate \
                         run is bound to the declared intent, not linked after the fact",
                        repr(criterion)
                    ));
                }
            }
        }
    }
}

fn id_list_errors(
    ev: &Map,
    key: &str,
    what: &str,
    check: fn(&str) -> bool,
    errors: &mut Vec<String>,
) {
    for r in ev.get(key).and_then(Value::as_array).unwrap_or(&[]) {
        if !r.as_str().is_some_and(check) {
            errors.push(format!("event.{key}: expected {what} ids, got {}", repr(r)));
        }
    }
}

fn v_adaptation(ev: &Map, errors: &mut Vec<String>) {
    closed_event(
        ev,
        &[
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
            "decision",
            "reason",
        ],
        errors,
    );
    if !ev.get("kind").and_then(Value::as_str).is_some_and(|k| ADAPTATION_KINDS.contains(&k)) {
        errors.push(format!(
            "event.kind: {} is outside the closed section-3.3 enumeration ({}) - the \
             authorization core refuses it",
            repr_opt(ev.get("kind")),
            ADAPTATION_KINDS.join(", ")
        ));
    }
    if !(is_int(ev.get("trigger_observation")) && int_ge(ev.get("trigger_observation"), 1)) {
        errors.push("event.trigger_observation: expected a journal seq >= 1".to_owned());
    }
    for key in ["evidence_artifact", "hypothesis", "action", "rationale", "authority"] {
        field(ev, key, Kind::Str, "event", errors, false);
    }
    for key in ["affected_tasks", "affected_criteria", "evidence_invalidated", "evidence_preserved"]
    {
        if ev.get(key).and_then(Value::as_array).is_none() {
            errors.push(format!("event.{key}: expected a list"));
        }
    }
    id_list_errors(ev, "affected_tasks", "T-*", is_task_id, errors);
    id_list_errors(ev, "affected_criteria", "AC-*", is_criterion_id, errors);
    if let Some(impact) = ev.get("resource_impact") {
        let ipath = "event.resource_impact";
        match impact.as_object() {
            None => errors.push(format!("{ipath}: expected an object")),
            Some(impact) => {
                closed(impact, &["declared", "unit"], ipath, errors);
                let d = impact.get("declared");
                if !is_num(d) || num_lt(d, 0.0) {
                    errors.push(format!(
                        "{ipath}.declared: expected a number >= 0 (the D2-9a pending \
                         contribution)"
                    ));
                }
                field(impact, "unit", Kind::Str, ipath, errors, false);
            }
        }
    }
    match ev.get("decision").and_then(Value::as_str) {
        Some("authorized") => {}
        Some("refused") => {
            if !truthy(ev.get("reason")) {
                errors.push(
                    "event.reason: required when decision=refused - every refusal carries its \
                     reason (section 5)"
                        .to_owned(),
                );
            }
        }
        _ => errors.push("event.decision: expected authorized/refused".to_owned()),
    }
}

fn v_amendment(ev: &Map, errors: &mut Vec<String>) {
    closed_event(
        ev,
        &[
            "original_criterion",
            "observed_finding",
            "disposition",
            "revised_criterion",
            "reason",
            "authority",
            "affected_tasks",
            "evidence_invalidated",
            "evidence_preserved",
        ],
        errors,
    );
    for key in [
        "original_criterion",
        "observed_finding",
        "disposition",
        "revised_criterion",
        "reason",
        "authority",
    ] {
        field(ev, key, Kind::Str, "event", errors, false);
    }
    for key in ["affected_tasks", "evidence_invalidated", "evidence_preserved"] {
        if ev.get(key).and_then(Value::as_array).is_none() {
            errors.push(format!("event.{key}: expected a list"));
        }
    }
    id_list_errors(ev, "affected_tasks", "T-*", is_task_id, errors);
}

fn v_intervention(ev: &Map, errors: &mut Vec<String>) {
    closed_event(ev, &["category", "description", "question", "resolution"], errors);
    if !ev
        .get("category")
        .and_then(Value::as_str)
        .is_some_and(|c| INTERVENTION_CATEGORIES.contains(&c))
    {
        errors.push(format!(
            "event.category: {} is outside the closed taxonomy ({}; TELEMETRY.md is the source \
             of record, D3-11)",
            repr_opt(ev.get("category")),
            INTERVENTION_CATEGORIES.join(", ")
        ));
    }
    field(ev, "description", Kind::Str, "event", errors, false);
    field(ev, "question", Kind::Str, "event", errors, false);
    field(ev, "resolution", Kind::Str, "event", errors, true);
}

fn v_resource_sample(ev: &Map, errors: &mut Vec<String>) {
    closed_event(ev, &["source", "limit_id", "value", "unit", "trust", "evidence_path"], errors);
    field(ev, "source", Kind::Str, "event", errors, false);
    if let Some(lid) = ev.get("limit_id").filter(|v| !v.is_null())
        && !lid.as_str().is_some_and(is_limit_id)
    {
        errors.push("event.limit_id: expected a lowercase snake_case id".to_owned());
    }
    let value = ev.get("value");
    if !is_num(value) || num_lt(value, 0.0) {
        errors.push(
            "event.value: expected a number >= 0 (missing data is exposed as missing, never \
             imputed or zero-filled)"
                .to_owned(),
        );
    }
    field(ev, "unit", Kind::Str, "event", errors, false);
}

fn v_control_pair(ev: &Map, errors: &mut Vec<String>) {
    closed_event(
        ev,
        &[
            "criterion",
            "check_artifacts",
            "starting_fingerprint",
            "old_leg",
            "new_leg",
            "verdict",
            "trust",
            "evidence_path",
        ],
        errors,
    );
    if !ev.get("criterion").and_then(Value::as_str).is_some_and(is_criterion_id) {
        errors.push("event.criterion: expected an AC-* id".to_owned());
    }
    if !str_list(ev.get("check_artifacts"), "event.check_artifacts", errors, 1) {
        errors.push(
            "event.check_artifacts: a control pair must declare its check artifact paths (D3-4)"
                .to_owned(),
        );
    }
    let dirty =
        fingerprint_errors(ev.get("starting_fingerprint"), "event.starting_fingerprint", errors);
    let mut old_available = None;
    let mut old_outcome = None;
    match ev.get("old_leg").and_then(Value::as_object) {
        None => errors.push("event.old_leg: expected an object".to_owned()),
        Some(old) => {
            closed(old, &["available", "outcome", "log"], "event.old_leg", errors);
            match old.get("available").and_then(Value::as_bool) {
                None => errors.push("event.old_leg.available: expected a boolean".to_owned()),
                Some(true) => {
                    old_available = Some(true);
                    match old.get("outcome").and_then(Value::as_str) {
                        Some(o @ ("PASS" | "FAIL")) => old_outcome = Some(o),
                        _ => errors.push(
                            "event.old_leg.outcome: required and must be PASS/FAIL when \
                             available=true"
                                .to_owned(),
                        ),
                    }
                }
                Some(false) => {
                    old_available = Some(false);
                    if old.contains_key("outcome") {
                        errors.push(
                            "event.old_leg.outcome: an unavailable leg carries NO outcome - \
                             never a synthesized old-tree result"
                                .to_owned(),
                        );
                    }
                }
            }
        }
    }
    let mut new_outcome = None;
    match ev.get("new_leg").and_then(Value::as_object) {
        None => errors.push("event.new_leg: expected an object".to_owned()),
        Some(new) => {
            closed(new, &["outcome", "log"], "event.new_leg", errors);
            match new.get("outcome").and_then(Value::as_str) {
                Some(o @ ("PASS" | "FAIL")) => new_outcome = Some(o),
                _ => errors.push("event.new_leg.outcome: expected PASS/FAIL".to_owned()),
            }
            field(new, "log", Kind::Str, "event.new_leg", errors, false);
        }
    }
    let verdict = ev.get("verdict").and_then(Value::as_str);
    match verdict {
        Some(v @ ("discriminating" | "non_discriminating" | "control_unavailable")) => {
            if let (Some(available), Some(new)) = (old_available, new_outcome) {
                let is_dirty = dirty.as_deref().is_some_and(|d| !d.is_empty());
                let (expected, why) = if is_dirty {
                    (
                        "control_unavailable",
                        "a non-empty dirty component means the old leg cannot be faithfully \
                         materialized (D3-3)",
                    )
                } else if !available {
                    ("control_unavailable", "the old leg is unavailable")
                } else if old_outcome == Some("FAIL") && new == "PASS" {
                    ("discriminating", "(old FAIL, new PASS) is the only discriminating pair")
                } else {
                    (
                        "non_discriminating",
                        "only (old FAIL, new PASS) discriminates; this pair is recorded \
                         non-discriminating and never rounded up (A6/U2)",
                    )
                };
                if v != expected {
                    errors.push(format!(
                        "event.verdict: {} contradicts the legs ({} old / {} new, dirty={}) - \
                         expected {}: {why}",
                        repr_str(v),
                        old_outcome.unwrap_or("None"),
                        new,
                        if is_dirty { "True" } else { "False" },
                        repr_str(expected)
                    ));
                }
            }
        }
        _ => errors.push(
            "event.verdict: expected discriminating/non_discriminating/control_unavailable"
                .to_owned(),
        ),
    }
}

fn v_selection(ev: &Map, errors: &mut Vec<String>) {
    closed_event(ev, &["task", "priority_boost", "aging"], errors);
    task_field(ev, errors);
    match ev.get("priority_boost").and_then(Value::as_bool) {
        None => errors.push("event.priority_boost: expected a boolean".to_owned()),
        Some(true) if !ev.contains_key("aging") => errors.push(
            "event.aging: required when priority_boost=true - the recorded boost names \
             waiting_since_seq and the threshold that fired (A11)"
                .to_owned(),
        ),
        Some(_) => {}
    }
    if let Some(aging) = ev.get("aging") {
        let apath = "event.aging";
        match aging.as_object() {
            None => errors.push(format!("{apath}: expected an object")),
            Some(aging) => {
                closed(aging, &["waiting_since_seq", "threshold"], apath, errors);
                let since = aging.get("waiting_since_seq");
                if !(is_int(since) && int_ge(since, 1)) {
                    errors.push(format!("{apath}.waiting_since_seq: expected a journal seq >= 1"));
                }
                field(aging, "threshold", Kind::Str, apath, errors, false);
            }
        }
    }
}

fn v_refusal(ev: &Map, errors: &mut Vec<String>) {
    closed_event(ev, &["subject", "stage", "reason", "proposal"], errors);
    field(ev, "subject", Kind::Str, "event", errors, false);
    if !ev
        .get("stage")
        .and_then(Value::as_str)
        .is_some_and(|s| ["task_start", "authorize", "dispatch", "gate"].contains(&s))
    {
        errors.push("event.stage: expected task_start/authorize/dispatch/gate".to_owned());
    }
    field(ev, "reason", Kind::Str, "event", errors, false);
    if let Some(p) = ev.get("proposal")
        && !(is_int(Some(p)) && int_ge(Some(p), 1))
    {
        errors.push("event.proposal: expected a journal seq >= 1".to_owned());
    }
}

fn v_view_render(ev: &Map, errors: &mut Vec<String>) {
    closed_event(ev, &["view", "snapshot_digest", "digests"], errors);
    field(ev, "view", Kind::Str, "event", errors, false);
    field(ev, "snapshot_digest", Kind::Hex64, "event", errors, false);
    if let Some(digests) = ev.get("digests") {
        match digests.as_object().filter(|d| !d.is_empty()) {
            None => errors.push(
                "event.digests: expected a non-empty object of view name -> sha256".to_owned(),
            ),
            Some(d) => {
                for (name, digest) in d {
                    if !non_blank(name) {
                        errors
                            .push("event.digests: view names must be non-empty strings".to_owned());
                    }
                    if !digest.as_str().is_some_and(is_hex64) {
                        errors.push(format!(
                            "event.digests[{}]: expected a sha256 hex digest",
                            repr_str(name)
                        ));
                    }
                }
            }
        }
    }
}

fn v_delegation(ev: &Map, errors: &mut Vec<String>) {
    closed_event(
        ev,
        &[
            "task",
            "delegation_id",
            "transport",
            "via",
            "kind",
            "profile",
            "target",
            "worktree",
            "prompt_digest",
            "state",
            "result_path",
            "result_digest",
        ],
        errors,
    );
    task_field(ev, errors);
    if let Some(d) = field_str(ev, "delegation_id", Kind::StrAny, "event", errors)
        && !is_delegation_id(d)
    {
        errors.push("event.delegation_id: expected 1-64 of [A-Za-z0-9._-]".to_owned());
    }
    if !ev
        .get("transport")
        .and_then(Value::as_str)
        .is_some_and(|t| ["headless", "interactive"].contains(&t))
    {
        errors.push("event.transport: expected headless/interactive".to_owned());
    }
    if let Some(v) = field_str(ev, "via", Kind::StrAny, "event", errors)
        && !is_addon_id(v)
    {
        errors.push("event.via: expected an addon key".to_owned());
    }
    let state = ev.get("state").and_then(Value::as_str);
    if !state.is_some_and(|s| ["launched", "completed", "failed", "cancelled"].contains(&s)) {
        errors.push("event.state: expected one of launched/completed/failed/cancelled".to_owned());
    }
    for key in ["kind", "profile", "target"] {
        if let Some(v) = ev.get(key)
            && !v.as_str().is_some_and(|s| !s.is_empty() && s.chars().count() <= 200)
        {
            errors.push(format!("event.{key}: expected a non-empty string (<= 200 chars)"));
        }
    }
    if let Some(w) = ev.get("worktree").filter(|w| !w.is_null())
        && !w.as_str().is_some_and(|s| !s.is_empty() && s.chars().count() <= 300)
    {
        errors
            .push("event.worktree: expected a path string or null (read-only delegate)".to_owned());
    }
    if state == Some("launched") && !ev.contains_key("prompt_digest") {
        errors.push(
            "event.prompt_digest: required on launch (the prompt is recorded by digest before it \
             is relied on)"
                .to_owned(),
        );
    }
    for key in ["prompt_digest", "result_digest"] {
        if let Some(v) = ev.get(key)
            && !v.as_str().is_some_and(is_prefixed_digest)
        {
            errors.push(format!("event.{key}: expected sha256:<64 hex>"));
        }
    }
    if let Some(rp) = ev.get("result_path") {
        let ok = rp.as_str().is_some_and(|s| {
            !s.is_empty() && !s.starts_with('/') && !s.split('/').any(|p| p == "..")
        });
        if !ok {
            errors.push(
                "event.result_path: expected a relative path inside the plan or repository"
                    .to_owned(),
            );
        }
        if !matches!(state, Some("completed" | "failed")) {
            errors.push(
                "event.result_path: only a completed or failed delegation carries a result"
                    .to_owned(),
            );
        }
    }
    if ev.contains_key("trust") || ev.contains_key("evidence_path") {
        errors.push(
            "event: a delegation is not evidence - it carries no trust label and no \
             evidence_path (its result stays asserted until the parent runner observes it)"
                .to_owned(),
        );
    }
}

/// Validates an event sequence: per-event errors plus strictly increasing `seq`.
pub fn journal_errors(events: &[Value], contract: Option<&Value>) -> Vec<String> {
    let mut errors = Vec::new();
    let mut previous: Option<(f64, String)> = None;
    for (i, event) in events.iter().enumerate() {
        for err in journal_event_errors(event, contract) {
            errors.push(format!("journal line {}: {err}", i + 1));
        }
        if let Some(Value::Number(Number::Int(seq))) = event.get("seq") {
            let text = repr(&Value::Number(Number::Int(seq.clone())));
            let value = seq.to_f64();
            let (prev_value, prev_text) = previous.clone().unwrap_or((0.0, "0".to_owned()));
            let regress = match (seq.as_i64(), prev_text.parse::<i64>()) {
                (Some(a), Ok(b)) => a <= b,
                _ => value <= prev_value,
            };
            if regress {
                errors.push(format!(
                    "journal line {}: seq {text} follows {prev_text} - the journal is \
                     append-only; positions never go backwards",
                    i + 1
                ));
            }
            previous = Some((value, text));
        }
    }
    errors
}

/// Per-type counts in the upstream `OK:` line form: `adaptation x1, approval x1, …`.
pub fn type_counts(events: &[Value]) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for event in events {
        let key = match event.as_object() {
            Some(o) => str_opt(o.get("type")),
            None => "?".to_owned(),
        };
        *counts.entry(key).or_default() += 1;
    }
    counts.iter().map(|(k, v)| format!("{k} x{v}")).collect::<Vec<_>>().join(", ")
}
