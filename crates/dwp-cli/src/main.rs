//! `dwp`: the DWP records-layer command line (a drop-in for the upstream Python helpers).
//!
//! Exit codes follow the upstream helpers: `contract`: 0 success, 1 a failed check or
//! unreadable input, 2 a usage error. `ledger`: 0 ok, 1 `ERROR:`, 2 usage or `COLLISION:`,
//! 3 `REFUSED:` (approval missing), 4 `REFUSED:` (completion).

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result};
use canonical_json::Value;
use clap::{Args, Parser, Subcommand};
use dwp::validate;
mod amend;
mod context;
mod delegate;
mod migrate;
mod new;
mod outcomes;
mod resources;
mod resume;
mod scheduler;
mod selftest;
mod status;
mod verify;
mod views;

use dwp_ledger::{
    self as plan, AppendRequest, GateCommand, GateRequest, LedgerError, Plan, Timeout, Writer,
};

#[derive(Debug, Parser)]
#[command(
    name = "dwp",
    version,
    about = "DWP records layer: contracts, journals and projections you can verify",
    long_about = "DWP records layer: contracts, journals and projections you can verify.\n\n\
        Drop-in for the upstream DWP helper scripts: the same subcommands, files and exit codes."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Contract tools (upstream `contract_v6.py`)
    #[command(subcommand)]
    Contract(ContractCommand),
    /// The journal writer, gates, completion and projection (upstream `ledger.py`)
    Ledger(LedgerArgs),
    /// The read-only scheduler: ready list, boosts, proposal authorization
    #[command(subcommand)]
    Scheduler(scheduler::SchedulerCommand),
    /// Closure, verification receipts, review observations and control pairs
    Outcomes(outcomes::OutcomesArgs),
    /// Generated Markdown views with human-edit detection and reconciliation
    Views(views::ViewsArgs),
    /// A readable plan summary: tasks, criteria, what is next, what is blocked and why
    Status(status::StatusArgs),
    /// Read-only conformance check of a plan's records (verdict and exit code)
    Verify(verify::VerifyArgs),
    /// Allocate .dwp/plans/PLAN_NNN_slug/
    New(new::NewArgs),
    /// Migrate a v5 plan to v6 (preview, migrate, rollback)
    Migrate(migrate::MigrateArgs),
    /// Resource envelope report, routing posture, exhaustion, settlement
    Resources(resources::ResourcesArgs),
    /// The per-task context manifest: manifest, freshness, accounting (or context/<T>.json)
    Context(context::ContextArgs),
    /// Recover a plan: inspect, validate, project, render; list evidence to run again
    Resume(resume::ResumeArgs),
}

#[derive(Debug, Subcommand)]
enum ContractCommand {
    /// Print the 64-hex contract_id of a contract file
    ///
    /// The id is the SHA-256 of the compact, key-sorted, ASCII-escaped Python JSON form of the
    /// contract without its `contract_id` field; it matches the upstream tools byte for byte.
    /// Unlike Python's json module, duplicate keys and NaN/Infinity are refused.
    #[command(name = "compute-id")]
    ComputeId {
        /// The contract JSON file
        file: PathBuf,
    },
    /// Validate a v6/v7 contract (structure, semantics, draft-only checks)
    ///
    /// Prints `WARN …` advisories, `FAIL …` errors, or `OK: v6 contract valid (…)`; exit 1 on
    /// any FAIL. A revision > 1 needs every earlier revision as `--parent FILE`. `--recorded`
    /// reports the draft-only checks (closability, gate command classes) as WARN.
    #[command(name = "validate-contract")]
    ValidateContract {
        /// The contract JSON file
        file: PathBuf,
        /// An earlier revision, for chain checking (repeatable)
        #[arg(long = "parent", value_name = "FILE")]
        parents: Vec<PathBuf>,
        /// The contract is already materialized: draft-only checks become WARN
        #[arg(long)]
        recorded: bool,
    },
    /// Validate an NDJSON journal (each event, and strictly increasing seq)
    #[command(name = "validate-journal")]
    ValidateJournal {
        /// The journal file
        file: PathBuf,
        /// The live contract: generation, plan and gate bindings are checked against it
        #[arg(long)]
        contract: Option<PathBuf>,
    },
    /// Probe the contract tools on a scratch contract (prints `self-test: OK (N probes)`)
    #[command(name = "self-test")]
    SelfTest,
}

