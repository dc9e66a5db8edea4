//! The Cookwala vocabulary: operations with their envelopes, heat levels, units and sensors.
//!
//! The built-in vocabulary ([`Vocabulary::builtin`]) is authored here, in this project's own
//! compact table format, and compiled in, so nothing needs external files. The facts (ids, °C
//! bands, ladders, conversion factors) are those of the standard's `vocab/ops.json` and
//! `vocab/units.json`; a test compares every id and number with those files.
//!
//! [`Vocabulary::from_json`] loads the standard's own JSON files instead (the CLI's
//! `--vocab DIR`). Evolution follows the standard: entries are only added; a changed meaning is a
//! new id and the old entry carries `deprecated: true` and `replacedBy`. A deprecated entry keeps
//! its old meaning (the dry run still checks it with its own envelope) and callers report
//! [`Vocabulary::deprecation`] as a warning naming the replacement.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::OnceLock;

use canonical_json::Value;

/// A closed interval of numbers (°C or kPa).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Band {
    /// Lower bound (inclusive).
    pub min: f64,
    /// Upper bound (inclusive).
    pub max: f64,
}

impl Band {
    /// `min ≤ x ≤ max`.
    pub fn contains(self, x: f64) -> bool {
        self.min <= x && x <= self.max
    }

    /// True when the two bands share at least one point.
    pub fn overlaps(self, other: Band) -> bool {
        !(self.max < other.min || self.min > other.max)
    }
}

/// An operation envelope (COOKWALA.md §5.1).
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    /// `air`, `ambient`, `none`, `oil`, `pan_surface`, `pressure`, `product`, `radiant`, `steam`,
    /// `water`.
    pub medium: String,
    /// The medium's temperature band.
    pub temp_c: Option<Band>,
    /// Gauge pressure band.
    pub pressure_kpa: Option<Band>,
    /// `none` | `occasional` | `frequent` | `continuous`.
    pub agitation: Option<String>,
    /// `any` | `on` | `off`.
    pub lid: Option<String>,
    /// Verification rungs, best first (sensor ids, `model`, `time`, `human`); `None` when the
    /// entry gives no ladder (then `["time"]` applies).
    pub sensor_ladder: Option<Vec<String>>,
    /// `none` | `periodic` | `monitor` | `continuous`.
    pub attention: Option<String>,
    /// May run with nobody present (absent means true, as in the reference).
    pub unattended: bool,
    /// Hazard ids.
    pub hazards: Vec<String>,
}

impl Envelope {
    /// The ladder, defaulting to `["time"]`.
    pub fn ladder(&self) -> Vec<&str> {
        match &self.sensor_ladder {
            Some(rungs) => rungs.iter().map(String::as_str).collect(),
            None => vec!["time"],
        }
    }

    /// True for media whose band shifts with altitude (`water`, `steam`).
    pub fn shifts_with_altitude(&self) -> bool {
        matches!(self.medium.as_str(), "water" | "steam")
    }
}

/// An operation (`cw.op.*`).
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    /// The id.
    pub id: String,
    /// Operation families (`cw.opfamily.*`).
    pub classes: Vec<String>,
    /// Sensors the operation can use.
    pub sensors: Vec<String>,
    /// False only for ops a device never runs (`cw.op.legacy_step`).
    pub executable: bool,
    /// The envelope, if the op has one (an empty envelope counts as none).
    pub envelope: Option<Envelope>,
    /// Marked deprecated.
    pub deprecated: bool,
    /// The id that replaces a deprecated entry.
    pub replaced_by: Option<String>,
}

/// A unit with a conversion to its base (`cw.unit.*`).
#[derive(Clone, Debug, PartialEq)]
pub struct UnitDef {
    /// The id (`cw.unit.tsp`).
    pub id: String,
    /// Base unit (`ml` or `g`).
    pub to: String,
    /// Factor to the base.
    pub factor: f64,
    /// Marked deprecated.
    pub deprecated: bool,
    /// Replacement id.
    pub replaced_by: Option<String>,
}

