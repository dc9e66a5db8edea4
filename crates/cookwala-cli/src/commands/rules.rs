//! `cookwala convert`, `cookwala envelope`, `cookwala dry-run` and `cookwala explain`.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use canonical_json::{Finite, Map, Value};
use cookwala::dryrun::{self, By, DryRun, Options};
use cookwala::envelope::{self, Target};
use cookwala::units;
use cookwala::vocab::Vocabulary;

use super::batch;
use crate::clock;
use crate::input::{display, read_json};
use crate::output::compact;

/// The vocabulary: the compiled-in one, or the standard's JSON files from `--vocab DIR`
/// (`ops.json` and `units.json`).
pub fn vocabulary(dir: Option<&Path>) -> Result<Cow<'static, Vocabulary>> {
    let Some(dir) = dir else { return Ok(Cow::Borrowed(Vocabulary::builtin())) };
    let ops = read_json(&dir.join("ops.json"))?;
    let units = read_json(&dir.join("units.json"))?;
    let vocab = Vocabulary::from_json(&ops, &units)
        .with_context(|| format!("{} is not a usable vocabulary", dir.display()))?;
    Ok(Cow::Owned(vocab))
}

fn number(x: f64) -> Value {
    Finite::new(x).map_or(Value::Null, Value::from)
}

/// Convert kitchen quantities (tsp 5 ml, cup 240 ml, pinch 0.36 g, ...)
///
/// Volume <-> mass needs --density (g/ml); without it the answer is the error
/// needs_density, never a guess. Prints `VALUE UNIT` (rounded to 6 decimals).
#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// The amount
    #[arg(allow_negative_numbers = true)]
    pub value: f64,
    /// Its unit (tsp, tbsp, cup, pinch, dash, ml, l, g, kg, mg, or a cw.unit.* id)
    pub unit: String,
    /// The unit wanted
    #[arg(long)]
    pub to: String,
    /// Density in g/ml, for volume <-> mass
    #[arg(long = "density")]
    pub density: Option<f64>,
    /// Load the standard's vocabulary (ops.json, units.json) from this folder instead of the
    /// built-in one
    #[arg(long = "vocab", value_name = "DIR")]
    pub vocab: Option<PathBuf>,
    /// Print {"value","unit"} or {"error","detail"}
    #[arg(long)]
    pub json: bool,
}

/// `cookwala convert VALUE UNIT --to UNIT [--density D]`.
pub fn convert(
    vocab_dir: Option<&Path>,
    value: f64,
    unit: &str,
    to: &str,
    density: Option<f64>,
    json: bool,
) -> Result<bool> {
    let vocab = vocabulary(vocab_dir)?;
    for id in [unit, to] {
        if let Some(w) = vocab.deprecation(id) {
            eprintln!("warning: {w}");
        }
    }
    match units::convert(&vocab, value, unit, to, density) {
        Ok(x) => {
            let x = units::round6(x);
            if json {
                let mut m = Map::new();
                m.insert("value".into(), number(x));
                m.insert("unit".into(), to.into());
                println!("{}", compact(&Value::Object(m))?);
            } else {
                println!("{} {to}", canonical_json::es_number_string(x));
            }
            Ok(true)
        }
        Err(e) => {
            if json {
                let mut m = Map::new();
                m.insert("error".into(), e.code().into());
                m.insert("detail".into(), e.to_string().into());
                println!("{}", compact(&Value::Object(m))?);
            } else {
                eprintln!("error: {}", e.code());
                if e.code() == "needs_density" {
                    eprintln!("{unit} -> {to} is volume <-> mass: pass --density G_PER_ML");
                } else {
                    eprintln!("{e}");
                }
            }
            Ok(false)
        }
    }
}

