//! `dwp skill install|status|remove --skill-dir DIR`: run the deepworkplan skill's helper
//! scripts through `dwp`, see where each one runs, and put the originals back.
//!
//! Exit codes: 0 done; 1 refused or failed (the message says why and what to do); 2 usage.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use dwp_skill::{HelperState, SkillError};
use serde_json::json;

use crate::exit;

/// `dwp skill --help`.
pub(crate) const LONG_ABOUT: &str = "Run the deepworkplan skill's helper scripts through dwp.\n\n\
    The skill's instructions run `python3 <skill>/shared/ledger.py …` and its siblings. \
    `install` backs those helpers up into <skill>/.dwp-skill/ and puts small launchers in their \
    place that exec `dwp <subcommand>` with the same arguments, working directory and exit code; \
    helpers dwp does not cover keep running their originals. `status` says where each helper \
    runs; `remove` restores the originals byte for byte, and refuses (changing nothing) when a \
    helper was changed since the install.\n\n\
    Exit codes: 0 done, 1 refused or failed, 2 usage.\n\n\
    Example:\n  \
    dwp skill install --skill-dir ~/.claude/skills/deepworkplan\n  \
    dwp skill status  --skill-dir ~/.claude/skills/deepworkplan\n  \
    dwp skill remove  --skill-dir ~/.claude/skills/deepworkplan";

#[derive(Debug, Args)]
pub(crate) struct SkillArgs {
    #[command(subcommand)]
    command: SkillCommand,
}

#[derive(Debug, Subcommand)]
enum SkillCommand {
    /// Back the helpers up and put launchers running dwp in their place
    Install {
        #[command(flatten)]
        target: Target,
        /// The dwp binary the launchers run (default: this one; `DWP_BIN` overrides it when a
        /// launcher runs)
        #[arg(long, value_name = "PATH")]
        dwp: Option<PathBuf>,
    },
    /// Say where each helper runs: dwp, its original, or changed since install
    Status {
        #[command(flatten)]
        target: Target,
    },
    /// Restore the original helpers byte for byte and delete the backup
    Remove {
        #[command(flatten)]
        target: Target,
    },
}

#[derive(Debug, Args)]
struct Target {
    /// The skill folder (the one holding SKILL.md and shared/)
    #[arg(long, value_name = "DIR")]
    skill_dir: PathBuf,
    /// Print one JSON object instead of text
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: SkillArgs) -> ExitCode {
    let (res, json) = match args.command {
        SkillCommand::Install { target, dwp } => (install(&target, dwp), target.json),
        SkillCommand::Status { target } => (status(&target), target.json),
        SkillCommand::Remove { target } => (remove(&target), target.json),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if json {
                outln!("{}", json!({"ok": false, "error": err.to_string()}));
            } else {
                eprintln!("ERROR: {err}");
            }
            ExitCode::from(exit::FAILED)
        }
    }
}

fn install(target: &Target, dwp: Option<PathBuf>) -> Result<(), SkillError> {
    let bin = match dwp {
        Some(path) => absolute(&path)?,
        None => std::env::current_exe().map_err(|e| io_error(Path::new("dwp"), e))?,
    };
    let Some(bin_text) = bin.to_str() else {
        return Err(io_error(
            &bin,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path is not UTF-8"),
        ));
    };
    let report = dwp_skill::install(&target.skill_dir, bin_text, env!("CARGO_PKG_VERSION"))?;
    if target.json {
        let replaced: Vec<_> = report
            .replaced
            .iter()
            .map(|(name, runs)| json!({"helper": format!("shared/{name}"), "runs": format!("dwp {runs}")}))
            .collect();
        outln!(
            "{}",
            json!({
                "ok": true,
                "skill_version": report.skill_version,
                "dwp": bin_text,
                "replaced": replaced,
                "kept": report.kept.iter().map(|n| format!("shared/{n}")).collect::<Vec<_>>(),
                "backup": report.backup.display().to_string(),
            })
        );
        return Ok(());
    }
    outln!("OK: deepworkplan skill {} now runs dwp ({bin_text})", report.skill_version);
    for (name, runs) in &report.replaced {
        outln!("  shared/{name:<22} -> dwp {runs}");
    }
    for name in &report.kept {
        outln!("  shared/{name:<22}    keeps running its original (dwp does not cover it)");
    }
    outln!("Originals backed up in {}", report.backup.display());
    outln!("Undo: dwp skill remove --skill-dir {}", target.skill_dir.display());
    Ok(())
}

