//! Deterministic device physics and the Cookwala executor runtime on an injected clock.
//!
//! A [`Simulation`] is one execution of one recipe on one simulated device. It is pure: no wall
//! clock, no OS randomness, no I/O. Time is simulated milliseconds handed to
//! [`Simulation::advance`]; noise comes from a seeded xorshift generator, so the same
//! [`SimConfig`] (seed included) always produces the same readings, events, status and log. A
//! 60-minute recipe is 36 000 ticks of a handful of floating-point operations, so it simulates
//! in milliseconds; the HTTP hub (and `cookwala cook --speed N`) decide how fast simulated time
//! passes.
//!
//! **Physics rather than a timer** ([`physics`]). Lumped first-order bodies — pan surface,
//! contents (water that clamps at its altitude-corrected boiling point and evaporates, frying
//! oil, or a thin layer of food), oven air and product core — exchange heat through fixed
//! conductances and lose it to a 22 °C kitchen; a lid cuts the contents' loss. Heaters have
//! power limits (the device's `x-sim` block: `hobPowerW`, `ovenPowerW`, `panHeatCapacityJPerK`,
//! `motion`). Every temperature sensor the device declares (`cw.sense.pan_surface_temp`,
//! `liquid_temp`, `oil_temp`, `product_temp`, `oven_temp`, `grill_temp`, `core_temp`) is read
//! at 1 Hz with seeded Gaussian noise of half its declared `accuracy`.
//!
//! **Controller.** For a step whose op has a temperature envelope, the controller drives the
//! envelope's medium to the recipe's target (`params.tempC`, `oilTempC` or `target`, when it
//! lies inside the band; else the band's middle), with feed-forward of the steady loss plus a
//! proportional term on the measured temperature corrected for the heat stored in the pan, so
//! the contents do not overshoot the band. The step ends when the medium has been in band for
//! `until.nominalTime` (else `minTime`, else a per-op default) and every `until.all` sensor
//! comparison holds for its `holdFor`; it times out at `maxTime` and then follows `onTimeout`
//! (`abort_safe` stops, `extend`/`retry` extend once, anything else asks a person). Steps
//! without a thermal envelope are timed the same way. The envelope verdict of each step comes
//! from [`cookwala::envelope::check_envelope`] over the step's readings.
//!
//! **Lifecycle.** `accepted → preparing → running → completed`, with `paused`, `needs_human`
//! (plan rows `by: human`, a timed-out step, an `ask_human` limit), `stopping → stopped`, and
//! `refused`/`failed` final — every move checked with
//! [`cookwala::execution::transition_allowed`]. `seq` increments on every observable change
//! (state, step start/end, safety action, and a telemetry publication every
//! [`SimConfig::publish_every_ms`] while running); [`Simulation::status`] is exactly the
//! document of the current `seq`, so an `ETag`/`If-Match` built on it is stable while the
//! execution waits for a person.
//!
//! **Safety.** The executor's SafetyLimits are the built-in default pack narrowed with
//! [`SimConfig::extra_limits`] ([`cookwala::limits::narrow`] can only add limits), so no input
//! raises a limit. Every limit of that one effective pack has a place where it is enforced, and
//! a limit that has none — an unknown `kind` or `action`, a bound missing, a temperature not in
//! `degC` — makes the execution start `refused` with reason `safety_limit` and a detail naming
//! the limit and its kind, never run without it. By kind:
//!
//! - `max_temp`: a monitor independent of the controller reads the limit's medium each tick
//!   (oil above 200 °C while frying, a pan surface above 280 °C).
//! - `min_core_temp`: checked when a device step that cooks a covered product ends, and before
//!   a covered dish is served. Core 0.2 gives recipes no field for the class of food they cook,
//!   so this project declares it in the extension field `x-foodClass` (a string or a list): on
//!   a node for the product that step cooks (a limit with only `foodClass` is checked when that
//!   node ends; one with `ops` too, when a step of those ops ends in a recipe or node of that
//!   class), or at the recipe's top level for the finished dish (checked before completing).
//!   The core is read by a sensor only — the core probe, else a liquid or product sensor when
//!   the pan holds the product itself — and a missing reading counts as below the minimum. The
//!   built-in `roast-chicken-thighs` declares `poultry` on its roast. A person who confirms
//!   after `ask_human` takes the step as done.
//! - `time_temp` with `min` and `holdFor` (`hold.hot`) or `max` and `holdFor`: the time the
//!   step's medium (else the product: core probe, else the pan's contents) spends below `min`
//!   (above `max`) is summed over every step the limit covers, paused or not; past `holdFor`
//!   the action happens. A `time_temp` limit with no bound (`cool.two_stage`) is the two-stage
//!   cooling rule: from 60 °C the product must be at or below 21 °C within 2 h and at or below
//!   5 °C within 6 h, timed during the steps it covers (`cw.op.cool`). None of our recipes
//!   holds or cools; the simulated kitchen is 22 °C, so room cooling misses the first stage.
//! - `pressure`: the simulator has no pressure model and no pressure reading, so a device step
//!   a pressure limit covers (`cw.op.pressure_cook`, or an envelope medium `pressure`) is
//!   refused at the start (`safety_limit`, naming the limit and the node). The dry run alone
//!   would accept it, its sensor ladder falling back to the liquid sensor or time.
//! - `stop`: the stop delays below must fit the limit's `max` (in `s`, `ms` or `min`), else
//!   the start is refused.
//! - `unattended` is the dry run's presence rule; `allergen_block` is the caller's precheck
//!   (the hub holds the request); `smoke_or_fire` cannot occur in the model (it has no smoke
//!   or flame); `untrusted_input` holds because no recipe text is ever interpreted.
//!
//! As in the dry run, a limit whose `appliesTo` names neither `ops` nor `medium` (nor
//! `foodClass`, for `min_core_temp`) covers no step. Actions: `alert` records a safety event
//! and an anonymous IncidentReport and goes on; `ask_human` also moves to `needs_human` with a
//! `humanNeeded.why` naming the limit and the reading; `cut_heat` cuts the heaters at once,
//! `stop_motion` stops motion at once, `stop_all` does both, and each then stops the execution
//! (`aborted_safe`); `refuse_start` refuses at the start when the limit covers a step of the
//! plan (fired mid-run, it acts as `stop_all`). Each firing is a Core `safetyEvents` row
//! `{at, limit, action, node}` in the log. A stop cuts motion
//! [`sim::MOTION_STOP_MS`] and heat [`sim::HEAT_CUT_MS`] after the request (budgets 0.5 s and
//! 1 s); the log carries a `stop.local` safety event and, under `x-sim.stop`, the request, heat
//! cut and motion stop times (RFC 3339 with milliseconds, and the delays in ms). Every final
//! state has the heaters off. Guards of our own: a heater that draws full power for 4 min while the
//! controller asks for less (`x-sim.heater_runaway`), and a verifying sensor that stops
//! reporting (`x-sim.sensor_fault`: fall back to the next usable ladder rung, else cut heat and
//! fail). Safety events' [`SimEvent::data`] is a SafetyData: `level`, `action` (see
//! [`safety_data_action`]), `reading`, and `x-limit`, `x-limitAction`, `x-detail`.
//!
//! **Estimated end.** While `accepted`, `preparing` or `running`, the status carries `eta`:
//! now, plus what is left of the current step's nominal time (its time in band, for a heated
//! step), plus the nominal time of every later step. Warm-up is not predicted, so the estimate
//! moves later while a step heats up; it is absent while paused, waiting for a person,
//! stopping and when final.
//!
//! **Faults** ([`FaultKind`]): `Sensor` (the step's sensor goes silent 5 s in), `Overheat` (the
//! heater relay sticks on), `Timeout` (the step's completion cue never comes).
//!
//! **API.** [`admit`] (the Core admission and what this executor cannot enforce: the one
//! decision), [`Simulation::from_admission`] (the run it admitted; [`Simulation::new`] is both
//! from documents), [`Simulation::advance`] (returns [`SimEvent`]s with their
//! CloudEvents type, priority and data), [`Simulation::stop`], [`Simulation::pause`],
//! [`Simulation::resume`], [`Simulation::confirm_human`], [`Simulation::status`],
//! [`Simulation::is_final`], [`Simulation::log`] (an ExecutionLog only after a final state:
//! `consent.dataset: none`, `privacy.personalData: none`, no names or ids of people, and not
//! even the caller's stop reason — only the code `requested`),
//! [`Simulation::incidents`] and [`Simulation::trace`]. [`builtin`] holds the project's example
//! recipes and devices.
//!
//! **Documents.** Status, log and incident documents validate against the standard's JSON
//! Schemas, which close most nested objects (`safetyEvents` rows are `{at, limit, action,
//! node}`, step `summary` rows are per-sensor `{sensor, unit, min, max, end}`, deviations are
//! `{kind, detail}`). Everything richer — each step's band, target, envelope verdict, time to
//! reach the band, the safety details and the stop timings — goes under the log's top-level
//! `x-sim` extension, which the schemas allow.

