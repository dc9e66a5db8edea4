//! The executor's reading of its effective SafetyLimits pack: which limit is enforced where.
//!
//! Every limit of the pack is sorted into one of four places, and a limit that fits none of
//! them makes the execution start `refused` (`safety_limit`) instead of running without it:
//!
//! - **monitored each tick**: `max_temp` (°C), `time_temp` (time below `min` / above `max` for
//!   more than `holdFor`, or the two-stage cooling rule);
//! - **checked at a step's end or at completion**: `min_core_temp`;
//! - **checked before the start**: `pressure` (the simulator has no pressure model, so a device
//!   step the limit covers is refused), `stop` (the simulator's stop delays against the limit's
//!   `max`), and any run-time limit with action `refuse_start` that covers a step of the plan;
//! - **enforced elsewhere**: `unattended` (the dry run's presence rule), `allergen_block` (the
//!   caller's precheck, which holds the request), `smoke_or_fire` (the simulated kitchen has no
//!   smoke or flame model, so it cannot occur) and `untrusted_input` (recipe text is never
//!   interpreted).
//!
//! As in the dry run (COOKWALA.md §7.1), a limit whose `appliesTo` names neither `ops` nor a
//! `medium` (nor a `foodClass`, for `min_core_temp`) covers no step.

use canonical_json::Value;
use cookwala::dryrun::{Refusal, RefusalReason};

use crate::steps::{StepSpec, duration_ms};
// Read where the steps are built; re-exported for the pack checks' callers.
pub(crate) use crate::steps::food_classes;

/// What a fired limit makes the executor do.
pub(crate) const ACTIONS: &[&str] =
    &["refuse_start", "cut_heat", "stop_motion", "stop_all", "ask_human", "alert"];

/// Where a limit applies.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scope {
    pub medium: Option<String>,
    pub ops: Vec<String>,
    pub food_class: Option<String>,
}

impl Scope {
    /// True when the limit names an op list and `op` is in it, or names no op list.
    pub fn op_matches(&self, op: &str) -> bool {
        self.ops.is_empty() || self.ops.iter().any(|o| o == op)
    }

    /// The dry run's rule for ops and medium: at least one is named, and each named one matches
    /// (`medium` is the op envelope's medium).
    pub fn covers(&self, op: &str, medium: Option<&str>) -> bool {
        (!self.ops.is_empty() || self.medium.is_some())
            && self.op_matches(op)
            && self.medium.as_deref().is_none_or(|m| Some(m) == medium)
    }
}

/// A `max_temp` limit.
#[derive(Clone, Debug)]
pub(crate) struct MaxLimit {
    pub id: String,
    pub action: String,
    pub scope: Scope,
    pub max: f64,
}

/// A `min_core_temp` limit.
#[derive(Clone, Debug)]
pub(crate) struct CoreLimit {
    pub id: String,
    pub action: String,
    pub scope: Scope,
    pub min: f64,
}

impl CoreLimit {
    /// Does the limit cover a device step with `op`, whose node declares `node_classes`, in a
    /// recipe that declares `recipe_classes`?
    pub fn covers_step(
        &self,
        op: &str,
        node_classes: &[String],
        recipe_classes: &[String],
    ) -> bool {
        match (&self.scope.food_class, self.scope.ops.is_empty()) {
            // A food class alone: the step that declares it cooks that product.
            (Some(fc), true) => node_classes.contains(fc),
            // A food class and ops: a step of those ops cooking that class.
            (Some(fc), false) => {
                self.scope.op_matches(op)
                    && (node_classes.contains(fc) || recipe_classes.contains(fc))
            }
            (None, false) => self.scope.op_matches(op),
            (None, true) => false,
        }
    }

    /// Does the limit cover the finished dish (a food class declared for the whole recipe)?
    pub fn covers_dish(&self, recipe_classes: &[String]) -> bool {
        self.scope.ops.is_empty()
            && self.scope.food_class.as_ref().is_some_and(|fc| recipe_classes.contains(fc))
    }
}

/// The rule of a `time_temp` limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum TimeTempRule {
    /// Below `min` for more than `hold_ms` in total (hot holding).
    Below { min: f64, hold_ms: u64 },
    /// Above `max` for more than `hold_ms` in total (cold holding).
    Above { max: f64, hold_ms: u64 },
    /// A limit with no bound of its own: the two-stage cooling rule (from
    /// [`COOL_START_C`] to [`COOL_STAGE1_C`] within [`COOL_STAGE1_MS`], then to
    /// [`COOL_STAGE2_C`] within [`COOL_TOTAL_MS`] of the start).
    TwoStageCooling,
}

