//! `materialize`: manifest → stamped contract → approval, each step resumable and nothing
//! written before the failing step.

use std::fs;
use std::path::Path;
use std::time::SystemTime;

use canonical_json::Value;
use dwp::contract::contract_id;
use dwp::projection::seq_of;
use dwp::py::repr_str;
use dwp::validate::{self, Generation, MECHANISMS, contract_generation};

use crate::error::{Result, fail, io_fail};
use crate::files::{read_json_named, refuse_symlink, write_pretty};
use crate::plan::{JOURNAL_NAME, MANIFEST_URL_V6, MANIFEST_URL_V7, Plan, plan_markdown_digest};
use crate::values::{actor, obj, s};
use crate::writer::{AppendRequest, Writer};

/// The longest task or criterion id a plan may declare, in bytes. The schemas set no bound,
/// but an id is named on command lines (`--task`, `--criterion`) and quoted in every record
/// about it; a 1 MiB id would materialize although no command could name it (one argument
/// holds at most 128 KiB on Linux). Stricter than upstream, which accepts any length.
pub const MAX_ID_BYTES: usize = 256;

fn check_id_lengths(contract: &Value) -> Result<()> {
    let tasks = contract.get("tasks").and_then(Value::as_array).unwrap_or(&[]);
    let criteria = contract
        .get("acceptance")
        .and_then(|a| a.get("criteria"))
        .and_then(Value::as_array)
        .unwrap_or(&[]);
    for (what, item) in
        tasks.iter().map(|t| ("task", t)).chain(criteria.iter().map(|c| ("criterion", c)))
    {
        let id = item.get("id").and_then(Value::as_str).unwrap_or("");
        if id.len() > MAX_ID_BYTES {
            return Err(fail(format!(
                "contract invalid: a {what} id of {} bytes ({}) exceeds {MAX_ID_BYTES} bytes — \
                 no command line could name it; nothing was written",
                id.len(),
                dwp::refusal::bounded(id)
            )));
        }
    }
    Ok(())
}

/// Materializes a plan: manifest → stamped contract → approval, each step resumable.
///
/// Returns `(plan, contract_id, approval_seq, resumed)`.
///
/// # Errors
/// The upstream refusals (nothing is written before the failing step).
pub fn materialize(
    plan_dir: &Path,
    contract_file: &Path,
    authority: &str,
    mechanism: &str,
    note: Option<&str>,
    now: SystemTime,
) -> Result<(String, String, i64, bool)> {
    if !MECHANISMS.contains(&mechanism) {
        return Err(fail(format!(
            "mechanism {} outside {} (D3-2: exactly two exist)",
            repr_str(mechanism),
            MECHANISMS.join(" and ")
        )));
    }
    let bytes = fs::read(contract_file).map_err(|e| io_fail(contract_file, e))?;
    let mut contract = canonical_json::parse(&bytes)
        .map_err(|e| fail(format!("{} is not valid JSON: {e}", contract_file.display())))?;
    if let Some(o) = contract.as_object_mut() {
        o.remove("contract_id");
    }
    let mut warnings = Vec::new();
    let errors = {
        let e = validate::contract_errors(&contract, None);
        if !e.is_empty() {
            e
        } else {
            let c = validate::closure_errors(&contract, &mut warnings);
            if c.is_empty() { validate::gate_command_errors(&contract) } else { c }
        }
    };
    if let Some(first) = errors.into_iter().next() {
        return Err(fail(format!("contract invalid: {first}")));
    }
    check_id_lengths(&contract)?;
    let folder = plan_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let plan_name = contract.get("plan").and_then(Value::as_str).unwrap_or("").to_owned();
    if plan_name != folder {
        return Err(fail(format!(
            "contract plan {} does not match the plan folder {} — the manifest asserts the \
             folder identity; materializing a mismatched contract would record the wrong plan",
            dwp::py::repr_opt(contract.get("plan")),
            repr_str(&folder)
        )));
    }
    let cid = contract_id(&contract).map_err(|e| fail(e.to_string()))?;
    let digest = plan_markdown_digest(plan_dir)?;
    let generation = contract_generation(&contract).unwrap_or(Generation::V6);
    let manifest_url = match generation {
        Generation::V6 => MANIFEST_URL_V6,
        Generation::V7 => MANIFEST_URL_V7,
    };
    let manifest_path = plan_dir.join("manifest.json");
    if manifest_path.exists() {
        let existing = read_json_named(&manifest_path)?;
        if existing.get("schema").and_then(Value::as_str) != Some(manifest_url) {
            return Err(fail(format!(
                "manifest.json is {} — a different generation. v1/v2/v5 manifests belong to \
                 their recorded lifecycle and are never rewritten (RFC 9.2)",
                dwp::py::repr_opt(existing.get("schema"))
            )));
        }
        let pointer = existing.get("contract").and_then(|c| c.get("id"));
        if pointer.and_then(Value::as_str) != Some(cid.as_str()) {
            return Err(fail(format!(
                "manifest contract pointer {} does not match this contract {} — never rewrite \
                 a pointer; amend through refine (the revision chain)",
                dwp::py::repr_opt(pointer),
                repr_str(&cid)
            )));
        }
    }
    for name in ["manifest.json", "contract.json", "contracts", JOURNAL_NAME] {
        refuse_symlink(&plan_dir.join(name))?;
    }
    let chain = plan_dir.join("contracts");
    if chain.is_dir() {
        return Err(fail(
            "a contracts/ revision chain exists — the contract is owned by amendments from here \
             on; materialization never rewrites it",
        ));
    }
    let contract_path = plan_dir.join("contract.json");
    let existing_contract =
        if contract_path.exists() { Some(read_json_named(&contract_path)?) } else { None };
    if let Some(stamped) = &existing_contract
        && stamped.get("contract_id").and_then(Value::as_str) != Some(cid.as_str())
    {
        return Err(fail(format!(
            "contract.json already carries {}; this contract is {} — a materialization never \
             rewrites a contract, that is a revision (refine amendment path)",
            dwp::py::repr_opt(stamped.get("contract_id")),
            repr_str(&cid)
        )));
    }
    if !manifest_path.exists() {
        let manifest = Value::Object(obj([
            ("schema", s(manifest_url)),
            ("plan", s(&plan_name)),
            ("contract", Value::Object(obj([("id", s(&cid)), ("path", s("contract.json"))]))),
        ]));
        write_pretty(&manifest_path, &manifest)?;
    }
    if existing_contract.is_none() {
        let mut stamped = contract.clone();
        if let Some(o) = stamped.as_object_mut() {
            o.insert("contract_id".into(), s(&cid));
        }
        write_pretty(&contract_path, &stamped)?;
    }
    let plan = Plan::load(plan_dir)?;
    let mut writer = Writer::open(plan, false, now)?;
    let prior = dwp::mint::approval_seq(&writer.events, &cid);
    let result = match prior {
        Some(seq) => (plan_name, cid, seq, true),
        None => {
            let event = writer.append(AppendRequest {
                etype: "approval".to_owned(),
                payload: obj([
                    ("authority", s(authority)),
                    ("mechanism", s(mechanism)),
                    ("plan_digest", s(&digest)),
                ]),
                actor: actor("human", authority),
                note: note.map(str::to_owned),
                idempotent: true,
                trust: None,
                evidence_path: None,
            })?;
            (plan_name, cid, seq_of(&event), false)
        }
    };
    writer.close()?;
    Ok(result)
}
