//! `dwp migrate --plan DIR preview | migrate --authority WHO [--note T] | rollback [--force]`
//! (upstream `migrate_v6.py`). Failures exit 1 with `REFUSED:` / `ERROR:`; usage exits 2.

// Output never panics on a closed pipe (`dwp … | head`): a failed write is ignored.
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use canonical_json::Value;
use clap::{Args, Subcommand};
use dwp_ledger::migrate::{self as mig, MigrateError};

const USAGE: &str = "usage: dwp migrate --plan DIR {preview | migrate --authority WHO [--note T] | \
    rollback [--force]}";

#[derive(Debug, Args)]
pub(crate) struct MigrateArgs {
    /// The v5 plan folder
    #[arg(long, global = true)]
    plan: Option<PathBuf>,
    #[command(subcommand)]
    command: MigrateCommand,
}

#[derive(Debug, Subcommand)]
enum MigrateCommand {
    /// Write migration_v5/PREVIEW.json (changes no v5 bytes)
    Preview,
    /// Migrate to v6 (resumable phases: backup, contract, manifest, journal, project)
    Migrate {
        #[arg(long)]
        authority: Option<String>,
        #[arg(long)]
        note: Option<String>,
    },
    /// Restore the v5 manifest and state byte for byte
    Rollback {
        /// Discard post-migration v6 work deliberately
        #[arg(long)]
        force: bool,
    },
}

pub(crate) fn run(args: MigrateArgs) -> ExitCode {
    let Some(plan_arg) = args.plan else {
        println!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = (|| -> Result<String, MigrateError> {
        let dir = std::path::absolute(&plan_arg)
            .map_err(|e| MigrateError::Ledger(dwp_ledger::LedgerError::Failed(e.to_string())))?;
        if !dir.is_dir() {
            return Err(MigrateError::Refused(format!("{} is not a plan folder", dir.display())));
        }
        match args.command {
            MigrateCommand::Preview => {
                let doc = mig::preview(&dir)?;
                let mapping =
                    doc.get("task_mapping").and_then(Value::as_array).map_or(&[][..], |v| v);
                let count = |c: &str| {
                    mapping
                        .iter()
                        .filter(|m| m.get("class").and_then(Value::as_str) == Some(c))
                        .count()
                };
                let cid = doc.get("contract_id").and_then(Value::as_str).unwrap_or("");
                Ok(format!(
                    "OK: preview written to {}/PREVIEW.json ({} task(s): {} imported, {} re_evidence, {} pending; anchor contract {})",
                    mig::MIGRATION_DIR,
                    mapping.len(),
                    count("imported"),
                    count("re_evidence"),
                    count("pending"),
                    &cid[..cid.len().min(12)]
                ))
            }
            MigrateCommand::Migrate { authority, note } => {
                let Some(authority) = authority else {
                    return Ok(String::new());
                };
                let m = mig::migrate(&dir, &authority, note.as_deref(), SystemTime::now())?;
                if m.already {
                    return Ok(format!(
                        "OK: {} is already migrated to v6 contract {} - nothing to do",
                        m.plan,
                        &m.contract_id[..m.contract_id.len().min(12)]
                    ));
                }
                Ok(format!(
                    "OK: migrated {} to v6 contract {} ({} journal event(s) minted){}",
                    m.plan,
                    &m.contract_id[..m.contract_id.len().min(12)],
                    m.journal_events,
                    if m.resumed { " — resumed an interrupted migration" } else { "" }
                ))
            }
            MigrateCommand::Rollback { force } => {
                let restored = mig::rollback(&dir, force)?;
                Ok(format!(
                    "OK: rolled back to v5 (restored {} byte for byte)",
                    restored.join(", ")
                ))
            }
        }
    })();
    match result {
        Ok(line) if line.is_empty() => {
            println!("migrate requires --authority");
            ExitCode::from(2)
        }
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}: {e}", e.prefix());
            ExitCode::from(1)
        }
    }
}