/// Cooling starts being timed when the product is at or below this (°C).
pub(crate) const COOL_START_C: f64 = 60.0;
/// The first cooling stage ends at or below this (°C).
pub(crate) const COOL_STAGE1_C: f64 = 21.0;
/// The first stage's deadline (ms after cooling starts).
pub(crate) const COOL_STAGE1_MS: u64 = 2 * 3_600_000;
/// The second cooling stage ends at or below this (°C).
pub(crate) const COOL_STAGE2_C: f64 = 5.0;
/// The second stage's deadline (ms after cooling starts).
pub(crate) const COOL_TOTAL_MS: u64 = 6 * 3_600_000;

/// A `time_temp` limit and what has been measured against it so far in this execution.
#[derive(Clone, Debug)]
pub(crate) struct TimeTempLimit {
    pub id: String,
    pub action: String,
    pub scope: Scope,
    pub rule: TimeTempRule,
    /// Time out of the band so far (ms), summed over every step the limit covers.
    pub out_ms: u64,
    /// Cooling rule: when the product first was at or below [`COOL_START_C`].
    pub cool_start_ms: Option<u64>,
    /// Cooling rule: the first stage was met.
    pub stage1_done: bool,
}

/// A `pressure` limit.
#[derive(Clone, Debug)]
pub(crate) struct PressureLimit {
    pub id: String,
    pub scope: Scope,
    pub max: Option<f64>,
}

/// A limit enforced before the start (other than `pressure`).
#[derive(Clone, Debug)]
pub(crate) struct StopLimit {
    pub id: String,
    /// The budget (ms) to stop motion in, from `max` in `s` or `ms`.
    pub max_ms: Option<f64>,
}

/// The effective pack, sorted by where each limit is enforced.
#[derive(Clone, Debug, Default)]
pub(crate) struct Limits {
    pub max: Vec<MaxLimit>,
    pub core: Vec<CoreLimit>,
    pub time_temp: Vec<TimeTempLimit>,
    pub pressure: Vec<PressureLimit>,
    pub stop: Vec<StopLimit>,
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_owned)
}

fn scope(limit: &Value) -> Scope {
    let applies = limit.get("appliesTo");
    Scope {
        medium: text(applies.and_then(|a| a.get("medium"))),
        ops: applies
            .and_then(|a| a.get("ops"))
            .and_then(Value::as_array)
            .unwrap_or_default()
            .iter()
            .filter_map(|o| text(Some(o)))
            .collect(),
        food_class: text(applies.and_then(|a| a.get("foodClass"))),
    }
}

fn degc(limit: &Value, id: &str, kind: &str) -> Result<(), String> {
    match limit.get("unit").and_then(Value::as_str) {
        None | Some("degC") => Ok(()),
        Some(other) => Err(format!(
            "limit {id} ({kind}) is in {other}; this executor compares temperatures in degC only"
        )),
    }
}

