//! v5 → v6 migration on disk: `migration_v5/PREVIEW.json`, phases in `PHASE.json`, a
//! verified backup, the journal of imported/asserted history, and a byte-identical rollback.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use canonical_json::Value;
use dwp::contract::contract_id;
use dwp::migrate::{self as rules, MIGRATE_IDENTITY, MappedTask, PHASE_TYPE, PREVIEW_AUTHORITY};

use crate::{
    JOURNAL_NAME, LedgerError, MANIFEST_URL_V6, Plan, Writer, actor, hash_file, io_fail, obj,
    read_json_named, repo_root, s, safe_relative, write_pretty,
};

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
    MigrateError::Ledger(crate::fail(msg))
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

struct Source {
    manifest: Value,
    state: Value,
    digest: String,
}

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
        || url == crate::MANIFEST_URL_V7
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
    let (Some(m), Some(st)) = (hash_file(&manifest_path), hash_file(&state_path)) else {
        return Err(fail("manifest.json and state.json must be readable files"));
    };
    let digest = canonical_json::digest::sha256_hex(
        format!("manifest.json {m}\nstate.json {st}\n").as_bytes(),
    );
    Ok(Source { manifest, state, digest })
}

fn resolver(dir: &Path) -> impl Fn(&str) -> bool + '_ {
    move |p: &str| safe_relative(p) && (dir.join(p).is_file() || repo_root(dir).join(p).is_file())
}

fn mapped(dir: &Path, src: &Source) -> Result<Vec<MappedTask>> {
    let folder = folder_name(dir);
    let resolve = resolver(dir);
    rules::map_tasks(&folder, &src.manifest, &src.state, &resolve)
        .map_err(|e| refused(e.to_string()))
}

fn anchor_id(
    dir: &Path,
    src: &Source,
    tasks: &[MappedTask],
    authority: &str,
) -> Result<(Value, String)> {
    let doc =
        rules::anchor_contract(&folder_name(dir), &src.manifest, &src.state, tasks, authority);
    let errors = dwp::validate::contract_errors(&doc, None);
    if let Some(first) = errors.into_iter().next() {
        return Err(fail(format!("the synthesized contract is invalid: {first}")));
    }
    let id = contract_id(&doc).map_err(|e| fail(e.to_string()))?;
    Ok((doc, id))
}

/// `preview`: writes `migration_v5/PREVIEW.json`; changes no v5 bytes.
///
/// # Errors
/// A foreign or lossy input (refused), I/O.
pub fn preview(dir: &Path) -> Result<Value> {
    let src = read_source(dir)?;
    let tasks = mapped(dir, &src)?;
    if phase_path(dir).is_file() {
        let phase = read_json_named(&phase_path(dir))?;
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
    let (_, cid) = anchor_id(dir, &src, &tasks, PREVIEW_AUTHORITY)?;
    let doc = rules::preview(&folder_name(dir), &src.digest, &tasks, &cid);
    let mdir = dir.join(MIGRATION_DIR);
    crate::refuse_symlink(&mdir)?;
    fs::create_dir_all(&mdir).map_err(|e| io_fail(&mdir, e))?;
    write_pretty(&mdir.join("PREVIEW.json"), &doc)?;
    Ok(doc)
}

fn phase_path(dir: &Path) -> PathBuf {
    dir.join(MIGRATION_DIR).join("PHASE.json")
}

fn completed(phase: &Value, name: &str) -> bool {
    phase
        .get("completed")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|p| p.as_str() == Some(name)))
}

fn mark(dir: &Path, phase: &mut Value, name: &str) -> Result<()> {
    if let Some(Value::Array(list)) = phase.as_object_mut().and_then(|o| o.get_mut("completed"))
        && !list.iter().any(|p| p.as_str() == Some(name))
    {
        list.push(s(name));
    }
    Ok(write_pretty(&phase_path(dir), phase)?)
}

