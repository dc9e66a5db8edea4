//! v5 → v6 migration on disk: `migration_v5/PREVIEW.json`, phases in `PHASE.json`, a
//! verified backup, the journal of imported/asserted history, and a byte-identical rollback.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use canonical_json::Value;
use dwp::contract::contract_id;
use dwp::migrate::{self as rules, MIGRATE_IDENTITY, MappedTask, PHASE_TYPE, PREVIEW_AUTHORITY};

use crate::error::{LedgerError, io_fail};
use crate::files::{hash_file, read_json_named, write_pretty};
use crate::plan::{JOURNAL_NAME, MANIFEST_URL_V6, Plan};
use crate::values::{actor, obj, s};
use crate::writer::Writer;

/// Why a migration command stopped (exit 1 either way).
#[derive(Debug)]
#[non_exhaustive]
pub enum MigrateError {
    /// `REFUSED: …` (nothing changed).
    Refused(String),
    /// `ERROR: …` or the ledger's own failure.
    Ledger(LedgerError),
}

impl std::fmt::Display for MigrateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MigrateError::Refused(m) => f.write_str(m),
            MigrateError::Ledger(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for MigrateError {}

impl From<LedgerError> for MigrateError {
    fn from(e: LedgerError) -> MigrateError {
        MigrateError::Ledger(e)
    }
}

impl MigrateError {
    /// The output prefix.
    pub fn prefix(&self) -> &'static str {
        match self {
            MigrateError::Refused(_) => "REFUSED",
            MigrateError::Ledger(e) => e.prefix(),
        }
    }
}

type Result<T> = std::result::Result<T, MigrateError>;

fn fail(msg: impl Into<String>) -> MigrateError {
    MigrateError::Ledger(crate::error::fail(msg))
}

/// The migration folder inside the plan.
pub const MIGRATION_DIR: &str = "migration_v5";
/// The migration phases, in order.
pub const PHASES: [&str; 5] = ["backup", "contract", "manifest", "journal", "project"];

fn refused(msg: impl Into<String>) -> MigrateError {
    MigrateError::Refused(msg.into())
}

fn folder_name(dir: &Path) -> String {
    dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `json.dumps(doc, sort_keys=True, indent=2) + "\n"`, atomically.
fn write_doc(path: &Path, doc: &Value) -> Result<()> {
    Ok(write_pretty(path, doc)?)
}

fn head12(v: Option<&Value>) -> String {
    dwp::py::head(&dwp::py::str_opt(v), 12).to_owned()
}

/// The repository the v5 evidence pointers are relative to: the nearest folder above the plan
/// holding `.git` (upstream `_find_repo_root`).
fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|p| p.join(".git").is_dir()).map(Path::to_path_buf)
}

struct Source {
    manifest: Value,
    state: Value,
    digest: String,
}

/// The live v5 pair (upstream `load_v5`'s file checks; identity checks are in the rules).
fn read_source(dir: &Path) -> Result<Source> {
    let manifest_path = dir.join("manifest.json");
    let state_path = dir.join("state.json");
    if !manifest_path.is_file() || !state_path.is_file() {
        return Err(refused(
            "migration needs a materialized v5 plan (manifest.json + state.json) - a plan folder \
             without both is not migratable",
        ));
    }
    let manifest = read_json_named(&manifest_path)?;
    let url = manifest.get("schema").and_then(Value::as_str).unwrap_or("");
    if url == MANIFEST_URL_V6
        || url == crate::plan::MANIFEST_URL_V7
        || dir.join("contract.json").exists()
        || dir.join("contracts").exists()
    {
        return Err(refused(format!(
            "{} is already a v6 plan (v6 manifest or contract.json present) - migration is \
             one-directional; run rollback first if this state is unexpected",
            folder_name(dir)
        )));
    }
    let state = read_json_named(&state_path)?;
    let digest = rules::source_digest(&manifest, &state);
    Ok(Source { manifest, state, digest })
}

