//! `cookwala`: the Cookwala Core command line.
//!
//! Thin by design: each subcommand parses its arguments, reads its inputs, calls the
//! `cookwala` / `canonical-json` libraries and prints. Exit codes are mapped here only:
//! 0 success, 1 a failed check, refusal or unreadable input, 2 a usage error.

mod clock;
mod commands;
mod input;
mod output;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use commands::{
    canon, conformance, cook, demo, device, disclose, docs, keys, log, profiles, rules, serve,
    serve_config, validate,
};

#[derive(Debug, Parser)]
#[command(
    name = "cookwala",
    version,
    about = "Cookwala Core: cooking records you can verify",
    long_about = "Cookwala Core: cooking records you can verify.\n\n\
        Canonicalise, hash, sign and verify Cookwala documents, keep witnessed mission logs, \
        check whether a device can cook a recipe before anything heats up (dry-run, precheck, \
        explain), convert kitchen units, validate and migrate documents, and run the standard's \
        conformance vectors. Start with `cookwala demo`.\n\n\
        Exit codes: 0 success, 1 failed check / refusal / unreadable input, 2 usage error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Demo(demo::DemoArgs),
    Cook(cook::CookArgs),
    Serve(Box<serve::ServeArgs>),
    Device(Box<device::DeviceArgs>),
    /// Write the RFC 8785 (JCS) canonical bytes of a JSON document to stdout
    ///
    /// No trailing newline is written, so the output can be piped straight into a hash tool.
    /// Duplicate keys, lone surrogates, NaN/Infinity and integers beyond ±(2^53-1) are refused.
    Canon {
        /// JSON file, or - for standard input
        #[arg(default_value = "-")]
        file: PathBuf,
    },
    /// Print the document hash: sha256:<hex> of the JCS bytes without top-level hash/signature
    Hash {
        /// JSON file, or - for standard input
        file: PathBuf,
        /// Print {"hash": ...} instead of the bare hash
        #[arg(long)]
        json: bool,
    },
    Keygen(keys::KeygenArgs),
    Sign(keys::SignArgs),
    Verify(keys::VerifyArgs),
    /// Selective disclosure: salted digests that let a signed record hide a value
    #[command(subcommand)]
    Disclose(disclose::DiscloseCommand),
    /// Mission event logs: sequence events, checkpoint, witness, verify
    #[command(subcommand)]
    Log(log::LogCommand),
    /// Run the standard's conformance vectors
    #[command(subcommand)]
    Conformance(conformance::ConformanceCommand),
    /// Humanitarian SMS messages (RFC-0003): offers, claims, handovers, distributions, menus
    #[command(subcommand)]
    Sms(profiles::SmsCommand),
    Constraints(profiles::ConstraintsArgs),
    /// Certifications (RFC-0010): verify one, or pick the current ones of a set
    #[command(subcommand)]
    Certify(profiles::CertifyCommand),
    /// Registry names and exact versions (RFC-0002)
    #[command(subcommand)]
    Registry(profiles::RegistryCommand),
    /// Supply and demand signals (RFC-0007)
    #[command(subcommand)]
    Signal(profiles::SignalCommand),
    /// Humanitarian rule packs (RFC-0003): check offers, handovers and distributions
    #[command(subcommand)]
    Humanitarian(profiles::HumanitarianCommand),
    Convert(rules::ConvertArgs),
    Envelope(rules::EnvelopeArgs),
    DryRun(rules::DryRunArgs),
    /// Explain a dry run for a person: who does each step, which rung verifies it, and why
    Explain(rules::DryRunArgs),
    Precheck(rules::PrecheckArgs),
    Validate(validate::ValidateArgs),
    /// JSON Schemas: export ours, or build the offline SchemaBundle
    #[command(subcommand)]
    Schema(validate::SchemaCommand),
    Migrate(docs::MigrateArgs),
    /// Execution logs
    #[command(subcommand)]
    Logs(docs::LogsCommand),
}

/// mimalloc: batch dry runs and large documents build and drop many small JSON trees, where
/// the system allocator spent most of the time (a profile of `dry-run --batch` with distinct
/// documents per line: `malloc_consolidate`, `_int_free`, page faults in `sysmalloc`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A one-shot command whose reader goes away (`cookwala dry-run … | head`) ends as Unix tools
    // do, by SIGPIPE, instead of panicking in `println!`. The server keeps Rust's default (the
    // signal ignored, a closed peer an error on its own connection).
    if !matches!(cli.command, Command::Serve(_) | Command::Device(_)) {
        sigpipe::reset();
    }
    match run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            eprintln!("error: {err:#}");
            // A configuration file a usage error is made of exits as clap's usage errors do.
            if err.downcast_ref::<serve_config::UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// Runs one command; `Ok(false)` means a check failed (exit 1) without an error message.
fn run(cli: Cli) -> Result<bool> {
    match cli.command {
        Command::Demo(args) => demo::run(args.out).map(|()| true),
        Command::Cook(args) => cook::run(&args),
        Command::Serve(args) => match serve_config::resolve(*args)? {
            Some(args) => serve::run(args),
            None => Ok(true),
        },
        Command::Device(args) => serve::run(device::serve_args(*args)?),
        Command::Canon { file } => canon::canon(&file).map(|()| true),
        Command::Hash { file, json } => canon::hash(&file, json).map(|()| true),
        Command::Keygen(a) => {
            keys::keygen(a.alg, &a.kid, &a.out, a.valid_from, a.json).map(|()| true)
        }
        Command::Sign(args) => keys::sign(&args).map(|()| true),
        Command::Verify(a) => keys::verify(&a.keys, &a.doc, a.kind, a.relayed, a.json),
        Command::Disclose(command) => command.run(),
        Command::Log(command) => command.run(),
        Command::Conformance(command) => command.run(),
        Command::Sms(command) => command.run(),
        Command::Constraints(a) => {
            profiles::constraints(&a.facets, &a.role, a.consents.as_deref(), a.json)
        }
        Command::Certify(command) => command.run(),
        Command::Registry(command) => command.run(),
        Command::Signal(command) => command.run(),
        Command::Humanitarian(command) => command.run(),
        Command::Convert(a) => {
            rules::convert(a.vocab.as_deref(), a.value, &a.unit, &a.to, a.density, a.json)
        }
        Command::Envelope(args) => rules::envelope(&args),
        Command::DryRun(args) => rules::dry_run(&args),
        Command::Explain(args) => rules::dry_run(&rules::DryRunArgs { explain: true, ..args }),
        Command::Precheck(args) => rules::precheck(&args),
        Command::Validate(a) => validate::validate(
            &a.file,
            a.kind.as_deref(),
            a.schemas.as_deref(),
            a.vocab.as_deref(),
            a.json,
        ),
        Command::Schema(command) => command.run(),
        Command::Migrate(a) => {
            docs::migrate(&a.file, a.kind.as_deref(), a.report_unknown, a.out.as_deref(), a.json)
        }
        Command::Logs(command) => command.run(),
    }
}
