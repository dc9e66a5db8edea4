//! The dry run: can this device cook every step of this recipe, and how is each step verified?
//! (COOKWALA.md §7.1.)
//!
//! This reproduces the upstream reference algorithm exactly, including what it deliberately
//! leaves out (open points 5, 6, 7, 21): human-assigned steps skip every check, targets are
//! compared to the medium band whatever `target.sensor` says, altitude is not applied, and
//! heat levels are checked only for overlap on `pan_surface`. The first refusal wins and the
//! plan holds the rows made before it.
//!
//! Documents are read as JSON values, as the reference reads them. Input the reference would
//! crash on (a node without a string `id` or `op`, `process.nodes` not an array, `params` that
//! is not an object) is a [`DryRunError`] naming the JSON pointer; it never panics.
//!
//! One departure, outside the schema: a limit whose `appliesTo.ops` is not an array applies to
//! every op (within its medium), where the reference would search a string for the op as a
//! substring. A malformed scope fails closed, and the pack can be indexed in linear time
//! ([`LimitIndex`]), so a step costs O(log limits) whatever the pack holds.

use std::collections::BTreeSet;
use std::fmt;

use canonical_json::{Map, Value};

use crate::envelope::{finite, truthy};
use crate::time::Instant;
use crate::vocab::{Envelope, Op, RungKind, RungSpec, Vocabulary};

mod pack;

pub use pack::LimitIndex;

/// The Core `RefusalReason` enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum RefusalReason {
    /// Other minor version.
    UnsupportedVersion,
    /// The recipe held differs from the requested hash.
    RecipeHashMismatch,
    /// A recall is in force.
    RecipeRecalled,
    /// Equipment missing (never produced by the reference).
    MissingEquipment,
    /// The device cannot perform an op (or the recipe is unknown).
    MissingCapability,
    /// No ladder rung can verify a step.
    MissingSensorNoFallback,
    /// A number is outside the op envelope.
    EnvelopeOutOfRange,
    /// A local safety limit would fire.
    SafetyLimit,
    /// A blocked allergen is in the recipe.
    AllergenBlock,
    /// The requester may not start cooking.
    NotAuthorized,
    /// The mandate lacks the scope or has expired.
    MandateScope,
    /// An op may not run unattended.
    NeedsHumanPresent,
    /// The device is busy.
    Busy,
}

impl RefusalReason {
    /// Every reason, in schema order.
    pub const ALL: [RefusalReason; 13] = [
        RefusalReason::UnsupportedVersion,
        RefusalReason::RecipeHashMismatch,
        RefusalReason::RecipeRecalled,
        RefusalReason::MissingEquipment,
        RefusalReason::MissingCapability,
        RefusalReason::MissingSensorNoFallback,
        RefusalReason::EnvelopeOutOfRange,
        RefusalReason::SafetyLimit,
        RefusalReason::AllergenBlock,
        RefusalReason::NotAuthorized,
        RefusalReason::MandateScope,
        RefusalReason::NeedsHumanPresent,
        RefusalReason::Busy,
    ];

    /// The wire code.
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalReason::UnsupportedVersion => "unsupported_version",
            RefusalReason::RecipeHashMismatch => "recipe_hash_mismatch",
            RefusalReason::RecipeRecalled => "recipe_recalled",
            RefusalReason::MissingEquipment => "missing_equipment",
            RefusalReason::MissingCapability => "missing_capability",
            RefusalReason::MissingSensorNoFallback => "missing_sensor_no_fallback",
            RefusalReason::EnvelopeOutOfRange => "envelope_out_of_range",
            RefusalReason::SafetyLimit => "safety_limit",
            RefusalReason::AllergenBlock => "allergen_block",
            RefusalReason::NotAuthorized => "not_authorized",
            RefusalReason::MandateScope => "mandate_scope",
            RefusalReason::NeedsHumanPresent => "needs_human_present",
            RefusalReason::Busy => "busy",
        }
    }

    /// Parses a wire code ([`RefusalReason::as_str`]).
    pub fn parse(code: &str) -> Option<RefusalReason> {
        RefusalReason::ALL.into_iter().find(|r| r.as_str() == code)
    }
}