/// Check a temperature trace against an op envelope (or choose a ladder rung)
///
/// Reasons: ok, no_thermal_envelope, target_outside_envelope, never_reached_envelope,
/// left_envelope, missed_target. Water and steam bands shift by -1 °C per 300 m.
#[derive(Debug, clap::Args)]
pub struct EnvelopeArgs {
    /// The op id, e.g. cw.op.simmer
    #[arg(long)]
    pub op: String,
    /// Trace file: [{"t":s,"tempC":x},...] or {"readings":[...]}
    #[arg(long, required_unless_present = "ladder")]
    pub trace: Option<PathBuf>,
    /// Target as JSON: {"value":94,"tolerance":3} (tolerance absolute, °C)
    #[arg(long)]
    pub target: Option<String>,
    /// Kitchen altitude in metres
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub altitude: f64,
    /// Print the sensor-ladder rung this device would use instead of checking a trace
    #[arg(long, conflicts_with = "trace")]
    pub ladder: bool,
    /// With --ladder: a trusted sensor id (repeatable)
    #[arg(long = "sensor", requires = "ladder")]
    pub sensors: Vec<String>,
    /// With --ladder: the model rung may not be used
    #[arg(long, requires = "ladder")]
    pub no_model: bool,
    /// With --ladder: a person is present
    #[arg(long, requires = "ladder")]
    pub human_present: bool,
    /// Load the standard's vocabulary (ops.json, units.json) from this folder instead of the
    /// built-in one
    #[arg(long = "vocab", value_name = "DIR")]
    pub vocab: Option<PathBuf>,
    /// Print {"envelopeOk","targetOk","reason"} (or {"choice"})
    #[arg(long)]
    pub json: bool,
}

/// `cookwala envelope`: trace check, or `--ladder` for the rung choice.
pub fn envelope(args: &EnvelopeArgs) -> Result<bool> {
    let vocab = vocabulary(args.vocab.as_deref())?;
    if let Some(w) = vocab.deprecation(&args.op) {
        eprintln!("warning: {w}");
    }
    if args.ladder {
        let sensors: BTreeSet<String> = args.sensors.iter().cloned().collect();
        let choice =
            envelope::ladder_choice(&vocab, &args.op, &sensors, !args.no_model, args.human_present);
        if args.json {
            let mut m = Map::new();
            m.insert("choice".into(), choice.clone().map_or(Value::Null, Value::from));
            println!("{}", compact(&Value::Object(m))?);
        } else {
            println!("{}", choice.as_deref().unwrap_or("none: missing_sensor_no_fallback"));
        }
        return Ok(choice.is_some());
    }
    let Some(trace) = &args.trace else { bail!("--trace FILE is required (or use --ladder)") };
    let doc = read_json(trace)?;
    let readings = doc.get("readings").unwrap_or(&doc);
    let temps = cookwala::conformance::trace_temps(readings)
        .with_context(|| format!("{} is not a trace", display(trace)))?;
    let target = match &args.target {
        None => None,
        Some(text) => {
            let v = canonical_json::parse(text.as_bytes())
                .map_err(|e| anyhow::anyhow!("--target is not JSON: {e}"))?;
            cookwala::conformance::trace_target(Some(&v)).context("--target")?
        }
    };
    if !args.altitude.is_finite() {
        bail!("--altitude must be a finite number of metres");
    }
    let verdict = envelope::check_envelope(&vocab, &args.op, &temps, target, args.altitude)?;
    if args.json {
        println!("{}", compact(&verdict.to_value())?);
    } else {
        let band = vocab
            .op(&args.op)
            .and_then(|o| o.envelope.as_ref())
            .and_then(|e| envelope::shifted_band(e, args.altitude));
        match band {
            Some(b) => println!(
                "{}: band {}–{} °C{}",
                verdict.reason,
                canonical_json::es_number_string(b.min),
                canonical_json::es_number_string(b.max),
                target_note(target)
            ),
            None => println!("{}", verdict.reason),
        }
    }
    Ok(matches!(verdict.reason, "ok" | "no_thermal_envelope"))
}

fn target_note(target: Option<Target>) -> String {
    target.map_or(String::new(), |t| {
        format!(
            ", target {} ± {} °C",
            canonical_json::es_number_string(t.value),
            canonical_json::es_number_string(t.tolerance)
        )
    })
}