fn mapped(dir: &Path, src: &Source) -> Result<Vec<MappedTask>> {
    let root = git_root(dir);
    let resolve = |p: &str| {
        let path = Path::new(p);
        (path.is_absolute() && path.is_file())
            || dir.join(p).is_file()
            || root.as_ref().is_some_and(|r| r.join(p).is_file())
    };
    rules::map_tasks(&folder_name(dir), &src.manifest, &src.state, &resolve)
        .map_err(|e| refused(e.to_string()))
}

fn synthesize(
    dir: &Path,
    src: &Source,
    tasks: &[MappedTask],
    authority: &str,
) -> (Value, Vec<String>) {
    let doc =
        rules::anchor_contract(&folder_name(dir), &src.manifest, &src.state, tasks, authority);
    let errors = dwp::validate::contract_errors(&doc, None);
    (doc, errors)
}

fn contract_id_of(doc: &Value) -> Result<String> {
    contract_id(doc).map_err(|e| fail(e.to_string()))
}

/// `preview`: writes `migration_v5/PREVIEW.json`; changes no v5 bytes.
///
/// # Errors
/// A foreign or lossy input, a migration in progress or done, a synthesized contract that
/// would not validate (all refused), I/O.
pub fn preview(dir: &Path) -> Result<Value> {
    let src = read_source(dir)?;
    let tasks = mapped(dir, &src)?;
    if let Some(phase) = load_marker(dir)? {
        let done: Vec<String> = phase
            .get("completed")
            .and_then(Value::as_array)
            .unwrap_or(&[])
            .iter()
            .map(dwp::py::str_of)
            .collect();
        if phase.get("rolled_back") != Some(&Value::Bool(true)) && !done.is_empty() {
            return Err(refused(format!(
                "a migration is in progress or done (phases: {}) - resume it with migrate, or \
                 rollback first",
                done.join(", ")
            )));
        }
    }
    let (contract, errors) = synthesize(dir, &src, &tasks, PREVIEW_AUTHORITY);
    if let Some(first) = errors.first() {
        return Err(refused(format!(
            "the synthesized contract does not validate: {first} - refusing to preview a plan \
             whose migration could never complete"
        )));
    }
    let cid = contract_id_of(&contract)?;
    let doc = rules::preview(&folder_name(dir), &src.digest, &tasks, &cid);
    let mdir = dir.join(MIGRATION_DIR);
    crate::files::refuse_symlink(&mdir)?;
    fs::create_dir_all(&mdir).map_err(|e| io_fail(&mdir, e))?;
    write_doc(&mdir.join("PREVIEW.json"), &doc)?;
    Ok(doc)
}

fn phase_path(dir: &Path) -> PathBuf {
    dir.join(MIGRATION_DIR).join("PHASE.json")
}

fn load_marker(dir: &Path) -> Result<Option<Value>> {
    let path = phase_path(dir);
    if path.is_file() { Ok(Some(read_json_named(&path)?)) } else { Ok(None) }
}

/// What `migrate` did.
#[derive(Clone, Debug)]
pub struct Migrated {
    /// The plan.
    pub plan: String,
    /// The new contract id.
    pub contract_id: String,
    /// Events in the journal once the migration's own were written.
    pub journal_events: usize,
    /// True when an earlier run had started.
    pub resumed: bool,
    /// True when every phase had already completed (nothing was done).
    pub already: bool,
    /// The completed phases, in order.
    pub phases: Vec<String>,
    /// The criteria that stay blocked until their gates re-run under v6.
    pub re_evidence: Vec<String>,
}

/// What `rollback` did.
#[derive(Clone, Debug)]
pub struct RolledBack {
    /// The plan.
    pub plan: String,
    /// The restored files.
    pub restored: Vec<String>,
    /// Set when `--force` discarded post-migration events (the warning to print).
    pub warning: Option<String>,
}

fn set_field(doc: &mut Value, key: &str, value: Value) {
    if let Some(map) = doc.as_object_mut() {
        map.insert(key.to_owned(), value);
    }
}

fn copy_preserving(from: &Path, to: &Path) -> Result<()> {
    fs::copy(from, to).map_err(|e| io_fail(to, e))?;
    if let Ok(modified) = fs::metadata(from).and_then(|m| m.modified())
        && let Ok(file) = fs::File::options().write(true).open(to)
    {
        let _ = file.set_modified(modified);
    }
    Ok(())
}

