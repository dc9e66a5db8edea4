//! Admission: the one decision an executor makes before anything heats up.
//!
//! [`admit`] runs, in the upstream hub's order, the executor prechecks ([`crate::precheck`]:
//! request, version, recipe, hash, recall, mandate, allergens, busy), then the dry run
//! ([`crate::dryrun`]) against the device with the executor's effective SafetyLimits pack (its
//! own pack narrowed by whatever narrows it: [`crate::limits::narrow`]). The answer is an
//! [`Admission`]: the accepted plan with the effective limits, or the first refusal. A hub
//! records it; a simulator or a device is built from it and never decides again.
//!
//! Pure: the time, the documents, the keys and the busy flag come in through [`Request`].

use canonical_json::{Map, Value};

use crate::dryrun::{By, DryRun, DryRunError, Options, Refusal};
use crate::precheck::{Context, Finding};
use crate::vocab::Vocabulary;

/// One accepted plan row, owned (a copy of a dry-run row).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanStep {
    /// Node id.
    pub node: String,
    /// Op id.
    pub op: String,
    /// A person performs the step (`by: human`).
    pub by_human: bool,
    /// `sensor`, `model`, `time` or `human`.
    pub verified_by: String,
    /// The ladder rung (a sensor id, `model`, `time`, `human`), device rows only.
    pub rung: Option<String>,
}

impl PlanStep {
    /// The rows of a dry run.
    pub fn from_dry_run(dry: &DryRun<'_>) -> Vec<PlanStep> {
        dry.plan
            .iter()
            .map(|row| PlanStep {
                node: row.node.to_owned(),
                op: row.op.to_owned(),
                by_human: row.by == By::Human,
                verified_by: row.verified_by.to_owned(),
                rung: row.rung.map(str::to_owned),
            })
            .collect()
    }

    /// The row as the dry run shows it: `{node, op, by, verifiedBy, rung?}`.
    pub fn to_value(&self) -> Value {
        let mut r = Map::new();
        r.insert("node".into(), self.node.as_str().into());
        r.insert("op".into(), self.op.as_str().into());
        r.insert("by".into(), if self.by_human { "human" } else { "device" }.into());
        r.insert("verifiedBy".into(), self.verified_by.as_str().into());
        if let Some(rung) = &self.rung {
            r.insert("rung".into(), rung.as_str().into());
        }
        Value::Object(r)
    }

    /// Reads [`PlanStep::to_value`] back (`None` for another shape).
    pub fn from_value(v: &Value) -> Option<PlanStep> {
        let by_human = match v.get("by")?.as_str()? {
            "human" => true,
            "device" => false,
            _ => return None,
        };
        Some(PlanStep {
            node: v.get("node")?.as_str()?.to_owned(),
            op: v.get("op")?.as_str()?.to_owned(),
            by_human,
            verified_by: v.get("verifiedBy")?.as_str()?.to_owned(),
            rung: match v.get("rung") {
                Some(r) => Some(r.as_str()?.to_owned()),
                None => None,
            },
        })
    }
}

/// What [`admit`] decides.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// The execution may start with this plan.
    Accepted {
        /// The accepted plan.
        plan: Vec<PlanStep>,
    },
    /// The first refusal (a precheck's or the dry run's).
    Refused(Refusal),
}

/// The outcome of admission: the decision, the effective limits it was made with, and the
/// prechecks' findings (incidents to report; they never refuse).
#[derive(Clone, Debug, PartialEq)]
pub struct Admission {
    /// Accepted with a plan, or refused.
    pub decision: Decision,
    /// The SafetyLimits pack the execution runs under (the executor's, narrowed).
    pub limits: Value,
    /// Precheck findings (e.g. an instruction found in free text: ignored and logged).
    pub findings: Vec<Finding>,
}

impl Admission {
    /// The refusal, if refused.
    pub fn refusal(&self) -> Option<&Refusal> {
        match &self.decision {
            Decision::Refused(r) => Some(r),
            Decision::Accepted { .. } => None,
        }
    }

    /// The plan, if accepted (empty if refused).
    pub fn plan(&self) -> &[PlanStep] {
        match &self.decision {
            Decision::Accepted { plan } => plan,
            Decision::Refused(_) => &[],
        }
    }

    /// Refuses with `refusal` instead (an executor that cannot enforce what was accepted; see
    /// [`admit`]'s callers). The limits and findings stay.
    #[must_use]
    pub fn refused(self, refusal: Refusal) -> Admission {
        Admission { decision: Decision::Refused(refusal), ..self }
    }