/// Can this device cook this recipe? Refuse, don't guess (exit 1 when refused)
///
/// Prints `accepted` or `refused: REASON at node N: DETAIL` and the plan; with --json
/// {"state","reason","node","plan":[{"node","by","verifiedBy"}]}. Default limits: the
/// built-in copy of the standard's default SafetyLimits pack.
#[derive(Debug, clap::Args)]
pub struct DryRunArgs {
    /// The recipe
    #[arg(long, required_unless_present_any = ["batch", "recipes"])]
    pub recipe: Option<PathBuf>,
    /// The device's capabilities document
    #[arg(long, required_unless_present_any = ["batch", "recipes"])]
    pub device: Option<PathBuf>,
    /// A person is present in the kitchen
    #[arg(long)]
    pub human_present: bool,
    /// The model rung may not be used
    #[arg(long)]
    pub no_model: bool,
    /// The device's SafetyLimits pack (replaces the built-in default pack)
    #[arg(long, conflicts_with = "no_limits")]
    pub limits: Option<PathBuf>,
    /// Run without any SafetyLimits
    #[arg(long)]
    pub no_limits: bool,
    /// Judge sensor calibrations at this instant (RFC 3339; default: now)
    #[arg(long)]
    pub now: Option<String>,
    /// NDJSON file (- for stdin, streamed), one case per line:
    /// {"recipe","capabilities","humanPresent","allowModel","limits","now"}, documents also by
    /// file ("recipeFile","capabilitiesFile","limitsFile") or id ("recipeId","deviceId");
    /// one result per line
    #[arg(long, conflicts_with_all = ["recipe", "device", "limits", "no_limits", "human_present", "no_model", "now"])]
    pub batch: Option<PathBuf>,
    /// Catalog × fleet: dry-run every recipe of DIR on every device of --devices, one JSON line
    /// per pair (with --batch: the recipes that lines name by "recipeId")
    #[arg(long, value_name = "DIR", conflicts_with_all = ["recipe", "device"])]
    pub recipes: Option<PathBuf>,
    /// The capabilities documents of the catalog × fleet run (with --batch: the devices that
    /// lines name by "deviceId")
    #[arg(long, value_name = "DIR", conflicts_with_all = ["recipe", "device"])]
    pub devices: Option<PathBuf>,
    /// Load the standard's vocabulary (ops.json, units.json) from this folder instead of the
    /// built-in one
    #[arg(long = "vocab", value_name = "DIR")]
    pub vocab: Option<PathBuf>,
    /// Print the JSON result
    #[arg(long)]
    pub json: bool,
    /// Explain the result for a person
    #[arg(long)]
    pub explain: bool,
    /// Worker threads for --batch and the catalog × fleet run (default: the cores available);
    /// the output is the same bytes for any N
    #[arg(long, value_name = "N")]
    pub jobs: Option<std::num::NonZeroUsize>,
}

/// `--jobs N`, else the cores this process may use.
pub(crate) fn jobs(requested: Option<std::num::NonZeroUsize>) -> usize {
    requested
        .or_else(|| std::thread::available_parallelism().ok())
        .map_or(1, std::num::NonZeroUsize::get)
}

/// `cookwala dry-run` (and `explain`).
pub fn dry_run(args: &DryRunArgs) -> Result<bool> {
    let vocab = vocabulary(args.vocab.as_deref())?;
    let recipes = args.recipes.as_deref().map(batch::Catalog::load).transpose()?;
    let devices = args.devices.as_deref().map(batch::Catalog::load).transpose()?;
    if let Some(path) = &args.batch {
        let batch = batch::Batch {
            path,
            recipes: recipes.as_ref(),
            devices: devices.as_ref(),
            jobs: jobs(args.jobs),
        };
        return batch::run_batch(&vocab, &batch);
    }
    let limits = if args.no_limits {
        None
    } else {
        Some(match &args.limits {
            Some(path) => read_json(path)?,
            None => cookwala::limits::default_pack(),
        })
    };
    if recipes.is_some() || devices.is_some() {
        let (Some(recipes), Some(devices)) = (&recipes, &devices) else {
            bail!("--recipes DIR and --devices DIR go together")
        };
        let matrix = batch::Matrix {
            recipes,
            devices,
            human_present: args.human_present,
            allow_model: !args.no_model,
            limits: limits.as_ref(),
            now: clock::parse_now(args.now.as_deref())?,
            jobs: jobs(args.jobs),
        };
        return batch::run_matrix(&vocab, &matrix);
    }
    let (Some(recipe), Some(device)) = (&args.recipe, &args.device) else {
        bail!(
            "--recipe FILE and --device FILE are required (or --batch FILE.ndjson, or \
             --recipes DIR --devices DIR)"
        )
    };
    let recipe_doc = read_json(recipe)?;
    let device_doc = read_json(device)?;
    let options = Options {
        human_present: args.human_present,
        allow_model: !args.no_model,
        limits: limits.as_ref(),
        now: clock::parse_now(args.now.as_deref())?,
    };
    let result = dryrun::dry_run(&vocab, &recipe_doc, &device_doc, options)
        .with_context(|| format!("{} cannot be dry-run", display(recipe)))?;
    for w in &result.warnings {
        eprintln!("warning: {w}");
    }
    if args.explain {
        print!("{}", explain(&vocab, &result, &options));
    } else if args.json {
        println!("{}", compact(&result.summary())?);
    } else {
        print_text(&result);
    }
    Ok(result.refusal.is_none())
}

