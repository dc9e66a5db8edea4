//! `dwp ledger`: the journal writer, gates, completion and projection (upstream `ledger.py`).
//! One function per subcommand; this module holds the arguments, the dispatch and the writer
//! helpers they share.

mod amend;
mod delegate;
mod gate;
mod journal;
mod record;
mod repair;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use clap::{Args, Subcommand};
use dwp_ledger::{self as plan, LedgerError, Plan, Writer};

use crate::{exit, selftest};

#[derive(Debug, Args)]
pub(crate) struct LedgerArgs {
    /// The plan folder (or a file directly inside it)
    #[arg(long, global = true)]
    plan: Option<PathBuf>,
    /// Break the plan lock (only after verifying its writer is dead)
    #[arg(long, global = true)]
    force: bool,
    /// How long to wait for a plan lock another live writer holds (seconds; default 30, 0
    /// fails at once)
    #[arg(long = "lock-wait", global = true, value_name = "SECS")]
    lock_wait: Option<f64>,
    #[command(subcommand)]
    command: LedgerCommand,
}

#[derive(Debug, Args)]
pub(crate) struct ActorArgs {
    /// Actor kind (helper, agent, host_adapter, human)
    #[arg(long = "actor-kind", default_value = "agent")]
    actor_kind: String,
    /// Actor identity
    #[arg(long = "actor-identity", default_value = "caller")]
    actor_identity: String,
}

#[derive(Debug, Subcommand)]
pub(crate) enum LedgerCommand {
    /// Manifest → stamped contract → approval (each step resumable)
    Materialize(record::MaterializeArgs),
    /// Append one event under the mint rules
    Append(record::AppendArgs),
    /// Record a task_start with the git fingerprint
    Start(record::StartArgs),
    /// Run a declared gate and record an observed gate_run
    Gate(gate::GateArgs),
    /// Look up cached gate evidence for the current fingerprint
    Reuse(gate::ReuseArgs),
    /// A human sign-off: asserted evidence bound to a criterion
    Signoff(record::SignoffArgs),
    /// Check completion (writes nothing on success; refusals are recorded)
    Complete(record::CompleteArgs),
    /// Write state.json
    Project,
    /// Print the live journal (read-only)
    Inspect,
    /// Archive the live journal; seq continues
    Roll,
    /// Copy the plan records and cited evidence with digests
    Export(journal::ExportArgs),
    /// The next contract revision: amendment, approval, live-contract switch (resumable)
    Amend(amend::AmendArgs),
    /// v7 delegation: launch, observe, collect, cancel (refusals recorded, exit 5)
    Delegate(delegate::DelegateArgs),
    /// Remove damaged journal lines explicitly: the whole journal is set aside first and each
    /// removal is recorded (a valid event is never removed)
    Repair(repair::RepairArgs),
    /// Probe the writer on a scratch plan (prints `self-test: OK (N probes)`; needs no --plan)
    #[command(name = "self-test")]
    SelfTest,
}

/// `dwp ledger`: the failure prefix on stderr and its exit code.
pub(crate) fn run(args: LedgerArgs) -> ExitCode {
    if matches!(args.command, LedgerCommand::SelfTest) {
        return selftest::run(selftest::Group::Ledger);
    }
    if let Some(secs) = args.lock_wait {
        match std::time::Duration::try_from_secs_f64(secs) {
            Ok(wait) => plan::set_lock_wait(wait),
            Err(_) => return exit::usage("--lock-wait takes a number of seconds >= 0"),
        }
    }
    let Some(plan_arg) = args.plan.clone() else {
        if matches!(args.command, LedgerCommand::Materialize(_)) {
            return exit::usage("materialize requires --plan and --contract");
        }
        return exit::usage("usage: dwp ledger --plan DIR <command> [options]");
    };
    match dispatch(&plan_arg, args.force, args.command) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("{}: {err}", err.prefix());
            ExitCode::from(exit::ledger(&err))
        }
    }
}

fn dispatch(plan_arg: &Path, force: bool, command: LedgerCommand) -> Result<ExitCode, LedgerError> {
    match command {
        LedgerCommand::Materialize(args) => record::materialize(plan_arg, args),
        LedgerCommand::Append(args) => record::append(plan_arg, force, args),
        LedgerCommand::Start(args) => record::start(plan_arg, force, args),
        LedgerCommand::Gate(args) => gate::gate(plan_arg, force, args),
        LedgerCommand::Reuse(args) => gate::reuse(plan_arg, force, args),
        LedgerCommand::Signoff(args) => record::signoff(plan_arg, force, args),
        LedgerCommand::Complete(args) => record::complete(plan_arg, force, args),
        LedgerCommand::Project => journal::project(plan_arg, force),
        LedgerCommand::Inspect => journal::inspect(plan_arg),
        LedgerCommand::Roll => journal::roll(plan_arg, force),
        LedgerCommand::Export(args) => journal::export(plan_arg, force, args),
        LedgerCommand::SelfTest => Ok(selftest::run(selftest::Group::Ledger)),
        LedgerCommand::Amend(args) => amend::run(plan_arg, args, human_marker),
        LedgerCommand::Delegate(args) => delegate::run(plan_arg, force, args),
        LedgerCommand::Repair(args) => repair::run(plan_arg, force, args),
    }
}

pub(super) fn open_writer(plan_arg: &Path, force: bool) -> Result<Writer, LedgerError> {
    open_writer_with(plan_arg, force, plan::Load::Full)
}

pub(super) fn open_writer_with(
    plan_arg: &Path,
    force: bool,
    load: plan::Load,
) -> Result<Writer, LedgerError> {
    let dir = plan::find_plan_dir(plan_arg)?;
    let plan = Plan::load(&dir)?;
    Writer::open_with(plan, force, SystemTime::now(), load)
}

/// Releases the lock; the event list is left to the OS at exit (freeing 100,000 parsed events
/// one by one costs more than the projection itself).
pub(super) fn finish(mut writer: Writer) -> Result<(), LedgerError> {
    let events = std::mem::take(&mut writer.events);
    writer.close()?;
    std::mem::forget(events);
    Ok(())
}

pub(super) fn human_marker(note: Option<&Path>) -> Result<String, LedgerError> {
    if let Some(note) = note {
        return plan::human_note_marker(note);
    }
    if std::io::stdin().is_terminal() {
        print!("Human authority: type \"yes, I authorize this\" to record it as yours: ");
        let _ = std::io::stdout().flush();
        let mut answer = String::new();
        if std::io::stdin().read_line(&mut answer).is_ok()
            && answer.trim() == "yes, I authorize this"
        {
            return Ok("human authority marker: interactive confirmation".to_owned());
        }
    }
    Err(plan::human_marker_missing())
}
