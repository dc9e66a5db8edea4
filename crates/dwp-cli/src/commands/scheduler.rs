//! `dwp scheduler authorize|ready|boosts PLAN` (upstream `scheduler.py`, read-only).
//!
//! Exit codes: 0 accept (or a listing), 10 refuse (the decision JSON on stdout, including a
//! `contract-invalid` refusal when the contract does not load), 2 usage, 1 error (`error: …`
//! on stderr: no plan folder, a torn journal, a missing or unparsable proposal).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::exit;
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
    /// Probe the scheduler on a scratch plan (prints `self-test: OK (N probes)`)
    #[command(name = "self-test")]
    SelfTest,
}

fn print_json(doc: &Value) -> Result<(), LedgerError> {
    let bytes =
        canonical_json::to_python_pretty(doc).map_err(|e| LedgerError::Failed(e.to_string()))?;
    out!("{}", String::from_utf8_lossy(&bytes));
    Ok(())
}

/// Why the scheduler stops before deciding: the contract does not load (a `contract-invalid`
/// refusal, exit 10, like upstream) or any other failure (`error: …`, exit 1).
enum Stop {
    ContractInvalid(String),
    Error(String),
}

impl From<LedgerError> for Stop {
    fn from(e: LedgerError) -> Stop {
        Stop::Error(e.to_string())
    }
}

/// The live contract and the archived + live events; a torn journal tail stops the core.
fn load(plan_arg: &Path) -> Result<(Plan, Vec<Value>), Stop> {
    let dir = plan::find_plan_dir(plan_arg)?;
    let plan = Plan::load(&dir).map_err(|e| Stop::ContractInvalid(e.to_string()))?;
    let view = plan::read_journal(&plan.journal_path())?;
    stop_on_torn(view.torn)?;
    let mut events = plan.archived_events()?;
    events.extend(view.events);
    Ok((plan, events))
}

/// [`load`] for `ready`: the live events the read paths decide on (a superset of
/// [`scheduler::READY_TYPES`]) and the last seq over all of them, from one strict pass that
/// builds nothing else.
fn load_ready(plan_arg: &Path) -> Result<(Plan, Vec<Value>, i64), Stop> {
    let dir = plan::find_plan_dir(plan_arg)?;
    let plan = Plan::load(&dir).map_err(|e| Stop::ContractInvalid(e.to_string()))?;
    let view = plan::read_compact(&plan.journal_path(), false)?;
    stop_on_torn(view.torn)?;
    let mut events = plan.archived_events()?;
    let last = events.iter().map(dwp::projection::seq_of).max().unwrap_or(0).max(view.last_seq);
    events.extend(view.kept);
    Ok((plan, events, last))
}

fn stop_on_torn(torn: Option<(u64, &'static str)>) -> Result<(), Stop> {
    match torn {
        Some((at, cause)) => Err(Stop::Error(format!(
            "journal has a torn tail at byte {at} ({cause}) \u{2014} open the writer once to \
             repair it before asking the core to decide"
        ))),
        None => Ok(()),
    }
}

pub(crate) fn run(cmd: SchedulerCommand) -> ExitCode {
    if matches!(cmd, SchedulerCommand::SelfTest) {
        return crate::selftest::run(crate::selftest::Group::Scheduler);
    }
    match dispatch(cmd) {
        Ok(code) => code,
        Err(Stop::ContractInvalid(detail)) => {
            let refusal = scheduler::refuse(
                "contract-invalid",
                format!("the contract does not validate, so nothing schedules: {detail}"),
            );
            match print_json(&refusal) {
                Ok(()) => ExitCode::from(exit::SCHEDULER_REFUSED),
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(exit::FAILED)
                }
            }
        }
        Err(Stop::Error(err)) => {
            eprintln!("error: {err}");
            ExitCode::from(exit::FAILED)
        }
    }
}

fn read_proposal(json: Option<String>, file: Option<PathBuf>) -> Result<String, Stop> {
    let io = |e: std::io::Error| Stop::Error(e.to_string());
    match (json, file) {
        (Some(j), _) => Ok(j),
        (None, Some(f)) if f.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(io)?;
            Ok(text)
        }
        (None, Some(f)) => {
            std::fs::read_to_string(&f).map_err(|e| Stop::Error(format!("{}: {e}", f.display())))
        }
        (None, None) => Err(Stop::Error("pass a proposal with --json or --file".to_owned())),
    }
}