/// `migrate --authority WHO`: backup → contract → manifest → journal → project, each phase
/// recorded in `PHASE.json` so a rerun resumes at the first missing one.
///
/// # Errors
/// No authority, no preview, changed records or world, a stale marker, a stamped contract or
/// pointer that differs (all refused), I/O and journal failures.
pub fn migrate(
    dir: &Path,
    authority: &str,
    note: Option<&str>,
    now: SystemTime,
) -> Result<Migrated> {
    if authority.is_empty() {
        return Err(refused("migrate requires --authority WHO"));
    }
    let mdir = dir.join(MIGRATION_DIR);
    let preview_path = mdir.join("PREVIEW.json");
    if !preview_path.is_file() {
        return Err(refused(
            "no preview on record - run preview first; migration without a recorded preview is \
             exactly the silent migration RFC 9.3 forbids",
        ));
    }
    let preview = read_json_named(&preview_path)?;
    let backup = mdir.join("backup");
    // A resumed run anchors to the verified backup pair, never to post-swap bytes.
    let src = if backup.join("state.json").is_file() {
        let manifest = read_json_named(&backup.join("manifest.json"))?;
        let state = read_json_named(&backup.join("state.json"))?;
        let digest = rules::source_digest(&manifest, &state);
        Source { manifest, state, digest }
    } else {
        read_source(dir)?
    };
    let tasks = mapped(dir, &src)?;
    if preview.get("source_digest").and_then(Value::as_str) != Some(src.digest.as_str()) {
        return Err(refused(format!(
            "the v5 records changed since the preview (digest {} -> {}) - preview again; \
             migrating stale mapping would record the wrong history",
            head12(preview.get("source_digest")),
            dwp::py::head(&src.digest, 12)
        )));
    }
    let anchor = contract_id_of(&synthesize(dir, &src, &tasks, PREVIEW_AUTHORITY).0)?;
    if preview.get("contract_id").and_then(Value::as_str) != Some(anchor.as_str()) {
        return Err(refused(format!(
            "the v5 world changed since the preview (preview contract {}, current {}) - evidence \
             resolution differs even though the record digest matches; preview again (rollback \
             first if a migration is already in flight)",
            head12(preview.get("contract_id")),
            dwp::py::head(&anchor, 12)
        )));
    }
    // Divergence: a rolled-back marker starts a fresh migration (upstream would skip every
    // phase and report success).
    let existing = load_marker(dir)?.filter(|m| m.get("rolled_back") != Some(&Value::Bool(true)));
    let resumed = existing.is_some();
    let mut marker = existing.unwrap_or_else(|| {
        Value::Object(obj([
            ("type", s(PHASE_TYPE)),
            ("source_digest", s(&src.digest)),
            ("completed", Value::Array(Vec::new())),
        ]))
    });
    if marker.get("source_digest").and_then(Value::as_str) != Some(src.digest.as_str()) {
        return Err(refused(
            "the phase marker belongs to different v5 records - rollback or remove the stale \
             migration folder before migrating",
        ));
    }
    let mut completed: Vec<String> = marker
        .get("completed")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .map(dwp::py::str_of)
        .collect();
    let already = PHASES.iter().all(|p| completed.iter().any(|c| c == p));
    let done = |completed: &[String], p: &str| completed.iter().any(|c| c == p);
    let list = |completed: &[String]| Value::Array(completed.iter().map(|c| s(c)).collect());
    if !done(&completed, "backup") {
        crate::files::refuse_symlink(&backup)?;
        fs::create_dir_all(&backup).map_err(|e| io_fail(&backup, e))?;
        let mut record = canonical_json::Map::new();
        for name in ["manifest.json", "state.json"] {
            let from = dir.join(name);
            let to = backup.join(name);
            if to.is_file() {
                if hash_file(&to) != hash_file(&from) {
                    return Err(refused(format!(
                        "backup/{name} exists but differs from the live v5 file - restore it by \
                         hand or remove the stale migration folder"
                    )));
                }
            } else {
                copy_preserving(&from, &to)?;
            }
            record.insert(name.to_owned(), hash_file(&to).map_or(Value::Null, |d| s(&d)));
        }
        set_field(&mut marker, "backup_digests", Value::Object(record.clone()));
        write_doc(&backup.join("BACKUP.json"), &Value::Object(record))?;
        completed.push("backup".to_owned());
    }
    if !done(&completed, "contract") {
        let (contract, errors) = synthesize(dir, &src, &tasks, authority);
        if let Some(first) = errors.first() {
            return Err(refused(format!("synthesized contract invalid: {first}")));
        }
        let cid = contract_id_of(&contract)?;
        if dir.join("contracts").is_dir() {
            return Err(refused(
                "a contracts/ revision chain exists - this plan is already under v6 amendments \
                 and is not a migration candidate",
            ));
        }
        let path = dir.join("contract.json");
        if path.is_file() {
            let existing = read_json_named(&path)?;
            if existing.get("contract_id").and_then(Value::as_str) != Some(cid.as_str()) {
                return Err(refused(format!(
                    "contract.json carries {} but this migration synthesizes {} - never rewrite \
                     a stamped contract; rollback first",
                    dwp::py::repr_opt(existing.get("contract_id")),
                    dwp::py::repr_str(&cid)
                )));
            }
        } else {
            let mut stamped = contract;
            set_field(&mut stamped, "contract_id", s(&cid));
            write_doc(&path, &stamped)?;
        }
        set_field(&mut marker, "contract_id", s(&cid));
        set_field(&mut marker, "authority", s(authority));
        completed.push("contract".to_owned());
    }
    let cid = marker.get("contract_id").and_then(Value::as_str).unwrap_or("").to_owned();
    let folder = folder_name(dir);
    if !done(&completed, "manifest") {
        if !backup.join("manifest.json").is_file() {
            return Err(refused(
                "the v5 manifest backup is missing - the swap never happens without it",
            ));
        }
        let path = dir.join("manifest.json");
        let current = read_json_named(&path)?;
        if current.get("schema").and_then(Value::as_str) == Some(MANIFEST_URL_V6) {
            if current.pointer("/contract/id").and_then(Value::as_str) != Some(cid.as_str()) {
                return Err(refused(format!(
                    "manifest points at {} but this migration is {} - never rewrite a pointer; \
                     rollback first",
                    dwp::py::repr_opt(current.pointer("/contract/id")),
                    dwp::py::repr_str(&cid)
                )));
            }
        } else {
            let manifest = Value::Object(obj([
                ("schema", s(MANIFEST_URL_V6)),
                ("plan", s(&folder)),
                ("contract", Value::Object(obj([("id", s(&cid)), ("path", s("contract.json"))]))),
            ]));
            write_doc(&path, &manifest)?;
        }
        completed.push("manifest".to_owned());
    }
    set_field(&mut marker, "completed", list(&completed));
    write_doc(&phase_path(dir), &marker)?;
    if !done(&completed, "journal") || !done(&completed, "project") {
        let plan = Plan::load(dir)?;
        let mut writer = Writer::open(plan, false, now)?;
        if !done(&completed, "journal") {
            let root = git_root(dir).unwrap_or_else(|| dir.to_path_buf());
            let count = write_history(
                &mut writer,
                &HistoryRequest {
                    folder: &folder,
                    digest: &src.digest,
                    tasks: &tasks,
                    authority,
                    note,
                    cwd: &root,
                },
            )?;
            set_field(&mut marker, "journal_events", count.into());
            completed.push("journal".to_owned());
            set_field(&mut marker, "completed", list(&completed));
            write_doc(&phase_path(dir), &marker)?;
        }
        if !done(&completed, "project") {
            writer.project()?;
            completed.push("project".to_owned());
            set_field(&mut marker, "completed", list(&completed));
            write_doc(&phase_path(dir), &marker)?;
        }
        writer.close()?;
    }
    let journal_events = marker
        .get("journal_events")
        .and_then(Value::as_i64)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    let re_evidence =
        tasks.iter().filter(|t| t.class == "re_evidence").map(|t| t.criterion.clone()).collect();
    Ok(Migrated {
        plan: folder,
        contract_id: cid,
        journal_events,
        resumed,
        already,
        phases: completed,
        re_evidence,
    })
}