impl fmt::Display for RefusalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal: reason code, the node when one is to blame, and a sentence for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The code.
    pub reason: RefusalReason,
    /// The node id, when a step is to blame.
    pub node: Option<String>,
    /// What happened.
    pub detail: String,
}

impl Refusal {
    /// `{reason, node?, detail}`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("reason".into(), self.reason.as_str().into());
        if let Some(n) = &self.node {
            m.insert("node".into(), n.as_str().into());
        }
        m.insert("detail".into(), self.detail.as_str().into());
        Value::Object(m)
    }

    /// Reads [`Refusal::to_value`] back (`None` for another shape or an unknown reason).
    pub fn from_value(v: &Value) -> Option<Refusal> {
        Some(Refusal {
            reason: RefusalReason::parse(v.get("reason")?.as_str()?)?,
            node: match v.get("node") {
                Some(n) => Some(n.as_str()?.to_owned()),
                None => None,
            },
            detail: v.get("detail")?.as_str()?.to_owned(),
        })
    }
}

/// Who performs a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// The device.
    Device,
    /// A person present in the kitchen.
    Human,
}

impl By {
    /// `device` or `human`.
    pub fn as_str(self) -> &'static str {
        match self {
            By::Device => "device",
            By::Human => "human",
        }
    }
}

/// One plan row (borrowing ids from the recipe and the vocabulary).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanRow<'a> {
    /// Node id.
    pub node: &'a str,
    /// Op id.
    pub op: &'a str,
    /// Who performs it.
    pub by: By,
    /// `sensor`, `model`, `time` or `human`.
    pub verified_by: &'a str,
    /// The ladder rung chosen (device rows only).
    pub rung: Option<&'a str>,
}

/// The result of a dry run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DryRun<'a> {
    /// Rows made (before the refusal, if any).
    pub plan: Vec<PlanRow<'a>>,
    /// The first refusal; `None` means accepted.
    pub refusal: Option<Refusal>,
    /// Non-blocking notes (deprecated vocabulary ids, with their replacement).
    pub warnings: Vec<String>,
}

impl DryRun<'_> {
    /// `accepted` or `refused`.
    pub fn state(&self) -> &'static str {
        if self.refusal.is_some() { "refused" } else { "accepted" }
    }

    /// The CLI shape `{"state","reason","node","plan":[{"node","by","verifiedBy"}]}`.
    pub fn summary(&self) -> Value {
        let mut m = Map::new();
        m.insert("state".into(), self.state().into());
        let reason = self.refusal.as_ref().map_or(Value::Null, |r| r.reason.as_str().into());
        let node =
            self.refusal.as_ref().and_then(|r| r.node.as_deref()).map_or(Value::Null, Value::from);
        m.insert("reason".into(), reason);
        m.insert("node".into(), node);
        let plan = self
            .plan
            .iter()
            .map(|row| {
                let mut r = Map::new();
                r.insert("node".into(), row.node.into());
                r.insert("by".into(), row.by.as_str().into());
                r.insert("verifiedBy".into(), row.verified_by.into());
                Value::Object(r)
            })
            .collect();
        m.insert("plan".into(), Value::Array(plan));
        Value::Object(m)
    }

    /// The reference's full shape: `{state, plan:[{node, op, by, verifiedBy, rung?}], refusal?}`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("state".into(), self.state().into());
        let plan = self
            .plan
            .iter()
            .map(|row| {
                let mut r = Map::new();
                r.insert("node".into(), row.node.into());
                r.insert("op".into(), row.op.into());
                r.insert("by".into(), row.by.as_str().into());
                r.insert("verifiedBy".into(), row.verified_by.into());
                if let Some(rung) = row.rung {
                    r.insert("rung".into(), rung.into());
                }
                Value::Object(r)
            })
            .collect();
        m.insert("plan".into(), Value::Array(plan));
        if let Some(r) = &self.refusal {
            m.insert("refusal".into(), r.to_value());
        }
        Value::Object(m)
    }
}

