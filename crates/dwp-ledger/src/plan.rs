//! The plan folder: its layout, generation detection and the live contract
//! (upstream `ledger.py`'s `PlanRecords`).

use std::fs;
use std::path::{Path, PathBuf};

use canonical_json::Value;
use dwp::contract::contract_id;
use dwp::projection::{Archive, seq_of};
use dwp::py::repr_str;
use dwp::validate::{self, Generation, contract_generation};
use journal::Damage;

use crate::error::{Result, fail, io_fail};
use crate::files::{read_json_named, safe_relative};
use crate::reader::strict;

/// The journal file name.
pub const JOURNAL_NAME: &str = "journal.ndjson";
/// The gate reuse cache.
pub const EVIDENCE_NAME: &str = "evidence.jsonl";
/// v6 manifest URL.
pub const MANIFEST_URL_V6: &str = "https://deepworkplan.com/schema/plan-manifest/v6.json";
/// v7 manifest URL.
pub const MANIFEST_URL_V7: &str = "https://deepworkplan.com/schema/plan-manifest/v7.json";
/// The lock identity prefix (upstream always uses the 6.0 string for the lock).
pub const LOCK_IDENTITY: &str = "dwp-ledger/6.0";

/// Accepts a plan directory, or a file directly inside a `PLAN_*` folder.
pub fn find_plan_dir(path: &Path) -> Result<PathBuf> {
    let abs = std::path::absolute(path).map_err(|e| io_fail(path, e))?;
    if abs.is_dir() {
        return Ok(abs);
    }
    if abs.is_file()
        && let Some(parent) = abs.parent()
        && parent.file_name().is_some_and(|n| n.to_string_lossy().starts_with("PLAN_"))
    {
        return Ok(parent.to_path_buf());
    }
    Err(fail(format!("no plan directory found at {}", repr_str(&abs.to_string_lossy()))))
}

/// The repository root: the directory holding `.dwp/` when the plan sits in
/// `.dwp/plans/<PLAN>`, else the plan folder's parent.
pub fn repo_root(plan_dir: &Path) -> PathBuf {
    let parent = plan_dir.parent().unwrap_or(plan_dir);
    let grand = parent.parent().unwrap_or(parent);
    if grand.file_name().is_some_and(|n| n == ".dwp") {
        return grand.parent().unwrap_or(grand).to_path_buf();
    }
    parent.to_path_buf()
}

/// The digest of the plan markdown an approval cites.
pub fn plan_markdown_digest(plan_dir: &Path) -> Result<String> {
    let mut names: Vec<PathBuf> = fs::read_dir(plan_dir)
        .map_err(|e| io_fail(plan_dir, e))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(fail(format!(
            "no plan markdown (*.md) in {} — the materialization-time approval digests the \
             plan the authority approved; a folder with no markdown is not approvable",
            plan_dir.display()
        )));
    }
    let mut all = Vec::new();
    for name in names {
        all.extend(fs::read(&name).map_err(|e| io_fail(&name, e))?);
    }
    Ok(canonical_json::digest::sha256_hex(&all))
}

/// What kind of plan folder this is (upstream `V6_LIFECYCLE.md` §1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FolderGeneration {
    /// A v1/v2/v5 plan (manifest + state); v6 commands never touch it.
    Legacy,
    /// A v6 plan.
    V6,
    /// A v7 plan.
    V7,
    /// Neither: no manifest pointer, no contract, no chain.
    Unknown,
}

/// Detects a folder's generation without writing anything.
pub fn detect_generation(plan_dir: &Path) -> FolderGeneration {
    let contract_like =
        plan_dir.join("contract.json").is_file() || plan_dir.join("contracts").is_dir();
    let manifest =
        fs::read(plan_dir.join("manifest.json")).ok().and_then(|b| canonical_json::parse(&b).ok());
    let pointer = manifest
        .as_ref()
        .and_then(|m| m.get("contract"))
        .and_then(|c| c.get("path"))
        .and_then(Value::as_str)
        .is_some_and(|p| safe_relative(p) && plan_dir.join(p).is_file());
    if contract_like || pointer {
        return match Plan::load(plan_dir).map(|p| p.generation) {
            Ok(Generation::V7) => FolderGeneration::V7,
            _ => FolderGeneration::V6,
        };
    }
    let url = manifest.as_ref().and_then(|m| m.get("schema")).and_then(Value::as_str).unwrap_or("");
    if ["v1", "v2", "v5"]
        .iter()
        .any(|v| url == format!("https://deepworkplan.com/schema/plan-manifest/{v}.json"))
    {
        return FolderGeneration::Legacy;
    }
    FolderGeneration::Unknown
}

