//! The simulated executor's admission: the Core decision, then what this executor cannot
//! enforce.
//!
//! [`cookwala::admission::admit`] decides what the standard decides (prechecks, the dry run
//! with the effective limits). An executor may still be unable to keep a promise the pack asks
//! of it — this one has no pressure model, stops motion in [`crate::sim::MOTION_STOP_MS`], and
//! refuses outright what a `refuse_start` limit covers — and must say so before anything heats
//! up, as a `safety_limit` refusal, never by ignoring the limit. Those checks used to run inside
//! the simulator's constructor, a second decision after admission's; here they are part of the
//! one decision, so the [`Admission`] a hub stores is the whole of it and
//! [`crate::Simulation::from_admission`] only builds what it says.

use std::sync::Arc;

use canonical_json::Value;
use cookwala::admission::{Admission, AdmissionError, PlanStep, Request};
use cookwala::dryrun::{Refusal, RefusalReason};
use cookwala::vocab::Vocabulary;

/// Admission for this executor: [`cookwala::admission::admit`], then [`cannot_enforce`] on
/// an accepted plan (its refusal replaces the acceptance).
///
/// # Errors
/// As [`cookwala::admission::admit`]: a request missing a required field, documents the dry
/// run cannot read.
pub fn admit(req: &Request<'_>) -> Result<Admission, AdmissionError> {
    let vocab = Vocabulary::builtin();
    let admission = cookwala::admission::admit(vocab, req)?;
    if admission.refusal().is_some() {
        return Ok(admission);
    }
    match cannot_enforce(vocab, req.recipe, req.device, admission.plan(), &admission.limits) {
        Some(refusal) => Ok(admission.refused(refusal)),
        None => Ok(admission),
    }
}

/// The first limit of `limits` this executor cannot enforce for `plan`, as a `safety_limit`
/// refusal: a limit it cannot read (an unknown kind, a missing bound), or one the start check
/// finds (a pressure limit, a stop budget under [`crate::sim::MOTION_STOP_MS`], a
/// `refuse_start` limit covering a step or the dish).
pub fn cannot_enforce(
    vocab: &Vocabulary,
    recipe: &Value,
    device: &Value,
    plan: &[PlanStep],
    limits: &Value,
) -> Option<Refusal> {
    let parsed = match crate::limits::parse(limits) {
        Ok(l) => l,
        Err(detail) => {
            return Some(Refusal { reason: RefusalReason::SafetyLimit, node: None, detail });
        }
    };
    let altitude = device.pointer("/location/altitudeM").and_then(Value::as_f64).unwrap_or(0.0);
    let specs: Vec<Arc<crate::steps::StepSpec>> =
        crate::steps::build(vocab, recipe, plan, altitude).into_iter().map(Arc::new).collect();
    let classes = crate::limits::food_classes(Some(recipe));
    crate::limits::start_check(&parsed, &specs, &classes, crate::config::MOTION_STOP_MS)
}
