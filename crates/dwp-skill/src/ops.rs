//! The three operations on a skill folder: install, status, remove.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::identify::{SkillInfo, identify};
use crate::launcher::{is_launcher, launcher};
use crate::manifest::{FORMAT, Manifest, Replaced, digest};
use crate::{BACKUP_DIR, SkillError};

/// The largest `SKILL.md` or helper read (the upstream files are a few hundred KiB at most).
const MAX_FILE: u64 = 16 * 1024 * 1024;

/// Where a staged backup is built before it is renamed into place. It only ever holds copies
/// made before any helper was replaced, so a leftover one (an install killed half-way) is
/// removed by the next install.
const STAGING_DIR: &str = ".dwp-skill.partial";

/// What `install` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallReport {
    /// The skill's version.
    pub skill_version: String,
    /// Each replaced helper and the `dwp` subcommand it now runs.
    pub replaced: Vec<(String, String)>,
    /// The helpers left running their originals (`dwp` does not cover them).
    pub kept: Vec<String>,
    /// The backup folder.
    pub backup: PathBuf,
}

/// Where one helper runs now.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HelperState {
    /// A launcher runs `dwp <subcommand>`.
    Dwp(String),
    /// The original runs (not replaced, or restored).
    Original,
    /// `dwp` does not cover it: the original runs.
    NotCovered,
    /// Changed since install: neither the launcher nor the original (an edit, or a newer
    /// release of the skill); `remove` refuses until it is moved aside.
    Changed,
    /// Listed in the install manifest but no longer in `shared/`.
    Missing,
    /// A launcher without a backup of its original (the backup folder was deleted).
    LauncherWithoutBackup,
}

/// The state of a skill folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusReport {
    /// The skill's version.
    pub skill_version: String,
    /// The install manifest, when launchers are installed.
    pub installed: Option<Manifest>,
    /// Every helper, in name order.
    pub helpers: Vec<(String, HelperState)>,
}

/// What `remove` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoveReport {
    /// The helpers whose originals were put back.
    pub restored: Vec<String>,
    /// The helpers that were already their originals.
    pub unchanged: Vec<String>,
}

/// Backs up the covered helpers of the skill at `dir` and puts launchers running `dwp_bin` in
/// their place.
///
/// # Errors
///
/// The folder is not the skill, already holds an install or a launcher, a helper is a symlink,
/// or a file operation fails. Nothing is replaced before the backup is complete and durable.
pub fn install(dir: &Path, dwp_bin: &str, dwp_version: &str) -> Result<InstallReport, SkillError> {
    let info = open(dir)?;
    let backup = dir.join(BACKUP_DIR);
    if fs::symlink_metadata(&backup).is_ok() {
        return Err(SkillError::AlreadyInstalled(format!(
            "dwp launchers are already installed in {} ({} exists): `dwp skill status` shows \
             them, `dwp skill remove` restores the originals",
            dir.display(),
            backup.display()
        )));
    }
    let shared = dir.join("shared");
    let mut replaced = Vec::new();
    let mut originals = Vec::new();
    for helper in &info.helpers {
        let Some(runs) = helper.runs else { continue };
        let path = shared.join(&helper.name);
        let meta = fs::symlink_metadata(&path).map_err(|e| SkillError::io(&path, e))?;
        if !meta.file_type().is_file() {
            return Err(SkillError::NotTheSkill {
                dir: dir.to_path_buf(),
                why: format!(
                    "shared/{} is not a regular file (a symlink is never replaced)",
                    helper.name
                ),
            });
        }
        let bytes = read_limited(&path)?;
        if is_launcher(&bytes) {
            return Err(SkillError::AlreadyInstalled(format!(
                "shared/{} is already a dwp launcher, but {} is missing, so its original is not \
                 here to back up: restore the skill's files (reinstall the skill), then install",
                helper.name,
                backup.display()
            )));
        }
        let text = launcher(&helper.name, runs, dwp_bin);
        replaced.push(Replaced {
            name: helper.name.clone(),
            runs: runs.to_owned(),
            original_sha256: digest(&bytes),
            launcher_sha256: digest(text.as_bytes()),
            mode: meta.permissions().mode() & 0o7777,
        });
        originals.push((bytes, text));
    }
    let kept: Vec<String> =
        info.helpers.iter().filter(|h| h.runs.is_none()).map(|h| h.name.clone()).collect();
    let manifest = Manifest {
        format: FORMAT.to_owned(),
        skill_version: info.version.clone(),
        dwp_bin: dwp_bin.to_owned(),
        dwp_version: dwp_version.to_owned(),
        replaced: replaced.clone(),
        kept: kept.clone(),
    };

    // The backup, complete and synced, then renamed into place in one step.
    let staging = dir.join(STAGING_DIR);
    if fs::symlink_metadata(&staging).is_ok() {
        fs::remove_dir_all(&staging).map_err(|e| SkillError::io(&staging, e))?;
    }
    let staged_shared = staging.join("originals").join("shared");
    fs::create_dir_all(&staged_shared).map_err(|e| SkillError::io(&staged_shared, e))?;
    for (entry, (bytes, _)) in replaced.iter().zip(&originals) {
        let path = staged_shared.join(&entry.name);
        journal::atomic_replace(&path, bytes)?;
        set_mode(&path, entry.mode)?;
    }
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| SkillError::Manifest {
        path: staging.join("manifest.json"),
        why: e.to_string(),
    })?;
    journal::atomic_replace(staging.join("manifest.json"), format!("{text}\n").as_bytes())?;
    fs::rename(&staging, &backup).map_err(|e| SkillError::io(&backup, e))?;
    sync_dir(dir)?;

    // Now each helper, checked once more against what was backed up.
    for (entry, (_, text)) in replaced.iter().zip(&originals) {
        let path = shared.join(&entry.name);
        let now = read_limited(&path)?;
        if digest(&now) != entry.original_sha256 {
            return Err(SkillError::WouldLoseEdits(format!(
                "shared/{} changed while installing; it was left as it is (`dwp skill status` \
                 shows each helper, `dwp skill remove` restores the ones already replaced)",
                entry.name
            )));
        }
        journal::atomic_replace(&path, text.as_bytes())?;
    }
    Ok(InstallReport {
        skill_version: info.version,
        replaced: replaced.into_iter().map(|r| (r.name, r.runs)).collect(),
        kept,
        backup,
    })
}

