//! `dwp`: the DWP records-layer command line (a drop-in for the upstream Python helpers).
//!
//! Exit codes follow the upstream helpers: 0 success, 1 a failed check or unreadable input,
//! 2 a usage error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "dwp",
    version,
    about = "DWP records layer: contracts, journals and projections you can verify",
    long_about = "DWP records layer: contracts, journals and projections you can verify.\n\n\
        Drop-in for the upstream DWP helper scripts: the same subcommands, files and exit codes \
        (0 ok, 1 failed check or unreadable input, 2 usage error)."
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("ERROR: {err:#}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Contract(ContractCommand::ComputeId { file }) => {
            let doc = read_json(&file)?;
            let id =
                dwp::contract::contract_id(&doc).with_context(|| file.display().to_string())?;
            println!("{id}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn read_json(path: &Path) -> Result<canonical_json::Value> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    canonical_json::parse(&bytes).with_context(|| format!("{} is not valid JSON", path.display()))
}