/// A document the dry run cannot read at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pointer}: {message}")]
pub struct DryRunError {
    /// JSON pointer into the recipe or capabilities document.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

fn input_error(pointer: String, message: &str) -> DryRunError {
    DryRunError { pointer, message: message.to_owned() }
}

/// Dry-run settings.
#[derive(Clone, Copy, Debug)]
pub struct Options<'a> {
    /// A person is present.
    pub human_present: bool,
    /// The `model` rung may be used.
    pub allow_model: bool,
    /// The executor's SafetyLimits document (`None`: no limits).
    pub limits: Option<&'a Value>,
    /// The instant calibrations are judged at.
    pub now: Instant,
}

/// The top-level members of a recipe a dry run reads: nothing else of the document changes its
/// result. A caller that parses many documents only to dry-run them (`cookwala dry-run --batch`)
/// checks the whole text and builds only these; `tests::a_dry_run_reads_only_the_members_it_declares`
/// runs every bundled and conformance case both ways.
pub const RECIPE_MEMBERS_READ: &[&str] = &["process"];

/// The top-level members of a capabilities document a dry run reads (see
/// [`RECIPE_MEMBERS_READ`]).
pub const CAPABILITIES_MEMBERS_READ: &[&str] = &["capabilities"];

/// Runs the dry run of `recipe` on `capabilities`.
///
/// Equivalent to preparing both documents ([`PreparedRecipe`], [`PreparedDevice`]) and calling
/// [`run_prepared`]; a catalog × fleet check prepares each document once.
///
/// # Errors
/// [`DryRunError`] for documents the reference cannot read (see the module documentation).
pub fn dry_run<'a>(
    vocab: &'a Vocabulary,
    recipe: &'a Value,
    capabilities: &'a Value,
    options: Options<'_>,
) -> Result<DryRun<'a>, DryRunError> {
    let index = options.limits.map(|pack| LimitIndex::new(vocab, pack));
    dry_run_indexed(vocab, recipe, capabilities, options, index.as_ref())
}

/// [`dry_run`] with the pack already indexed (`limits` is used in place of `options.limits`):
/// a caller that checks many recipes against one pack indexes it once.
///
/// # Errors
/// As [`dry_run`].
pub fn dry_run_indexed<'a>(
    vocab: &'a Vocabulary,
    recipe: &'a Value,
    capabilities: &'a Value,
    options: Options<'_>,
    limits: Option<&LimitIndex>,
) -> Result<DryRun<'a>, DryRunError> {
    let prepared = PreparedRecipe::with_index(vocab, recipe, limits)?;
    let device = PreparedDevice::new(vocab, capabilities, options.now);
    run_prepared(&prepared, &device, options.human_present, options.allow_model)
}

#[derive(Clone, Debug)]
struct PreparedNode<'a> {
    id: &'a str,
    op: &'a str,
    op_index: Option<usize>,
    human_ok: bool,
    /// The envelope/limit verdict for this node (computed once per recipe and limits).
    params: Result<Option<(RefusalReason, String)>, DryRunError>,
    /// `Some` when the op has an envelope: (unattended, resolved ladder).
    envelope: Option<(bool, &'a [RungSpec])>,
}

/// A recipe resolved against a vocabulary and a SafetyLimits pack, ready to be dry-run on any
/// number of devices. Node-level problems are kept and reported only when a run reaches the
/// node, so results equal the reference's node-by-node walk.
#[derive(Clone, Debug)]
pub struct PreparedRecipe<'a> {
    nodes: Vec<Result<PreparedNode<'a>, DryRunError>>,
    warnings: Vec<String>,
}