/// A hob heat level (`cw.heat.*`) with its pan-surface band.
#[derive(Clone, Debug, PartialEq)]
pub struct HeatLevel {
    /// The id (`cw.heat.medium`).
    pub id: String,
    /// Steady-state pan-surface temperature band.
    pub surface_temp_c: Band,
    /// Marked deprecated.
    pub deprecated: bool,
    /// Replacement id.
    pub replaced_by: Option<String>,
}

/// A loaded vocabulary.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Vocabulary {
    ops: BTreeMap<String, Op>,
    units: BTreeMap<String, UnitDef>,
    heat: BTreeMap<String, HeatLevel>,
    sensors: BTreeSet<String>,
    /// Dense index of every op id (for the dry run's bitsets).
    op_pos: HashMap<String, usize>,
    /// Dense index of every sensor id.
    sensor_pos: HashMap<String, usize>,
    /// Ops by dense index, with their ladders resolved (for the dry run).
    resolved: Vec<(Op, Vec<RungSpec>)>,
}

/// What a ladder rung is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RungKind {
    Model,
    Time,
    Human,
    Sensor,
}

/// A ladder rung resolved against the vocabulary's sensor index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RungSpec {
    pub(crate) name: String,
    pub(crate) kind: RungKind,
    pub(crate) sensor: Option<usize>,
}

/// A vocabulary file that cannot be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{pointer}: {message}")]
pub struct VocabError {
    /// JSON pointer of the offending value.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

fn verr(pointer: impl Into<String>, message: impl Into<String>) -> VocabError {
    VocabError { pointer: pointer.into(), message: message.into() }
}

impl Vocabulary {
    /// The compiled-in vocabulary (built once, then shared).
    pub fn builtin() -> &'static Vocabulary {
        static BUILTIN: OnceLock<Vocabulary> = OnceLock::new();
        BUILTIN.get_or_init(builtin::build)
    }

    /// Loads the standard's `ops.json` and `units.json` documents.
    ///
    /// # Errors
    /// [`VocabError`] naming the JSON pointer of a malformed entry.
    pub fn from_json(ops: &Value, units: &Value) -> Result<Vocabulary, VocabError> {
        let mut vocab = Vocabulary::default();
        for (i, entry) in entries(ops)?.iter().enumerate() {
            let op = parse_op(entry, &format!("/entries/{i}"))?;
            for s in &op.sensors {
                vocab.sensors.insert(s.clone());
            }
            if let Some(env) = &op.envelope {
                for rung in env.ladder() {
                    if rung.starts_with("cw.") || rung.starts_with("x-") {
                        vocab.sensors.insert(rung.to_owned());
                    }
                }
            }
            vocab.ops.insert(op.id.clone(), op);
        }
        for (i, entry) in entries(units)?.iter().enumerate() {
            let at = format!("/entries/{i}");
            let id = str_at(entry, "id", &at)?;
            let (deprecated, replaced_by) = deprecation_of(entry, &at)?;
            if let Some(conv) = entry.get("convert") {
                let to = str_at(conv, "to", &format!("{at}/convert"))?;
                let factor = num_at(conv, "factor", &format!("{at}/convert"))?;
                let unit = UnitDef { id: id.clone(), to, factor, deprecated, replaced_by };
                vocab.units.insert(id, unit);
            } else if let Some(band) = entry.get("surfaceTempC") {
                let surface_temp_c = band_at(band, &format!("{at}/surfaceTempC"))?;
                let level = HeatLevel { id: id.clone(), surface_temp_c, deprecated, replaced_by };
                vocab.heat.insert(id, level);
            }
        }
        vocab.reindex();
        Ok(vocab)
    }

    fn reindex(&mut self) {
        self.op_pos = self.ops.keys().enumerate().map(|(i, k)| (k.clone(), i)).collect();
        self.sensor_pos = self.sensors.iter().enumerate().map(|(i, k)| (k.clone(), i)).collect();
        let sensor_pos = &self.sensor_pos;
        self.resolved = self
            .ops
            .values()
            .map(|op| {
                let ladder = op.envelope.as_ref().map_or_else(Vec::new, |env| {
                    env.ladder()
                        .into_iter()
                        .map(|r| {
                            let kind = match r {
                                "model" => RungKind::Model,
                                "time" => RungKind::Time,
                                "human" => RungKind::Human,
                                _ => RungKind::Sensor,
                            };
                            RungSpec {
                                name: r.to_owned(),
                                kind,
                                sensor: sensor_pos.get(r).copied(),
                            }
                        })
                        .collect()
                });
                (op.clone(), ladder)
            })
            .collect();
    }