mod admit;
pub mod builtin;
mod config;
mod events;
mod limits;
pub mod physics;
mod rng;
pub mod sim;
mod steps;
mod trace;

pub use admit::{admit, cannot_enforce};
pub use config::{Fault, FaultKind, PlanStep, SimConfig};
pub use events::{EventKind, Priority, SimEvent, safety_data_action};
pub use rng::Rng;
pub use sim::{LOCAL_STOP, SimError, Simulation};
pub use trace::{Trace, TracePoint, TraceStep};

use canonical_json::Value;

/// A number rounded to 3 decimals as a JSON value (integers stay integers).
pub(crate) fn num(x: f64) -> Value {
    let r = (x * 1000.0).round() / 1000.0;
    if r.fract() == 0.0 && r.abs() < 1e15 {
        #[allow(clippy::cast_possible_truncation)]
        Value::from(r as i64)
    } else {
        canonical_json::Finite::new(r).map_or(Value::Null, Value::from)
    }
}

/// The wall-clock time (ms since the Unix epoch) of simulated time `at_ms` for a simulation
/// that started at `start_unix_ms` and runs `time_scale` simulated ms per wall ms.
pub fn wall_unix_ms(start_unix_ms: i64, time_scale: f64, at_ms: u64) -> i64 {
    let scale = if time_scale.is_finite() && time_scale > 0.0 { time_scale } else { 1.0 };
    // Exact for the integral scales the hub uses; rounding, never truncation, otherwise.
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let wall = (at_ms as f64 / scale).round();
    #[allow(clippy::cast_possible_truncation)]
    let wall = if wall.is_finite() && wall < 9.0e15 { wall as i64 } else { i64::MAX / 2 };
    start_unix_ms.saturating_add(wall)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for milliseconds since the Unix epoch (proleptic Gregorian).
pub fn rfc3339_ms(unix_ms: i64) -> String {
    timefmt::format_utc_ms(unix_ms)
}

#[cfg(test)]
mod tests;