struct HistoryRequest<'a> {
    folder: &'a str,
    digest: &'a str,
    tasks: &'a [MappedTask],
    authority: &'a str,
    note: Option<&'a str>,
    cwd: &'a Path,
}

/// Appends `etype` unless an event with the same content (type, payload, actor identity,
/// contract) is on record (upstream `append(..., idempotent=True)`).
fn append_once(
    writer: &mut Writer,
    etype: &str,
    payload: canonical_json::Map,
    who: Value,
    note: Option<&str>,
    trust: Option<&str>,
    evidence: Option<&str>,
) -> Result<()> {
    let mut wanted = payload.clone();
    if let Some(t) = trust {
        wanted.insert("trust".to_owned(), s(t));
    }
    if let Some(e) = evidence {
        wanted.insert("evidence_path".to_owned(), s(e));
    }
    let wanted = Value::Object(wanted);
    let cid = s(&writer.plan.contract_id);
    let key = dwp::projection::content_key(&s(etype), &wanted, Some(&who), &cid);
    let present = writer.events.iter().any(|e| {
        e.get("type").and_then(Value::as_str) == Some(etype)
            && dwp::projection::content_key(
                &s(etype),
                &dwp::projection::payload_of(e),
                e.get("actor"),
                e.get("contract_id").unwrap_or(&Value::Null),
            ) == key
    });
    if !present {
        writer.append_raw(etype, payload, who, note, trust, evidence)?;
    }
    Ok(())
}

