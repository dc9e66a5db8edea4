//! `dwp ledger repair --line N …`: the explicit, recorded repair of damaged journal lines.
//!
//! A writer repairs on its own only what an interrupted append leaves (a torn final line, a
//! lost final newline). Any other unreadable line is damage every command refuses over, naming
//! its line; this command is how a person resolves it once they know what the line was: the
//! whole journal is set aside byte for byte, only the named lines are removed (each must be
//! one the journal rule refuses), and each removal is recorded as a `journal_repair` event.

use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use clap::Args;
use dwp_ledger::{self as plan, LedgerError, Plan, Writer};

// The flags of `dwp ledger repair` (its help text is the variant's doc comment).
#[derive(Debug, Args)]
pub(crate) struct RepairArgs {
    /// A damaged line to remove, by the number `dwp verify` names (repeatable)
    #[arg(long = "line", value_name = "N", required = true)]
    lines: Vec<u64>,
}

/// Remove damaged journal lines explicitly (set aside and recorded)
pub(super) fn run(plan_arg: &Path, force: bool, args: RepairArgs) -> Result<ExitCode, LedgerError> {
    let dir = plan::find_plan_dir(plan_arg)?;
    let loaded = Plan::load(&dir)?;
    let (writer, report) = Writer::repair_lines(loaded, &args.lines, force, SystemTime::now())?;
    super::finish(writer)?;
    for line in &report.lines {
        println!(
            "OK: removed damaged line {} (byte {}): {}",
            line.line, line.byte_offset, line.reason
        );
    }
    println!(
        "OK: the journal before the repair is kept as {} (sha256 {}); each removal is recorded \
         as a journal_repair event",
        report.set_aside.display(),
        report.sha256
    );
    Ok(ExitCode::SUCCESS)
}
