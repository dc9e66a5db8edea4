//! Envelope traces, sensor ladders and sensor trust (COOKWALA.md §7.4; RFC-0011).
//!
//! - [`check_envelope`]: judge a medium-temperature trace against an op's band (shifted for
//!   altitude on water/steam media) and an optional target.
//! - [`ladder_choice`]: the first usable rung of an op's sensor ladder.
//! - [`trusted_sensors`]: which declared sensors may satisfy a rung at `now`.
//! - [`check_plausibility`]: cross-check readings of one medium from several sensors.

use std::collections::BTreeSet;

use canonical_json::Value;

use crate::time::{Instant, parse_timestamp};
use crate::vocab::{Band, Envelope, Vocabulary};

/// A recipe target for a trace: value and absolute tolerance in °C.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    /// Target temperature.
    pub value: f64,
    /// Absolute tolerance (default 0).
    pub tolerance: f64,
}

/// The verdict of [`check_envelope`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvelopeVerdict {
    /// Every reading after warm-up stayed in the band.
    pub envelope_ok: bool,
    /// The target was reached and held; `None` without a target.
    pub target_ok: Option<bool>,
    /// `ok`, `no_thermal_envelope`, `target_outside_envelope`, `never_reached_envelope`,
    /// `left_envelope` or `missed_target`.
    pub reason: &'static str,
}

impl EnvelopeVerdict {
    /// `{envelopeOk, targetOk, reason}`.
    pub fn to_value(&self) -> Value {
        let mut m = canonical_json::Map::new();
        m.insert("envelopeOk".into(), self.envelope_ok.into());
        m.insert("targetOk".into(), self.target_ok.map_or(Value::Null, Value::from));
        m.insert("reason".into(), self.reason.into());
        Value::Object(m)
    }
}

/// An op unknown to the vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown operation {0}")]
pub struct UnknownOp(pub String);

/// The op's temperature band shifted by −altitude/300 °C on water and steam media.
pub fn shifted_band(env: &Envelope, altitude_m: f64) -> Option<Band> {
    let band = env.temp_c?;
    if env.shifts_with_altitude() {
        let shift = altitude_m / 300.0;
        Some(Band { min: band.min - shift, max: band.max - shift })
    } else {
        Some(band)
    }
}

/// Checks a trace of medium temperatures (in time order) against an op envelope.
///
/// # Errors
/// [`UnknownOp`] when the op is not in the vocabulary.
pub fn check_envelope(
    vocab: &Vocabulary,
    op: &str,
    temps: &[f64],
    target: Option<Target>,
    altitude_m: f64,
) -> Result<EnvelopeVerdict, UnknownOp> {
    let entry = vocab.op(op).ok_or_else(|| UnknownOp(op.to_owned()))?;
    let band = entry.envelope.as_ref().and_then(|env| shifted_band(env, altitude_m));
    let Some(band) = band else {
        return Ok(EnvelopeVerdict {
            envelope_ok: true,
            target_ok: None,
            reason: "no_thermal_envelope",
        });
    };
    if let Some(t) = target
        && !band.contains(t.value)
    {
        return Ok(EnvelopeVerdict {
            envelope_ok: false,
            target_ok: Some(false),
            reason: "target_outside_envelope",
        });
    }
    let Some(first_in) = temps.iter().position(|&t| band.contains(t)) else {
        return Ok(EnvelopeVerdict {
            envelope_ok: false,
            target_ok: target.map(|_| false),
            reason: "never_reached_envelope",
        });
    };
    let steady = &temps[first_in..];
    let envelope_ok = steady.iter().all(|&t| band.contains(t));
    let target_ok = target.map(|t| {
        let near = |x: f64| (x - t.value).abs() <= t.tolerance;
        steady
            .iter()
            .position(|&x| near(x))
            .is_some_and(|hit| steady[hit..].iter().all(|&x| near(x)))
    });
    let reason = if !envelope_ok {
        "left_envelope"
    } else if target_ok == Some(false) {
        "missed_target"
    } else {
        "ok"
    };
    Ok(EnvelopeVerdict { envelope_ok, target_ok, reason })
}

/// The first rung of the op's ladder this executor can satisfy: `model` if allowed, `time`
/// always, `human` if a person is present, a sensor id if trusted. An op without an envelope
/// (or unknown) has the ladder `["time"]`.
pub fn ladder_choice(
    vocab: &Vocabulary,
    op: &str,
    sensors: &BTreeSet<String>,
    allow_model: bool,
    human_present: bool,
) -> Option<String> {
    let ladder =
        vocab.op(op).and_then(|o| o.envelope.as_ref()).map_or(vec!["time"], |e| e.ladder());
    ladder_pick(&ladder, sensors, allow_model, human_present)
}