/// One loaded plan: its folder and live contract.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Absolute plan folder.
    pub dir: PathBuf,
    /// The live contract.
    pub contract: Value,
    /// The live contract id (stamped, else computed).
    pub contract_id: String,
    /// The contract's generation.
    pub generation: Generation,
}

impl Plan {
    /// Loads the live contract: highest `revision` under `contracts/`, else `contract.json`.
    ///
    /// # Errors
    /// A corrupt contract (by name), a foreign generation, or an invalid contract.
    pub fn load(dir: &Path) -> Result<Plan> {
        let chain = dir.join("contracts");
        let mut best: Option<(i64, Value)> = None;
        if chain.is_dir() {
            let mut names: Vec<PathBuf> = fs::read_dir(&chain)
                .map_err(|e| io_fail(&chain, e))?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".json")))
                .collect();
            names.sort();
            for path in names {
                let doc = read_json_named(&path)?;
                let Some(rev) = doc.get("revision").and_then(Value::as_i64) else { continue };
                if best.as_ref().is_none_or(|(b, _)| rev > *b) {
                    best = Some((rev, doc));
                }
            }
        }
        let contract = match best {
            Some((_, doc)) => doc,
            None => {
                let single = dir.join("contract.json");
                if !single.is_file() {
                    return Err(fail(format!(
                        "no contract.json and no contracts/ chain in {}",
                        dir.display()
                    )));
                }
                read_json_named(&single)?
            }
        };
        let Some(generation) = contract_generation(&contract) else {
            return Err(fail(format!(
                "the v6 ledger serves v6 contracts only (and their v7 superset); older plans \
                 keep their recorded tooling (RFC 9.1): found {}",
                dwp::py::repr_opt(contract.get("schema"))
            )));
        };
        if let Some(first) = validate::contract_errors(&contract, None).into_iter().next() {
            return Err(fail(format!("contract invalid: {first}")));
        }
        let contract_id = match contract.get("contract_id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => contract_id(&contract).map_err(|e| fail(e.to_string()))?,
        };
        Ok(Plan { dir: dir.to_path_buf(), contract, contract_id, generation })
    }

    /// The live journal path.
    pub fn journal_path(&self) -> PathBuf {
        self.dir.join(JOURNAL_NAME)
    }

    /// Archive segments beside the plan, oldest first.
    pub fn archives(&self) -> Vec<Archive> {
        let mut found: Vec<Archive> = fs::read_dir(&self.dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter_map(|e| Archive::from_name(&e.file_name().to_string_lossy()))
                    .collect()
            })
            .unwrap_or_default();
        found.sort_by(|a, b| a.file.cmp(&b.file));
        found
    }

    /// The events of every archive segment, in seq order (each segment read by the journal
    /// crate's typed reader; any bad line is an error, a missing final newline is not).
    ///
    /// # Errors
    /// A corrupt segment (archives are never repaired in place).
    pub fn archived_events(&self) -> Result<Vec<Value>> {
        let mut events = Vec::new();
        for archive in self.archives() {
            let path = self.dir.join(&archive.file);
            let raw = fs::read(&path).map_err(|e| io_fail(&path, e))?;
            let report = journal::read_typed_from(&raw[..], strict, |_, event| events.push(event))
                .map_err(|e| io_fail(&path, e))?;
            if let Some(damage @ (Damage::TornTail { .. } | Damage::Corrupt { .. })) = report.damage
            {
                // Name the parser's complaint about the first bad line.
                let start = usize::try_from(damage.byte_offset()).unwrap_or(usize::MAX);
                let rest = raw.get(start..).unwrap_or_default();
                let line = rest.split(|b| *b == b'\n').next().unwrap_or(rest);
                let why = match canonical_json::parse(line) {
                    Err(e) => e.to_string(),
                    Ok(event) => dwp::event::record_problem(&event)
                        .map_or_else(|| damage.cause().to_owned(), |p| p.to_string()),
                };
                return Err(fail(format!(
                    "archive segment {} is corrupt ({why}) — archived history is never \
                     repaired in place; restore the exported copy",
                    archive.file
                )));
            }
        }
        events.sort_by_key(seq_of);
        Ok(events)
    }

    /// The highest seq any archive retired.
    pub fn archive_top_seq(&self) -> i64 {
        self.archives()
            .iter()
            .map(|a| i64::try_from(a.last_seq).unwrap_or(i64::MAX))
            .max()
            .unwrap_or(0)
    }

    /// The repository root of this plan.
    pub fn repo_root(&self) -> PathBuf {
        repo_root(&self.dir)
    }
}
