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
    /// Walk through hashing, signing, disclosure and a witnessed log on built-in data
    ///
    /// Every artifact is written to --out (default: a new folder under the temp dir) so each
    /// step can be repeated with the other subcommands.
    Demo {
        /// Folder for the artifacts
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Cook a recipe on the simulator: dry run, then live progress, a log and a plot
    ///
    /// RECIPE is a built-in id (red-lentil-soup, vegetable-stock, chickpea-fritters,
    /// garlic-greens, oat-honey-loaf, cucumber-herb-salad) or a file. The device defaults to the
    /// recipe's built-in device, else the hob robot. Exit 0 when the execution completes.
    Cook {
        /// Built-in recipe id or recipe file
        recipe: String,
        /// Built-in device id (sim-hob-robot, sim-oven, sim-counter-arm) or capabilities file
        #[arg(long)]
        device: Option<String>,
        /// A person stays in the kitchen (needed for hot oil, open pans and blades)
        #[arg(long)]
        human_present: bool,
        /// Run N times real time (default: as fast as possible)
        #[arg(long)]
        speed: Option<f64>,
        /// Sensor-noise seed (same seed, same run)
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Inject a fault into the first heated step: sensor, overheat or timeout
        #[arg(long, value_parser = commands::cook::parse_fault)]
        fault: Option<cookwala_sim::FaultKind>,
        /// Write an SVG plot of every reading against its envelope band
        #[arg(long)]
        plot: Option<PathBuf>,
        /// Print the final status, log and incidents as JSON
        #[arg(long)]
        json: bool,
    },
    /// Run the hub: the Core HTTP API on simulated devices, stored in SQLite, until Ctrl-C
    ///
    /// Non-open endpoints need `Authorization: Bearer <token>`. Tokens and their roles (owner,
    /// cook, agent, viewer) live in a tokens file, DATA/tokens.json by default, created on first
    /// start (mode 0600) with one owner token; add entries by editing it ({"name", "role",
    /// "token" or "sha256", and "agent" for agent tokens). --token or the environment variable
    /// COOKWALA_HUB_TOKEN add an owner token for scripts. Open to all: capabilities, safety
    /// limits, recalls, incidents, stop, /.well-known/cookwala.json and /openapi.yaml.
    /// Executions left running by an unclean stop are ended safely on restart.
    ///
    /// Every device of the catalog (built-in, --bundle, --devices) is served under
    /// /devices/<id>/v1/...; the --device one also at /v1/... GET /v1/devices lists them.
    ///
    /// Events (CloudEvents 1.0) stream at GET /cookwala/v1/events (SSE, resumable with
    /// Last-Event-ID) and are POSTed to each --webhook, signed with X-Cookwala-Signature:
    /// sha256=<HMAC-SHA256 of the body>. The webhook secret is read from --webhook-secret-file
    /// or the environment variable COOKWALA_WEBHOOK_SECRET, never from the command line.
    Serve(commands::serve::ServeArgs),
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
    /// Convert kitchen quantities (tsp 5 ml, cup 240 ml, pinch 0.36 g, ...)
    ///
    /// Volume <-> mass needs --density (g/ml); without it the answer is the error
    /// needs_density, never a guess. Prints `VALUE UNIT` (rounded to 6 decimals).
    Convert {
        /// The amount
        #[arg(allow_negative_numbers = true)]
        value: f64,
        /// Its unit (tsp, tbsp, cup, pinch, dash, ml, l, g, kg, mg, or a cw.unit.* id)
        unit: String,
        /// The unit wanted
        #[arg(long)]
        to: String,
        /// Density in g/ml, for volume <-> mass
        #[arg(long = "density")]
        density: Option<f64>,
        #[command(flatten)]
        vocab: VocabOpt,
        /// Print {"value","unit"} or {"error","detail"}
        #[arg(long)]
        json: bool,
    },
    /// Check a temperature trace against an op envelope (or choose a ladder rung)
    ///
    /// Reasons: ok, no_thermal_envelope, target_outside_envelope, never_reached_envelope,
    /// left_envelope, missed_target. Water and steam bands shift by -1 °C per 300 m.
    Envelope {
        /// The op id, e.g. cw.op.simmer
        #[arg(long)]
        op: String,
        /// Trace file: [{"t":s,"tempC":x},...] or {"readings":[...]}
        #[arg(long, required_unless_present = "ladder")]
        trace: Option<PathBuf>,
        /// Target as JSON: {"value":94,"tolerance":3} (tolerance absolute, °C)
        #[arg(long)]
        target: Option<String>,
        /// Kitchen altitude in metres
        #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
        altitude: f64,
        /// Print the sensor-ladder rung this device would use instead of checking a trace
        #[arg(long, conflicts_with = "trace")]
        ladder: bool,
        /// With --ladder: a trusted sensor id (repeatable)
        #[arg(long = "sensor", requires = "ladder")]
        sensors: Vec<String>,
        /// With --ladder: the model rung may not be used
        #[arg(long, requires = "ladder")]
        no_model: bool,
        /// With --ladder: a person is present
        #[arg(long, requires = "ladder")]
        human_present: bool,
        #[command(flatten)]
        vocab: VocabOpt,
        /// Print {"envelopeOk","targetOk","reason"} (or {"choice"})
        #[arg(long)]
        json: bool,
    },
    /// Can this device cook this recipe? Refuse, don't guess (exit 1 when refused)
    ///
    /// Prints `accepted` or `refused: REASON at node N: DETAIL` and the plan; with --json
    /// {"state","reason","node","plan":[{"node","by","verifiedBy"}]}. Default limits: the
    /// built-in copy of the standard's default SafetyLimits pack.
    DryRun(DryRunOpts),
    /// Explain a dry run for a person: who does each step, which rung verifies it, and why
    Explain(DryRunOpts),
    /// An executor's checks for an ExecuteRequest, in the upstream hub's order, then the dry run
    ///
    /// Version, recipe found, recipe hash, recall, mandate (agent, start_cooking, expiry,
    /// signature with --keys, confirmBefore: irreversible always needs --confirmed), allergen
    /// blocks, untrusted text (reported as cw.incident.untrusted_instruction, never obeyed), busy.
    /// Prints {"state","reason","node","plan","findings"}; exit 1 when refused.
    Precheck {
        /// The ExecuteRequest
        #[arg(long)]
        request: PathBuf,
        /// The recipe this executor holds for it (omit: not in the catalog)
        #[arg(long)]
        recipe: Option<PathBuf>,
        /// The device's capabilities document
        #[arg(long)]
        device: PathBuf,
        /// A Recall in force (repeatable)
        #[arg(long = "recall")]
        recalls: Vec<PathBuf>,
        /// Key files to check the mandate signature with (repeatable)
        #[arg(long)]
        keys: Vec<PathBuf>,
        /// A confirmBefore category the principal confirmed (repeatable), e.g. irreversible
        #[arg(long)]
        confirmed: Vec<String>,
        /// The device is cooking something else
        #[arg(long)]
        busy: bool,
        /// A person is present
        #[arg(long)]
        human_present: bool,
        /// The device's SafetyLimits pack (default: built-in)
        #[arg(long)]
        limits: Option<PathBuf>,
        /// The current instant (RFC 3339; default: now)
        #[arg(long)]
        now: Option<String>,
        #[command(flatten)]
        vocab: VocabOpt,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Validate a document with cookwala's strict document types
    ///
    /// Unknown fields are errors unless they start with x-; Core documents must be 0.2.x
    /// (else unsupported_version). Each problem names its JSON pointer. Exit 1 when invalid.
    Validate {
        /// Document kind (default: detected): Recipe, Capabilities, SafetyLimits, KeyRecord,
        /// AgentMandate, Recall, IncidentReport, ExecuteRequest, ExecutionStatus, StopRequest,
        /// ExecutionLog, Disclosure, MissionEvent, Checkpoint
        #[arg(long)]
        kind: Option<String>,
        /// Also validate against the JSON Schemas in this folder (draft 2020-12, offline; e.g.
        /// the standard's schemas/ folder)
        #[arg(long)]
        schemas: Option<PathBuf>,
        #[command(flatten)]
        vocab: VocabOpt,
        /// Print {"kind","valid","errors":[{"pointer","code","message"}],"warnings":[...]}
        #[arg(long)]
        json: bool,
        /// The document
        file: PathBuf,
    },
    /// JSON Schemas: export ours, or build the offline SchemaBundle
    #[command(subcommand)]
    Schema(SchemaCommand),
    /// Migrate a 0.1 document to 0.2 and list every change
    ///
    /// °F → °C, relative temperature tolerances → toleranceAbs, money → decimal strings,
    /// unknown fields → x-<name>, version → 0.2.0; a stale hash/signature is removed.
    /// The document goes to stdout (or --out), the changes to stderr.
    Migrate {
        /// Document kind (default: detected)
        #[arg(long)]
        kind: Option<String>,
        /// Leave unknown fields in place and only report them
        #[arg(long)]
        report_unknown: bool,
        /// Write the migrated document here
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// Print {"document","changes":[{"pointer","change"}]}
        #[arg(long)]
        json: bool,
        /// The 0.1 document
        file: PathBuf,
    },
    /// Execution logs
    #[command(subcommand)]
    Logs(LogsCommand),
}

#[derive(Debug, Subcommand)]
enum LogsCommand {
    /// Build a dataset from execution logs: only consented, personal-data-free logs, scrubbed
    ///
    /// Writes one log per line (NDJSON) to --out and says which logs were left out and why.
    /// `open` datasets get every time coarsened to the day.
    Export {
        /// The dataset: research_only or open
        #[arg(long)]
        consent: String,
        /// Only logs started at or after this instant (RFC 3339)
        #[arg(long)]
        since: Option<String>,
        /// Output NDJSON file
        #[arg(long)]
        out: PathBuf,
        /// Print {"released","leftOut":[{"log","reason"}]}
        #[arg(long)]
        json: bool,
        /// ExecutionLog files (a file may hold an array of logs)
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum SchemaCommand {
    /// Write <Kind>.schema.json (draft 2020-12) generated from cookwala's document types
    Export {
        /// Output folder
        dir: PathBuf,
    },
    /// Build {"kind":"SchemaBundle","version","sha256","schemas"} from a schema folder
    Bundle {
        /// Folder searched recursively for *.schema.json
        #[arg(long)]
        from: PathBuf,
        /// Output file (the standard's tool calls it schemas-bundle.json)
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Debug, Args)]
struct VocabOpt {
    /// Load the standard's vocabulary (ops.json, units.json) from this folder instead of the
    /// built-in one
    #[arg(long = "vocab", value_name = "DIR")]
    vocab: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct DryRunOpts {
    /// The recipe
    #[arg(long, required_unless_present_any = ["batch", "recipes"])]
    recipe: Option<PathBuf>,
    /// The device's capabilities document
    #[arg(long, required_unless_present_any = ["batch", "recipes"])]
    device: Option<PathBuf>,
    /// Catalog × fleet: dry-run every recipe of DIR on every device of --devices, one JSON line
    /// per pair (with --batch: the recipes that lines name by "recipeId")
    #[arg(long, value_name = "DIR", conflicts_with_all = ["recipe", "device"])]
    recipes: Option<PathBuf>,
    /// The capabilities documents of the catalog × fleet run (with --batch: the devices that
    /// lines name by "deviceId")
    #[arg(long, value_name = "DIR", conflicts_with_all = ["recipe", "device"])]
    devices: Option<PathBuf>,
    /// A person is present in the kitchen
    #[arg(long)]
    human_present: bool,
    /// The model rung may not be used
    #[arg(long)]
    no_model: bool,
    /// The device's SafetyLimits pack (replaces the built-in default pack)
    #[arg(long, conflicts_with = "no_limits")]
    limits: Option<PathBuf>,
    /// Run without any SafetyLimits
    #[arg(long)]
    no_limits: bool,
    /// Judge sensor calibrations at this instant (RFC 3339; default: now)
    #[arg(long)]
    now: Option<String>,
    /// NDJSON file (- for stdin, streamed), one case per line:
    /// {"recipe","capabilities","humanPresent","allowModel","limits","now"}, documents also by
    /// file ("recipeFile","capabilitiesFile","limitsFile") or id ("recipeId","deviceId");
    /// one result per line
    #[arg(long, conflicts_with_all = ["recipe", "device", "limits", "no_limits", "human_present", "no_model", "now"])]
    batch: Option<PathBuf>,
    #[command(flatten)]
    vocab: VocabOpt,
    /// Print the JSON result
    #[arg(long)]
    json: bool,
    /// Explain the result for a person
    #[arg(long)]
    explain: bool,
}

impl DryRunOpts {
    fn into_args(self, explain: bool) -> commands::rules::DryRunArgs {
        commands::rules::DryRunArgs {
            vocab: self.vocab.vocab,
            recipe: self.recipe,
            device: self.device,
            human_present: self.human_present,
            no_model: self.no_model,
            limits: self.limits,
            no_limits: self.no_limits,
            now: self.now,
            batch: self.batch,
            recipes: self.recipes,
            devices: self.devices,
            json: self.json,
            explain: self.explain || explain,
        }
    }
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
    use commands::{canon, conformance, demo, disclose, keys, rules};
    match cli.command {
        Command::Demo { out } => demo::run(out).map(|()| true),
        Command::Cook { recipe, device, human_present, speed, seed, fault, plot, json } => {
            commands::cook::run(&commands::cook::CookArgs {
                recipe,
                device,
                human_present,
                speed,
                seed,
                fault,
                plot,
                json,
            })
        }
        Command::Serve(args) => commands::serve::run(args),
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
        Command::Convert { value, unit, to, density, vocab, json } => {
            rules::convert(vocab.vocab.as_deref(), value, &unit, &to, density, json)
        }
        Command::Envelope {
            op,
            trace,
            target,
            altitude,
            ladder,
            sensors,
            no_model,
            human_present,
            vocab,
            json,
        } => rules::envelope(&rules::EnvelopeArgs {
            vocab: vocab.vocab,
            op,
            trace,
            target,
            altitude,
            sensors,
            ladder,
            no_model,
            human_present,
            json,
        }),
        Command::DryRun(opts) => rules::dry_run(&opts.into_args(false)),
        Command::Explain(opts) => rules::dry_run(&opts.into_args(true)),
        Command::Precheck {
            request,
            recipe,
            device,
            recalls,
            keys,
            confirmed,
            busy,
            human_present,
            limits,
            now,
            vocab,
            json,
        } => rules::precheck(&rules::PrecheckArgs {
            vocab: vocab.vocab,
            request,
            recipe,
            device,
            recalls,
            keys,
            confirmed,
            busy,
            human_present,
            limits,
            now,
            json,
        }),
        Command::Validate { kind, schemas, vocab, json, file } => commands::validate::validate(
            &file,
            kind.as_deref(),
            schemas.as_deref(),
            vocab.vocab.as_deref(),
            json,
        ),
        Command::Schema(SchemaCommand::Export { dir }) => {
            commands::validate::export(&dir).map(|()| true)
        }
        Command::Migrate { kind, report_unknown, out, json, file } => {
            commands::docs::migrate(&file, kind.as_deref(), report_unknown, out.as_deref(), json)
        }
        Command::Logs(LogsCommand::Export { consent, since, out, json, inputs }) => {
            commands::docs::export(&consent, since.as_deref(), &inputs, &out, json)
        }
        Command::Schema(SchemaCommand::Bundle { from, out }) => {
            commands::validate::bundle(&from, &out).map(|()| true)
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