#[derive(Debug, Args)]
struct LedgerArgs {
    /// The plan folder (or a file directly inside it)
    #[arg(long, global = true)]
    plan: Option<PathBuf>,
    /// Break the plan lock (only after verifying its writer is dead)
    #[arg(long, global = true)]
    force: bool,
    #[command(subcommand)]
    command: LedgerCommand,
}

#[derive(Debug, Args)]
struct ActorArgs {
    /// Actor kind (helper, agent, host_adapter, human)
    #[arg(long = "actor-kind", default_value = "agent")]
    actor_kind: String,
    /// Actor identity
    #[arg(long = "actor-identity", default_value = "caller")]
    actor_identity: String,
}

#[derive(Debug, Subcommand)]
enum LedgerCommand {
    /// Manifest → stamped contract → approval (each step resumable)
    Materialize {
        #[arg(long)]
        contract: Option<PathBuf>,
        #[arg(long)]
        authority: Option<String>,
        #[arg(long)]
        mechanism: Option<String>,
        #[arg(long)]
        note: Option<String>,
    },
    /// Append one event under the mint rules
    Append {
        #[arg(long = "type")]
        etype: Option<String>,
        #[arg(long)]
        json: Option<String>,
        #[command(flatten)]
        actor: ActorArgs,
        #[arg(long)]
        trust: Option<String>,
        #[arg(long = "evidence-path")]
        evidence_path: Option<String>,
        #[arg(long)]
        note: Option<String>,
        #[arg(long)]
        idempotent: bool,
        #[arg(long = "human-note")]
        human_note: Option<PathBuf>,
    },
    /// Record a task_start with the git fingerprint
    Start {
        #[arg(long)]
        task: Option<String>,
        #[command(flatten)]
        actor: ActorArgs,
    },
    /// Run a declared gate and record an observed gate_run
    Gate {
        #[arg(long)]
        task: Option<String>,
        #[arg(long)]
        criterion: Option<String>,
        /// A JSON string (run by a shell) or a JSON argv array (no shell)
        #[arg(long)]
        json: Option<String>,
        #[arg(long)]
        timeout: Option<f64>,
        #[arg(long)]
        selection: Option<String>,
        #[arg(long = "no-reuse")]
        no_reuse: bool,
    },
    /// Look up cached gate evidence for the current fingerprint
    Reuse {
        #[arg(long)]
        task: Option<String>,
        #[arg(long)]
        json: Option<String>,
        #[arg(long)]
        criterion: Option<String>,
        #[arg(long)]
        selection: Option<String>,
    },
    /// A human sign-off: asserted evidence bound to a criterion
    Signoff {
        #[arg(long)]
        criterion: Option<String>,
        #[arg(long = "evidence-path")]
        evidence_path: Option<String>,
        #[arg(long)]
        authority: Option<String>,
        #[arg(long)]
        task: Option<String>,
    },
    /// Check completion (writes nothing on success; refusals are recorded)
    Complete {
        #[arg(long)]
        task: Option<String>,
    },
    /// Write state.json
    Project,
    /// Print the live journal (read-only)
    Inspect,
    /// Archive the live journal; seq continues
    Roll,
    /// Copy the plan records and cited evidence with digests
    Export {
        #[arg(long)]
        dest: Option<PathBuf>,
    },
    /// The next contract revision: amendment, approval, live-contract switch (resumable)
    Amend(amend::AmendArgs),
    /// v7 delegation: launch, observe, collect, cancel (refusals recorded, exit 5)
    Delegate(delegate::DelegateArgs),
    /// Probe the writer on a scratch plan (prints `self-test: OK (N probes)`; needs no --plan)
    #[command(name = "self-test")]
    SelfTest,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Contract(cmd) => match run_contract(cmd) {
            Ok(code) => code,
            Err(err) => {
                eprintln!("ERROR: {err:#}");
                ExitCode::from(1)
            }
        },
        Command::Ledger(args) => run_ledger(args),
        Command::Scheduler(cmd) => scheduler::run(cmd),
        Command::Outcomes(args) => outcomes::run(args),
        Command::Views(args) => views::run(args),
        Command::Status(args) => status::run(args),
        Command::Verify(args) => verify::run(args),
        Command::New(args) => new::run(args),
        Command::Migrate(args) => migrate::run(args),
        Command::Resources(args) => resources::run(args),
        Command::Context(args) => context::run(args),
        Command::Resume(args) => resume::run(args),
    }
}