/// What Python's decoder expected at `offset`, from the bracket context before it.
fn python_expectation(bytes: &[u8]) -> &'static str {
    // (container, after_value, key_done) per open bracket, outside strings.
    let mut stack: Vec<(u8, bool, bool)> = Vec::new();
    let (mut in_str, mut esc) = (false, false);
    for &b in bytes {
        if in_str {
            match (esc, b) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => {
                    in_str = false;
                    if let Some(top) = stack.last_mut() {
                        if top.0 == b'{' && !top.2 {
                            top.2 = true;
                        } else {
                            top.1 = true;
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' | b'[' => stack.push((b, false, false)),
            b'}' | b']' => {
                stack.pop();
                if let Some(top) = stack.last_mut() {
                    top.1 = true;
                }
            }
            b',' => {
                if let Some(top) = stack.last_mut() {
                    *top = (top.0, false, false);
                }
            }
            b':' => {}
            b if b.is_ascii_whitespace() => {}
            _ => {
                if let Some(top) = stack.last_mut() {
                    top.1 = true;
                }
            }
        }
    }
    match stack.last() {
        Some((_, true, _)) => "Expecting ',' delimiter",
        Some((b'{', false, false)) => "Expecting property name enclosed in double quotes",
        Some((b'{', false, true))
            if bytes.iter().rev().find(|b| !b.is_ascii_whitespace()) == Some(&b'"') =>
        {
            "Expecting ':' delimiter"
        }
        _ => "Expecting value",
    }
}

/// Python's `json.JSONDecodeError` wording for the common failures (`Expecting value`, a
/// missing delimiter or property name, `Extra data`) with its `line L column C (char N)`
/// position; other failures keep ours.
fn python_json_error(text: &str, e: &canonical_json::ParseError) -> String {
    use canonical_json::ParseErrorKind as K;
    let bytes = text.as_bytes();
    let mut at = e.offset.min(bytes.len());
    let what = match e.kind {
        K::UnexpectedEnd | K::UnexpectedByte(_) => {
            // Python reports a bad literal (`nul`, `not`) at its first letter.
            while at > 0 && bytes.get(at - 1).is_some_and(u8::is_ascii_alphabetic) {
                at -= 1;
            }
            python_expectation(bytes.get(..at).unwrap_or_default())
        }
        K::TrailingData => "Extra data",
        _ => return e.to_string(),
    };
    let head = bytes.get(..at).map(String::from_utf8_lossy).unwrap_or_default();
    let line = head.matches('\n').count() + 1;
    let col = head.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("{what}: line {line} column {col} (char {})", head.chars().count())
}

fn dispatch(cmd: SchedulerCommand) -> Result<ExitCode, Stop> {
    let fail = |e: LedgerError| Stop::Error(e.to_string());
    match cmd {
        SchedulerCommand::SelfTest => Ok(crate::selftest::run(crate::selftest::Group::Scheduler)),
        SchedulerCommand::Authorize { plan: plan_arg, json, file } => {
            let (loaded, events) = load(&plan_arg)?;
            let text = read_proposal(json, file)?;
            let proposal = canonical_json::parse(text.as_bytes()).map_err(|e| {
                Stop::Error(format!(
                    "proposal does not parse as JSON: {}",
                    python_json_error(&text, &e)
                ))
            })?;
            let decision =
                scheduler::authorize(&loaded.contract, &loaded.contract_id, &events, &proposal);
            std::mem::forget(events);
            print_json(&decision).map_err(fail)?;
            Ok(if scheduler::accepted(&decision) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(exit::SCHEDULER_REFUSED)
            })
        }
        SchedulerCommand::Ready { plan: plan_arg } => {
            let (plan, events, last) = load_ready(&plan_arg)?;
            let ready = scheduler::ready_at(&plan.contract, &events, last);
            print_json(&Value::Array(ready)).map_err(fail)?;
            // Freeing 10,000 parsed events one by one costs more than the decision itself.
            std::mem::forget(events);
            Ok(ExitCode::SUCCESS)
        }
        SchedulerCommand::Boosts { plan: plan_arg } => {
            let (plan, events) = load(&plan_arg)?;
            print_json(&Value::Array(scheduler::boosts(&plan.contract, &events))).map_err(fail)?;
            std::mem::forget(events);
            Ok(ExitCode::SUCCESS)
        }
    }
}
