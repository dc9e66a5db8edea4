//! `export`: a copy of the plan's records and cited evidence, with digests.

use std::fs;
use std::path::{Path, PathBuf};

use canonical_json::{Map, Value};

use crate::error::{Result, fail, io_fail};
use crate::evidence::{Located, locate};
use crate::files::read_json_named;
use crate::plan::{EVIDENCE_NAME, LOCK_IDENTITY};
use crate::values::{obj, s};
use crate::writer::Writer;

impl Writer {
    /// `export --dest DIR`: journal, snapshot, contracts, archives, cache, gate logs and cited
    /// evidence, with `EXPORT_MANIFEST.json`.
    ///
    /// Only files inside the plan folder or the repository are copied: a cited path elsewhere
    /// (an absolute `/etc/shadow`, a symlink out of the repository) is listed under
    /// `outside_evidence` and never read.
    ///
    /// # Errors
    /// A destination that is not empty or lies inside the plan folder (nothing is written), I/O.
    pub fn export(&self, dest: &Path) -> Result<Value> {
        let dir = &self.plan.dir;
        check_destination(dir, dest)?;
        fs::create_dir_all(dest).map_err(|e| io_fail(dest, e))?;
        let mut sources: Vec<PathBuf> = vec![self.plan.journal_path(), dir.join("state.json")];
        let chain = dir.join("contracts");
        if chain.is_dir() {
            let mut names: Vec<PathBuf> = fs::read_dir(&chain)
                .map_err(|e| io_fail(&chain, e))?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".json")))
                .collect();
            names.sort();
            sources.extend(names);
        }
        sources.push(dir.join("contract.json"));
        for a in self.plan.archives() {
            sources.push(dir.join(a.file));
        }
        sources.push(dir.join(EVIDENCE_NAME));
        let mut cited: Vec<String> = self
            .events
            .iter()
            .filter_map(|e| e.get("evidence_path").and_then(Value::as_str))
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect();
        if let Ok(snap) = read_json_named(&dir.join("state.json")) {
            for t in snap.get("tasks").and_then(Value::as_array).unwrap_or(&[]) {
                for c in t.get("criteria").and_then(Value::as_array).unwrap_or(&[]) {
                    if let Some(p) =
                        c.get("evidence_path").and_then(Value::as_str).filter(|p| !p.is_empty())
                    {
                        cited.push(p.to_owned());
                    }
                }
            }
        }
        cited.sort();
        cited.dedup();
        let mut missing = Vec::new();
        let mut refused = Vec::new();
        let mut in_repo: Vec<(String, PathBuf)> = Vec::new();
        let root = self.plan.repo_root();
        // Where a resolved file sits in the plan folder, from its real path (never from the
        // pointer's text, whose `..` could climb out of the destination).
        let plan_real = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        let in_plan = |found: &Path| -> Option<PathBuf> {
            let real = found.canonicalize().ok()?;
            real.strip_prefix(&plan_real).ok().map(Path::to_path_buf)
        };
        for pointer in cited {
            match locate(dir, &root, &pointer) {
                Located::Inside(found) if !found.is_file() => missing.push(s(&pointer)),
                Located::Inside(found) if in_plan(&found).is_some() => {
                    if let Some(rel) = in_plan(&found) {
                        let own = dir.join(rel);
                        if !sources.contains(&own) {
                            sources.push(own);
                        }
                    }
                }
                // Divergence (DWP.md §19.9): evidence in the repository outside the plan folder
                // is copied under `repo/<path from the repository root>` inside the bundle.
                // The bundle path comes from the resolved path, never from the pointer's text:
                // `/repo/../../repo/x` resolves inside the repository, but its text would climb
                // out of the destination.
                Located::Inside(found) => {
                    let real = found.canonicalize().unwrap_or_else(|_| found.clone());
                    let root_real = root.canonicalize().unwrap_or_else(|_| root.clone());
                    match real.strip_prefix(&root_real) {
                        Ok(rel) => in_repo.push((rel.to_string_lossy().into_owned(), found)),
                        Err(_) => refused.push(s(&pointer)),
                    }
                }
                Located::Missing => missing.push(s(&pointer)),
                Located::Outside => refused.push(s(&pointer)),
            }
        }
        let gates = dir.join("gates");
        if gates.is_dir() {
            let mut logs = Vec::new();
            walk_files(&gates, &mut logs);
            logs.sort();
            sources.extend(logs);
        }
        let mut files = Map::new();
        let mut copy = |src: &Path, rel: &str| -> Result<()> {
            if !src.is_file() {
                return Ok(());
            }
            let raw = fs::read(src).map_err(|e| io_fail(src, e))?;
            let target = dest.join(rel);
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent).map_err(|e| io_fail(parent, e))?;
            }
            fs::write(&target, &raw).map_err(|e| io_fail(&target, e))?;
            files.insert(rel.to_owned(), s(&canonical_json::digest::sha256_hex(&raw)));
            Ok(())
        };
        for src in &sources {
            let Ok(rel) = src.strip_prefix(dir) else { continue };
            copy(src, &rel.to_string_lossy())?;
        }
        for (rel, found) in &in_repo {
            copy(found, &format!("repo/{rel}"))?;
        }
        let mut manifest = obj([
            ("exported_by", s(LOCK_IDENTITY)),
            ("plan", self.plan.contract.get("plan").cloned().unwrap_or(Value::Null)),
            ("contract_id", s(&self.plan.contract_id)),
            ("files", Value::Object(files)),
        ]);
        if !missing.is_empty() {
            manifest.insert("missing_evidence".into(), Value::Array(missing));
        }
        if !refused.is_empty() {
            manifest.insert("outside_evidence".into(), Value::Array(refused));
        }
        let manifest = Value::Object(manifest);
        let mut bytes =
            canonical_json::to_python_pretty(&manifest).map_err(|e| fail(e.to_string()))?;
        bytes.pop();
        let path = dest.join("EXPORT_MANIFEST.json");
        fs::write(&path, bytes).map_err(|e| io_fail(&path, e))?;
        Ok(manifest)
    }
}

/// An export goes to a fresh place: a destination that does not exist yet or is an empty
/// folder, and never inside the plan folder (the bundle would copy itself and sit among the
/// records it copies).
fn check_destination(plan_dir: &Path, dest: &Path) -> Result<()> {
    let abs = std::path::absolute(dest).map_err(|e| io_fail(dest, e))?;
    // Resolve the deepest existing ancestor (symlinks included), then the rest as written.
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else { break };
        rest.push(name.to_owned());
        existing = parent;
    }
    let mut real = existing.canonicalize().unwrap_or_else(|_| existing.to_path_buf());
    real.extend(rest.iter().rev());
    let plan_real = plan_dir.canonicalize().unwrap_or_else(|_| plan_dir.to_path_buf());
    if real.starts_with(&plan_real) {
        return Err(fail(format!(
            "export destination {} lies inside the plan folder — an export is a copy kept \
             elsewhere; nothing was written",
            abs.display()
        )));
    }
    if fs::symlink_metadata(&abs).is_ok() {
        let empty =
            abs.is_dir() && fs::read_dir(&abs).map_err(|e| io_fail(&abs, e))?.next().is_none();
        if !empty {
            return Err(fail(format!(
                "export destination {} exists and is not an empty folder — an export never \
                 overwrites; name a new folder (nothing was written)",
                abs.display()
            )));
        }
    }
    Ok(())
}

fn walk_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for entry in rd.filter_map(|e| e.ok()) {
        let path = entry.path();
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            walk_files(&path, out);
        } else if ft.is_file() {
            out.push(path);
        }
    }
}
