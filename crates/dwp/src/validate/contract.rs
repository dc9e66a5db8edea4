//! Contract validation (`contract_errors`) and the draft-only checks (`closure_errors`,
//! `gate_command_errors`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use canonical_json::{Map, Number, Value};

use super::fields::{
    Kind, closed, dup_by_str, field, field_str, int_ge, is_int, is_num, num_lt, str_list,
};
use super::schema::{
    CAPABILITIES, CONTRACT_URL_V6, CONTRACT_URL_V7, Generation, MECHANISMS, TRUST_LABELS,
    contract_generation,
};
use crate::contract::{contract_id, revision_content_bytes};
use crate::py::{
    self, is_criterion_id, is_datetime, is_dotted_version, is_hex64, is_invariant_id, is_limit_id,
    is_plan_id, is_task_id, non_blank, repr, repr_opt, repr_str, str_opt, truthy,
};

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
    // The ids seen so far, for the duplicate check (a scan of `by_id` made a chain of n tasks
    // cost n^2 / 2 comparisons).
    let mut seen: HashSet<&str> = HashSet::new();
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
            } else if !seen.insert(tid) {
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
    // Where each node sits on the current DFS path (a scan of the path per back edge was
    // linear in the depth).
    let mut on_path: Vec<Option<usize>> = vec![None; by_id.len()];
    for root in 0..by_id.len() {
        if state[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, Vec<usize>, usize)> = vec![(root, children_of(root), 0)];
        state[root] = 1;
        let mut path = vec![root];
        on_path[root] = Some(0);
        while let Some(top) = stack.len().checked_sub(1) {
            let mut advanced = None;
            loop {
                let (_, children, pos) = &mut stack[top];
                let Some(&child) = children.get(*pos) else { break };
                *pos += 1;
                if state[child] == 1 {
                    if let Some(idx) = on_path[child] {
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
                    on_path[child] = Some(path.len());
                    path.push(child);
                    stack.push((child, children_of(child), 0));
                }
                None => {
                    let (node, _, _) = stack[top];
                    state[node] = 2;
                    on_path[node] = None;
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
    // The owned ids as a set (a scan per criterion cost criteria x intents).
    let owned: HashSet<Option<String>> = owned_ids.iter().map(|o| o.map(owned_key)).collect();
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
        let is_owned = owned.contains(&id.map(owned_key));
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

/// A criterion id as a set key: its canonical JSON text (equal values, equal keys).
fn owned_key(value: &Value) -> String {
    canonical_json::to_python_compact(value)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
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
    // The last criterion object per id decides (as the reverse search did), looked up once per
    // intent instead of scanning the criteria for each.
    let mut observed_by_id: HashMap<Option<String>, bool> = HashMap::new();
    for c in criteria.iter().filter(|c| c.as_object().is_some()) {
        let observed = c
            .get("accepted_evidence")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|l| l.as_str() == Some("observed")));
        observed_by_id.insert(c.get("id").map(owned_key), observed);
    }
    let accepts_observed =
        |id: Option<&Value>| observed_by_id.get(&id.map(owned_key)).copied().unwrap_or(false);
    let declared_set: HashSet<&str> = declared.iter().filter_map(|d| d.as_str()).collect();
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
            if !declared_set.contains(head.as_str()) {
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