impl<'a> PreparedRecipe<'a> {
    /// Prepares `recipe` with `limits` (the pack is indexed for this recipe; a caller with many
    /// recipes and one pack indexes it once and calls [`PreparedRecipe::with_index`]).
    ///
    /// # Errors
    /// [`DryRunError`] when `process` / `process.nodes` cannot be read at all.
    pub fn new(
        vocab: &'a Vocabulary,
        recipe: &'a Value,
        limits: Option<&Value>,
    ) -> Result<PreparedRecipe<'a>, DryRunError> {
        let index = limits.map(|pack| LimitIndex::new(vocab, pack));
        PreparedRecipe::with_index(vocab, recipe, index.as_ref())
    }

    /// Prepares `recipe` with a pack already indexed.
    ///
    /// # Errors
    /// [`DryRunError`] when `process` / `process.nodes` cannot be read at all.
    pub fn with_index(
        vocab: &'a Vocabulary,
        recipe: &'a Value,
        limits: Option<&LimitIndex>,
    ) -> Result<PreparedRecipe<'a>, DryRunError> {
        let nodes = recipe_nodes(recipe)?;
        let mut out =
            PreparedRecipe { nodes: Vec::with_capacity(nodes.len()), warnings: Vec::new() };
        for (i, node) in nodes.iter().enumerate() {
            let (id, op) = match node_id_op(node, i) {
                Ok(pair) => pair,
                Err(e) => {
                    out.nodes.push(Err(e));
                    continue;
                }
            };
            let resolved = vocab.op_resolved(op);
            let entry = resolved.map(|(_, e, _)| e);
            if let Some(e) = entry
                && e.deprecated
                && let Some(w) = vocab.deprecation(op)
            {
                out.warnings.push(format!("node {id}: {w}"));
            }
            let envelope = resolved.and_then(|(_, e, ladder)| {
                let env = e.envelope.as_ref()?;
                // `env.ladder()` already defaults a missing ladder to ["time"].
                Some((env.unattended, ladder))
            });
            out.nodes.push(Ok(PreparedNode {
                id,
                op,
                op_index: resolved.map(|(i, _, _)| i),
                human_ok: assignable_to_human(node),
                params: check_params(vocab, op, entry, node, limits, i),
                envelope,
            }));
        }
        Ok(out)
    }

    /// Deprecation warnings for the recipe's ops.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

/// A device resolved against a vocabulary at an instant: the ops it may run and the sensors
/// (with vision cues) it may trust.
#[derive(Clone, Debug)]
pub struct PreparedDevice<'a> {
    known_ops: Vec<u64>,
    // Sets, not lists: a recipe's unknown ops were each searched for in a device's unknown
    // ops, nodes times ops (issue 22).
    other_ops: BTreeSet<&'a str>,
    known_sensors: Vec<u64>,
    other_sensors: BTreeSet<&'a str>,
}

fn bit(set: &[u64], i: usize) -> bool {
    set.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
}

fn set_bit(set: &mut [u64], i: usize) {
    if let Some(w) = set.get_mut(i / 64) {
        *w |= 1 << (i % 64);
    }
}

