//! The journal and what is derived from it: `inspect`, `project`, `roll`, `export`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use canonical_json::Value;
use clap::Args;
use dwp_ledger::{self as plan, LedgerError, Plan};

use crate::exit;

// The flags of `dwp ledger export` (its help text is the variant's doc comment).
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    #[arg(long)]
    dest: Option<PathBuf>,
}

/// Print the live journal (read-only)
pub(super) fn inspect(plan_arg: &Path) -> Result<ExitCode, LedgerError> {
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

/// Write state.json
pub(super) fn project(plan_arg: &Path, force: bool) -> Result<ExitCode, LedgerError> {
    // Only the lock, the repair and the last seq: the projection streams the events.
    let writer = super::open_writer_with(plan_arg, force, plan::Load::Tail)?;
    let state = writer.project_streaming()?;
    super::finish(writer)?;
    println!(
        "OK: state.json projected ({} tasks, {} types)",
        state.get("tasks").and_then(Value::as_array).map_or(0, <[Value]>::len),
        state.get("positions").and_then(Value::as_object).map_or(0, |m| m.len())
    );
    Ok(ExitCode::SUCCESS)
}

/// Archive the live journal; seq continues
pub(super) fn roll(plan_arg: &Path, force: bool) -> Result<ExitCode, LedgerError> {
    let mut writer = super::open_writer(plan_arg, force)?;
    let archive = writer.roll()?;
    super::finish(writer)?;
    println!("OK: journal archived to {} (nothing deleted)", archive.display());
    Ok(ExitCode::SUCCESS)
}

/// Copy the plan records and cited evidence with digests
pub(super) fn export(
    plan_arg: &Path,
    force: bool,
    args: ExportArgs,
) -> Result<ExitCode, LedgerError> {
    let ExportArgs { dest } = args;
    let Some(dest) = dest else { return Ok(exit::usage("export requires --dest")) };
    let writer = super::open_writer(plan_arg, force)?;
    let manifest = writer.export(&dest)?;
    super::finish(writer)?;
    println!(
        "OK: exported {} file(s) to {}",
        manifest.get("files").and_then(Value::as_object).map_or(0, |m| m.len()),
        dest.display()
    );
    Ok(ExitCode::SUCCESS)
}
