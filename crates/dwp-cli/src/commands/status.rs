//! `dwp status PLAN [--json]`: a readable plan summary (colour on a terminal).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit;
use clap::Args;
use dwp_ledger::{self as plan, LedgerError, Plan};

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// The plan folder
    plan: PathBuf,
    /// The summary as JSON
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: StatusArgs) -> ExitCode {
    let result = (|| -> Result<(), LedgerError> {
        let dir = plan::find_plan_dir(&args.plan)?;
        let loaded = Plan::load(&dir)?;
        let events = plan::records::load_events(&loaded)?;
        let doc = dwp::status::summary(&loaded.contract, &loaded.contract_id, &events);
        if args.json {
            let bytes = canonical_json::to_python_pretty(&doc)
                .map_err(|e| LedgerError::Failed(e.to_string()))?;
            out!("{}", String::from_utf8_lossy(&bytes));
        } else {
            let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            out!("{}", dwp::status::render_text(&doc, colour));
        }
        Ok(())
    })();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ERROR: {e}");
            ExitCode::from(exit::FAILED)
        }
    }
}