/// Writes the migrated history; returns the number of events in the journal afterwards.
fn write_history(writer: &mut Writer, req: &HistoryRequest<'_>) -> Result<usize> {
    let d12 = dwp::py::head(req.digest, 12);
    let default_note = format!(
        "migrated from v5 plan {} (preview + source digest {d12} are the recorded \
         pre-authorization)",
        req.folder
    );
    append_once(
        writer,
        "approval",
        obj([
            ("authority", s(req.authority)),
            ("mechanism", s("pre_authorization")),
            ("plan_digest", s(req.digest)),
        ]),
        actor("human", req.authority),
        Some(req.note.filter(|n| !n.is_empty()).unwrap_or(&default_note)),
        None,
        None,
    )?;
    let helper = actor("helper", MIGRATE_IDENTITY);
    let cwd = std::path::absolute(req.cwd).unwrap_or_else(|_| req.cwd.to_path_buf());
    let cwd = cwd.to_string_lossy().into_owned();
    for t in req.tasks.iter().filter(|t| t.status != "pending") {
        append_once(
            writer,
            "task_start",
            obj([("task", s(&t.v6_id))]),
            helper.clone(),
            Some(&format!("migrated from v5 task {} (status {})", t.v5_id, t.status)),
            None,
            None,
        )?;
        for gate in &t.gates {
            let command = gate.get("command").cloned().unwrap_or(Value::Null);
            let exit = gate.get("exit_code").cloned().unwrap_or(Value::Null);
            let resolvable = gate.get("resolvable").and_then(Value::as_bool) == Some(true);
            let evidence =
                if resolvable { gate.get("evidence").and_then(Value::as_str) } else { None };
            // One v5 record, one event: a rerun finds it and appends nothing.
            let recorded = writer.events.iter().any(|e| {
                e.get("type").and_then(Value::as_str) == Some("gate_run")
                    && e.get("task").and_then(Value::as_str) == Some(t.v6_id.as_str())
                    && e.get("criterion").and_then(Value::as_str) == Some(t.criterion.as_str())
                    && e.get("command") == Some(&command)
                    && e.get("exit_code") == Some(&exit)
                    && e.get("evidence_path").and_then(Value::as_str) == evidence
            });
            if recorded {
                continue;
            }
            let source = format!(
                "v5 {} task {} gate {} (source digest {d12})",
                req.folder,
                t.v5_id,
                dwp::py::str_opt(gate.get("index"))
            );
            let note: String = format!("migrated: {source}").chars().take(500).collect();
            writer.append_raw(
                "gate_run",
                obj([
                    ("command", command),
                    ("cwd", s(&cwd)),
                    ("timeout_seconds", 600i64.into()),
                    ("exit_code", exit),
                    ("task", s(&t.v6_id)),
                    ("criterion", s(&t.criterion)),
                ]),
                helper.clone(),
                Some(&note),
                Some(if resolvable { "imported" } else { "asserted" }),
                evidence,
            )?;
        }
    }
    let imported = req
        .tasks
        .iter()
        .flat_map(|t| t.gates.iter())
        .filter(|g| g.get("resolvable").and_then(Value::as_bool) == Some(true))
        .count();
    append_once(
        writer,
        "observation",
        obj([(
            "statement",
            s(&format!(
                "migrated from v5 plan {}: {} tasks mapped, {imported} gate records imported \
                 (source digest {d12})",
                req.folder,
                req.tasks.len()
            )),
        )]),
        helper,
        None,
        Some("imported"),
        Some(&format!("{MIGRATION_DIR}/PREVIEW.json")),
    )?;
    Ok(writer.events.len())
}