fn status(target: &Target) -> Result<(), SkillError> {
    let report = dwp_skill::status(&target.skill_dir)?;
    if target.json {
        let helpers: Vec<_> = report
            .helpers
            .iter()
            .map(|(name, state)| json!({"helper": format!("shared/{name}"), "runs": state_word(state)}))
            .collect();
        outln!(
            "{}",
            json!({
                "ok": true,
                "skill_version": report.skill_version,
                "installed": report.installed.is_some(),
                "dwp": report.installed.as_ref().map(|m| m.dwp_bin.clone()),
                "helpers": helpers,
            })
        );
        return Ok(());
    }
    match &report.installed {
        Some(m) => outln!(
            "deepworkplan skill {}: dwp launchers installed (dwp {} at {})",
            report.skill_version,
            m.dwp_version,
            m.dwp_bin
        ),
        None => outln!("deepworkplan skill {}: no dwp launchers installed", report.skill_version),
    }
    for (name, state) in &report.helpers {
        outln!("  shared/{name:<22} {}", state_text(state));
    }
    Ok(())
}

fn remove(target: &Target) -> Result<(), SkillError> {
    let report = dwp_skill::remove(&target.skill_dir)?;
    if target.json {
        outln!(
            "{}",
            json!({
                "ok": true,
                "restored": report.restored.iter().map(|n| format!("shared/{n}")).collect::<Vec<_>>(),
                "unchanged": report.unchanged.iter().map(|n| format!("shared/{n}")).collect::<Vec<_>>(),
            })
        );
        return Ok(());
    }
    for name in &report.restored {
        outln!("  shared/{name:<22} original restored");
    }
    for name in &report.unchanged {
        outln!("  shared/{name:<22} was already the original");
    }
    outln!("OK: the skill's helpers are the originals again; backup removed");
    Ok(())
}

fn state_word(state: &HelperState) -> String {
    match state {
        HelperState::Dwp(runs) => format!("dwp {runs}"),
        HelperState::Original => "original".to_owned(),
        HelperState::NotCovered => "original (not covered)".to_owned(),
        HelperState::Changed => "changed".to_owned(),
        HelperState::Missing => "missing".to_owned(),
        HelperState::LauncherWithoutBackup => "launcher without backup".to_owned(),
        _ => "unknown".to_owned(),
    }
}

fn state_text(state: &HelperState) -> String {
    match state {
        HelperState::Dwp(runs) => format!("runs dwp {runs}"),
        HelperState::Original => "runs its original".to_owned(),
        HelperState::NotCovered => "runs its original (dwp does not cover it)".to_owned(),
        HelperState::Changed => {
            "CHANGED since install (neither the launcher nor the original)".to_owned()
        }
        HelperState::Missing => "MISSING (listed in the install manifest)".to_owned(),
        HelperState::LauncherWithoutBackup => {
            "a dwp launcher WITHOUT a backup of its original".to_owned()
        }
        _ => "unknown".to_owned(),
    }
}

fn absolute(path: &Path) -> Result<PathBuf, SkillError> {
    std::fs::canonicalize(path).map_err(|e| io_error(path, e))
}

fn io_error(path: &Path, source: std::io::Error) -> SkillError {
    SkillError::Io { path: path.to_path_buf(), source }
}
