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
use clap::{Args, Parser, Subcommand};

use commands::keys::{AlgArg, KindArg};

#[derive(Debug, Parser)]
#[command(
    name = "cookwala",
    version,
    about = "Cookwala Core: cooking records you can verify",
    long_about = "Cookwala Core: cooking records you can verify.\n\n\
        Canonicalise, hash, sign and verify Cookwala documents, keep witnessed mission logs, and \
        run the standard's conformance vectors. Start with `cookwala demo`.\n\n\
        Exit codes: 0 success, 1 failed check / refusal / unreadable input, 2 usage error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Walk through hashing, signing, disclosure and a witnessed log on built-in data
    ///
    /// Every artifact is written to --out (default: a new folder under the temp dir) so each
    /// step can be repeated with the other subcommands.
    Demo {
        /// Folder for the artifacts
        #[arg(long)]
        out: Option<PathBuf>,
    },
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
    /// Generate a signing key: <KID>.key.json (private, 0600) and <KID>.pub.json (KeyRecord set)
    Keygen {
        /// Signature algorithm
        #[arg(long, value_enum, default_value = "EdDSA")]
        alg: AlgArg,
        /// Key id, e.g. did:web:example.org#key-1
        #[arg(long)]
        kid: String,
        /// Folder for the two files (created if missing; existing keys are never overwritten)
        #[arg(long)]
        out: PathBuf,
        /// Start of the key's validity (RFC 3339; default: now)
        #[arg(long)]
        valid_from: Option<String>,
        /// Print a JSON summary
        #[arg(long)]
        json: bool,
    },
    /// Sign a document (Core 0.2.1 header) and write it with its signature
    Sign {
        /// Private key file from `cookwala keygen`
        #[arg(long)]
        key: PathBuf,
        /// Key id for the signature (default: the key file's kid)
        #[arg(long)]
        kid: Option<String>,
        /// Signing time, RFC 3339 (default: now); verifiers judge key validity at this time
        #[arg(long)]
        signed_at: Option<String>,
        /// What is signed
        #[arg(long, value_enum, default_value = "document")]
        kind: KindArg,
        /// Write here instead of stdout
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// The document to sign
        doc: PathBuf,
    },
    /// Verify a signature; prints `ok` or the reason code (unknown_key, key_revoked, bad_signature, ...)
    Verify {
        /// Key set files: KeyRecord lists, /.well-known/cookwala.json, did:web documents or
        /// capabilities documents (repeatable; the first record with a matching kid is used)
        #[arg(long, required = true)]
        keys: Vec<PathBuf>,
        /// What was signed
        #[arg(long, value_enum, default_value = "document")]
        kind: KindArg,
        /// Print {"ok","reason",...}
        #[arg(long)]
        json: bool,
        /// The signed document
        doc: PathBuf,
    },
    /// Selective disclosure: salted digests that let a signed record hide a value
    #[command(subcommand)]
    Disclose(DiscloseCommand),
    /// Mission event logs: sequence events, checkpoint, witness, verify
    #[command(subcommand)]
    Log(LogCommand),
    /// Run the standard's conformance vectors
    #[command(subcommand)]
    Conformance(ConformanceCommand),
}

