//! `dwp ledger --plan DIR amend --contract DRAFT --authority WHO --note REASON
//! (--human-note FILE | TTY) [--mechanism M]` (upstream `ledger.py amend`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use crate::exit;
use clap::Args;
use dwp_ledger::amend::{AmendOutcome, AmendRequest, amend};
use dwp_ledger::{self as plan, LedgerError};

#[derive(Debug, Args)]
pub(crate) struct AmendArgs {
    /// The revised contract draft
    #[arg(long)]
    contract: Option<PathBuf>,
    /// The human authority approving the revision
    #[arg(long)]
    authority: Option<String>,
    /// The reason (recorded as the finding and the reason)
    #[arg(long)]
    note: Option<String>,
    /// A note file proving human authority (else a typed confirmation on a TTY)
    #[arg(long = "human-note")]
    human_note: Option<PathBuf>,
    /// Approval mechanism (default: the live contract's)
    #[arg(long)]
    mechanism: Option<String>,
}

pub(crate) fn run(
    plan_arg: &Path,
    args: AmendArgs,
    marker: impl FnOnce(Option<&Path>) -> Result<String, LedgerError>,
) -> Result<ExitCode, LedgerError> {
    let (Some(contract), Some(authority), Some(note)) = (args.contract, args.authority, args.note)
    else {
        outln!("amend requires --contract, --authority and --note");
        return Ok(ExitCode::from(exit::USAGE));
    };
    let dir = plan::find_plan_dir(plan_arg)?;
    let bytes = std::fs::read(&contract)
        .map_err(|e| LedgerError::Failed(format!("{}: {e}", contract.display())))?;
    let draft = canonical_json::parse(&bytes).map_err(|e| {
        LedgerError::Failed(format!("{} is not valid JSON: {e}", contract.display()))
    })?;
    let marker = match marker(args.human_note.as_deref()) {
        Ok(marker) => marker,
        Err(err) => {
            // A permission refusal by the plan's rules: recorded like any other.
            let mut writer = super::open_writer_with(plan_arg, false, plan::Load::Tail)?;
            let err = writer.refuse_human_marker("ledger amend", "amendment", &authority, err);
            super::finish(writer)?;
            return Err(err);
        }
    };
    let req = AmendRequest { draft, authority, note, marker, mechanism: args.mechanism };
    match amend(&dir, &req, SystemTime::now())? {
        AmendOutcome::Nothing { revision, contract_id } => outln!(
            "OK: the live contract (revision {revision}, {}) already is this draft - nothing \
             to amend",
            dwp::py::head(&contract_id, 12)
        ),
        AmendOutcome::Amended { revision, contract_id, invalidated } => outln!(
            "OK: amended to revision {revision} contract {} (approval recorded; criteria \
             re-evidenced: {})",
            dwp::py::head(&contract_id, 12),
            if invalidated.is_empty() { "none".to_owned() } else { invalidated.join(", ") }
        ),
    }
    Ok(ExitCode::SUCCESS)
}
