//! The local limits of a dry run, indexed once per SafetyLimits pack.
//!
//! The reference walks the whole pack for every heated step and, for each limit, scans its
//! `appliesTo.ops`. With a pack from the CLI's input (`--limits FILE`, inline `limits` in a
//! `--batch` line) that is nodes × limits. Here the pack is read once into groups by scope:
//!
//! - limits that name ops (`appliesTo.ops`, an array) sit under each op they name, filtered
//!   once by the op's medium when they also give one;
//! - limits scoped by `medium` alone sit under that medium;
//! - limits whose `ops` is not an array (outside the schema) apply to every op, within their
//!   medium: a malformed scope fails closed, as a malformed bound does.
//!
//! A group keeps its limits in pack order in two chains, one per kind that can fire on a step
//! (`max_temp` in °C on the step's temperatures, `pressure` on its pressure), each with the
//! running minimum of its thresholds. A limit fires when the step's value is above its
//! threshold, so the first limit of a chain that fires is the first position whose running
//! minimum is below the value: a binary search. A step asks at most three groups (its op, its
//! medium, every op) and takes the earliest limit in pack order, which is the limit the
//! reference's walk stops at. Building is linear in the pack; each step costs O(log limits).

use std::collections::HashMap;

use canonical_json::Value;

use crate::envelope::{finite, truthy};
use crate::vocab::Vocabulary;

/// What a limit fires on, with its threshold (`-inf` when `max` is not a number: the limit
/// refuses any step it applies to, as the reference's "has no numeric max" does).
#[derive(Clone, Copy, Debug)]
enum Trigger {
    /// `kind: max_temp`, `unit: degC`: fires when a temperature of the step is above.
    Temp(f64),
    /// `kind: pressure` with a `max`: fires when the step's pressure is above.
    Pressure(f64),
}

fn threshold(max: &Value) -> f64 {
    finite(max).filter(|m| !m.is_nan()).unwrap_or(f64::NEG_INFINITY)
}

fn trigger(limit: &Value) -> Option<Trigger> {
    let max = limit.get("max");
    match limit.get("kind").and_then(Value::as_str) {
        Some("max_temp") if limit.get("unit").and_then(Value::as_str) == Some("degC") => {
            Some(Trigger::Temp(max.map_or(f64::NEG_INFINITY, threshold)))
        }
        Some("pressure") => max.map(|m| Trigger::Pressure(threshold(m))),
        _ => None,
    }
}

/// Limits in pack order with the running minimum of their thresholds.
#[derive(Clone, Debug, Default)]
struct Chain {
    order: Vec<usize>,
    floor: Vec<f64>,
}

impl Chain {
    fn push(&mut self, index: usize, threshold: f64) {
        let floor = self.floor.last().map_or(threshold, |&f| f.min(threshold));
        self.order.push(index);
        self.floor.push(floor);
    }

    /// The first limit whose threshold is below `x` (the running minimum never rises).
    fn first_below(&self, x: f64) -> Option<usize> {
        let at = self.floor.partition_point(|&f| f >= x);
        self.order.get(at).copied()
    }
}

#[derive(Clone, Debug, Default)]
struct Group {
    temp: Chain,
    pressure: Chain,
}

impl Group {
    fn push(&mut self, index: usize, trigger: Trigger) {
        match trigger {
            Trigger::Temp(t) => self.temp.push(index, t),
            Trigger::Pressure(p) => self.pressure.push(index, p),
        }
    }

    fn first_firing(&self, max_temp: Option<f64>, pressure: Option<f64>) -> Option<usize> {
        let t = max_temp.and_then(|x| self.temp.first_below(x));
        let p = pressure.and_then(|x| self.pressure.first_below(x));
        match (t, p) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The medium a limit's `appliesTo.medium` names, as the reference compares it: a value that
/// is not a string never equals an envelope's medium.
fn medium_key(medium: &Value) -> &str {
    medium.as_str().unwrap_or("\u{0}")
}

/// A SafetyLimits pack indexed for dry runs (see the module documentation). It owns a copy of
/// the limits that can fire, so a caller may keep it as long as it keeps using the pack.
#[derive(Clone, Debug, Default)]
pub struct LimitIndex {
    limits: Vec<Value>,
    every_op: Group,
    by_medium: HashMap<String, Group>,
    by_op: HashMap<String, Group>,
}

impl LimitIndex {
    /// Indexes `pack` (a SafetyLimits document; a pack without a `limits` array has none).
    /// `vocab` gives each named op's medium.
    pub fn new(vocab: &Vocabulary, pack: &Value) -> LimitIndex {
        let all = pack.get("limits").and_then(Value::as_array).map_or(&[][..], |a| a);
        let mut index = LimitIndex::default();
        for limit in all {
            let Some(trigger) = trigger(limit) else { continue };
            let i = index.limits.len();
            index.limits.push(limit.clone());
            let applies = limit.get("appliesTo");
            let ops = applies.and_then(|a| a.get("ops")).filter(|v| truthy(v));
            let medium = applies.and_then(|a| a.get("medium")).filter(|v| truthy(v));
            match (ops, medium) {
                (Some(Value::Array(named)), _) => {
                    for op in named.iter().filter_map(Value::as_str) {
                        if let Some(m) = medium {
                            let op_medium = vocab
                                .op(op)
                                .and_then(|o| o.envelope.as_ref())
                                .map(|e| e.medium.as_str());
                            if op_medium != Some(medium_key(m)) {
                                continue;
                            }
                        }
                        let group = index.by_op.entry(op.to_owned()).or_default();
                        // An op named twice by one limit is one candidate.
                        let last = group.temp.order.last().max(group.pressure.order.last());
                        if last != Some(&i) {
                            group.push(i, trigger);
                        }
                    }
                }
                (_, Some(m)) => {
                    index.by_medium.entry(medium_key(m).to_owned()).or_default().push(i, trigger);
                }
                (Some(_), None) => index.every_op.push(i, trigger),
                // Neither scope: the reference skips the limit.
                (None, None) => {}
            }
        }
        index
    }

    /// The limits that can fire, in pack order (the positions [`Self::first_firing`] gives).
    pub(crate) fn limits(&self) -> &[Value] {
        &self.limits
    }

    /// The first limit in pack order that fires on a step of `op` (whose envelope's medium is
    /// `medium`) with the highest temperature `max_temp` and the pressure `pressure`.
    pub(crate) fn first_firing(
        &self,
        op: &str,
        medium: Option<&str>,
        max_temp: Option<f64>,
        pressure: Option<f64>,
    ) -> Option<usize> {
        let groups =
            [Some(&self.every_op), medium.and_then(|m| self.by_medium.get(m)), self.by_op.get(op)];
        groups.into_iter().flatten().filter_map(|g| g.first_firing(max_temp, pressure)).min()
    }
}