/// What `migrate` did.
#[derive(Clone, Debug)]
pub struct Migrated {
    /// The plan.
    pub plan: String,
    /// The new contract id.
    pub contract_id: String,
    /// Events the migration minted.
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

/// `migrate --authority WHO`: backup → contract → manifest → journal → project, resumable.
///
/// # Errors
/// No preview, a changed source, I/O and journal failures.
pub fn migrate(
    dir: &Path,
    authority: &str,
    note: Option<&str>,
    now: SystemTime,
) -> Result<Migrated> {
    if authority.trim().is_empty() {
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
    let existing_phase =
        if phase_path(dir).is_file() { Some(read_json_named(&phase_path(dir))?) } else { None };
    let resumed = existing_phase.is_some();
    let already =
        existing_phase.as_ref().is_some_and(|p| PHASES.iter().all(|name| completed(p, name)));
    // The source is the live v5 pair, or the backup once the manifest was rewritten.
    let backup = mdir.join("backup");
    let src = if existing_phase.as_ref().is_some_and(|p| completed(p, "backup")) {
        verify_backup(dir)?;
        read_source(&backup)
            .map_err(|_| fail("the backup pair cannot be read - restore it from an export"))?
    } else {
        read_source(dir)?
    };
    if preview.get("source_digest").and_then(Value::as_str) != Some(src.digest.as_str()) {
        return Err(refused("records changed since the preview - run preview again and review it"));
    }
    let folder = folder_name(dir);
    let tasks = {
        let resolve = resolver(dir);
        rules::map_tasks(&folder, &src.manifest, &src.state, &resolve)
            .map_err(|e| refused(e.to_string()))?
    };
    let (_, anchor) = anchor_id(dir, &src, &tasks, PREVIEW_AUTHORITY)?;
    if preview.get("contract_id").and_then(Value::as_str) != Some(anchor.as_str()) {
        return Err(refused(
            "the v5 world changed since the preview (evidence appeared or vanished) - run preview \
             again and review it",
        ));
    }
    let (contract, cid) = anchor_id(dir, &src, &tasks, authority)?;
    let mut phase = existing_phase.unwrap_or_else(|| {
        Value::Object(obj([
            ("type", s(PHASE_TYPE)),
            ("source_digest", s(&src.digest)),
            ("completed", Value::Array(Vec::new())),
            ("backup_digests", Value::Null),
            ("contract_id", s(&cid)),
            ("authority", s(authority)),
            ("journal_events", Value::Null),
        ]))
    });
    if phase.get("contract_id").and_then(Value::as_str) != Some(cid.as_str()) {
        return Err(refused(format!(
            "an earlier migration by {} is in progress - resume it with the same authority",
            dwp::py::repr_opt(phase.get("authority"))
        )));
    }
    if !completed(&phase, "backup") {
        fs::create_dir_all(&backup).map_err(|e| io_fail(&backup, e))?;
        let mut digests = canonical_json::Map::new();
        for name in ["manifest.json", "state.json"] {
            let to = backup.join(name);
            fs::copy(dir.join(name), &to).map_err(|e| io_fail(&to, e))?;
            digests.insert(name.to_owned(), s(&hash_file(&to).unwrap_or_default()));
        }
        if hash_file(&dir.join("manifest.json"))
            != digests.get("manifest.json").and_then(Value::as_str).map(str::to_owned)
            || hash_file(&dir.join("state.json"))
                != digests.get("state.json").and_then(Value::as_str).map(str::to_owned)
        {
            return Err(fail("the backup does not match the v5 files - nothing was changed"));
        }
        write_pretty(
            &mdir.join("BACKUP.json"),
            &Value::Object(obj([("files", Value::Object(digests.clone()))])),
        )?;
        if let Some(o) = phase.as_object_mut() {
            o.insert("backup_digests".to_owned(), Value::Object(digests));
        }
        mark(dir, &mut phase, "backup")?;
    }
    if !completed(&phase, "contract") {
        let mut stamped = contract.clone();
        if let Some(o) = stamped.as_object_mut() {
            o.insert("contract_id".to_owned(), s(&cid));
        }
        write_pretty(&dir.join("contract.json"), &stamped)?;
        mark(dir, &mut phase, "contract")?;
    }
    if !completed(&phase, "manifest") {
        let manifest = Value::Object(obj([
            ("schema", s(MANIFEST_URL_V6)),
            ("plan", s(&folder)),
            ("contract", Value::Object(obj([("id", s(&cid)), ("path", s("contract.json"))]))),
        ]));
        write_pretty(&dir.join("manifest.json"), &manifest)?;
        mark(dir, &mut phase, "manifest")?;
    }
    let plan = Plan::load(dir)?;
    let mut writer = Writer::open(plan, false, now)?;
    if !completed(&phase, "journal") {
        let minted = write_history(&mut writer, &folder, &src.digest, &tasks, authority, note)?;
        if let Some(o) = phase.as_object_mut() {
            o.insert("journal_events".to_owned(), minted.into());
        }
        mark(dir, &mut phase, "journal")?;
    }
    if !completed(&phase, "project") {
        writer.project()?;
        mark(dir, &mut phase, "project")?;
    }
    writer.close()?;
    let journal_events = phase
        .get("journal_events")
        .and_then(Value::as_i64)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    let phases = PHASES.iter().filter(|p| completed(&phase, p)).map(|p| (*p).to_owned()).collect();
    let re_evidence =
        tasks.iter().filter(|t| t.class == "re_evidence").map(|t| t.criterion.clone()).collect();
    Ok(Migrated {
        plan: folder,
        contract_id: cid,
        journal_events,
        resumed,
        already,
        phases,
        re_evidence,
    })
}

/// One event the migration mints: type, payload, actor, note, trust, evidence path.
type Planned<'a> = (&'a str, canonical_json::Map, Value, String, Option<&'a str>, Option<String>);

/// Appends the migrated history; events already present (by note) are not appended again.
/// Returns the number of events the migration owns in the journal.
fn write_history(
    writer: &mut Writer,
    folder: &str,
    digest: &str,
    tasks: &[MappedTask],
    authority: &str,
    note: Option<&str>,
) -> Result<usize> {
    let d16 = dwp::py::head(digest, 16);
    let helper = actor("helper", MIGRATE_IDENTITY);
    let mut planned: Vec<Planned<'_>> = Vec::new();
    planned.push((
        "approval",
        obj([
            ("authority", s(authority)),
            ("mechanism", s("pre_authorization")),
            ("plan_digest", s(digest)),
        ]),
        actor("human", authority),
        format!(
            "migration from v5 approved (source digest {d16}){}",
            note.map(|n| format!(": {n}")).unwrap_or_default()
        ),
        None,
        None,
    ));
    for t in tasks.iter().filter(|t| t.class != "pending") {
        planned.push((
            "task_start",
            obj([("task", s(&t.v6_id))]),
            helper.clone(),
            format!("migrated: v5 {folder} task {} start (source digest {d16})", t.v5_id),
            None,
            None,
        ));
        for gate in &t.gates {
            let index = gate.get("index").and_then(Value::as_i64).unwrap_or(0);
            let imported = gate.get("import_as").and_then(Value::as_str) == Some("imported");
            let passes = gate.get("passes").and_then(Value::as_bool) == Some(true);
            let exit =
                gate.get("exit_code").and_then(Value::as_i64).unwrap_or(if passes { 0 } else { 1 });
            let command: String = gate
                .get("command")
                .map(dwp::py::str_of)
                .unwrap_or_default()
                .chars()
                .take(500)
                .collect();
            planned.push((
                "gate_run",
                obj([
                    (
                        "command",
                        s(if command.is_empty() {
                            "(v5 gate without a command)"
                        } else {
                            &command
                        }),
                    ),
                    ("cwd", s(".")),
                    ("timeout_seconds", 1i64.into()),
                    ("exit_code", exit.into()),
                    ("task", s(&t.v6_id)),
                    ("criterion", s(&t.criterion)),
                ]),
                helper.clone(),
                format!(
                    "migrated: v5 {folder} task {} gate {index} (source digest {d16})",
                    t.v5_id
                ),
                Some(if imported { "imported" } else { "asserted" }),
                if imported {
                    gate.get("evidence").and_then(Value::as_str).map(str::to_owned)
                } else {
                    None
                },
            ));
        }
    }
    let count = |c: &str| tasks.iter().filter(|t| t.class == c).count();
    planned.push((
        "observation",
        obj([(
            "statement",
            s(&format!(
                "migrated from v5: {} task(s) - {} imported, {} to re-evidence, {} pending",
                tasks.len(),
                count("imported"),
                count("re_evidence"),
                count("pending")
            )),
        )]),
        helper.clone(),
        format!("migration preview (source digest {d16})"),
        Some("imported"),
        Some(format!("{MIGRATION_DIR}/PREVIEW.json")),
    ));
    let total = planned.len();
    for (etype, payload, who, note, trust, evidence) in planned {
        let present = writer.events.iter().any(|e| {
            e.get("type").and_then(Value::as_str) == Some(etype)
                && e.get("note").and_then(Value::as_str) == Some(note.as_str())
        });
        if !present {
            writer.append_raw(etype, payload, who, Some(&note), trust, evidence.as_deref())?;
        }
    }
    Ok(total)
}

fn verify_backup(dir: &Path) -> Result<()> {
    let mdir = dir.join(MIGRATION_DIR);
    let record = read_json_named(&mdir.join("BACKUP.json"))?;
    for name in ["manifest.json", "state.json"] {
        let want =
            record.pointer(&format!("/files/{}", name.replace('~', "~0").replace('/', "~1")));
        let have = hash_file(&mdir.join("backup").join(name));
        if want.and_then(Value::as_str) != have.as_deref() || have.is_none() {
            return Err(fail(format!(
                "backup {name} does not match its recorded digest - refusing to restore it"
            )));
        }
    }
    Ok(())
}

/// `rollback [--force]`: restores the v5 pair byte for byte.
///
/// # Errors
/// No migration, a corrupt backup, post-migration work without `force`, I/O.
pub fn rollback(dir: &Path, force: bool) -> Result<RolledBack> {
    let mdir = dir.join(MIGRATION_DIR);
    let phase =
        if phase_path(dir).is_file() { Some(read_json_named(&phase_path(dir))?) } else { None };
    let Some(phase) = phase
        .filter(|p| p.get("completed").and_then(Value::as_array).is_some_and(|c| !c.is_empty()))
    else {
        return Err(refused("no migration marker - nothing to roll back"));
    };
    verify_backup(dir)?;
    let minted = phase.get("journal_events").and_then(Value::as_i64).unwrap_or(0);
    let live = crate::read_journal(&dir.join(JOURNAL_NAME))?.events.len();
    let live = i64::try_from(live).unwrap_or(i64::MAX);
    let mut warning = None;
    if live > minted {
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
    if dir.join(".ledger.lock").exists() {
        return Err(fail("the plan lock is held - a writer is running; retry when it is done"));
    }
    let mut restored = Vec::new();
    for name in ["manifest.json", "state.json"] {
        let bytes = fs::read(mdir.join("backup").join(name)).map_err(|e| io_fail(&mdir, e))?;
        journal::atomic_replace(dir.join(name), &bytes).map_err(|e| io_fail(&dir.join(name), e))?;
        restored.push(name.to_owned());
    }
    for name in ["contract.json", JOURNAL_NAME, crate::EVIDENCE_NAME] {
        let p = dir.join(name);
        if p.is_file() {
            fs::remove_file(&p).map_err(|e| io_fail(&p, e))?;
        }
    }
    let views = dir.join("views");
    if views.is_dir() && fs::read_dir(&views).map(|mut r| r.next().is_none()).unwrap_or(false) {
        let _ = fs::remove_dir(&views);
    }
    let _ = fs::remove_file(phase_path(dir));
    write_pretty(
        &mdir.join("ROLLED_BACK.json"),
        &Value::Object(obj([("restored", Value::Array(restored.iter().map(|r| s(r)).collect()))])),
    )?;
    Ok(RolledBack { plan: folder_name(dir), restored, warning })
}
