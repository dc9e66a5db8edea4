//! `dwp scheduler authorize|ready|boosts PLAN` (upstream `scheduler.py`, read-only).
//!
//! Exit codes: 0 accept (or a listing), 10 refuse (the decision JSON on stdout), 2 usage,
//! 1 error (`ERROR: …` on stderr, e.g. a torn journal).

// Output never panics on a closed pipe (`dwp … | head`): a failed write is ignored.
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

macro_rules! print {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use canonical_json::Value;
use clap::Subcommand;
use dwp::scheduler;
use dwp_ledger::{self as plan, LedgerError, Plan};

#[derive(Debug, Subcommand)]
pub(crate) enum SchedulerCommand {
    /// Decide a select/adapt proposal (JSON decision on stdout; exit 0 accept, 10 refuse)
    Authorize {
        /// The plan folder
        plan: PathBuf,
        /// The proposal as a JSON object
        #[arg(long, conflicts_with = "file")]
        json: Option<String>,
        /// The proposal from a file (`-` for stdin)
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// The deterministic ready list (contract order, prerequisites, waiting, boost, rank)
    Ready {
        /// The plan folder
        plan: PathBuf,
    },
    /// Ready-to-append `selection` payloads for the starvation-boosted ready tasks
    Boosts {
        /// The plan folder
        plan: PathBuf,
    },
}

fn print_json(doc: &Value) -> Result<(), LedgerError> {
    let bytes =
        canonical_json::to_python_pretty(doc).map_err(|e| LedgerError::Failed(e.to_string()))?;
    print!("{}", String::from_utf8_lossy(&bytes));
    Ok(())
}

fn load(plan_arg: &Path) -> Result<(Plan, Vec<Value>), LedgerError> {
    let dir = plan::find_plan_dir(plan_arg)?;
    let plan = Plan::load(&dir)?;
    let events = plan::records::load_events(&plan)?;
    Ok((plan, events))
}

pub(crate) fn run(cmd: SchedulerCommand) -> ExitCode {
    match dispatch(cmd) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("ERROR: {err}");
            ExitCode::from(1)
        }
    }
}

fn read_proposal(
    json: Option<String>,
    file: Option<PathBuf>,
) -> Result<Option<String>, LedgerError> {
    let io = |e: std::io::Error| LedgerError::Failed(e.to_string());
    Ok(match (json, file) {
        (Some(j), _) => Some(j),
        (None, Some(f)) if f.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(io)?;
            Some(text)
        }
        (None, Some(f)) => Some(
            std::fs::read_to_string(&f)
                .map_err(|e| LedgerError::Failed(format!("{}: {e}", f.display())))?,
        ),
        (None, None) => None,
    })
}

fn dispatch(cmd: SchedulerCommand) -> Result<ExitCode, LedgerError> {
    match cmd {
        SchedulerCommand::Authorize { plan: plan_arg, json, file } => {
            let Some(text) = read_proposal(json, file)? else {
                println!("usage: dwp scheduler authorize PLAN (--json PROPOSAL | --file FILE|-)");
                return Ok(ExitCode::from(2));
            };
            let dir = plan::find_plan_dir(&plan_arg)?;
            let decision = match Plan::load(&dir) {
                Err(e) => scheduler::refuse("contract-invalid", e.to_string()),
                Ok(loaded) => {
                    let events = plan::records::load_events(&loaded)?;
                    let decision = match canonical_json::parse(text.as_bytes()) {
                        Err(e) => scheduler::refuse(
                            "proposal-shape",
                            format!("the proposal is not valid JSON: {e}"),
                        ),
                        Ok(proposal) => scheduler::authorize(
                            &loaded.contract,
                            &loaded.contract_id,
                            &events,
                            &proposal,
                        ),
                    };
                    std::mem::forget(events);
                    decision
                }
            };
            print_json(&decision)?;
            Ok(if scheduler::accepted(&decision) { ExitCode::SUCCESS } else { ExitCode::from(10) })
        }
        SchedulerCommand::Ready { plan: plan_arg } => {
            let (plan, events) = load(&plan_arg)?;
            print_json(&Value::Array(scheduler::ready(&plan.contract, &events)))?;
            // Freeing 10,000 parsed events one by one costs more than the decision itself.
            std::mem::forget(events);
            Ok(ExitCode::SUCCESS)
        }
        SchedulerCommand::Boosts { plan: plan_arg } => {
            let (plan, events) = load(&plan_arg)?;
            print_json(&Value::Array(scheduler::boosts(&plan.contract, &events)))?;
            std::mem::forget(events);
            Ok(ExitCode::SUCCESS)
        }
    }
}