impl<'a> PreparedDevice<'a> {
    /// Prepares a capabilities document; calibrations are judged at `now`.
    pub fn new(vocab: &Vocabulary, capabilities: &'a Value, now: Instant) -> PreparedDevice<'a> {
        let mut d = PreparedDevice {
            known_ops: vec![0; vocab.op_count().div_ceil(64)],
            other_ops: BTreeSet::new(),
            known_sensors: vec![0; vocab.sensor_count().div_ceil(64)],
            other_sensors: BTreeSet::new(),
        };
        let list = capabilities.pointer("/capabilities/ops").and_then(Value::as_array);
        for op in
            list.unwrap_or_default().iter().filter_map(|o| o.get("op").and_then(Value::as_str))
        {
            match vocab.op_resolved(op) {
                Some((_, e, _)) if !e.executable => {}
                Some((i, _, _)) => set_bit(&mut d.known_ops, i),
                None => {
                    d.other_ops.insert(op);
                }
            }
        }
        for sensor in trusted_sensor_ids(capabilities, now) {
            match vocab.sensor_index(sensor) {
                Some(i) => set_bit(&mut d.known_sensors, i),
                None => {
                    d.other_sensors.insert(sensor);
                }
            }
        }
        d
    }

    fn can(&self, node: &PreparedNode<'_>) -> bool {
        match node.op_index {
            Some(i) => bit(&self.known_ops, i),
            None => self.other_ops.contains(node.op),
        }
    }

    fn trusts(&self, sensor: &str, index: Option<usize>) -> bool {
        match index {
            Some(i) => bit(&self.known_sensors, i),
            None => self.other_sensors.contains(sensor),
        }
    }
}

/// Sensor ids (and vision cues) trusted at `now`, borrowed from the document (see
/// [`trusted_sensors`]).
fn trusted_sensor_ids(capabilities: &Value, now: Instant) -> Vec<&str> {
    let mut out = Vec::new();
    let list = capabilities.pointer("/capabilities/sensors").and_then(Value::as_array);
    for s in list.unwrap_or_default() {
        if !crate::envelope::sensor_trusted(s, now) {
            continue;
        }
        let Some(id) = s.get("sensor").and_then(Value::as_str) else { continue };
        out.push(id);
        for cue in s.get("visionCues").and_then(Value::as_array).unwrap_or_default() {
            if let Some(c) = cue.as_str() {
                out.push(c);
            }
        }
    }
    out
}

/// Runs a prepared recipe on a prepared device.
///
/// # Errors
/// A node-level [`DryRunError`] when the walk reaches a node the reference could not read.
pub fn run_prepared<'a>(
    recipe: &PreparedRecipe<'a>,
    device: &PreparedDevice<'_>,
    human_present: bool,
    allow_model: bool,
) -> Result<DryRun<'a>, DryRunError> {
    let mut run = DryRun {
        plan: Vec::with_capacity(recipe.nodes.len()),
        refusal: None,
        warnings: Vec::new(),
    };
    if !recipe.warnings.is_empty() {
        run.warnings.clone_from(&recipe.warnings);
    }
    for node in &recipe.nodes {
        let node = node.as_ref().map_err(Clone::clone)?;
        let refuse = |reason, detail: String| {
            Some(Refusal { reason, node: Some(node.id.to_owned()), detail })
        };
        let op = node.op;
        if !device.can(node) {
            if human_present && node.human_ok {
                run.plan.push(PlanRow {
                    node: node.id,
                    op,
                    by: By::Human,
                    verified_by: "human",
                    rung: None,
                });
                continue;
            }
            run.refusal = refuse(
                RefusalReason::MissingCapability,
                format!("device cannot perform {op} and no person is present to do it"),
            );
            return Ok(run);
        }
        if let Some((reason, detail)) = node.params.as_ref().map_err(Clone::clone)? {
            run.refusal = refuse(*reason, detail.clone());
            return Ok(run);
        }
        let rung = match &node.envelope {
            Some((unattended, ladder)) => {
                if !unattended && !human_present {
                    run.refusal = refuse(
                        RefusalReason::NeedsHumanPresent,
                        format!("{op} may not run unattended"),
                    );
                    return Ok(run);
                }
                ladder.iter().find_map(|r| {
                    let usable = match r.kind {
                        RungKind::Model => allow_model,
                        RungKind::Time => true,
                        RungKind::Human => human_present,
                        RungKind::Sensor => false,
                        // A sensor literally named like a rung keyword still counts, as in the
                        // reference (`rung in sensors` is its last test).
                    } || device.trusts(&r.name, r.sensor);
                    usable.then_some(r.name.as_str())
                })
            }
            None => Some("time"),
        };
        let Some(rung) = rung else {
            run.refusal = refuse(
                RefusalReason::MissingSensorNoFallback,
                format!("no way to verify {op} on this device"),
            );
            return Ok(run);
        };
        let verified_by =
            if rung.starts_with("cw.") || rung.starts_with("x-") { "sensor" } else { rung };
        run.plan.push(PlanRow { node: node.id, op, by: By::Device, verified_by, rung: Some(rung) });
    }
    Ok(run)
}

/// The ops the device declares, minus those the vocabulary marks `executable: false` (unknown
/// ops count as executable).
pub fn device_ops(vocab: &Vocabulary, capabilities: &Value) -> BTreeSet<String> {
    let list = capabilities.pointer("/capabilities/ops").and_then(Value::as_array);
    list.unwrap_or_default()
        .iter()
        .filter_map(|o| o.get("op").and_then(Value::as_str))
        .filter(|op| vocab.op(op).is_none_or(|e| e.executable))
        .map(str::to_owned)
        .collect()
}

fn recipe_nodes(recipe: &Value) -> Result<&[Value], DryRunError> {
    let Some(map) = recipe.as_object() else {
        return Err(input_error(String::new(), "a recipe is a JSON object"));
    };
    let process = match map.get("process") {
        None => return Ok(&[]),
        Some(p @ Value::Object(_)) => p,
        Some(_) => return Err(input_error("/process".into(), "not an object")),
    };
    match process.get("nodes") {
        None => Ok(&[]),
        Some(Value::Array(nodes)) => Ok(nodes),
        Some(_) => Err(input_error("/process/nodes".into(), "not an array")),
    }
}

