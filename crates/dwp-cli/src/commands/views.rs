//! `dwp views --plan DIR render [--view a,b | --all] [--out DIR] [--reconcile MODE]
//! [--authority WHO] [--force]` (upstream `views.py`).
//!
//! Exit codes: 0 ok, 1 `ERROR:`, 2 usage or `COLLISION:`, 5 `DIVERGENCE:` (a human-edited
//! view and no reconcile mode).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use crate::exit;
use clap::{Args, Subcommand, ValueEnum};
use dwp::views::{DEFAULT_VIEWS, VIEWS};
use dwp_ledger::views::{Reconcile, RenderRequest, ViewsError, render};
use dwp_ledger::{self as plan, Plan, Writer};

const USAGE: &str = "usage: dwp views --plan DIR {render|self-test} [--view tasks,evidence,audit,completion|--all] \
    [--out DIR] [--reconcile human-wins|generated-wins] [--authority WHO] [--force]";

#[derive(Debug, Args)]
pub(crate) struct ViewsArgs {
    /// The plan folder (or a file directly inside it)
    #[arg(long, global = true)]
    plan: Option<PathBuf>,
    #[command(subcommand)]
    command: ViewsCommand,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Mode {
    HumanWins,
    GeneratedWins,
}

#[derive(Debug, Subcommand)]
enum ViewsCommand {
    /// Render views/<name>.md (tasks, evidence, audit by default; --all adds completion)
    Render {
        /// Comma-separated view names
        #[arg(long, conflicts_with = "all")]
        view: Option<String>,
        /// Every view
        #[arg(long)]
        all: bool,
        /// Output directory (default <plan>/views)
        #[arg(long)]
        out: Option<PathBuf>,
        /// Settle a human-edited view
        #[arg(long, value_enum)]
        reconcile: Option<Mode>,
        /// The recorded authority of a reconciliation
        #[arg(long)]
        authority: Option<String>,
        /// Break the plan lock (only after verifying its writer is dead)
        #[arg(long)]
        force: bool,
    },
    /// Probe rendering and the human-edit rule on a scratch plan (`self-test: OK (N probes)`)
    #[command(name = "self-test")]
    SelfTest,
}

pub(crate) fn run(args: ViewsArgs) -> ExitCode {
    let ViewsCommand::Render { view, all, out, reconcile, authority, force } = args.command else {
        return crate::selftest::run(crate::selftest::Group::Views);
    };
    let Some(plan_arg) = args.plan else {
        outln!("{USAGE}");
        return ExitCode::from(exit::USAGE);
    };
    let names: Vec<String> = if all {
        VIEWS.iter().map(|v| (*v).to_owned()).collect()
    } else if let Some(list) = view {
        list.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect()
    } else {
        DEFAULT_VIEWS.iter().map(|v| (*v).to_owned()).collect()
    };
    if let Some(bad) = names.iter().find(|n| !VIEWS.contains(&n.as_str())) {
        outln!("unknown view {} (choose from {})", dwp::py::repr_str(bad), VIEWS.join(", "));
        return ExitCode::from(exit::USAGE);
    }
    let req = RenderRequest {
        names,
        out_dir: out,
        reconcile: reconcile.map(|m| match m {
            Mode::HumanWins => Reconcile::HumanWins,
            Mode::GeneratedWins => Reconcile::GeneratedWins,
        }),
        authority,
    };
    let result = (|| -> Result<Vec<String>, ViewsError> {
        let dir = plan::find_plan_dir(&plan_arg)?;
        let mut writer = Writer::open(Plan::load(&dir)?, force, SystemTime::now())?;
        let written = render(&mut writer, &req)?;
        // Freeing every parsed event one by one costs more than the render itself.
        let events = std::mem::take(&mut writer.events);
        writer.close()?;
        std::mem::forget(events);
        Ok(written)
    })();
    match result {
        Ok(written) if written.is_empty() => {
            outln!("OK: no view changed — records unchanged, nothing written");
            ExitCode::SUCCESS
        }
        Ok(written) => {
            outln!("OK: rendered {}", written.join(", "));
            ExitCode::SUCCESS
        }
        Err(ViewsError::Divergence(m)) => {
            eprintln!("DIVERGENCE: {m}");
            ExitCode::from(exit::HUMAN_EDIT)
        }
        Err(ViewsError::Ledger(e)) => {
            eprintln!("{}: {e}", e.prefix());
            ExitCode::from(exit::ledger_edge(&e))
        }
        Err(e) => {
            eprintln!("ERROR: {e}");
            ExitCode::from(exit::FAILED)
        }
    }
}
