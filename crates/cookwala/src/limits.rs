//! SafetyLimits: the built-in default pack and the "only ever narrowed" rule.
//!
//! [`default_pack`] is this project's own copy of the standard's default pack
//! (`cookwala-default`, 14 limits; COOKWALA.md §2.3), authored from its facts. Like the
//! standard's pack it is a **draft** for planning and conformance testing, not a safety case.
//!
//! Limits come only from the executor's side (the pack it was configured with). Nothing in a
//! recipe, request, mandate or `x-` extension is ever read as a limit; [`narrow`] is the one
//! way to combine packs, and it can only add limits.

use canonical_json::{Map, Value};

/// A limit row: id, kind, action, appliesTo (medium, ops, foodClass), min, max, unit, holdFor.
type Row = (
    &'static str,
    &'static str,
    &'static str,
    (Option<&'static str>, &'static [&'static str], Option<&'static str>),
    Option<f64>,
    Option<f64>,
    Option<&'static str>,
    Option<&'static str>,
);

#[rustfmt::skip]
const LIMITS: &[Row] = &[
    ("oil.max_temp", "max_temp", "cut_heat", (Some("oil"), &["cw.op.fry", "cw.op.deep_fry"], None), None, Some(200.0), Some("degC"), None),
    ("pan.max_surface", "max_temp", "cut_heat", (Some("pan_surface"), &[], None), None, Some(280.0), Some("degC"), None),
    ("pressure.max", "pressure", "cut_heat", (None, &["cw.op.pressure_cook"], None), None, Some(110.0), Some("kPa"), None),
    ("core.poultry", "min_core_temp", "ask_human", (None, &[], Some("poultry")), Some(74.0), None, Some("degC"), None),
    ("core.ground_meat", "min_core_temp", "ask_human", (None, &[], Some("ground_meat")), Some(71.0), None, Some("degC"), None),
    ("core.egg_dishes", "min_core_temp", "ask_human", (None, &[], Some("egg_dish")), Some(71.0), None, Some("degC"), None),
    ("core.reheat", "min_core_temp", "ask_human", (None, &[], Some("leftovers")), Some(74.0), None, Some("degC"), None),
    ("hold.hot", "time_temp", "alert", (None, &["cw.op.hold"], None), Some(60.0), None, Some("degC"), Some("PT2H")),
    ("cool.two_stage", "time_temp", "alert", (None, &["cw.op.cool"], None), None, None, Some("h"), None),
    ("presence.unattended", "unattended", "refuse_start", (None, &[], None), None, None, None, None),
    ("smoke.fire", "smoke_or_fire", "stop_all", (None, &[], None), None, None, None, None),
    ("allergen.block", "allergen_block", "refuse_start", (None, &[], None), None, None, None, None),
    ("stop.local", "stop", "stop_all", (None, &[], None), None, Some(0.5), Some("s"), None),
    ("input.untrusted", "untrusted_input", "alert", (None, &[], None), None, None, None, None),
];

/// Which authority each number of the default pack comes from (the standard's `source` of each
/// limit: a citation, a fact about the number, kept as the standard gives it).
fn source(id: &str) -> &'static str {
    match id {
        "oil.max_temp" => "Common frying-oil smoke points; fire-safety practice",
        "pan.max_surface" => {
            "Cookware safety practice (non-stick coatings degrade above about 260 °C)"
        }
        "pressure.max" => "Appliance safety practice",
        "core.poultry" => "USDA FSIS safe minimum internal temperatures; WHO Five Keys (70 °C)",
        "core.ground_meat" => "USDA FSIS safe minimum internal temperatures",
        "core.egg_dishes" => {
            "USDA FSIS; recipe may declare a lower target only for non-vulnerable diners"
        }
        "core.reheat" => "USDA FSIS",
        "hold.hot" => "WHO Five Keys to Safer Food",
        "cool.two_stage" => "US FDA Food Code cooling rule (adapted)",
        "allergen.block" => "Codex CXS 1-1985 allergen declaration; Cookwala Core requirement",
        "stop.local" => "Cookwala Core requirement (design target)",
        "input.untrusted" => "Cookwala Core requirement; OWASP LLM01",
        _ => "Cookwala Core requirement",
    }
}

fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        // Whole numbers are written as integers, as in the standard's pack.
        #[allow(clippy::cast_possible_truncation)]
        Value::from(x as i64)
    } else {
        canonical_json::Finite::new(x).map_or(Value::Null, Value::from)
    }
}

/// The built-in default SafetyLimits pack (`cookwala-default`, version `0.2.0`, draft).
pub fn default_pack() -> Value {
    let mut limits = Vec::new();
    for &(id, kind, action, (medium, ops, food), min, max, unit, hold) in LIMITS {
        let mut m = Map::new();
        m.insert("id".into(), id.into());
        m.insert("kind".into(), kind.into());
        m.insert("action".into(), action.into());
        m.insert("source".into(), source(id).into());
        let mut applies = Map::new();
        if let Some(md) = medium {
            applies.insert("medium".into(), md.into());
        }
        if !ops.is_empty() {
            applies.insert("ops".into(), Value::Array(ops.iter().map(|o| (*o).into()).collect()));
        }
        if let Some(f) = food {
            applies.insert("foodClass".into(), f.into());
        }
        if !applies.is_empty() {
            m.insert("appliesTo".into(), Value::Object(applies));
        }
        if let Some(x) = min {
            m.insert("min".into(), number(x));
        }
        if let Some(x) = max {
            m.insert("max".into(), number(x));
        }
        if let Some(u) = unit {
            m.insert("unit".into(), u.into());
        }
        if let Some(h) = hold {
            m.insert("holdFor".into(), h.into());
        }
        limits.push(Value::Object(m));
    }
    let mut pack = Map::new();
    pack.insert("core".into(), "0.2.0".into());
    pack.insert("kind".into(), "SafetyLimits".into());
    pack.insert("id".into(), "cookwala-default".into());
    pack.insert("version".into(), "0.2.0".into());
    pack.insert("status".into(), "draft".into());
    pack.insert("limits".into(), Value::Array(limits));
    pack.insert(
        "disclaimer".into(),
        "Draft limits for planning and conformance tests only. A device maker replaces or \
         tightens them from its own safety case and local law; they certify nothing."
            .into(),
    );
    Value::Object(pack)
}

/// Combines an executor's pack with extra limits (for instance a site pack). The result holds
/// every limit of both, so each check takes the stricter; nothing is removed or relaxed.
pub fn narrow(base: &Value, extra: &Value) -> Value {
    let mut out = base.clone();
    let more: Vec<Value> =
        extra.get("limits").and_then(Value::as_array).unwrap_or_default().to_vec();
    if let Some(Value::Array(list)) = out.as_object_mut().and_then(|m| m.get_mut("limits")) {
        list.extend(more);
    } else if let Some(m) = out.as_object_mut() {
        m.insert("limits".into(), Value::Array(more));
    }
    out
}