    /// The record a hub stores with the execution and builds its run from, again after a
    /// restart: `{"accepted": {"plan": [...]}}` or `{"refused": {reason, node?, detail}}`, and
    /// `limits`, the effective pack. The findings are not part of it (they are reported as
    /// incidents).
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        match &self.decision {
            Decision::Accepted { plan } => {
                let mut a = Map::new();
                a.insert(
                    "plan".into(),
                    Value::Array(plan.iter().map(PlanStep::to_value).collect()),
                );
                m.insert("accepted".into(), Value::Object(a));
            }
            Decision::Refused(r) => {
                m.insert("refused".into(), r.to_value());
            }
        }
        m.insert("limits".into(), self.limits.clone());
        Value::Object(m)
    }

    /// Reads [`Admission::to_value`] back.
    ///
    /// # Errors
    /// [`RecordError`] naming the member that is missing or malformed.
    pub fn from_value(v: &Value) -> Result<Admission, RecordError> {
        let limits = v.get("limits").ok_or(RecordError("limits"))?.clone();
        if limits.as_object().is_none() {
            return Err(RecordError("limits"));
        }
        let decision = match (v.get("accepted"), v.get("refused")) {
            (Some(a), None) => {
                let rows = a.get("plan").and_then(Value::as_array).ok_or(RecordError("plan"))?;
                let plan = rows
                    .iter()
                    .map(PlanStep::from_value)
                    .collect::<Option<Vec<_>>>()
                    .ok_or(RecordError("plan"))?;
                Decision::Accepted { plan }
            }
            (None, Some(r)) => {
                Decision::Refused(Refusal::from_value(r).ok_or(RecordError("refused"))?)
            }
            _ => return Err(RecordError("accepted/refused")),
        };
        Ok(Admission { decision, limits, findings: Vec::new() })
    }
}

/// A stored admission record that cannot be read (the member named).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("admission record: `{0}` is missing or malformed")]
pub struct RecordError(pub &'static str);

/// Everything admission looks at.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The prechecks' context (request, recipe, recalls, keys, busy, now); `None` when there is
    /// no ExecuteRequest (a simulator run straight from documents): only the dry run decides.
    pub precheck: Option<Context<'a>>,
    /// The recipe to plan (when the prechecks are skipped; else `precheck.recipe`).
    pub recipe: &'a Value,
    /// The device's Capabilities.
    pub device: &'a Value,
    /// The executor's own SafetyLimits pack.
    pub pack: &'a Value,
    /// A pack that narrows it (the device's or site's), if any.
    pub narrowing: Option<&'a Value>,
    /// A person is present.
    pub human_present: bool,
    /// The `model` rung may be used.
    pub allow_model: bool,
    /// The current instant (`precheck.now` when prechecks run).
    pub now: crate::time::Instant,
}

/// Why admission could not decide at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdmissionError {
    /// The request lacks a required field (a 400, not a refusal).
    #[error("{0}")]
    Request(#[from] crate::precheck::RequestError),
    /// The recipe or device cannot be read by the dry run.
    #[error("dry run: {0}")]
    DryRun(#[from] DryRunError),
}

/// Decides whether an execution may start: prechecks, then the dry run with the effective
/// limits. The first refusal wins.
///
/// # Errors
/// [`AdmissionError::Request`] for a request missing a required field;
/// [`AdmissionError::DryRun`] when the documents cannot be read at all.
pub fn admit(vocab: &Vocabulary, req: &Request<'_>) -> Result<Admission, AdmissionError> {
    let limits = match req.narrowing {
        Some(extra) => crate::limits::narrow(req.pack, extra),
        None => req.pack.clone(),
    };
    let mut findings = Vec::new();
    if let Some(ctx) = &req.precheck {
        let outcome = crate::precheck::precheck(ctx).map_err(AdmissionError::Request)?;
        findings = outcome.findings;
        if let Some(refusal) = outcome.refusal {
            return Ok(Admission { decision: Decision::Refused(refusal), limits, findings });
        }
    }
    let options = Options {
        human_present: req.human_present,
        allow_model: req.allow_model,
        limits: Some(&limits),
        now: req.now,
    };
    let dry = crate::dryrun::dry_run(vocab, req.recipe, req.device, options)?;
    let decision = match dry.refusal.clone() {
        Some(refusal) => Decision::Refused(refusal),
        None => Decision::Accepted { plan: PlanStep::from_dry_run(&dry) },
    };
    Ok(Admission { decision, limits, findings })
}