pub(crate) fn ladder_pick(
    ladder: &[&str],
    sensors: &BTreeSet<String>,
    allow_model: bool,
    human_present: bool,
) -> Option<String> {
    for &rung in ladder {
        let usable = match rung {
            "model" => allow_model,
            "time" => true,
            "human" => human_present,
            _ => false,
        } || sensors.contains(rung);
        if usable {
            return Some(rung.to_owned());
        }
    }
    None
}

/// Sensor ids (plus the `visionCues` of trusted cameras) that may satisfy a rung at `now`:
/// `state` (default `ok`) is `ok`, and `calibration.validUntil` is absent or not before `now`.
/// An unreadable `validUntil` excludes the sensor (fail closed); a record without a string
/// `sensor` is ignored.
pub fn trusted_sensors(capabilities: &Value, now: Instant) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let list = capabilities.pointer("/capabilities/sensors").and_then(Value::as_array);
    for s in list.unwrap_or_default() {
        if !sensor_trusted(s, now) {
            continue;
        }
        let Some(id) = s.get("sensor").and_then(Value::as_str) else { continue };
        out.insert(id.to_owned());
        for cue in s.get("visionCues").and_then(Value::as_array).unwrap_or_default() {
            if let Some(c) = cue.as_str() {
                out.insert(c.to_owned());
            }
        }
    }
    out
}

/// One sensor record's state and calibration at `now` (see [`trusted_sensors`]).
pub(crate) fn sensor_trusted(s: &Value, now: Instant) -> bool {
    let state = s.get("state").map_or(Some("ok"), Value::as_str);
    if state != Some("ok") {
        return false;
    }
    let calibration = s.get("calibration");
    if calibration.is_some_and(|c| truthy(c) && c.as_object().is_none()) {
        return false;
    }
    match calibration.and_then(|c| c.get("validUntil")) {
        None => true,
        Some(v) if !truthy(v) => true,
        Some(Value::String(text)) => parse_timestamp(text).is_ok_and(|until| now <= until),
        Some(_) => false,
    }
}

/// The verdict of [`check_plausibility`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plausibility {
    /// True when every pair agrees.
    pub ok: bool,
    /// `ok`, `implausible` or `non_numeric_reading`.
    pub reason: &'static str,
    /// A sentence for people.
    pub detail: String,
}

/// Readings `[{sensor, tempC}]` of one medium against sensor records `[{sensor, accuracy}]`:
/// two readings differing by more than accA + accB + `tolerance_c` are implausible (default
/// accuracy 2.0 °C). A reading that is not a finite number fails as `non_numeric_reading`.
pub fn check_plausibility(readings: &[Value], sensors: &[Value], tolerance_c: f64) -> Plausibility {
    let accuracy = |id: &str| -> f64 {
        sensors
            .iter()
            .filter(|s| s.get("sensor").and_then(Value::as_str) == Some(id))
            .filter_map(|s| s.get("accuracy").and_then(finite))
            .next_back()
            .unwrap_or(2.0)
    };
    let mut rs = Vec::new();
    for r in readings {
        match r.get("tempC").and_then(finite) {
            Some(t) => rs.push((r.get("sensor").and_then(Value::as_str).unwrap_or(""), t)),
            None => {
                return Plausibility {
                    ok: false,
                    reason: "non_numeric_reading",
                    detail: "a reading is not a finite number".into(),
                };
            }
        }
    }
    for (i, &(a, ta)) in rs.iter().enumerate() {
        for &(b, tb) in &rs[i + 1..] {
            let allowed = accuracy(a) + accuracy(b) + tolerance_c;
            if (ta - tb).abs() > allowed {
                return Plausibility {
                    ok: false,
                    reason: "implausible",
                    detail: format!("{a} {ta} °C and {b} {tb} °C differ by more than {allowed} °C"),
                };
            }
        }
    }
    Plausibility { ok: true, reason: "ok", detail: String::new() }
}

/// A JSON number (never a boolean or a string) as `f64`.
pub(crate) fn finite(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => Some(n.to_f64()),
        _ => None,
    }
}

/// Python truthiness of a JSON value, the rule the reference applies wherever it tests a
/// member with `if x` (a signature's presence, a header's `kind`, a flag): `null`, `false`, `0`,
/// `""`, `[]` and `{}` are false.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.to_f64() != 0.0,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
    }
}
