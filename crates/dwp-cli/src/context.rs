//! `dwp context --plan DIR --task T [--check]` writes `context/<T>.json`, the per-task context
//! manifest; `--check` reports whether an existing manifest is fresh against the journal.
//!
//! Exit codes: 0 written (or fresh), 1 `ERROR:` or `STALE:`, 2 usage.

// Output never panics on a closed pipe (`dwp … | head`): a failed write is ignored.
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

use std::path::PathBuf;
use std::process::ExitCode;

use canonical_json::Value;
use clap::Args;
use dwp_ledger::{self as plan, LedgerError, Plan};

#[derive(Debug, Args)]
pub(crate) struct ContextArgs {
    /// The plan folder
    #[arg(long)]
    plan: Option<PathBuf>,
    /// The task
    #[arg(long)]
    task: Option<String>,
    /// Only check the existing manifest's freshness
    #[arg(long)]
    check: bool,
}

pub(crate) fn run(args: ContextArgs) -> ExitCode {
    let (Some(plan_arg), Some(task)) = (args.plan, args.task) else {
        println!("usage: dwp context --plan DIR --task T [--check]");
        return ExitCode::from(2);
    };
    let result = (|| -> Result<(ExitCode, String), LedgerError> {
        let dir = plan::find_plan_dir(&plan_arg)?;
        let loaded = Plan::load(&dir)?;
        let events = plan::records::load_events(&loaded)?;
        let sha = plan::records::journal_sha256(&loaded);
        if !dwp_ledger::safe_relative(&task) || task.contains('/') {
            return Err(LedgerError::Failed(format!(
                "task {} is not in the contract",
                dwp::py::repr_str(&task)
            )));
        }
        let path = dir.join("context").join(format!("{task}.json"));
        let last = events.iter().map(dwp::projection::seq_of).max().unwrap_or(0);
        if args.check {
            let existing = plan::read_json_named(&path)?;
            return Ok(if dwp::context::is_fresh(&existing, last, sha.as_deref()) {
                (ExitCode::SUCCESS, format!("OK: context/{task}.json is fresh (seq {last})"))
            } else {
                (
                    ExitCode::from(1),
                    format!(
                        "STALE: context/{task}.json was written at seq {} - the journal is at seq {last}; regenerate it",
                        dwp::py::str_opt(existing.pointer("/freshness/last_seq"))
                    ),
                )
            });
        }
        let Some(doc) = dwp::context::manifest(
            &loaded.contract,
            &loaded.contract_id,
            &events,
            &task,
            sha.as_deref(),
        ) else {
            return Err(LedgerError::Failed(format!(
                "task {} is not in the contract",
                dwp::py::repr_str(&task)
            )));
        };
        let ctx = dir.join("context");
        plan::refuse_symlink(&ctx)?;
        std::fs::create_dir_all(&ctx).map_err(|e| LedgerError::Failed(e.to_string()))?;
        plan::write_pretty(&path, &doc)?;
        let next = doc.pointer("/next_action/action").and_then(Value::as_str).unwrap_or("");
        let crit = doc
            .pointer("/next_action/criterion")
            .and_then(Value::as_str)
            .map(|c| format!(" {c}"))
            .unwrap_or_default();
        let dead = doc.get("dead_ends").and_then(Value::as_array).map_or(0, <[Value]>::len);
        Ok((
            ExitCode::SUCCESS,
            format!(
                "OK: context manifest context/{task}.json (next: {next}{crit}; {dead} dead end(s); seq {last})"
            ),
        ))
    })();
    match result {
        Ok((code, line)) => {
            println!("{line}");
            code
        }
        Err(e) => {
            eprintln!("{}: {e}", e.prefix());
            ExitCode::from(1)
        }
    }
}