    /// One lookup for the dry run: the op's dense index, entry and resolved ladder.
    pub(crate) fn op_resolved(&self, id: &str) -> Option<(usize, &Op, &[RungSpec])> {
        let i = *self.op_pos.get(id)?;
        self.resolved.get(i).map(|(op, ladder)| (i, op, ladder.as_slice()))
    }

    /// The dense index of an op (`0..ops().count()`).
    pub fn op_index(&self, id: &str) -> Option<usize> {
        self.op_pos.get(id).copied()
    }

    /// The dense index of a sensor id the vocabulary mentions.
    pub fn sensor_index(&self, id: &str) -> Option<usize> {
        self.sensor_pos.get(id).copied()
    }

    /// Number of sensor ids.
    pub fn sensor_count(&self) -> usize {
        self.sensors.len()
    }

    /// Number of ops.
    pub fn op_count(&self) -> usize {
        self.ops.len()
    }

    /// A heat level by its short name (`max`), without allocating; the reference's lookup.
    pub fn heat_level_short(&self, name: &str) -> Option<&HeatLevel> {
        self.heat.values().find(|h| h.id.strip_prefix("cw.heat.") == Some(name))
    }

    /// The operation with this id.
    pub fn op(&self, id: &str) -> Option<&Op> {
        self.ops.get(id)
    }

    /// Every operation, by id.
    pub fn ops(&self) -> impl Iterator<Item = &Op> {
        self.ops.values()
    }

    /// A unit by its full id (`cw.unit.tsp`) or short name (`tsp`).
    pub fn unit(&self, name: &str) -> Option<&UnitDef> {
        self.units.get(name).or_else(|| self.units.get(&format!("cw.unit.{name}")))
    }

    /// Every unit with a conversion.
    pub fn units(&self) -> impl Iterator<Item = &UnitDef> {
        self.units.values()
    }

    /// A heat level by full id (`cw.heat.max`) or short name (`max`).
    pub fn heat_level(&self, name: &str) -> Option<&HeatLevel> {
        self.heat.get(name).or_else(|| self.heat.get(&format!("cw.heat.{name}")))
    }

    /// Every heat level.
    pub fn heat_levels(&self) -> impl Iterator<Item = &HeatLevel> {
        self.heat.values()
    }

    /// Every sensor id the vocabulary mentions (op sensors and ladder rungs).
    pub fn sensors(&self) -> &BTreeSet<String> {
        &self.sensors
    }

    /// A warning for a deprecated op, unit or heat level: `"<id> is deprecated; use <id>"`.
    pub fn deprecation(&self, id: &str) -> Option<String> {
        let (dep, repl) = if let Some(op) = self.ops.get(id) {
            (op.deprecated, op.replaced_by.as_deref())
        } else if let Some(u) = self.unit(id) {
            (u.deprecated, u.replaced_by.as_deref())
        } else if let Some(h) = self.heat_level(id) {
            (h.deprecated, h.replaced_by.as_deref())
        } else {
            return None;
        };
        dep.then(|| match repl {
            Some(r) => format!("{id} is deprecated; use {r}"),
            None => format!("{id} is deprecated"),
        })
    }

    /// Adds or replaces an op (for tests and extension vocabularies).
    pub fn insert_op(&mut self, op: Op) {
        self.ops.insert(op.id.clone(), op);
        self.reindex();
    }
}

fn entries(doc: &Value) -> Result<&[Value], VocabError> {
    doc.get("entries").and_then(Value::as_array).ok_or_else(|| verr("/entries", "not an array"))
}

fn str_at(v: &Value, key: &str, at: &str) -> Result<String, VocabError> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| verr(format!("{at}/{key}"), "missing or not a string"))
}