/// Where each helper of the skill at `dir` runs.
///
/// # Errors
///
/// The folder is not the skill, or its manifest or a helper cannot be read.
pub fn status(dir: &Path) -> Result<StatusReport, SkillError> {
    let info = open(dir)?;
    let manifest = read_manifest(dir)?;
    let shared = dir.join("shared");
    let mut helpers = Vec::new();
    for helper in &info.helpers {
        let path = shared.join(&helper.name);
        let state = match (helper.runs, &manifest) {
            (None, _) => HelperState::NotCovered,
            (Some(_), Some(m)) => match m.replaced.iter().find(|r| r.name == helper.name) {
                Some(entry) => classify(&read_limited(&path)?, entry),
                None => HelperState::Original,
            },
            (Some(_), None) if is_launcher(&read_limited(&path)?) => {
                HelperState::LauncherWithoutBackup
            }
            (Some(_), None) => HelperState::Original,
        };
        helpers.push((helper.name.clone(), state));
    }
    if let Some(m) = &manifest {
        for entry in &m.replaced {
            if !info.helpers.iter().any(|h| h.name == entry.name) {
                helpers.push((entry.name.clone(), HelperState::Missing));
            }
        }
        helpers.sort_by(|a, b| a.0.cmp(&b.0));
    }
    Ok(StatusReport { skill_version: info.version, installed: manifest, helpers })
}

