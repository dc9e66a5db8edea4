//! `dwp contract`: contract tools (upstream `contract_v6.py`): compute-id, validate-contract,
//! validate-journal, self-test.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use canonical_json::Value;
use clap::Subcommand;
use dwp::validate;

use crate::{exit, selftest};

#[derive(Debug, Subcommand)]
pub(crate) enum ContractCommand {
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

/// `dwp contract`: `ERROR:` and exit 1 on unreadable input.
pub(crate) fn run(cmd: ContractCommand) -> ExitCode {
    match run_contract(cmd) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("ERROR: {err:#}");
            ExitCode::from(exit::FAILED)
        }
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
                return Ok(ExitCode::from(exit::FAILED));
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
                        return Ok(ExitCode::from(exit::FAILED));
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
                return Ok(ExitCode::from(exit::FAILED));
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