fn num_at(v: &Value, key: &str, at: &str) -> Result<f64, VocabError> {
    match v.get(key) {
        Some(Value::Number(n)) if n.to_f64().is_finite() => Ok(n.to_f64()),
        _ => Err(verr(format!("{at}/{key}"), "missing or not a finite number")),
    }
}

fn band_at(v: &Value, at: &str) -> Result<Band, VocabError> {
    let band = Band { min: num_at(v, "min", at)?, max: num_at(v, "max", at)? };
    if band.min > band.max {
        return Err(verr(at, "min is above max"));
    }
    Ok(band)
}

fn strings_at(v: &Value, key: &str, at: &str) -> Result<Vec<String>, VocabError> {
    match v.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| verr(format!("{at}/{key}/{i}"), "not a string"))
            })
            .collect(),
        Some(_) => Err(verr(format!("{at}/{key}"), "not an array")),
    }
}

fn opt_str(v: &Value, key: &str, at: &str) -> Result<Option<String>, VocabError> {
    match v.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(verr(format!("{at}/{key}"), "not a string")),
    }
}

fn opt_bool(v: &Value, key: &str, at: &str) -> Result<Option<bool>, VocabError> {
    match v.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(verr(format!("{at}/{key}"), "not a boolean")),
    }
}

fn deprecation_of(v: &Value, at: &str) -> Result<(bool, Option<String>), VocabError> {
    Ok((opt_bool(v, "deprecated", at)?.unwrap_or(false), opt_str(v, "replacedBy", at)?))
}

fn parse_op(entry: &Value, at: &str) -> Result<Op, VocabError> {
    let id = str_at(entry, "id", at)?;
    let (deprecated, replaced_by) = deprecation_of(entry, at)?;
    let envelope = match entry.get("envelope") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) if m.is_empty() => None,
        Some(env @ Value::Object(_)) => Some(parse_envelope(env, &format!("{at}/envelope"))?),
        Some(_) => return Err(verr(format!("{at}/envelope"), "not an object")),
    };
    Ok(Op {
        id,
        classes: strings_at(entry, "classes", at)?,
        sensors: strings_at(entry, "sensors", at)?,
        executable: opt_bool(entry, "executable", at)?.unwrap_or(true),
        envelope,
        deprecated,
        replaced_by,
    })
}

fn parse_envelope(env: &Value, at: &str) -> Result<Envelope, VocabError> {
    let band = |key: &str| -> Result<Option<Band>, VocabError> {
        env.get(key).map(|b| band_at(b, &format!("{at}/{key}"))).transpose()
    };
    Ok(Envelope {
        medium: opt_str(env, "medium", at)?.unwrap_or_default(),
        temp_c: band("tempC")?,
        pressure_kpa: band("pressureKPa")?,
        agitation: opt_str(env, "agitation", at)?,
        lid: opt_str(env, "lid", at)?,
        sensor_ladder: env
            .get("sensorLadder")
            .map(|_| strings_at(env, "sensorLadder", at))
            .transpose()?,
        attention: opt_str(env, "attention", at)?,
        unattended: opt_bool(env, "unattended", at)?.unwrap_or(true),
        hazards: strings_at(env, "hazards", at)?,
    })
}

/// The compiled-in tables.
mod builtin {
    use super::{Band, Envelope, HeatLevel, Op, UnitDef, Vocabulary};

