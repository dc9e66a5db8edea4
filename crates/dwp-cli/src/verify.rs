//! `dwp verify PLAN`: read-only conformance check of a plan's records.
//!
//! Exit codes: 0 `Verdict: CONFORMANT`, 1 `NOT CONFORMANT — N issue(s)`, 2 no plan folder.

// Output never panics on a closed pipe (`dwp … | head`): a failed write is ignored.
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

use std::path::PathBuf;
use std::process::ExitCode;

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
            return ExitCode::from(2);
        }
    };
    let checks = verify(&dir);
    for c in &checks {
        println!("{}", c.line());
    }
    let issues = checks.iter().filter(|c| matches!(c, Check::Fail(_))).count();
    if issues == 0 {
        println!("Verdict: CONFORMANT");
        ExitCode::SUCCESS
    } else {
        println!("NOT CONFORMANT — {issues} issue(s)");
        ExitCode::from(1)
    }
}