/// Sorts the pack's limits; `Err` holds the refusal detail for a limit this executor cannot
/// enforce (an unknown kind or action, a missing bound, an unsupported unit).
pub(crate) fn parse(pack: &Value) -> Result<Limits, String> {
    let mut out = Limits::default();
    let Some(list) = pack.get("limits").and_then(Value::as_array) else {
        return Err("the SafetyLimits pack has no limits list".to_owned());
    };
    for (i, limit) in list.iter().enumerate() {
        let id = text(limit.get("id")).unwrap_or_else(|| format!("#{i}"));
        let Some(kind) = limit.get("kind").and_then(Value::as_str) else {
            return Err(format!("limit {id} has no kind; refusing rather than ignoring it"));
        };
        let Some(action) = limit.get("action").and_then(Value::as_str) else {
            return Err(format!("limit {id} ({kind}) has no action"));
        };
        if !ACTIONS.contains(&action) {
            return Err(format!("limit {id} ({kind}) has unknown action {action}"));
        }
        let action = action.to_owned();
        let min = limit.get("min").and_then(Value::as_f64);
        let max = limit.get("max").and_then(Value::as_f64);
        let hold_ms = match limit.get("holdFor").and_then(Value::as_str) {
            Some(t) => {
                Some(duration_ms(t).ok_or_else(|| format!("limit {id} ({kind}) has holdFor {t}"))?)
            }
            None => None,
        };
        match kind {
            "max_temp" => {
                degc(limit, &id, kind)?;
                let max = max.ok_or_else(|| format!("limit {id} (max_temp) has no max"))?;
                out.max.push(MaxLimit { id, action, scope: scope(limit), max });
            }
            "min_core_temp" => {
                degc(limit, &id, kind)?;
                let min = min.ok_or_else(|| format!("limit {id} (min_core_temp) has no min"))?;
                out.core.push(CoreLimit { id, action, scope: scope(limit), min });
            }
            "time_temp" => {
                let rule = match (min, max, hold_ms) {
                    (Some(min), None, Some(hold_ms)) => TimeTempRule::Below { min, hold_ms },
                    (None, Some(max), Some(hold_ms)) => TimeTempRule::Above { max, hold_ms },
                    (None, None, None) => TimeTempRule::TwoStageCooling,
                    _ => {
                        return Err(format!(
                            "limit {id} (time_temp) needs either min or max with holdFor, or \
                             no bound (the two-stage cooling rule)"
                        ));
                    }
                };
                if rule != TimeTempRule::TwoStageCooling {
                    degc(limit, &id, kind)?;
                }
                out.time_temp.push(TimeTempLimit {
                    id,
                    action,
                    scope: scope(limit),
                    rule,
                    out_ms: 0,
                    cool_start_ms: None,
                    stage1_done: false,
                });
            }
            "pressure" => out.pressure.push(PressureLimit { id, scope: scope(limit), max }),
            "stop" => {
                let max_ms = match (limit.get("unit").and_then(Value::as_str), max) {
                    (_, None) => None,
                    (Some("s") | None, Some(m)) => Some(m * 1000.0),
                    (Some("ms"), Some(m)) => Some(m),
                    (Some("min"), Some(m)) => Some(m * 60_000.0),
                    (Some(u), Some(_)) => {
                        return Err(format!("limit {id} (stop) has a max in {u}, not a time"));
                    }
                };
                out.stop.push(StopLimit { id, max_ms });
            }
            // Enforced elsewhere (see the module documentation).
            "unattended" | "allergen_block" | "smoke_or_fire" | "untrusted_input" => {}
            other => {
                return Err(format!(
                    "limit {id} has kind {other}, which this executor does not know how to \
                     enforce; it refuses to start rather than ignore it"
                ));
            }
        }
    }
    Ok(out)
}

/// The checks made before the start, over the device steps of the plan: a `pressure` limit
/// covering a step (no pressure model here), a `stop` budget tighter than the simulator's
/// stop delay, and a run-time limit with action `refuse_start` that covers a step or the dish.
pub(crate) fn start_check(
    limits: &Limits,
    specs: &[std::sync::Arc<StepSpec>],
    recipe_classes: &[String],
    motion_stop_ms: u64,
) -> Option<Refusal> {
    let refuse = |node: Option<&str>, detail: String| {
        Some(Refusal { reason: RefusalReason::SafetyLimit, node: node.map(str::to_owned), detail })
    };
    for stop in &limits.stop {
        #[allow(clippy::cast_precision_loss)]
        if let Some(max) = stop.max_ms
            && max < motion_stop_ms as f64
        {
            return refuse(
                None,
                format!(
                    "limit {} (stop) allows {max} ms to stop, but this device stops motion \
                     {motion_stop_ms} ms after a request",
                    stop.id
                ),
            );
        }
    }
    for spec in specs.iter().filter(|s| !s.row.by_human) {
        let (node, op) = (spec.row.node.as_str(), spec.row.op.as_str());
        let medium = spec.envelope_medium.as_deref();
        if let Some(p) = limits.pressure.iter().find(|p| p.scope.covers(op, medium)) {
            let bound = p.max.map_or_else(String::new, |m| format!(", max {m} kPa"));
            return refuse(
                Some(node),
                format!(
                    "limit {} (pressure{bound}) covers {op} at node {node}, but the simulated \
                     device has no pressure model or reading to enforce it with",
                    p.id
                ),
            );
        }
        let core = limits.core.iter().filter(|l| {
            l.action == "refuse_start" && l.covers_step(op, &spec.food_classes, recipe_classes)
        });
        let time = limits
            .time_temp
            .iter()
            .filter(|l| l.action == "refuse_start" && l.scope.covers(op, medium))
            .map(|l| (&l.id, "time_temp"));
        let mut hit = core.map(|l| (&l.id, "min_core_temp")).chain(time);
        if let Some((id, kind)) = hit.next() {
            return refuse(
                Some(node),
                format!(
                    "limit {id} ({kind}) covers {op} at node {node} and its action is refuse_start"
                ),
            );
        }
    }
    if let Some(l) =
        limits.core.iter().find(|l| l.action == "refuse_start" && l.covers_dish(recipe_classes))
    {
        return refuse(
            None,
            format!(
                "limit {} (min_core_temp) covers the dish and its action is refuse_start",
                l.id
            ),
        );
    }
    None
}
