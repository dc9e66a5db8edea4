//! Every reading of a run with each step's envelope band, for plots and determinism checks.

use canonical_json::{Map, Value};

use crate::num;

/// One reading.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TracePoint {
    /// Simulated ms.
    pub t_ms: u64,
    /// Index into [`Trace::sensors`].
    pub series: usize,
    /// °C.
    pub value: f64,
    /// Index into [`Trace::steps`] of the step running then, if any.
    pub step: Option<usize>,
}

/// One step's time span and band.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceStep {
    /// Node id.
    pub node: String,
    /// Op id.
    pub op: String,
    /// Start (simulated ms).
    pub start_ms: u64,
    /// End, once ended.
    pub end_ms: Option<u64>,
    /// The envelope band (°C), for thermal steps.
    pub band: Option<(f64, f64)>,
    /// The set point inside the band.
    pub target: Option<f64>,
    /// The envelope medium.
    pub medium: Option<String>,
}

/// All readings of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// Temperature sensor ids, one series each.
    pub sensors: Vec<String>,
    /// Steps in order.
    pub steps: Vec<TraceStep>,
    /// Readings in time order.
    pub points: Vec<TracePoint>,
}

impl Trace {
    /// `{sensors, steps:[{node, op, startMs, endMs, bandC, targetC, medium}], points:[[t, series, value]]}`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "sensors".into(),
            Value::Array(self.sensors.iter().map(|s| s.as_str().into()).collect()),
        );
        let steps = self
            .steps
            .iter()
            .map(|s| {
                let mut r = Map::new();
                r.insert("node".into(), s.node.as_str().into());
                r.insert("op".into(), s.op.as_str().into());
                r.insert("startMs".into(), s.start_ms.into());
                r.insert("endMs".into(), s.end_ms.map_or(Value::Null, Value::from));
                if let Some((lo, hi)) = s.band {
                    r.insert("bandC".into(), Value::Array(vec![num(lo), num(hi)]));
                }
                if let Some(t) = s.target {
                    r.insert("targetC".into(), num(t));
                }
                if let Some(md) = &s.medium {
                    r.insert("medium".into(), md.as_str().into());
                }
                Value::Object(r)
            })
            .collect();
        m.insert("steps".into(), Value::Array(steps));
        let points = self
            .points
            .iter()
            .map(|p| Value::Array(vec![p.t_ms.into(), p.series.into(), num(p.value)]))
            .collect();
        m.insert("points".into(), Value::Array(points));
        Value::Object(m)
    }
}
