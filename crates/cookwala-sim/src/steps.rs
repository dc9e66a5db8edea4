//! Turning plan rows into executable step specifications (bands, set points, durations).

use std::collections::HashMap;

use canonical_json::Value;
use cookwala::vocab::{Band, Vocabulary};

use crate::config::PlanStep;
use crate::physics::{Body, Contents};

/// Which heater a thermal step drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Heater {
    Hob,
    Oven,
}

#[derive(Clone, Debug)]
pub(crate) struct Thermal {
    pub medium: String,
    pub band: Band,
    pub body: Body,
    pub contents: Option<Contents>,
    pub heater: Heater,
    /// The recipe's target (inside the band), else the band's middle.
    pub target: f64,
    pub lid: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Comparison {
    pub sensor: String,
    pub gte: Option<f64>,
    pub lte: Option<f64>,
    pub hold_ms: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct StepSpec {
    pub row: PlanStep,
    pub thermal: Option<Thermal>,
    /// Time to run (non-thermal) or to hold in band (thermal, when no comparison decides).
    pub duration_ms: u64,
    pub min_ms: u64,
    pub max_ms: u64,
    pub comparisons: Vec<Comparison>,
    pub on_timeout: String,
    pub motion: bool,
    pub ladder: Vec<String>,
    /// The op envelope's medium (`oil`, `product`, `pressure`, …), thermal or not.
    pub envelope_medium: Option<String>,
    /// The node's `x-foodClass` (the class of the product this step cooks).
    pub food_classes: Vec<String>,
}

/// The food classes a recipe or node declares in `x-foodClass` (a string or a list).
///
/// Core 0.2 gives a recipe no field for the class of food it cooks, which the pack's
/// `min_core_temp` limits are keyed by (`appliesTo.foodClass`), so this project declares it
/// in the extension field `x-foodClass`: on a node, for the product that step cooks; at the
/// top level, for the finished dish.
pub(crate) fn food_classes(doc: Option<&Value>) -> Vec<String> {
    match doc.and_then(|d| d.get("x-foodClass")) {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

/// Parses `PnDTnHnMnS` (fractions allowed) into milliseconds.
pub(crate) fn duration_ms(text: &str) -> Option<u64> {
    let rest = text.strip_prefix('P')?;
    let (date, time) = rest.split_once('T').unwrap_or((rest, ""));
    let mut total = 0.0;
    let mut parse = |part: &str, units: &[(char, f64)]| -> Option<()> {
        let mut num = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' {
                num.push(c);
            } else {
                let (_, secs) = units.iter().find(|(u, _)| *u == c)?;
                total += num.parse::<f64>().ok()? * secs;
                num.clear();
            }
        }
        num.is_empty().then_some(())
    };
    parse(date, &[('D', 86_400.0), ('W', 604_800.0)])?;
    parse(time, &[('H', 3600.0), ('M', 60.0), ('S', 1.0)])?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ms = (total * 1000.0).round().max(0.0) as u64;
    Some(ms)
}

fn default_duration_s(op: &str) -> u64 {
    match op.trim_start_matches("cw.op.") {
        "boil" => 300,
        "simmer" | "braise" => 1200,
        "deep_fry" | "fry" => 240,
        "saute" | "stir_fry" | "sear" => 300,
        "bake" | "roast" => 1800,
        "heat" | "melt" | "toast" | "caramelize" => 180,
        "reduce" => 600,
        "wash" => 60,
        "cut" | "peel" | "trim" | "grate" => 120,
        "mix" | "whisk" | "fold" => 45,
        "dispense" | "transfer" | "drain" => 30,
        "season" | "garnish" | "serve" | "plate" => 15,
        "rest" => 300,
        _ => 60,
    }
}

fn moves(op: &str) -> bool {
    !matches!(
        op.trim_start_matches("cw.op."),
        "bake" | "roast" | "rest" | "wait" | "proof" | "chill" | "freeze" | "cool" | "hold"
    )
}

fn node_target(node: &Value) -> Option<f64> {
    let params = node.get("params");
    for key in ["tempC", "oilTempC"] {
        if let Some(x) = params.and_then(|p| p.get(key)).and_then(Value::as_f64) {
            return Some(x);
        }
    }
    let target = params.and_then(|p| p.get("target")).or_else(|| node.get("target"))?;
    let unit = target.get("unit").and_then(Value::as_str).unwrap_or("degC");
    if unit == "degC" || unit == "C" { target.get("value").and_then(Value::as_f64) } else { None }
}

fn comparisons(until: Option<&Value>) -> Vec<Comparison> {
    let Some(until) = until else { return Vec::new() };
    let mut out = Vec::new();
    let list = until.get("all").and_then(Value::as_array).unwrap_or_default();
    for c in list {
        let Some(sensor) = c.get("sensor").and_then(Value::as_str) else { continue };
        let between = c.get("between").and_then(Value::as_array).unwrap_or_default();
        let gte = c.get("gte").and_then(Value::as_f64).or_else(|| between.first()?.as_f64());
        let lte = c.get("lte").and_then(Value::as_f64).or_else(|| between.get(1)?.as_f64());
        if gte.is_none() && lte.is_none() {
            continue;
        }
        let hold_ms = c.get("holdFor").and_then(Value::as_str).and_then(duration_ms).unwrap_or(0);
        out.push(Comparison { sensor: sensor.to_owned(), gte, lte, hold_ms });
    }
    out
}

/// Builds the executable steps for `plan` from the recipe nodes and the vocabulary.
pub(crate) fn build(
    vocab: &Vocabulary,
    recipe: &Value,
    plan: &[PlanStep],
    altitude_m: f64,
) -> Vec<StepSpec> {
    let nodes = recipe.pointer("/process/nodes").and_then(Value::as_array).unwrap_or_default();
    // Each plan row's node by id, the first with that id as a search would find it: one index
    // instead of a search per row, which made a long chain quadratic (issue 22).
    let mut by_id: HashMap<&str, &Value> = HashMap::with_capacity(nodes.len());
    for n in nodes {
        if let Some(id) = n.get("id").and_then(Value::as_str) {
            by_id.entry(id).or_insert(n);
        }
    }
    let bp = 100.0 - altitude_m / 300.0;
    plan.iter()
        .map(|row| {
            let node = by_id.get(row.node.as_str()).copied();
            let envelope = vocab.op(&row.op).and_then(|o| o.envelope.as_ref());
            let ladder = envelope.map_or_else(
                || vec!["time".to_owned()],
                |e| e.ladder().into_iter().map(str::to_owned).collect(),
            );
            let thermal = envelope.and_then(|env| {
                let band = cookwala::envelope::shifted_band(env, altitude_m)?;
                let (body, contents, heater) = match env.medium.as_str() {
                    "water" | "steam" => (Body::Contents, Some(Contents::Water), Heater::Hob),
                    "oil" => (Body::Contents, Some(Contents::Oil), Heater::Hob),
                    "pan_surface" => (Body::Pan, Some(Contents::Food), Heater::Hob),
                    "product" if band.min > 25.0 => {
                        (Body::Contents, Some(Contents::Food), Heater::Hob)
                    }
                    "air" | "radiant" => (Body::OvenAir, None, Heater::Oven),
                    _ => return None,
                };
                let mid = f64::midpoint(band.min, band.max);
                let mut target =
                    node.and_then(node_target).filter(|t| band.contains(*t)).unwrap_or(mid);
                if contents == Some(Contents::Water) {
                    target = target.min(bp);
                }
                let lid = match env.lid.as_deref() {
                    Some("on") => true,
                    Some("off") => false,
                    _ => contents == Some(Contents::Water),
                };
                Some(Thermal {
                    medium: env.medium.clone(),
                    band,
                    body,
                    contents,
                    heater,
                    target,
                    lid,
                })
            });
            let until = node.and_then(|n| n.get("until"));
            let time = |k: &str| {
                until.and_then(|u| u.get(k)).and_then(Value::as_str).and_then(duration_ms)
            };
            let comps = comparisons(until);
            let nominal = time("nominalTime").or_else(|| time("minTime"));
            let min_ms = time("minTime").unwrap_or(0);
            let duration_ms = match (&thermal, comps.is_empty()) {
                (Some(_), false) => nominal.unwrap_or(min_ms),
                _ => nominal.unwrap_or(default_duration_s(&row.op) * 1000),
            };
            let reach_allowance = if thermal.is_some() { 40 * 60_000 } else { 0 };
            let max_ms = time("maxTime").unwrap_or(duration_ms * 2 + reach_allowance + 60_000);
            let on_timeout = node
                .and_then(|n| n.get("onTimeout"))
                .and_then(Value::as_str)
                .unwrap_or("ask_human")
                .to_owned();
            StepSpec {
                row: row.clone(),
                thermal,
                duration_ms,
                min_ms,
                max_ms,
                comparisons: comps,
                on_timeout,
                motion: !row.by_human && moves(&row.op),
                ladder,
                envelope_medium: envelope.map(|e| e.medium.clone()),
                food_classes: food_classes(node),
            }
        })
        .collect()
}