fn node_id_op(node: &Value, i: usize) -> Result<(&str, &str), DryRunError> {
    if node.as_object().is_none() {
        return Err(input_error(format!("/process/nodes/{i}"), "a node is a JSON object"));
    }
    let id = node
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| input_error(format!("/process/nodes/{i}/id"), "missing or not a string"))?;
    let op = node.get("op").and_then(Value::as_str).ok_or_else(|| {
        input_error(
            format!("/process/nodes/{i}/op"),
            &format!("node {id}: op missing or not a string"),
        )
    })?;
    Ok((id, op))
}

/// `assignment.allowed` (default `["any"]`) contains `human` or `any`.
fn assignable_to_human(node: &Value) -> bool {
    let allowed = node.get("assignment").and_then(|a| a.get("allowed"));
    match allowed {
        None => true,
        Some(Value::Array(items)) => {
            items.iter().any(|v| matches!(v.as_str(), Some("human" | "any")))
        }
        // Python's `in` on a string is a substring test.
        Some(Value::String(s)) => s.contains("human") || s.contains("any"),
        Some(Value::Object(m)) => m.contains_key("human") || m.contains_key("any"),
        Some(_) => false,
    }
}

/// A step's numbers against the op envelope and the local limits: `None` when the step may be
/// planned, else `(envelope_out_of_range | safety_limit, detail)`.
///
/// # Errors
/// [`DryRunError`] when `params` is neither an object nor empty.
pub fn check_node_params(
    vocab: &Vocabulary,
    op: &str,
    node: &Value,
    limits: Option<&Value>,
    node_index: usize,
) -> Result<Option<(RefusalReason, String)>, DryRunError> {
    let index = limits.map(|pack| LimitIndex::new(vocab, pack));
    check_params(vocab, op, vocab.op(op), node, index.as_ref(), node_index)
}

fn check_params(
    vocab: &Vocabulary,
    op: &str,
    entry: Option<&Op>,
    node: &Value,
    limits: Option<&LimitIndex>,
    node_index: usize,
) -> Result<Option<(RefusalReason, String)>, DryRunError> {
    let env: Option<&Envelope> = entry.and_then(|o| o.envelope.as_ref());
    let empty = Map::new();
    let params = match node.get("params") {
        Some(Value::Object(m)) => m,
        Some(v) if truthy(v) => {
            return Err(input_error(
                format!("/process/nodes/{node_index}/params"),
                "params is not an object",
            ));
        }
        _ => &empty,
    };
    let mut temps: Vec<(&str, &Value)> = Vec::new();
    for key in ["tempC", "oilTempC"] {
        if let Some(v) = params.get(key) {
            temps.push((key, v));
        }
    }
    let target = params.get("target").filter(|t| truthy(t)).or_else(|| node.get("target"));
    if let Some(Value::Object(t)) = target
        && let Some(v) = t.get("value")
        && matches!(t.get("unit").map_or(Some("degC"), Value::as_str), Some("degC" | "C"))
    {
        temps.push(("target", v));
    }
    let mut nums: Vec<(&str, f64)> = Vec::new();
    for (key, v) in &temps {
        match finite(v) {
            Some(x) => nums.push((key, x)),
            None => {
                return Ok(Some((
                    RefusalReason::EnvelopeOutOfRange,
                    format!("{key} is not a finite number"),
                )));
            }
        }
    }
    let out = |detail: String| Ok(Some((RefusalReason::EnvelopeOutOfRange, detail)));
    if let Some(env) = env
        && let Some(band) = env.temp_c
    {
        for &(key, t) in &nums {
            if !band.contains(t) {
                return out(format!(
                    "{key} {} °C is outside the {op} envelope {}–{} °C",
                    g(t),
                    g(band.min),
                    g(band.max)
                ));
            }
        }
        if env.medium == "pan_surface"
            && let Some(Value::String(heat)) = params.get("heat")
            && let Some(level) = vocab.heat_level_short(heat)
            && !level.surface_temp_c.overlaps(band)
        {
            let hb = level.surface_temp_c;
            return out(format!(
                "heat level {heat} (pan {}–{} °C) cannot hold the {op} envelope {}–{} °C",
                g(hb.min),
                g(hb.max),
                g(band.min),
                g(band.max)
            ));
        }
    }
    let pressure = match params.get("pressureKPa") {
        None | Some(Value::Null) => None,
        Some(v) => match finite(v) {
            Some(x) => Some(x),
            None => return out("pressureKPa is not a finite number".into()),
        },
    };
    if let Some(pk) = pressure
        && let Some(pb) = env.and_then(|e| e.pressure_kpa)
        && !pb.contains(pk)
    {
        return out(format!(
            "pressure {} kPa is outside the {op} envelope {}–{} kPa",
            g(pk),
            g(pb.min),
            g(pb.max)
        ));
    }
    if nums.is_empty() && pressure.is_none() {
        // No temperature and no pressure: no max_temp or pressure limit can fire.
        return Ok(None);
    }
    let Some(index) = limits else { return Ok(None) };
    let max_temp = nums.iter().map(|&(_, t)| t).reduce(f64::max);
    let medium = env.map(|e| e.medium.as_str());
    let Some(first) = index.first_firing(op, medium, max_temp, pressure) else {
        return Ok(None);
    };
    // The index found the limit the reference's walk stops at; the walk's own test writes its
    // text. (Were they ever to disagree, the step is refused all the same: fail closed.)
    let lim = index.limits().get(first);
    let id = lim.and_then(|l| l.get("id")).and_then(Value::as_str).unwrap_or("<unnamed>");
    let hit = lim
        .and_then(|l| limit_fires(l, op, env, &nums, pressure))
        .unwrap_or_else(|| format!("local limit {id} applies to {op}; refusing"));
    Ok(Some((RefusalReason::SafetyLimit, hit)))
}