fn print_text(result: &DryRun) {
    match &result.refusal {
        None => println!("accepted"),
        Some(r) => println!(
            "refused: {} at node {}: {}",
            r.reason,
            r.node.as_deref().unwrap_or("-"),
            r.detail
        ),
    }
    for row in &result.plan {
        let rung = row.rung.filter(|r| *r != row.verified_by).unwrap_or("");
        println!("  {}\t{}\t{}\t{}\t{rung}", row.node, row.op, row.by.as_str(), row.verified_by);
    }
}

/// A plain-language account of a dry run: who does each step, which rung verifies it and why,
/// and why a refusal happened.
pub fn explain(vocab: &Vocabulary, result: &DryRun, options: &Options<'_>) -> String {
    let mut out = String::new();
    let presence = if options.human_present { "a person is present" } else { "nobody is present" };
    let model = if options.allow_model { "models allowed" } else { "models not allowed" };
    out.push_str(&format!("Dry run ({presence}, {model}):\n"));
    for row in &result.plan {
        let why = match (row.by, row.rung) {
            (By::Human, _) => {
                "the device cannot do this op, so the person present does it and confirms it"
                    .to_owned()
            }
            (By::Device, Some(rung)) if row.verified_by == "sensor" => {
                format!("checked by the trusted sensor {rung}, the best rung this device has")
            }
            (By::Device, Some("model")) => {
                "no trusted sensor for the better rungs; a model estimates when it is done".into()
            }
            (By::Device, Some("time")) => {
                if vocab.op(row.op).and_then(|o| o.envelope.as_ref()).is_some() {
                    "no usable sensor or model rung; the step runs for its recipe time".into()
                } else {
                    "the op has no envelope; it is timed".into()
                }
            }
            (By::Device, Some("human")) => {
                "no sensor or model may verify it; the person present confirms it".into()
            }
            (By::Device, _) => "verified as planned".into(),
        };
        let who = match row.by {
            By::Device => "the device",
            By::Human => "a person",
        };
        out.push_str(&format!(
            "- {} ({}): done by {who}, verified by {} — {why}\n",
            row.node, row.op, row.verified_by
        ));
    }
    match &result.refusal {
        None => out.push_str("Accepted: every step can be done and verified.\n"),
        Some(r) => {
            let node = r.node.as_deref().unwrap_or("-");
            let hint = match r.reason.as_str() {
                "missing_capability" => {
                    "the device does not declare this op and no person can take it over"
                }
                "envelope_out_of_range" => {
                    "a number in the step is outside the op's safe envelope (or not a number)"
                }
                "safety_limit" => "a local safety limit of this device would fire",
                "needs_human_present" => "this op may not run unattended; a person must be present",
                "missing_sensor_no_fallback" => {
                    "no rung of the op's sensor ladder can be satisfied on this device"
                }
                _ => "see the detail",
            };
            out.push_str(&format!(
                "Refused at {node}: {} — {hint}.\n  detail: {}\n",
                r.reason, r.detail
            ));
        }
    }
    for w in &result.warnings {
        out.push_str(&format!("Warning: {w}\n"));
    }
    out
}

