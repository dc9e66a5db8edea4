//! The writes of a task's life: `materialize`, `append`, `start`, `signoff`, `complete`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use canonical_json::Value;
use clap::Args;
use dwp_ledger::{self as plan, AppendRequest, LedgerError};

use super::ActorArgs;
use crate::exit;

// The flags of `dwp ledger materialize` (its help text is the variant's doc comment).
#[derive(Debug, Args)]
pub(crate) struct MaterializeArgs {
    #[arg(long)]
    contract: Option<PathBuf>,
    #[arg(long)]
    authority: Option<String>,
    #[arg(long)]
    mechanism: Option<String>,
    #[arg(long)]
    note: Option<String>,
}

// The flags of `dwp ledger append` (its help text is the variant's doc comment).
#[derive(Debug, Args)]
pub(crate) struct AppendArgs {
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
}

// The flags of `dwp ledger start` (its help text is the variant's doc comment).
#[derive(Debug, Args)]
pub(crate) struct StartArgs {
    #[arg(long)]
    task: Option<String>,
    #[command(flatten)]
    actor: ActorArgs,
}

// The flags of `dwp ledger signoff` (its help text is the variant's doc comment).
#[derive(Debug, Args)]
pub(crate) struct SignoffArgs {
    #[arg(long)]
    criterion: Option<String>,
    #[arg(long = "evidence-path")]
    evidence_path: Option<String>,
    #[arg(long)]
    authority: Option<String>,
    #[arg(long)]
    task: Option<String>,
}

// The flags of `dwp ledger complete` (its help text is the variant's doc comment).
#[derive(Debug, Args)]
pub(crate) struct CompleteArgs {
    #[arg(long)]
    task: Option<String>,
}

/// Manifest → stamped contract → approval (each step resumable)
pub(super) fn materialize(plan_arg: &Path, args: MaterializeArgs) -> Result<ExitCode, LedgerError> {
    let MaterializeArgs { contract, authority, mechanism, note } = args;
    let Some(contract) = contract else {
        return Ok(exit::usage("materialize requires --plan and --contract"));
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

/// Append one event under the mint rules
pub(super) fn append(
    plan_arg: &Path,
    force: bool,
    args: AppendArgs,
) -> Result<ExitCode, LedgerError> {
    let AppendArgs { etype, json, actor, trust, evidence_path, note, idempotent, human_note } =
        args;
    let failed = |m: String| LedgerError::Failed(m);
    let (Some(etype), Some(json)) = (etype, json) else {
        return Ok(exit::usage("append requires --type and --json"));
    };
    let mut note = note;
    if actor.actor_kind == "human" {
        let marker = match super::human_marker(human_note.as_deref()) {
            Ok(marker) => marker,
            Err(err) => {
                // A permission refusal by the plan's rules: recorded like any other.
                let mut writer = super::open_writer_with(plan_arg, force, plan::Load::Tail)?;
                let err =
                    writer.refuse_human_marker("ledger append", &etype, &actor.actor_identity, err);
                super::finish(writer)?;
                return Err(err);
            }
        };
        note = Some(match note {
            Some(n) => format!("{n} | {marker}"),
            None => marker,
        });
    }
    // A plain append needs only the last seq; dedup and the approval gate need history.
    let load =
        if idempotent || etype == "task_start" { plan::Load::Full } else { plan::Load::Tail };
    let mut writer = super::open_writer_with(plan_arg, force, load)?;
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
    super::finish(writer)?;
    println!(
        "OK: appended {} seq {}",
        dwp::py::str_opt(event.get("type")),
        dwp::projection::seq_of(&event)
    );
    Ok(ExitCode::SUCCESS)
}

/// Record a task_start with the git fingerprint
pub(super) fn start(
    plan_arg: &Path,
    force: bool,
    args: StartArgs,
) -> Result<ExitCode, LedgerError> {
    let StartArgs { task, actor } = args;
    let Some(task) = task else { return Ok(exit::usage("start requires --task")) };
    let mut writer = super::open_writer(plan_arg, force)?;
    let event = writer.start_task(&task, plan::actor(&actor.actor_kind, &actor.actor_identity))?;
    super::finish(writer)?;
    let fp = event.get("fingerprint");
    let revision = fp.and_then(|f| f.get("revision")).and_then(Value::as_str).unwrap_or("none");
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

/// A human sign-off: asserted evidence bound to a criterion
pub(super) fn signoff(
    plan_arg: &Path,
    force: bool,
    args: SignoffArgs,
) -> Result<ExitCode, LedgerError> {
    let SignoffArgs { criterion, evidence_path, authority, task } = args;
    let Some(criterion) = criterion else {
        return Ok(exit::usage("signoff requires --criterion, --evidence-path and --authority"));
    };
    let mut writer = super::open_writer(plan_arg, force)?;
    let event = writer.signoff(
        &criterion,
        evidence_path.as_deref(),
        authority.as_deref(),
        task.as_deref(),
    )?;
    super::finish(writer)?;
    println!(
        "OK: signoff {criterion} by {} at seq {} (asserted: a human claim, never executed)",
        dwp::py::str_opt(event.pointer("/actor/identity")),
        dwp::projection::seq_of(&event)
    );
    Ok(ExitCode::SUCCESS)
}

/// Check completion (writes nothing on success; refusals are recorded)
pub(super) fn complete(
    plan_arg: &Path,
    force: bool,
    args: CompleteArgs,
) -> Result<ExitCode, LedgerError> {
    let CompleteArgs { task } = args;
    let Some(task) = task else { return Ok(exit::usage("complete requires --task")) };
    let mut writer = super::open_writer(plan_arg, force)?;
    let states = writer.complete_task(&task)?;
    super::finish(writer)?;
    let names: Vec<String> = states.iter().map(|s| dwp::py::str_opt(s.get("criterion"))).collect();
    println!("OK: {task} criteria satisfied: {}", names.join(", "));
    Ok(ExitCode::SUCCESS)
}