/// One limit against one step (reference matching: `ops` and `medium` must both match when
/// given; a limit with neither is skipped). A malformed bound fails closed, and so does a
/// malformed scope: `ops` that is not an array (outside the schema; the reference would search
/// a string for the op as a substring) names every op.
fn limit_fires(
    lim: &Value,
    op: &str,
    env: Option<&Envelope>,
    temps: &[(&str, f64)],
    pressure: Option<f64>,
) -> Option<String> {
    let applies = lim.get("appliesTo");
    let ops = applies.and_then(|a| a.get("ops")).filter(|v| truthy(v));
    let medium = applies.and_then(|a| a.get("medium")).filter(|v| truthy(v));
    if let Some(ops) = ops {
        let listed = match ops {
            Value::Array(items) => items.iter().any(|o| o.as_str() == Some(op)),
            _ => true,
        };
        if !listed {
            return None;
        }
    }
    if let Some(medium) = medium
        && Some(medium.as_str().unwrap_or("\u{0}")) != env.map(|e| e.medium.as_str())
    {
        return None;
    }
    if ops.is_none() && medium.is_none() {
        return None;
    }
    let id = lim.get("id").and_then(Value::as_str).unwrap_or("<unnamed>");
    let kind = lim.get("kind").and_then(Value::as_str);
    let max = lim.get("max");
    if kind == Some("max_temp") && lim.get("unit").and_then(Value::as_str) == Some("degC") {
        for &(key, t) in temps {
            match max.and_then(finite) {
                Some(m) if t <= m => {}
                Some(m) => {
                    return Some(format!(
                        "{key} {} °C exceeds local limit {id} ({} °C)",
                        g(t),
                        g(m)
                    ));
                }
                None => return Some(format!("local limit {id} has no numeric max; refusing")),
            }
        }
    }
    if kind == Some("pressure")
        && let Some(pk) = pressure
    {
        match max {
            None => {}
            Some(v) => match finite(v) {
                Some(m) if pk <= m => {}
                Some(m) => {
                    return Some(format!(
                        "pressure {} kPa exceeds local limit {id} ({} kPa)",
                        g(pk),
                        g(m)
                    ));
                }
                None => return Some(format!("local limit {id} has no numeric max; refusing")),
            },
        }
    }
    None
}

/// Python's `{:g}` for the numbers that appear in details.
pub(crate) fn g(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{x:.0}")
    } else if x.is_finite() && x.abs() >= 1e-4 && x.abs() < 1e16 {
        let s = format!("{x:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        format!("{x:e}")
    }
}
