//! `dwp outcomes --plan DIR closure|receipt|review|control` (upstream `outcomes.py`).
//!
//! Exit codes: 0 ok, 1 `ERROR:` (refusals and failures), 2 usage or `COLLISION:`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use crate::exit;
use canonical_json::Value;
use clap::{Args, Subcommand};
use dwp_ledger::outcomes::{self as out, ControlRequest};
use dwp_ledger::{self as plan, LedgerError, Plan, Writer};

const USAGE: &str = "usage: dwp outcomes --plan DIR {closure [--task T] | receipt [--evaluator \
    fresh|local] [--out FILE] | review --state S [--finding F] | control --task T --criterion AC \
    --command CMD --artifact P [--artifact P ...] [--timeout N] | self-test}";

#[derive(Debug, Args)]
pub(crate) struct OutcomesArgs {
    /// The plan folder (or a file directly inside it)
    #[arg(long, global = true)]
    plan: Option<PathBuf>,
    /// Break the plan lock (only after verifying its writer is dead)
    #[arg(long, global = true)]
    force: bool,
    #[command(subcommand)]
    command: OutcomesCommand,
}

#[derive(Debug, Subcommand)]
enum OutcomesCommand {
    /// Per-criterion closure with its mechanism (JSON)
    Closure {
        #[arg(long)]
        task: Option<String>,
    },
    /// The verification receipt recomputed from the records (read-only)
    Receipt {
        #[arg(long, default_value = "local", value_parser = ["fresh", "local"])]
        evaluator: String,
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Record a `REVIEW: <state>[: finding]` observation (asserted)
    Review {
        #[arg(long)]
        state: Option<String>,
        #[arg(long)]
        finding: Option<String>,
    },
    /// Run a control pair: old leg at the starting revision, new leg in the repo
    Control {
        #[arg(long)]
        task: Option<String>,
        #[arg(long)]
        criterion: Option<String>,
        #[arg(long)]
        command: Option<String>,
        #[arg(long = "artifact")]
        artifacts: Vec<String>,
        #[arg(long, default_value_t = 600.0)]
        timeout: f64,
    },
    /// Probe closure, reviews and receipts on a scratch plan (prints `self-test: OK (N probes)`)
    #[command(name = "self-test")]
    SelfTest,
}

fn pretty(doc: &Value) -> Result<String, LedgerError> {
    canonical_json::to_python(doc, canonical_json::PyFormat::PRETTY)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| LedgerError::Failed(e.to_string()))
}

pub(crate) fn run(args: OutcomesArgs) -> ExitCode {
    if matches!(args.command, OutcomesCommand::SelfTest) {
        return crate::selftest::run(crate::selftest::Group::Outcomes);
    }
    let Some(plan_arg) = args.plan else {
        outln!("{USAGE}");
        return ExitCode::from(exit::USAGE);
    };
    let result = (|| -> Result<ExitCode, LedgerError> {
        let dir = plan::find_plan_dir(&plan_arg)?;
        match args.command {
            OutcomesCommand::Closure { task } => {
                let loaded = Plan::load(&dir)?;
                let events = plan::records::load_events(&loaded)?;
                let mut result = dwp::outcomes::closure(&loaded.contract, &events);
                if let (Some(t), Some(map)) = (task, result.as_object_mut())
                    && let Some(Value::Array(list)) = map.get_mut("criteria")
                {
                    list.retain(|c| c.get("task").and_then(Value::as_str) == Some(t.as_str()));
                }
                outln!("{}", pretty(&result)?);
                std::mem::forget(events);
                Ok(ExitCode::SUCCESS)
            }
            OutcomesCommand::Receipt { evaluator, out: out_file } => {
                let loaded = Plan::load(&dir)?;
                let doc = out::receipt(&loaded, &evaluator)?;
                let total = |k: &str| {
                    doc.pointer(&format!("/totals/{k}")).and_then(Value::as_i64).unwrap_or(0)
                };
                let sha = doc.get("receipt_sha256").and_then(Value::as_str).unwrap_or("");
                let summary = format!(
                    "OK: receipt {} ({}/{} satisfied, {} blocked) sha256 {}",
                    out_file.as_ref().map_or("stdout".to_owned(), |p| p.display().to_string()),
                    total("satisfied"),
                    total("criteria"),
                    total("blocked"),
                    dwp::py::head(sha, 16)
                );
                // As upstream: with --out the document goes to the file and the summary to
                // stdout; without it stdout is the document alone (pure JSON) and the summary
                // goes to stderr.
                match out_file {
                    Some(path) => {
                        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                            std::fs::create_dir_all(parent)
                                .map_err(|e| LedgerError::Failed(e.to_string()))?;
                        }
                        plan::write_pretty(&path, &doc)?;
                        outln!("{summary}");
                    }
                    None => {
                        outln!("{}", pretty(&doc)?);
                        eprintln!("{summary}");
                    }
                }
                Ok(ExitCode::SUCCESS)
            }
            OutcomesCommand::Review { state, finding } => {
                let Some(state) = state else {
                    outln!("{USAGE}");
                    return Ok(ExitCode::from(exit::USAGE));
                };
                // Refuse an unknown state before taking the lock.
                dwp::outcomes::review_statement(&state, finding.as_deref())
                    .map_err(|e| LedgerError::Failed(e.to_string()))?;
                let mut writer = Writer::open(Plan::load(&dir)?, args.force, SystemTime::now())?;
                let event = out::record_review(&mut writer, &state, finding.as_deref())?;
                writer.close()?;
                outln!("OK: review {state} recorded at seq {}", dwp::projection::seq_of(&event));
                Ok(ExitCode::SUCCESS)
            }
            OutcomesCommand::SelfTest => Ok(crate::selftest::run(crate::selftest::Group::Outcomes)),
            OutcomesCommand::Control { task, criterion, command, artifacts, timeout } => {
                let (Some(task), Some(criterion), Some(command)) = (task, criterion, command)
                else {
                    outln!("{USAGE}");
                    return Ok(ExitCode::from(exit::USAGE));
                };
                if artifacts.is_empty() {
                    outln!("{USAGE}");
                    return Ok(ExitCode::from(exit::USAGE));
                }
                let mut writer = Writer::open(Plan::load(&dir)?, args.force, SystemTime::now())?;
                let outcome = writer.run_control(&ControlRequest {
                    task,
                    criterion,
                    command,
                    artifacts,
                    timeout,
                })?;
                writer.close()?;
                outln!(
                    "OK: control pair verdict {} ({}) at seq {}",
                    outcome.verdict,
                    outcome.reason,
                    outcome.seq
                );
                Ok(ExitCode::SUCCESS)
            }
        }
    })();
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("{}: {err}", err.prefix());
            ExitCode::from(exit::ledger_edge(&err))
        }
    }
}
