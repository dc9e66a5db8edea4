//! `dwp migrate --plan DIR preview | migrate --authority WHO [--note T] | rollback [--force]`
//! (upstream `migrate_v6.py`). Failures exit 1 with `REFUSED:` / `ERROR:`; usage exits 2.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use crate::exit;
use canonical_json::Value;
use clap::{Args, Subcommand};
use dwp_ledger::migrate::{self as mig, MigrateError};

const USAGE: &str = "usage: dwp migrate --plan DIR {preview | migrate --authority WHO [--note T] | \
    rollback [--force] | self-test}";

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
    /// Probe the migration on a scratch v5 plan (prints `migrate self-test: OK (N probes)`)
    #[command(name = "self-test")]
    SelfTest,
}

pub(crate) fn run(args: MigrateArgs) -> ExitCode {
    if matches!(args.command, MigrateCommand::SelfTest) {
        return crate::selftest::run(crate::selftest::Group::Migrate);
    }
    let Some(plan_arg) = args.plan else {
        outln!("{USAGE}");
        return ExitCode::from(exit::USAGE);
    };
    let result = (|| -> Result<String, MigrateError> {
        // As upstream `ledger.find_plan_dir`: a plan folder, or a file directly inside one;
        // anything else is `ERROR: no plan directory found at '…'`.
        let dir = dwp_ledger::find_plan_dir(&plan_arg).map_err(MigrateError::Ledger)?;
        match args.command {
            MigrateCommand::Preview => {
                let doc = mig::preview(&dir)?;
                let mapping =
                    doc.get("task_mapping").and_then(Value::as_array).map_or(&[][..], |v| v);
                let of_class = |c: &str| -> Vec<String> {
                    mapping
                        .iter()
                        .filter(|m| m.get("class").and_then(Value::as_str) == Some(c))
                        .map(|m| dwp::py::str_opt(m.get("criterion")))
                        .collect()
                };
                let re_evidence = of_class("re_evidence");
                let cid = doc.get("contract_id").and_then(Value::as_str).unwrap_or("");
                Ok(format!(
                    "OK: preview for {} ({} tasks: {} imported-closable, {} re-evidence, {} \
                     pending) - contract {}\n    re-evidence criteria (blocked by default until \
                     the gates re-run under v6): {}\n    preview written to {}/PREVIEW.json - \
                     migrate with --authority",
                    dwp::py::str_opt(doc.get("plan")),
                    mapping.len(),
                    of_class("imported").len(),
                    re_evidence.len(),
                    of_class("pending").len(),
                    dwp::py::head(cid, 12),
                    if re_evidence.is_empty() { "none".to_owned() } else { re_evidence.join(", ") },
                    mig::MIGRATION_DIR,
                ))
            }
            MigrateCommand::Migrate { authority, note } => {
                let m = mig::migrate(
                    &dir,
                    authority.as_deref().unwrap_or(""),
                    note.as_deref(),
                    SystemTime::now(),
                )?;
                Ok(format!(
                    "OK: {} migrated to v6 (contract {}, phases {})\n    re-evidence criteria \
                     blocked until their gates re-run under v6: {}",
                    m.plan,
                    dwp::py::head(&m.contract_id, 12),
                    m.phases.join("+"),
                    if m.re_evidence.is_empty() {
                        "none".to_owned()
                    } else {
                        m.re_evidence.join(", ")
                    },
                ))
            }
            MigrateCommand::SelfTest => Ok(String::new()),
            MigrateCommand::Rollback { force } => {
                let r = mig::rollback(&dir, force)?;
                if let Some(w) = &r.warning {
                    outln!("WARNING: {w}");
                }
                Ok(format!(
                    "OK: {} rolled back to v5 (manifest and state restored byte-identically; \
                     contract.json and the journal removed)",
                    r.plan
                ))
            }
        }
    })();
    match result {
        Ok(line) => {
            outln!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}: {e}", e.prefix());
            ExitCode::from(exit::FAILED)
        }
    }
}
