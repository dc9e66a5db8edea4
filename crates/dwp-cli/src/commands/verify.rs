//! `dwp verify PLAN`: read-only conformance check of a plan's records.
//!
//! Exit codes: 0 `Verdict: CONFORMANT`, 1 `NOT CONFORMANT — N issue(s)`, 2 no plan folder.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit;
use clap::Args;
use dwp_ledger::verify::{Check, verify};

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// The plan folder
    plan: PathBuf,
}

pub(crate) fn run(args: VerifyArgs) -> ExitCode {
    let dir = match dwp_ledger::find_plan_dir(&args.plan) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("ERROR: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let checks = verify(&dir);
    for c in &checks {
        outln!("{}", c.line());
    }
    let issues = checks.iter().filter(|c| matches!(c, Check::Fail(_))).count();
    if issues == 0 {
        outln!("Verdict: CONFORMANT");
        ExitCode::SUCCESS
    } else {
        outln!("NOT CONFORMANT — {issues} issue(s)");
        ExitCode::from(exit::FAILED)
    }
}
