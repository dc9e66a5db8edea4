//! `dwp`: the DWP records-layer command line (a drop-in for the upstream Python helpers).
//!
//! `main` parses the command line and hands each subcommand to its module under `commands/`;
//! exit codes live in `exit`, output that tolerates a closed pipe in `out`, and `selftest`
//! backs the `self-test` subcommands.

#[macro_use]
mod out;

mod commands;
mod exit;
mod selftest;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `dwp --version`: our version, and whose behaviour it follows.
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\nfollows: the deepworkplan skill's records-layer helpers (v6/v7): ledger.py, \
     contract_v6.py and outcomes.py as vendored at pereira-tech-talks/pereiratechtalks.com \
     bd935a09, checked against DailybotHQ/deepworkplan-skill's bats suites \
     (see README, \"Using dwp with the deepworkplan skill\")"
);

#[derive(Debug, Parser)]
#[command(
    name = "dwp",
    version,
    long_version = LONG_VERSION,
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
    Contract(commands::contract::ContractCommand),
    /// The journal writer, gates, completion and projection (upstream `ledger.py`)
    Ledger(commands::ledger::LedgerArgs),
    /// The read-only scheduler: ready list, boosts, proposal authorization
    #[command(subcommand)]
    Scheduler(commands::scheduler::SchedulerCommand),
    /// Closure, verification receipts, review observations and control pairs
    Outcomes(commands::outcomes::OutcomesArgs),
    /// Generated Markdown views with human-edit detection and reconciliation
    Views(commands::views::ViewsArgs),
    /// A readable plan summary: tasks, criteria, what is next, what is blocked and why
    Status(commands::status::StatusArgs),
    /// Read-only conformance check of a plan's records (verdict and exit code)
    Verify(commands::verify::VerifyArgs),
    /// Allocate .dwp/plans/PLAN_NNN_slug/
    New(commands::new::NewArgs),
    /// Migrate a v5 plan to v6 (preview, migrate, rollback)
    Migrate(commands::migrate::MigrateArgs),
    /// Resource envelope report, routing posture, exhaustion, settlement
    Resources(commands::resources::ResourcesArgs),
    /// The per-task context manifest: manifest, freshness, accounting (or context/<T>.json)
    Context(commands::context::ContextArgs),
    /// Recover a plan: inspect, validate, project, render; list evidence to run again
    Resume(commands::resume::ResumeArgs),
    /// Run the deepworkplan skill's helper scripts through dwp (install, status, remove)
    #[command(long_about = commands::skill::LONG_ABOUT)]
    Skill(commands::skill::SkillArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Contract(cmd) => commands::contract::run(cmd),
        Command::Ledger(args) => commands::ledger::run(args),
        Command::Scheduler(cmd) => commands::scheduler::run(cmd),
        Command::Outcomes(args) => commands::outcomes::run(args),
        Command::Views(args) => commands::views::run(args),
        Command::Status(args) => commands::status::run(args),
        Command::Verify(args) => commands::verify::run(args),
        Command::New(args) => commands::new::run(args),
        Command::Migrate(args) => commands::migrate::run(args),
        Command::Resources(args) => commands::resources::run(args),
        Command::Context(args) => commands::context::run(args),
        Command::Resume(args) => commands::resume::run(args),
        Command::Skill(args) => commands::skill::run(args),
    }
}