/// An executor's checks for an ExecuteRequest, in the upstream hub's order, then the dry run
///
/// Version, recipe found, recipe hash, recall, mandate (agent, start_cooking, expiry,
/// signature with --keys, confirmBefore: irreversible always needs --confirmed), allergen
/// blocks, untrusted text (reported as cw.incident.untrusted_instruction, never obeyed), busy.
/// Prints {"state","reason","node","plan","findings"}; exit 1 when refused.
#[derive(Debug, clap::Args)]
pub struct PrecheckArgs {
    /// The ExecuteRequest
    #[arg(long)]
    pub request: PathBuf,
    /// The recipe this executor holds for it (omit: not in the catalog)
    #[arg(long)]
    pub recipe: Option<PathBuf>,
    /// The device's capabilities document
    #[arg(long)]
    pub device: PathBuf,
    /// A Recall in force (repeatable)
    #[arg(long = "recall")]
    pub recalls: Vec<PathBuf>,
    /// Key files to check the mandate signature with (repeatable)
    #[arg(long)]
    pub keys: Vec<PathBuf>,
    /// A confirmBefore category the principal confirmed (repeatable), e.g. irreversible
    #[arg(long)]
    pub confirmed: Vec<String>,
    /// The device is cooking something else
    #[arg(long)]
    pub busy: bool,
    /// A person is present
    #[arg(long)]
    pub human_present: bool,
    /// The device's SafetyLimits pack (default: built-in)
    #[arg(long)]
    pub limits: Option<PathBuf>,
    /// The current instant (RFC 3339; default: now)
    #[arg(long)]
    pub now: Option<String>,
    /// Load the standard's vocabulary (ops.json, units.json) from this folder instead of the
    /// built-in one
    #[arg(long = "vocab", value_name = "DIR")]
    pub vocab: Option<PathBuf>,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

/// `cookwala precheck`: the executor's checks in order, then the dry run.
pub fn precheck(args: &PrecheckArgs) -> Result<bool> {
    use cookwala::precheck::{Context as Pre, precheck};
    let vocab = vocabulary(args.vocab.as_deref())?;
    let request = read_json(&args.request)?;
    let recipe = args.recipe.as_deref().map(read_json).transpose()?;
    let device = read_json(&args.device)?;
    let recalls: Vec<Value> = args.recalls.iter().map(|p| read_json(p)).collect::<Result<_>>()?;
    let keys = if args.keys.is_empty() {
        None
    } else {
        let mut set = cookwala::KeySet::new();
        for path in &args.keys {
            let doc = read_json(path)?;
            set.extend(
                cookwala::KeySet::from_value(&doc)
                    .with_context(|| format!("{} holds no usable keys", display(path)))?,
            );
        }
        Some(set)
    };
    let now = clock::parse_now(args.now.as_deref())?;
    let ctx = Pre {
        request: &request,
        recipe: recipe.as_ref(),
        recalls: &recalls,
        keys: keys.as_ref(),
        confirmed: &args.confirmed,
        busy: args.busy,
        now,
    };
    let outcome = precheck(&ctx).map_err(|e| anyhow::anyhow!("bad request (HTTP 400): {e}"))?;
    let limits = match &args.limits {
        Some(path) => read_json(path)?,
        None => cookwala::limits::default_pack(),
    };
    let mut result = match (&outcome.refusal, &recipe) {
        (None, Some(recipe)) => {
            let options = Options {
                human_present: args.human_present,
                allow_model: true,
                limits: Some(&limits),
                now,
            };
            dryrun::dry_run(&vocab, recipe, &device, options)?.summary()
        }
        (refusal, _) => {
            let mut m = Map::new();
            m.insert("state".into(), "refused".into());
            let reason = refusal.as_ref().map_or(Value::Null, |r| r.reason.as_str().into());
            m.insert("reason".into(), reason);
            m.insert("node".into(), Value::Null);
            m.insert("plan".into(), Value::Array(Vec::new()));
            if let Some(r) = refusal {
                m.insert("detail".into(), r.detail.as_str().into());
            }
            Value::Object(m)
        }
    };
    let findings: Vec<Value> = outcome
        .findings
        .iter()
        .map(|f| {
            let mut m = Map::new();
            m.insert("incident".into(), f.incident.as_str().into());
            m.insert("where".into(), f.location.as_str().into());
            m.insert("action".into(), f.action.as_str().into());
            Value::Object(m)
        })
        .collect();
    for f in &outcome.findings {
        eprintln!("incident {}: instruction-like text at {} ignored", f.incident, f.location);
    }
    if let Some(m) = result.as_object_mut() {
        m.insert("findings".into(), Value::Array(findings));
    }
    let accepted = result.get("state").and_then(Value::as_str) == Some("accepted");
    if args.json {
        println!("{}", compact(&result)?);
    } else if accepted {
        println!("accepted");
    } else {
        let reason = result.get("reason").and_then(Value::as_str).unwrap_or("-");
        let node = result.get("node").and_then(Value::as_str).unwrap_or("-");
        let detail = result.get("detail").and_then(Value::as_str).unwrap_or("");
        println!("refused: {reason} at node {node} {detail}");
    }
    Ok(accepted)
}
