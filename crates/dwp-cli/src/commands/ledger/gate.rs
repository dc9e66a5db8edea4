//! `gate` (run a declared check, record an observed `gate_run`) and `reuse` (look up its
//! cached evidence).

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use dwp_ledger::{GateCommand, GateRequest, LedgerError, Timeout};

use crate::exit;

// The flags of `dwp ledger gate` (its help text is the variant's doc comment).
#[derive(Debug, Args)]
pub(crate) struct GateArgs {
    #[arg(long)]
    task: Option<String>,
    #[arg(long)]
    criterion: Option<String>,
    /// A JSON string (split into words, POSIX quoting) or a JSON argv array; never run by a
    /// shell unless its program is a declared shell class (`bash -c '…'`)
    #[arg(long)]
    json: Option<String>,
    #[arg(long)]
    timeout: Option<f64>,
    #[arg(long)]
    selection: Option<String>,
    #[arg(long = "no-reuse")]
    no_reuse: bool,
}

// The flags of `dwp ledger reuse` (its help text is the variant's doc comment).
#[derive(Debug, Args)]
pub(crate) struct ReuseArgs {
    #[arg(long)]
    task: Option<String>,
    #[arg(long)]
    json: Option<String>,
    #[arg(long)]
    criterion: Option<String>,
    #[arg(long)]
    selection: Option<String>,
}

/// Run a declared gate and record an observed gate_run
pub(super) fn gate(plan_arg: &Path, force: bool, args: GateArgs) -> Result<ExitCode, LedgerError> {
    let GateArgs { task, criterion, json, timeout, selection, no_reuse } = args;
    let (Some(task), Some(json)) = (task, json) else {
        return Ok(exit::usage("gate requires --task and --json (the command)"));
    };
    let Some(command) = GateCommand::parse(&json) else {
        return Ok(exit::usage(
            "gate --json must be a JSON string (run through the shell) or a JSON array of \
                 argv (executed directly, no shell)",
        ));
    };
    let mut writer = super::open_writer(plan_arg, force)?;
    let outcome = writer.run_gate(&GateRequest {
        task,
        criterion,
        command,
        timeout: timeout.map_or(Timeout::Default, Timeout::Given),
        selection,
        reuse: !no_reuse,
    })?;
    super::finish(writer)?;
    let seq = if outcome.reused {
        String::new()
    } else {
        format!(", seq {}", outcome.seq.map_or_else(|| "?".to_owned(), |s| s.to_string()))
    };
    println!(
        "{}: exit {}{seq} (fingerprint {}, log {})",
        if outcome.reused { "REUSED" } else { "RAN" },
        outcome.exit_code,
        dwp::py::head(&outcome.fingerprint, 12),
        outcome.log
    );
    Ok(if outcome.exit_code == 0 { ExitCode::SUCCESS } else { ExitCode::from(exit::FAILED) })
}

/// Look up cached gate evidence for the current fingerprint
pub(super) fn reuse(
    plan_arg: &Path,
    force: bool,
    args: ReuseArgs,
) -> Result<ExitCode, LedgerError> {
    let ReuseArgs { task, json, criterion, selection } = args;
    let (Some(task), Some(json)) = (task, json) else {
        return Ok(exit::usage("reuse requires --task and --json"));
    };
    let Some(command) = GateCommand::parse(&json) else {
        return Ok(exit::usage("reuse --json must be a JSON string or argv array"));
    };
    let writer = super::open_writer(plan_arg, force)?;
    let fp = writer.fingerprint(&task, &command.to_value(), selection.as_deref())?;
    let prior = writer.evidence_lookup(&fp, &task, criterion.as_deref());
    super::finish(writer)?;
    match prior {
        None => {
            println!("NO EVIDENCE for fingerprint {}", dwp::py::head(&fp, 12));
            Ok(ExitCode::from(exit::FAILED))
        }
        Some(rec) => {
            println!(
                "EVIDENCE exit {} log {} seq {}",
                dwp::py::str_opt(rec.get("exit_code")),
                dwp::py::str_opt(rec.get("log")),
                dwp::py::str_opt(rec.get("seq"))
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
