//! `cookwala convert`, `cookwala envelope`, `cookwala dry-run` and `cookwala explain`.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use canonical_json::{Finite, Map, Value};
use cookwala::dryrun::{self, By, DryRun, Options};
use cookwala::envelope::{self, Target};
use cookwala::time::{Instant, parse_timestamp};
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

/// Arguments of `cookwala envelope`.
#[derive(Debug)]
pub struct EnvelopeArgs {
    /// Vocabulary folder.
    pub vocab: Option<PathBuf>,
    /// The op.
    pub op: String,
    /// Trace file: `[{t, tempC}]` or `{"readings": [...]}`.
    pub trace: Option<PathBuf>,
    /// Target JSON text `{value, tolerance}`.
    pub target: Option<String>,
    /// Kitchen altitude in metres.
    pub altitude: f64,
    /// Ladder mode: trusted sensor ids.
    pub sensors: Vec<String>,
    /// Ladder mode.
    pub ladder: bool,
    /// Disallow the model rung.
    pub no_model: bool,
    /// A person is present.
    pub human_present: bool,
    /// JSON output.
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

/// Arguments of `cookwala dry-run` / `cookwala explain`.
#[derive(Debug)]
pub struct DryRunArgs {
    /// Vocabulary folder.
    pub vocab: Option<PathBuf>,
    /// Recipe file.
    pub recipe: Option<PathBuf>,
    /// Capabilities file.
    pub device: Option<PathBuf>,
    /// A person is present.
    pub human_present: bool,
    /// Disallow the model rung.
    pub no_model: bool,
    /// SafetyLimits file.
    pub limits: Option<PathBuf>,
    /// Run without limits.
    pub no_limits: bool,
    /// Instant for calibrations.
    pub now: Option<String>,
    /// NDJSON batch file.
    pub batch: Option<PathBuf>,
    /// Recipes folder (catalog × fleet, or ids for batch lines).
    pub recipes: Option<PathBuf>,
    /// Capabilities folder (catalog × fleet, or ids for batch lines).
    pub devices: Option<PathBuf>,
    /// JSON output.
    pub json: bool,
    /// Explain for a person.
    pub explain: bool,
}

pub(crate) fn parse_now(text: Option<&str>) -> Result<Instant> {
    let owned;
    let text = match text {
        Some(t) => t,
        None => {
            owned = clock::now_rfc3339();
            &owned
        }
    };
    parse_timestamp(text).map_err(|e| anyhow::anyhow!("--now {text:?}: {e}"))
}

/// `cookwala dry-run` (and `explain`).
pub fn dry_run(args: &DryRunArgs) -> Result<bool> {
    let vocab = vocabulary(args.vocab.as_deref())?;
    let recipes = args.recipes.as_deref().map(batch::Catalog::load).transpose()?;
    let devices = args.devices.as_deref().map(batch::Catalog::load).transpose()?;
    if let Some(path) = &args.batch {
        let batch = batch::Batch { path, recipes: recipes.as_ref(), devices: devices.as_ref() };
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
            now: parse_now(args.now.as_deref())?,
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
        now: parse_now(args.now.as_deref())?,
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

/// Arguments of `cookwala precheck`.
#[derive(Debug)]
pub struct PrecheckArgs {
    /// Vocabulary folder.
    pub vocab: Option<PathBuf>,
    /// ExecuteRequest file.
    pub request: PathBuf,
    /// The recipe this executor holds for the request (absent: not in the catalog).
    pub recipe: Option<PathBuf>,
    /// Capabilities file.
    pub device: PathBuf,
    /// Recall files.
    pub recalls: Vec<PathBuf>,
    /// Key files for the mandate signature.
    pub keys: Vec<PathBuf>,
    /// Confirmed `confirmBefore` categories.
    pub confirmed: Vec<String>,
    /// The device is busy.
    pub busy: bool,
    /// A person is present.
    pub human_present: bool,
    /// SafetyLimits file (default: built-in pack).
    pub limits: Option<PathBuf>,
    /// Current instant.
    pub now: Option<String>,
    /// JSON output.
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
    let now = parse_now(args.now.as_deref())?;
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