/// `rollback [--force]`: restores the v5 manifest and state byte for byte from the verified
/// backup, removes `contract.json` and the journal, and marks the marker `rolled_back`.
///
/// # Errors
/// No marker, a backup that fails its digest, post-migration events without `force` (all
/// refused), a held lock, I/O.
pub fn rollback(dir: &Path, force: bool) -> Result<RolledBack> {
    let mdir = dir.join(MIGRATION_DIR);
    let Some(mut marker) = load_marker(dir)?
        .filter(|m| m.get("completed").and_then(Value::as_array).is_some_and(|c| !c.is_empty()))
    else {
        return Err(refused("no migration marker - nothing to roll back"));
    };
    let backup = mdir.join("backup");
    let record = read_json_named(&backup.join("BACKUP.json"))?;
    let names: Vec<String> =
        record.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
    for name in &names {
        let path = backup.join(name);
        let want = record.get(name).and_then(Value::as_str);
        if !crate::files::safe_relative(name)
            || want.is_none()
            || hash_file(&path).as_deref() != want
        {
            return Err(refused(format!(
                "backup/{name} is missing or fails its recorded digest - the v5 bytes cannot be \
                 restored verifiably; fix the backup by hand"
            )));
        }
    }
    let mut warning = None;
    let journal = dir.join(JOURNAL_NAME);
    if journal.is_file() {
        let text = fs::read_to_string(&journal).map_err(|e| io_fail(&journal, e))?;
        let live = i64::try_from(text.lines().filter(|l| !l.trim().is_empty()).count())
            .unwrap_or(i64::MAX);
        if let Some(minted) = marker
            .get("journal_events")
            .filter(|v| matches!(v, Value::Number(_)))
            .and_then(Value::as_i64)
            && live > minted
        {
            let message = format!(
                "the journal carries {live} events, {} more than the migration minted - \
                 post-migration v6 work is real history and is not silently deleted",
                live - minted
            );
            if !force {
                return Err(refused(format!("{message}; pass --force to discard it deliberately")));
            }
            warning = Some(format!("{message} (--force)"));
        }
    }
    if dir.join(".ledger.lock").exists() {
        return Err(fail("the plan lock is held - a writer is running; retry when it is done"));
    }
    for name in &names {
        copy_preserving(&backup.join(name), &dir.join(name))?;
    }
    for name in ["contract.json", JOURNAL_NAME] {
        let p = dir.join(name);
        if p.is_file() {
            fs::remove_file(&p).map_err(|e| io_fail(&p, e))?;
        }
    }
    let views = dir.join("views");
    if views.is_dir() && fs::read_dir(&views).map(|mut r| r.next().is_none()).unwrap_or(false) {
        let _ = fs::remove_dir(&views);
    }
    set_field(&mut marker, "rolled_back", Value::Bool(true));
    write_doc(&phase_path(dir), &marker)?;
    let mut restored = names.clone();
    restored.sort();
    write_doc(
        &mdir.join("ROLLED_BACK.json"),
        &Value::Object(obj([("restored", Value::Array(restored.iter().map(|r| s(r)).collect()))])),
    )?;
    let plan =
        marker.get("plan").and_then(Value::as_str).map_or_else(|| folder_name(dir), str::to_owned);
    Ok(RolledBack { plan, restored, warning })
}