#[derive(Debug, Subcommand)]
enum DiscloseCommand {
    /// Create {digest, salt, value} for a value (digest = sha256 of JCS([salt, value]))
    Make {
        /// The value as JSON text
        #[arg(long)]
        value: Option<String>,
        /// A file holding the value
        #[arg(long)]
        value_file: Option<PathBuf>,
        /// Salt (base64url, at least 22 characters; default: 128 random bits)
        #[arg(long)]
        salt: Option<String>,
        /// Write here instead of stdout
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Check a disclosed copy; prints ok, digest_mismatch or not_disclosed
    Verify {
        /// Print {"ok","reason"}
        #[arg(long)]
        json: bool,
        /// The disclosure file
        file: PathBuf,
    },
    /// Keep only {digest}: the form that goes into a signed document
    Redact {
        /// Write here instead of stdout
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// The disclosure file
        file: PathBuf,
    },
}

#[derive(Debug, Args)]
struct SequencerOpts {
    /// The log file (NDJSON, one JCS event per line; created if missing)
    #[arg(long)]
    log: PathBuf,
    /// The sequencer's private key file
    #[arg(long)]
    key: PathBuf,
    /// Key id (default: the key file's kid)
    #[arg(long)]
    kid: Option<String>,
    /// Mission id every event carries
    #[arg(long)]
    mission: String,
    /// The sequencer's actor id (default: the kid)
    #[arg(long)]
    sequencer: Option<String>,
    /// hash_only mode: keep payloads in this folder and only their digests in the log
    #[arg(long)]
    payloads: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum LogCommand {
    /// Sequence and sign one event (seq, prev and hash are assigned by the sequencer)
    Append {
        #[command(flatten)]
        seq: SequencerOpts,
        /// Event type: created, progress, state_changed, committed, closed, ...
        #[arg(long = "type")]
        event_type: String,
        /// Who did it (default: the sequencer)
        #[arg(long)]
        actor: Option<String>,
        /// Payload as JSON text
        #[arg(long)]
        payload: Option<String>,
        /// For state_changed: the state left
        #[arg(long, requires = "to")]
        from: Option<String>,
        /// For state_changed: the state entered
        #[arg(long, requires = "from")]
        to: Option<String>,
        /// When it happened (RFC 3339; default: now)
        #[arg(long)]
        at: Option<String>,
        /// Print the whole event as JSON
        #[arg(long)]
        json: bool,
    },
    /// Issue a checkpoint of the current head, signed by the sequencer
    Checkpoint {
        #[command(flatten)]
        seq: SequencerOpts,
        /// Checkpoint time (RFC 3339; default: now)
        #[arg(long)]
        at: Option<String>,
        /// Write here instead of stdout
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Add a witness signature to a checkpoint
    Cosign {
        /// The witness's private key file
        #[arg(long)]
        key: PathBuf,
        /// Key id (default: the key file's kid)
        #[arg(long)]
        kid: Option<String>,
        /// The witness's actor id
        #[arg(long)]
        actor: String,
        /// Witness time (RFC 3339; default: now)
        #[arg(long)]
        at: Option<String>,
        /// Write here instead of stdout
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// The checkpoint file
        checkpoint: PathBuf,
    },
    /// Verify a log: seq, prev links, hashes, signatures; optionally a checkpoint and payloads
    ///
    /// Prints `ok <head>` or a reason such as hash_mismatch_at_2, head_mismatch or
    /// no_independent_witness. A torn final line is reported and the complete events verified.
    Verify {
        /// The log file
        #[arg(long)]
        log: PathBuf,
        /// Key set files (repeatable); without keys, signatures are not checked
        #[arg(long)]
        keys: Vec<PathBuf>,
        /// A checkpoint to verify against the log (needs an independent witness)
        #[arg(long)]
        checkpoint: Option<PathBuf>,
        /// hash_only payload folder: check every stored payload against its digest
        #[arg(long)]
        payloads: Option<PathBuf>,
        /// Print a JSON result
        #[arg(long)]
        json: bool,
    },
    /// Erase a hash_only payload (the log keeps verifying)
    Erase {
        /// The payload folder
        #[arg(long)]
        payloads: PathBuf,
        /// The payloadDigest to erase
        digest: String,
    },
    /// Compare two checkpoints of one mission: same seq, different head is a fork
    Fork {
        /// Print {"fork","reason"}
        #[arg(long)]
        json: bool,
        /// First checkpoint
        a: PathBuf,
        /// Second checkpoint
        b: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum ConformanceCommand {
    /// Run vector files: one line per suite, then `N passed, M failed`
    ///
    /// Without --suite every Core file and every profiles/*.json file is run, and the set's
    /// vectors hash is checked against VECTORS-HASH.txt. A suite this build cannot run counts
    /// as failed, never as skipped.
    Run {
        /// Folder of vector files (the standard's conformance/ folder)
        #[arg(long)]
        vectors: PathBuf,
        /// Run only these suites (repeatable), e.g. hash, ledger, profiles/sensor_trust
        #[arg(long = "suite")]
        suites: Vec<String>,
        /// Print {"suites":[...],"passed","failed"}
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}

/// Runs one command; `Ok(false)` means a check failed (exit 1) without an error message.
fn run(cli: Cli) -> Result<bool> {
    use commands::{canon, conformance, demo, disclose, keys};
    match cli.command {
        Command::Demo { out } => demo::run(out).map(|()| true),
        Command::Canon { file } => canon::canon(&file).map(|()| true),
        Command::Hash { file, json } => canon::hash(&file, json).map(|()| true),
        Command::Keygen { alg, kid, out, valid_from, json } => {
            keys::keygen(alg, &kid, &out, valid_from, json).map(|()| true)
        }
        Command::Sign { key, kid, signed_at, kind, out, doc } => {
            keys::sign(&keys::SignArgs { key, kid, signed_at, kind, doc, out }).map(|()| true)
        }
        Command::Verify { keys: key_files, kind, json, doc } => {
            keys::verify(&key_files, &doc, kind, json)
        }
        Command::Disclose(DiscloseCommand::Make { value, value_file, salt, out }) => {
            let value = disclose::value_from(value.as_deref(), value_file.as_deref())?;
            disclose::make(&value, salt, out.as_deref()).map(|()| true)
        }
        Command::Disclose(DiscloseCommand::Verify { json, file }) => disclose::verify(&file, json),
        Command::Disclose(DiscloseCommand::Redact { out, file }) => {
            disclose::redact(&file, out.as_deref()).map(|()| true)
        }
        Command::Log(command) => run_log(command),
        Command::Conformance(ConformanceCommand::Run { vectors, suites, json }) => {
            conformance::run(&vectors, &suites, json)
        }
    }
}

fn run_log(command: LogCommand) -> Result<bool> {
    use commands::log;
    let sequencer = |o: SequencerOpts| log::SequencerArgs {
        log: o.log,
        key: o.key,
        kid: o.kid,
        mission: o.mission,
        sequencer: o.sequencer,
        payloads: o.payloads,
    };
    match command {
        LogCommand::Append { seq, event_type, actor, payload, from, to, at, json } => {
            let payload = match payload {
                Some(text) => Some(
                    canonical_json::parse(text.as_bytes())
                        .map_err(|e| anyhow::anyhow!("--payload is not JSON: {e}"))?,
                ),
                None => None,
            };
            let event = log::EventArgs { actor, event_type, payload, transition: from.zip(to), at };
            log::append(&sequencer(seq), event, json).map(|()| true)
        }
        LogCommand::Checkpoint { seq, at, out } => {
            log::checkpoint(&sequencer(seq), at, out.as_deref()).map(|()| true)
        }
        LogCommand::Cosign { key, kid, actor, at, out, checkpoint } => {
            log::cosign(&key, kid, &actor, at, &checkpoint, out.as_deref()).map(|()| true)
        }
        LogCommand::Verify { log: file, keys, checkpoint, payloads, json } => {
            log::verify(&file, &keys, checkpoint.as_deref(), payloads.as_deref(), json)
        }
        LogCommand::Erase { payloads, digest } => log::erase(&payloads, &digest).map(|()| true),
        LogCommand::Fork { json, a, b } => log::fork(&a, &b, json).map(|fork| !fork),
    }
}