    /// One envelope row: medium, °C band, kPa band, agitation, lid, ladder, attention,
    /// unattended, hazards. `None`/empty strings mean "not given".
    type Env = (
        &'static str,
        Option<(f64, f64)>,
        Option<(f64, f64)>,
        &'static str,
        &'static str,
        &'static [&'static str],
        &'static str,
        bool,
        &'static [&'static str],
    );
    /// One op row: id suffix, families, sensors, executable, envelope.
    type Row = (&'static str, &'static [&'static str], &'static [&'static str], bool, Option<Env>);

    const HANDLE: &[&str] = &["cw.opfamily.handle"];
    const CUT: &[&str] = &["cw.opfamily.cut"];
    const COMBINE: &[&str] = &["cw.opfamily.combine"];
    const SHAPE: &[&str] = &["cw.opfamily.shape"];
    const HEAT: &[&str] = &["cw.opfamily.heat"];
    const COOL: &[&str] = &["cw.opfamily.cool"];
    const FINISH: &[&str] = &["cw.opfamily.finish"];
    const AUX: &[&str] = &["cw.opfamily.aux"];

    /// The sensors every heat-family op can use.
    const THERMAL: &[&str] = &[
        "core_temp",
        "liquid_temp",
        "pan_surface_temp",
        "oil_temp",
        "oven_air_temp",
        "mass",
        "mass_loss_ratio",
        "torque",
        "humidity",
    ];
    const THERMAL_P: &[&str] = &[
        "core_temp",
        "liquid_temp",
        "pan_surface_temp",
        "oil_temp",
        "oven_air_temp",
        "mass",
        "mass_loss_ratio",
        "torque",
        "humidity",
        "pressure",
    ];
    const MASS: &[&str] = &["mass"];
    const TORQUE: &[&str] = &["torque"];
    const VISION: &[&str] = &["vision"];
    const CORE: &[&str] = &["core_temp"];
    const NONE: &[&str] = &[];

    /// Hand/knife work: no thermal band, a person or camera must watch.
    const BLADE: Env =
        ("none", None, None, "", "", &["vision", "human"], "continuous", false, &["cut"]);

    /// Sensor names are written without `cw.sense.`, hazards without `cw.hz.`; ladder rungs
    /// `model`, `time` and `human` are literals.
    #[rustfmt::skip]
    const OPS: &[Row] = &[
        ("dispense", HANDLE, MASS, true, None),
        ("transfer", HANDLE, MASS, true, None),
        ("wash", HANDLE, &["water_clarity"], true, None),
        ("soak", HANDLE, NONE, true, Some(("water", Some((0.0, 60.0)), None, "none", "any", &["liquid_temp", "time"], "none", true, &[]))),
        ("drain", HANDLE, NONE, true, None),
        ("peel", HANDLE, NONE, true, Some(BLADE)),
        ("trim", HANDLE, NONE, true, Some(BLADE)),
        ("crack", HANDLE, NONE, true, None),
        ("cut", CUT, VISION, true, Some(BLADE)),
        ("grate", CUT, NONE, true, Some(BLADE)),
        ("crush", CUT, NONE, true, None),
        ("mix", COMBINE, TORQUE, true, None),
        ("whisk", COMBINE, TORQUE, true, None),
        ("fold", COMBINE, NONE, true, None),
        ("knead", COMBINE, TORQUE, true, None),
        ("blend", COMBINE, TORQUE, true, Some(BLADE)),
        ("emulsify", COMBINE, VISION, true, None),
        ("marinate", COMBINE, NONE, true, Some(("product", Some((0.0, 5.0)), None, "none", "any", &["fridge_temp", "time"], "none", true, &["time_temperature"]))),
        ("season", COMBINE, NONE, true, None),
        ("form", SHAPE, MASS, true, None),
        ("roll_out", SHAPE, NONE, true, None),
        ("stuff", SHAPE, NONE, true, None),
        ("layer", SHAPE, NONE, true, None),
        ("form_wells", SHAPE, NONE, true, None),
        ("heat", HEAT, THERMAL, true, Some(("pan_surface", Some((20.0, 250.0)), None, "occasional", "any", &["pan_surface_temp", "model", "human"], "monitor", false, &["burn.hot_surface"]))),
        ("melt", HEAT, THERMAL, true, Some(("product", Some((30.0, 60.0)), None, "frequent", "any", &["product_temp", "model", "human"], "monitor", false, &["scorch"]))),
        ("saute", HEAT, THERMAL, true, Some(("pan_surface", Some((150.0, 210.0)), None, "frequent", "off", &["pan_surface_temp", "model", "human"], "continuous", false, &["burn.hot_oil", "fire.pan"]))),
        ("sear", HEAT, THERMAL, true, Some(("pan_surface", Some((200.0, 260.0)), None, "none", "off", &["pan_surface_temp", "model", "human"], "continuous", false, &["burn.hot_oil", "fire.pan", "smoke"]))),
        ("stir_fry", HEAT, THERMAL, true, Some(("pan_surface", Some((200.0, 260.0)), None, "continuous", "off", &["pan_surface_temp", "model", "human"], "continuous", false, &["burn.hot_oil", "fire.pan"]))),
        ("fry", HEAT, THERMAL, true, Some(("oil", Some((160.0, 190.0)), None, "occasional", "off", &["oil_temp", "model", "human"], "continuous", false, &["burn.hot_oil", "fire.oil"]))),
        ("deep_fry", HEAT, THERMAL, true, Some(("oil", Some((160.0, 190.0)), None, "none", "off", &["oil_temp"], "continuous", false, &["burn.hot_oil", "fire.oil"]))),
        ("boil", HEAT, THERMAL, true, Some(("water", Some((98.0, 102.0)), None, "occasional", "any", &["liquid_temp", "boil_detect", "model", "time"], "periodic", true, &["burn.steam", "boil_over"]))),
        ("simmer", HEAT, THERMAL, true, Some(("water", Some((85.0, 96.0)), None, "occasional", "any", &["liquid_temp", "bubble_vision", "model", "time"], "periodic", true, &["burn.steam", "scorch"]))),
        ("poach", HEAT, THERMAL, true, Some(("water", Some((70.0, 85.0)), None, "none", "off", &["liquid_temp", "model", "time"], "periodic", true, &["burn.steam"]))),
        ("steam", HEAT, THERMAL, true, Some(("steam", Some((95.0, 102.0)), None, "none", "on", &["chamber_temp", "model", "time"], "periodic", true, &["burn.steam", "dry_pan"]))),
        ("braise", HEAT, THERMAL, true, Some(("water", Some((85.0, 96.0)), None, "occasional", "on", &["liquid_temp", "oven_temp", "model", "time"], "periodic", true, &["scorch"]))),
        ("pressure_cook", HEAT, THERMAL_P, true, Some(("pressure", Some((110.0, 121.0)), Some((50.0, 100.0)), "none", "on", &["pressure", "liquid_temp", "time"], "monitor", true, &["pressure_release", "burn.steam"]))),
        ("reduce", HEAT, THERMAL, true, Some(("water", Some((90.0, 102.0)), None, "frequent", "off", &["liquid_temp", "mass", "model", "human"], "monitor", false, &["scorch"]))),
        ("caramelize", HEAT, THERMAL, true, Some(("pan_surface", Some((120.0, 180.0)), None, "frequent", "off", &["pan_surface_temp", "color_vision", "model", "human"], "monitor", false, &["burn.sugar", "scorch"]))),
        ("toast", HEAT, THERMAL, true, Some(("pan_surface", Some((140.0, 200.0)), None, "frequent", "off", &["pan_surface_temp", "color_vision", "human"], "monitor", false, &["scorch", "smoke"]))),
        ("bake", HEAT, THERMAL, true, Some(("air", Some((120.0, 250.0)), None, "none", "any", &["oven_temp", "core_temp", "model", "time"], "periodic", true, &["burn.hot_surface"]))),
        ("roast", HEAT, THERMAL, true, Some(("air", Some((160.0, 250.0)), None, "none", "off", &["oven_temp", "core_temp", "model", "time"], "periodic", true, &["burn.hot_surface", "smoke"]))),
        ("grill", HEAT, THERMAL, true, Some(("radiant", Some((200.0, 320.0)), None, "occasional", "any", &["grill_temp", "core_temp", "human"], "monitor", false, &["fire.flare_up", "smoke"]))),
        ("smoke", HEAT, VISION, true, Some(("air", Some((90.0, 135.0)), None, "none", "on", &["chamber_temp", "core_temp", "time"], "periodic", true, &["smoke", "co"]))),
        ("rest", COOL, CORE, true, None),
        ("proof", COOL, &["volume_ratio", "vision"], true, Some(("ambient", Some((24.0, 38.0)), None, "none", "any", &["ambient_temp", "time"], "none", true, &[]))),
        ("cool", COOL, CORE, true, Some(("product", Some((-1.0, 60.0)), None, "none", "any", &["core_temp", "model", "time"], "periodic", true, &["time_temperature"]))),
        ("chill", COOL, CORE, true, Some(("ambient", Some((0.0, 5.0)), None, "none", "any", &["fridge_temp", "core_temp", "time"], "none", true, &[]))),
        ("freeze", COOL, CORE, true, Some(("ambient", Some((-40.0, -18.0)), None, "none", "any", &["freezer_temp", "time"], "none", true, &[]))),
        ("hold", COOL, THERMAL, true, Some(("product", Some((60.0, 85.0)), None, "occasional", "any", &["core_temp", "model", "time"], "periodic", true, &["time_temperature"]))),
        ("garnish", FINISH, NONE, true, None),
        ("plate", FINISH, MASS, true, None),
        ("serve", FINISH, NONE, true, None),
        ("wait", AUX, NONE, true, None),
        ("vent", AUX, NONE, true, None),
        ("clean", AUX, NONE, true, None),
        ("legacy_step", &["cw.opfamily.aux", "cw.opfamily.legacy"], NONE, false, None),
    ];

    /// Unit short name, base, factor.
    const UNITS: &[(&str, &str, f64)] = &[
        ("tsp", "ml", 5.0),
        ("tbsp", "ml", 15.0),
        ("cup", "ml", 240.0),
        ("pinch", "g", 0.36),
        ("dash", "ml", 0.6),
        ("l", "ml", 1000.0),
        ("kg", "g", 1000.0),
        ("mg", "g", 0.001),
    ];

    /// Heat level short name and pan-surface °C band.
    const HEAT_LEVELS: &[(&str, f64, f64)] = &[
        ("very_low", 90.0, 120.0),
        ("low", 120.0, 150.0),
        ("medium_low", 150.0, 170.0),
        ("medium", 170.0, 190.0),
        ("medium_high", 190.0, 210.0),
        ("high", 210.0, 240.0),
        ("max", 240.0, 280.0),
    ];

    fn rung(name: &str) -> String {
        match name {
            "model" | "time" | "human" => name.to_owned(),
            sensor => format!("cw.sense.{sensor}"),
        }
    }

    fn text(s: &str) -> Option<String> {
        (!s.is_empty()).then(|| s.to_owned())
    }

    fn envelope(e: &Env) -> Envelope {
        let (medium, temp, pressure, agitation, lid, ladder, attention, unattended, hazards) = *e;
        Envelope {
            medium: medium.to_owned(),
            temp_c: temp.map(|(min, max)| Band { min, max }),
            pressure_kpa: pressure.map(|(min, max)| Band { min, max }),
            agitation: text(agitation),
            lid: text(lid),
            sensor_ladder: Some(ladder.iter().map(|r| rung(r)).collect()),
            attention: text(attention),
            unattended,
            hazards: hazards.iter().map(|h| format!("cw.hz.{h}")).collect(),
        }
    }

    pub(super) fn build() -> Vocabulary {
        let mut v = Vocabulary::default();
        for (name, classes, sensors, executable, env) in OPS {
            let op = Op {
                id: format!("cw.op.{name}"),
                classes: classes.iter().map(|c| (*c).to_owned()).collect(),
                sensors: sensors.iter().map(|s| format!("cw.sense.{s}")).collect(),
                executable: *executable,
                envelope: env.as_ref().map(envelope),
                deprecated: false,
                replaced_by: None,
            };
            v.sensors.extend(op.sensors.iter().cloned());
            if let Some(e) = &op.envelope {
                v.sensors.extend(
                    e.ladder().into_iter().filter(|r| r.starts_with("cw.")).map(str::to_owned),
                );
            }
            v.ops.insert(op.id.clone(), op);
        }
        for (name, to, factor) in UNITS {
            let id = format!("cw.unit.{name}");
            let unit = UnitDef {
                id: id.clone(),
                to: (*to).to_owned(),
                factor: *factor,
                deprecated: false,
                replaced_by: None,
            };
            v.units.insert(id, unit);
        }
        for (name, min, max) in HEAT_LEVELS {
            let id = format!("cw.heat.{name}");
            let level = HeatLevel {
                id: id.clone(),
                surface_temp_c: Band { min: *min, max: *max },
                deprecated: false,
                replaced_by: None,
            };
            v.heat.insert(id, level);
        }
        v.reindex();
        v
    }
}