fn read_json(path: &Path) -> Result<Value> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    canonical_json::parse(&bytes).with_context(|| format!("{} is not valid JSON", path.display()))
}

fn run_contract(cmd: ContractCommand) -> Result<ExitCode> {
    match cmd {
        ContractCommand::SelfTest => Ok(selftest::run(selftest::Group::Contract)),
        ContractCommand::ComputeId { file } => {
            let doc = read_json(&file)?;
            let id =
                dwp::contract::contract_id(&doc).with_context(|| file.display().to_string())?;
            println!("{id}");
            Ok(ExitCode::SUCCESS)
        }
        ContractCommand::ValidateContract { file, parents, recorded } => {
            let doc = read_json(&file)?;
            let mut chain = HashMap::new();
            for p in &parents {
                let parent = read_json(p)?;
                let id =
                    dwp::contract::contract_id(&parent).with_context(|| p.display().to_string())?;
                chain.insert(id, parent);
            }
            let mut errors = validate::contract_errors(&doc, Some(&chain));
            let mut warnings = Vec::new();
            if errors.is_empty() {
                let mut draft = validate::closure_errors(&doc, &mut warnings);
                draft.extend(validate::gate_command_errors(&doc));
                if recorded {
                    warnings.extend(draft);
                } else {
                    errors = draft;
                }
            }
            let mut out = std::io::stdout().lock();
            for w in &warnings {
                writeln!(out, "WARN {w}")?;
            }
            for e in &errors {
                writeln!(out, "FAIL {e}")?;
            }
            if !errors.is_empty() {
                return Ok(ExitCode::from(1));
            }
            let generation = validate::contract_generation(&doc).map_or("v6", |g| g.label());
            let criteria = doc
                .pointer("/acceptance/criteria")
                .and_then(Value::as_array)
                .map_or(0, <[Value]>::len);
            let tasks = doc.get("tasks").and_then(Value::as_array).map_or(0, <[Value]>::len);
            let cid = match doc.get("contract_id").and_then(Value::as_str).filter(|s| !s.is_empty())
            {
                Some(id) => id.to_owned(),
                None => dwp::contract::contract_id(&doc)?,
            };
            writeln!(
                out,
                "OK: {generation} contract valid (plan {}, revision {}, {criteria} criteria, {tasks} tasks, contract_id {cid})",
                dwp::py::str_opt(doc.get("plan")),
                dwp::py::str_opt(doc.get("revision")),
            )?;
            Ok(ExitCode::SUCCESS)
        }
        ContractCommand::ValidateJournal { file, contract } => {
            let raw =
                std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let text = std::str::from_utf8(&raw)
                .with_context(|| format!("{} is not UTF-8", file.display()))?;
            let mut events = Vec::new();
            for (i, line) in text.split('\n').enumerate() {
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                match canonical_json::parse(line.as_bytes()) {
                    Ok(v) => events.push(v),
                    Err(e) => {
                        eprintln!("journal line {} does not parse: {e}", i + 1);
                        return Ok(ExitCode::from(1));
                    }
                }
            }
            let contract = contract.map(|c| read_json(&c)).transpose()?;
            let errors = validate::journal_errors(&events, contract.as_ref());
            let mut out = std::io::stdout().lock();
            for e in &errors {
                writeln!(out, "FAIL {e}")?;
            }
            if !errors.is_empty() {
                return Ok(ExitCode::from(1));
            }
            writeln!(
                out,
                "OK: {} journal events valid ({})",
                events.len(),
                validate::type_counts(&events)
            )?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A usage error: the upstream message on stdout, exit 2.
fn usage(msg: &str) -> ExitCode {
    println!("{msg}");
    ExitCode::from(2)
}

fn run_ledger(args: LedgerArgs) -> ExitCode {
    if matches!(args.command, LedgerCommand::SelfTest) {
        return selftest::run(selftest::Group::Ledger);
    }
    let Some(plan_arg) = args.plan.clone() else {
        if matches!(args.command, LedgerCommand::Materialize { .. }) {
            return usage("materialize requires --plan and --contract");
        }
        return usage("usage: dwp ledger --plan DIR <command> [options]");
    };
    match ledger(&plan_arg, args.force, args.command) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("{}: {err}", err.prefix());
            ExitCode::from(err.exit_code())
        }
    }
}

fn open_writer(plan_arg: &Path, force: bool) -> Result<Writer, LedgerError> {
    open_writer_with(plan_arg, force, plan::Load::Full)
}

fn open_writer_with(plan_arg: &Path, force: bool, load: plan::Load) -> Result<Writer, LedgerError> {
    let dir = plan::find_plan_dir(plan_arg)?;
    let plan = Plan::load(&dir)?;
    Writer::open_with(plan, force, SystemTime::now(), load)
}

/// Releases the lock; the event list is left to the OS at exit (freeing 100,000 parsed events
/// one by one costs more than the projection itself).
fn finish(mut writer: Writer) -> Result<(), LedgerError> {
    let events = std::mem::take(&mut writer.events);
    writer.close()?;
    std::mem::forget(events);
    Ok(())
}

fn human_marker(note: Option<&Path>) -> Result<String, LedgerError> {
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

fn ledger(plan_arg: &Path, force: bool, command: LedgerCommand) -> Result<ExitCode, LedgerError> {
    let failed = |m: String| LedgerError::Failed(m);
    match command {
        LedgerCommand::Materialize { contract, authority, mechanism, note } => {
            let Some(contract) = contract else {
                return Ok(usage("materialize requires --plan and --contract"));
            };
            let dir = plan::find_plan_dir(plan_arg)?;
            let (name, cid, seq, resumed) = plan::materialize(
                &dir,
                &contract,
                authority.as_deref().unwrap_or("developer"),
                mechanism.as_deref().unwrap_or("plan_authorship"),
                note.as_deref(),
                SystemTime::now(),
            )?;
            println!(
                "OK: materialized {name} contract {} (manifest, contract, approval seq {seq}){}",
                dwp::py::head(&cid, 12),
                if resumed { " — resumed an interrupted materialization" } else { "" }
            );
            Ok(ExitCode::SUCCESS)
        }
        LedgerCommand::Inspect => {
            let dir = plan::find_plan_dir(plan_arg)?;
            let plan = Plan::load(&dir)?;
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let mut io_error = None;
            let cid12 = dwp::py::head(&plan.contract_id, 12);
            let name = dwp::py::str_opt(plan.contract.get("plan"));
            plan::stream_journal(&plan.journal_path(), |item| {
                let line = match item {
                    plan::JournalItem::Header { count, torn } => {
                        let tail = if torn.is_some() { "; TORN TAIL" } else { "" };
                        format!("plan {name} contract {cid12} ({count} events{tail})")
                    }
                    plan::JournalItem::Event(event) => {
                        let subject = event
                            .get("task")
                            .filter(|v| dwp::py::truthy(Some(v)))
                            .or_else(|| event.get("criterion").filter(|v| dwp::py::truthy(Some(v))))
                            .map(dwp::py::str_of)
                            .unwrap_or_default();
                        format!(
                            "{:>4} {} {subject}",
                            dwp::projection::seq_of(event),
                            dwp::py::str_opt(event.get("type"))
                        )
                    }
                };
                if io_error.is_none()
                    && let Err(e) = writeln!(out, "{line}")
                {
                    io_error = Some(e);
                }
            })?;
            let flushed = out.flush();
            if let Some(e) = io_error.map(Err).unwrap_or(flushed).err() {
                return Err(LedgerError::Failed(e.to_string()));
            }
            Ok(ExitCode::SUCCESS)
        }
        LedgerCommand::Append {
            etype,
            json,
            actor,
            trust,
            evidence_path,
            note,
            idempotent,
            human_note,
        } => {
            let (Some(etype), Some(json)) = (etype, json) else {
                return Ok(usage("append requires --type and --json"));
            };
            let mut note = note;
            if actor.actor_kind == "human" {
                let marker = human_marker(human_note.as_deref())?;
                note = Some(match note {
                    Some(n) => format!("{n} | {marker}"),
                    None => marker,
                });
            }
            // A plain append needs only the last seq; dedup and the approval gate need history.
            let load = if idempotent || etype == "task_start" {
                plan::Load::Full
            } else {
                plan::Load::Tail
            };
            let mut writer = open_writer_with(plan_arg, force, load)?;
            let payload = match canonical_json::parse(json.as_bytes()) {
                Ok(Value::Object(map)) => map,
                Ok(_) => return Err(failed("append --json must be a JSON object".to_owned())),
                Err(e) => return Err(failed(format!("append --json is not valid JSON: {e}"))),
            };
            let event = writer.append(AppendRequest {
                etype,
                payload,
                actor: plan::actor(&actor.actor_kind, &actor.actor_identity),
                note,
                idempotent,
                trust,
                evidence_path,
            })?;
            finish(writer)?;
            println!(
                "OK: appended {} seq {}",
                dwp::py::str_opt(event.get("type")),
                dwp::projection::seq_of(&event)
            );
            Ok(ExitCode::SUCCESS)
        }
        LedgerCommand::Start { task, actor } => {
            let Some(task) = task else { return Ok(usage("start requires --task")) };
            let mut writer = open_writer(plan_arg, force)?;
            let event =
                writer.start_task(&task, plan::actor(&actor.actor_kind, &actor.actor_identity))?;
            finish(writer)?;
            let fp = event.get("fingerprint");
            let revision =
                fp.and_then(|f| f.get("revision")).and_then(Value::as_str).unwrap_or("none");
            let dirty = fp
                .and_then(|f| f.get("dirty"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .lines()
                .filter(|l| !l.trim().is_empty())
                .count();
            let state = if dirty == 0 {
                "clean".to_owned()
            } else {
                format!("dirty: {dirty} path(s) - the full list is in the task_start event")
            };
            println!(
                "OK: task_start {task} at seq {} (starting fingerprint {}, {state})",
                dwp::py::str_opt(event.get("seq")),
                revision.chars().take(12).collect::<String>()
            );
            Ok(ExitCode::SUCCESS)
        }
        LedgerCommand::Gate { task, criterion, json, timeout, selection, no_reuse } => {
            let (Some(task), Some(json)) = (task, json) else {
                return Ok(usage("gate requires --task and --json (the command)"));
            };
            let Some(command) = GateCommand::parse(&json) else {
                return Ok(usage(
                    "gate --json must be a JSON string (run through the shell) or a JSON array of \
                     argv (executed directly, no shell)",
                ));
            };
            let mut writer = open_writer(plan_arg, force)?;
            let outcome = writer.run_gate(&GateRequest {
                task,
                criterion,
                command,
                timeout: timeout.map_or(Timeout::Default, Timeout::Given),
                selection,
                reuse: !no_reuse,
            })?;
            finish(writer)?;
            let seq = if outcome.reused {
                String::new()
            } else {
                format!(", seq {}", outcome.seq.map_or_else(|| "?".to_owned(), |s| s.to_string()))
            };
            println!(
                "{}: exit {}{seq} (fingerprint {}, log {})",
                if outcome.reused { "REUSED" } else { "RAN" },
                outcome.exit_code,
                &outcome.fingerprint[..12],
                outcome.log
            );
            Ok(if outcome.exit_code == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        LedgerCommand::Reuse { task, json, criterion, selection } => {
            let (Some(task), Some(json)) = (task, json) else {
                return Ok(usage("reuse requires --task and --json"));
            };
            let Some(command) = GateCommand::parse(&json) else {
                return Ok(usage("reuse --json must be a JSON string or argv array"));
            };
            let writer = open_writer(plan_arg, force)?;
            let fp = writer.fingerprint(&task, &command.to_value(), selection.as_deref())?;
            let prior = writer.evidence_lookup(&fp, &task, criterion.as_deref());
            finish(writer)?;
            match prior {
                None => {
                    println!("NO EVIDENCE for fingerprint {}", &fp[..12]);
                    Ok(ExitCode::from(1))
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
        LedgerCommand::Signoff { criterion, evidence_path, authority, task } => {
            let Some(criterion) = criterion else {
                return Ok(usage("signoff requires --criterion, --evidence-path and --authority"));
            };
            let mut writer = open_writer(plan_arg, force)?;
            let event = writer.signoff(
                &criterion,
                evidence_path.as_deref(),
                authority.as_deref(),
                task.as_deref(),
            )?;
            finish(writer)?;
            println!(
                "OK: signoff {criterion} by {} at seq {} (asserted: a human claim, never executed)",
                dwp::py::str_opt(event.pointer("/actor/identity")),
                dwp::projection::seq_of(&event)
            );
            Ok(ExitCode::SUCCESS)
        }
        LedgerCommand::Complete { task } => {
            let Some(task) = task else { return Ok(usage("complete requires --task")) };
            let mut writer = open_writer(plan_arg, force)?;
            let states = writer.complete_task(&task)?;
            finish(writer)?;
            let names: Vec<String> =
                states.iter().map(|s| dwp::py::str_opt(s.get("criterion"))).collect();
            println!("OK: {task} criteria satisfied: {}", names.join(", "));
            Ok(ExitCode::SUCCESS)
        }
        LedgerCommand::SelfTest => Ok(selftest::run(selftest::Group::Ledger)),
        LedgerCommand::Amend(args) => amend::run(plan_arg, args, human_marker),
        LedgerCommand::Delegate(args) => delegate::run(plan_arg, force, args),
        LedgerCommand::Project => {
            // Only the lock, the repair and the last seq: the projection streams the events.
            let writer = open_writer_with(plan_arg, force, plan::Load::Tail)?;
            let state = writer.project_streaming()?;
            finish(writer)?;
            println!(
                "OK: state.json projected ({} tasks, {} types)",
                state.get("tasks").and_then(Value::as_array).map_or(0, <[Value]>::len),
                state.get("positions").and_then(Value::as_object).map_or(0, |m| m.len())
            );
            Ok(ExitCode::SUCCESS)
        }
        LedgerCommand::Roll => {
            let mut writer = open_writer(plan_arg, force)?;
            let archive = writer.roll()?;
            finish(writer)?;
            println!("OK: journal archived to {} (nothing deleted)", archive.display());
            Ok(ExitCode::SUCCESS)
        }
        LedgerCommand::Export { dest } => {
            let Some(dest) = dest else { return Ok(usage("export requires --dest")) };
            let writer = open_writer(plan_arg, force)?;
            let manifest = writer.export(&dest)?;
            finish(writer)?;
            println!(
                "OK: exported {} file(s) to {}",
                manifest.get("files").and_then(Value::as_object).map_or(0, |m| m.len()),
                dest.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