/// Puts every original back where its launcher still stands, then deletes the backup folder.
///
/// # Errors
///
/// Nothing is installed; a backup does not hash to what the manifest recorded; a helper was
/// changed since install (restoring would lose that change). Each is checked before anything
/// is written.
pub fn remove(dir: &Path) -> Result<RemoveReport, SkillError> {
    open(dir)?;
    let Some(manifest) = read_manifest(dir)? else {
        return Err(SkillError::NotInstalled(dir.to_path_buf()));
    };
    let backup = dir.join(BACKUP_DIR);
    let shared = dir.join("shared");
    let mut plan = Vec::new();
    let mut changed = Vec::new();
    let mut unchanged = Vec::new();
    for entry in &manifest.replaced {
        let saved = backup.join("originals").join("shared").join(&entry.name);
        let original = read_limited(&saved)?;
        if digest(&original) != entry.original_sha256 {
            return Err(SkillError::BackupDamaged(format!(
                "{} no longer holds the original shared/{} (its digest differs from the install \
                 manifest); nothing was restored",
                saved.display(),
                entry.name
            )));
        }
        let path = shared.join(&entry.name);
        let current = match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(SkillError::io(&path, e)),
            Ok(meta) if !meta.file_type().is_file() => Some(Vec::new()),
            Ok(_) => Some(read_limited(&path)?),
        };
        match current {
            None => plan.push((path, original, entry)),
            Some(bytes) => match classify(&bytes, entry) {
                HelperState::Dwp(_) => plan.push((path, original, entry)),
                HelperState::Original => unchanged.push(entry.name.clone()),
                _ => changed.push(entry.name.clone()),
            },
        }
    }
    if !changed.is_empty() {
        let names: Vec<String> = changed.iter().map(|n| format!("shared/{n}")).collect();
        return Err(SkillError::WouldLoseEdits(format!(
            "{} changed since `dwp skill install` (neither the launcher nor the original): \
             restoring would lose that change. Move the file aside (or put the launcher back) \
             and run `dwp skill remove` again; the original is in {}. Nothing was restored",
            names.join(", "),
            backup.join("originals").join("shared").display()
        )));
    }
    let mut restored = Vec::new();
    for (path, original, entry) in plan {
        journal::atomic_replace(&path, &original)?;
        set_mode(&path, entry.mode)?;
        restored.push(entry.name.clone());
    }
    fs::remove_dir_all(&backup).map_err(|e| SkillError::io(&backup, e))?;
    sync_dir(dir)?;
    Ok(RemoveReport { restored, unchanged })
}

/// Where a helper listed in the manifest stands, from its current bytes.
fn classify(bytes: &[u8], entry: &Replaced) -> HelperState {
    let now = digest(bytes);
    if now == entry.launcher_sha256 {
        HelperState::Dwp(entry.runs.clone())
    } else if now == entry.original_sha256 {
        HelperState::Original
    } else {
        HelperState::Changed
    }
}

/// Reads and identifies the skill folder.
fn open(dir: &Path) -> Result<SkillInfo, SkillError> {
    let meta = fs::metadata(dir).map_err(|e| SkillError::io(dir, e))?;
    if !meta.is_dir() {
        return Err(SkillError::NotTheSkill {
            dir: dir.to_path_buf(),
            why: "it is not a folder".to_owned(),
        });
    }
    let skill_md = match read_limited(&dir.join("SKILL.md")) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(SkillError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let shared = dir.join("shared");
    let mut names = Vec::new();
    if let Ok(entries) = fs::read_dir(&shared) {
        for entry in entries {
            let entry = entry.map_err(|e| SkillError::io(&shared, e))?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_owned());
            }
        }
    }
    let holds = dir.join("skills").join("deepworkplan").is_dir();
    identify(skill_md.as_deref(), &names, holds)
        .map_err(|why| SkillError::NotTheSkill { dir: dir.to_path_buf(), why })
}

/// The install manifest, if there is one.
fn read_manifest(dir: &Path) -> Result<Option<Manifest>, SkillError> {
    let path = dir.join(BACKUP_DIR).join("manifest.json");
    let bytes = match read_limited(&path) {
        Ok(bytes) => bytes,
        Err(SkillError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            if fs::symlink_metadata(dir.join(BACKUP_DIR)).is_ok() {
                return Err(SkillError::Manifest { path, why: "missing".to_owned() });
            }
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let manifest: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| SkillError::Manifest { path: path.clone(), why: e.to_string() })?;
    if manifest.format != FORMAT {
        return Err(SkillError::Manifest {
            path,
            why: format!("format {:?}, expected {FORMAT:?}", manifest.format),
        });
    }
    Ok(Some(manifest))
}

/// Reads a file of at most [`MAX_FILE`] bytes (no symlink is followed for helpers: callers
/// check the file type first where it matters).
fn read_limited(path: &Path) -> Result<Vec<u8>, SkillError> {
    let file = fs::File::open(path).map_err(|e| SkillError::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1).read_to_end(&mut bytes).map_err(|e| SkillError::io(path, e))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(SkillError::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidData, "larger than 16 MiB"),
        ));
    }
    Ok(bytes)
}

fn set_mode(path: &Path, mode: u32) -> Result<(), SkillError> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(|e| SkillError::io(path, e))
}

fn sync_dir(dir: &Path) -> Result<(), SkillError> {
    fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| SkillError::io(dir, e))
}
