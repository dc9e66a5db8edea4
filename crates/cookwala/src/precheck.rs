//! Executor prechecks: what an executor checks before the dry run (COOKWALA.md §7.2).
//!
//! Order (the upstream hub's, first refusal wins): request fields, version (`core` 0.2.x),
//! recipe found, recipe hash, recall, mandate (agent identity, `start_cooking` scope, expiry,
//! principal signature, `confirmBefore`), allergen blocks, untrusted text (never refuses: an
//! instruction found in free text is ignored and reported as a
//! `cw.incident.untrusted_instruction` finding), busy. [`precheck`] is pure and returns a value.
//!
//! Decisions where the standard is silent (see also the crate report):
//! - Only the request's `core` is version-gated; a recipe's `cookwala` field is a SpecVersion
//!   and 0.1.x recipes are still accepted here (open point 19).
//! - A recall target matches the recipe by `ref` (last `:` / `#` segment equals the recipe id)
//!   and then: `allRevisions: true`, or `hash` equal to the recipe's document hash, or
//!   `revision` equal to the recipe's revision, or — when the target names none of these — any
//!   revision (a recall that does not say which revision is taken as covering all: fail safe).
//! - `irreversible` and `safety_override` are always implied in `confirmBefore`, but a plain
//!   start under a `start_cooking` mandate is neither: a stop is always possible and never
//!   refused, and no request can raise a safety limit. So a start needs no confirmation; a
//!   request that asks for a category in the mandate's `confirmBefore` (today only through
//!   `x-cookwala-confirm-categories`, e.g. a purchase made along the way) is refused
//!   `not_authorized` unless the principal confirmed it ([`Context::confirmed`]). This matches
//!   the upstream sample hub, which starts such orders.
//! - Allergen blocks match the recipe's declared allergens (`eu14`, `us9`, `mayContain`,
//!   ingredient `allergens`) case-insensitively, with a few aliases that only widen a block
//!   (`nuts` also blocks `tree_nuts` and `peanuts`; `gluten` and `wheat` block
//!   `cereals_gluten`; …) (open point 20). There is never a substitution around a block.

use std::collections::BTreeSet;

use canonical_json::{Value, digest::document_hash};

use crate::dryrun::{Refusal, RefusalReason};
use crate::keys::KeySet;
use crate::signature::{SignedKind, verify_signature};
use crate::time::{Instant, parse_timestamp};

/// What the executor knows when a request arrives.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    /// The ExecuteRequest.
    pub request: &'a Value,
    /// The recipe the request names, if this executor holds it.
    pub recipe: Option<&'a Value>,
    /// Recalls in force.
    pub recalls: &'a [Value],
    /// Keys to check the mandate signature with; `None` skips that check.
    pub keys: Option<&'a KeySet>,
    /// `confirmBefore` categories the principal has confirmed for this request.
    pub confirmed: &'a [String],
    /// The device is cooking something else.
    pub busy: bool,
    /// The current instant.
    pub now: Instant,
}

/// A finding that does not refuse (an incident to report).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Incident type, e.g. `cw.incident.untrusted_instruction`.
    pub incident: String,
    /// Where: `request/<pointer>` or `recipe/<pointer>`.
    pub location: String,
    /// Always `ignored_and_logged`.
    pub action: String,
}

/// The result of [`precheck`].
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Outcome {
    /// The first refusal, if any.
    pub refusal: Option<Refusal>,
    /// Findings (reported as incidents, never acted on).
    pub findings: Vec<Finding>,
}

/// The fields every ExecuteRequest carries.
pub const REQUIRED: [&str; 7] =
    ["core", "kind", "id", "recipe", "recipeHash", "requestedBy", "idempotencyKey"];

fn refusal(reason: RefusalReason, detail: String) -> Option<Refusal> {
    Some(Refusal { reason, node: None, detail })
}

/// A request the prechecks cannot read (an HTTP 400 problem, not a refusal).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// A field every ExecuteRequest carries ([`REQUIRED`]) is missing.
    #[error("missing {0}")]
    Missing(&'static str),
}

/// The first check, on its own for a transport that answers it before anything else (the
/// hub's `POST /v1/executions`): every [`REQUIRED`] field is present.
///
/// # Errors
/// The first missing field.
pub fn required_fields(req: &Value) -> Result<(), RequestError> {
    match REQUIRED.into_iter().find(|key| req.get(key).is_none()) {
        Some(key) => Err(RequestError::Missing(key)),
        None => Ok(()),
    }
}

/// True when `core` is a version this executor speaks (0.2.x): the second check, on its own
/// for a transport that answers it before the document's shape is checked (the hub's 400
/// `unsupported-version`).
pub fn version_supported(core: &str) -> bool {
    core.starts_with("0.2.")
}

/// Runs the prechecks in order.
///
/// # Errors
/// A required request field is missing (an HTTP 400 problem, not a refusal).
pub fn precheck(ctx: &Context<'_>) -> Result<Outcome, RequestError> {
    let req = ctx.request;
    required_fields(req)?;
    let mut out = Outcome { refusal: first_refusal(ctx), findings: Vec::new() };
    if out.refusal.is_none() {
        out.findings = untrusted_findings(req, ctx.recipe);
        if ctx.busy {
            out.refusal =
                refusal(RefusalReason::Busy, "this device is cooking something else".into());
        }
    }
    Ok(out)
}

fn first_refusal(ctx: &Context<'_>) -> Option<Refusal> {
    let req = ctx.request;
    let core = match req.get("core") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => canonical_json::to_python_compact(other)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .unwrap_or_default(),
        None => String::new(),
    };
    if !version_supported(&core) {
        // Quoted up to 64 characters: a refusal does not echo a megabyte back (issue 22).
        let shown: String = core.chars().take(64).collect();
        let more = if shown.len() < core.len() { "…" } else { "" };
        return refusal(
            RefusalReason::UnsupportedVersion,
            format!("core {shown}{more}; this executor speaks 0.2.x"),
        );
    }
    let Some(recipe) = ctx.recipe else {
        return refusal(
            RefusalReason::MissingCapability,
            "recipe not found in this hub's catalog".into(),
        );
    };
    let held = document_hash(recipe).unwrap_or_default();
    if req.get("recipeHash").and_then(Value::as_str) != Some(held.as_str()) {
        return refusal(RefusalReason::RecipeHashMismatch, format!("this hub holds {held}"));
    }
    if let Some(r) = recall_refusal(ctx.recalls, recipe, &held) {
        return Some(r);
    }
    if let Some(r) = mandate_refusal(ctx) {
        return Some(r);
    }
    let blocked = blocked_allergens(req, recipe);
    if !blocked.is_empty() {
        let list: Vec<&str> = blocked.iter().map(String::as_str).collect();
        return refusal(
            RefusalReason::AllergenBlock,
            format!("recipe contains blocked allergen(s): {}", list.join(", ")),
        );
    }
    None
}

/// The id a GlobalRef names: its last `:` segment, then its last `#` segment.
pub fn ref_id(global_ref: &str) -> &str {
    let last = global_ref.rsplit(':').next().unwrap_or(global_ref);
    last.rsplit('#').next().unwrap_or(last)
}

/// Whether `recall` covers `recipe` (whose document hash is `held`): a target's `ref` names
/// the recipe id, and the target takes all revisions, names this hash or revision, or names
/// neither (a recall that does not say which revision covers all of them: fail safe).
pub fn recall_covers(recall: &Value, recipe: &Value, held: &str) -> bool {
    let Some(id) = recipe.get("id").and_then(Value::as_str) else { return false };
    recall.get("targets").and_then(Value::as_array).unwrap_or_default().iter().any(|t| {
        let Some(r) = t.get("ref").and_then(Value::as_str) else { return false };
        if ref_id(r) != id {
            return false;
        }
        let all = t.get("allRevisions").and_then(Value::as_bool) == Some(true);
        let by_hash = t.get("hash").and_then(Value::as_str);
        let by_rev = t.get("revision");
        all || by_hash.is_some_and(|h| h == held)
            || by_rev.is_some_and(|rev| Some(rev) == recipe.get("revision"))
            || (by_hash.is_none() && by_rev.is_none())
    })
}

fn recall_refusal(recalls: &[Value], recipe: &Value, held: &str) -> Option<Refusal> {
    let rc = recalls.iter().find(|rc| recall_covers(rc, recipe, held))?;
    let rid = rc.get("id").and_then(Value::as_str).unwrap_or("<unnamed>");
    let why = rc.get("reason").and_then(Value::as_str).unwrap_or("unspecified");
    refusal(RefusalReason::RecipeRecalled, format!("recall {rid} ({why}) is in force"))
}

fn mandate_refusal(ctx: &Context<'_>) -> Option<Refusal> {
    let req = ctx.request;
    let by = req.get("requestedBy").and_then(Value::as_str).unwrap_or("");
    let Some(m) = req.get("mandate") else {
        if by.starts_with("agent:") {
            return refusal(
                RefusalReason::NotAuthorized,
                format!("{by} is an agent and sent no mandate"),
            );
        }
        return None;
    };
    if let Some(agent) = m.get("agent").and_then(Value::as_str)
        && agent != by
    {
        return refusal(
            RefusalReason::NotAuthorized,
            format!("mandate is for {agent}, request is from {by}"),
        );
    }
    let scopes = m.get("scopes").and_then(Value::as_array).unwrap_or_default();
    if !scopes.iter().any(|s| s.as_str() == Some("start_cooking")) {
        return refusal(
            RefusalReason::MandateScope,
            "the agent mandate lacks start_cooking".into(),
        );
    }
    match m.get("expires").map(|e| e.as_str().map(parse_timestamp)) {
        None => {}
        Some(Some(Ok(until))) if until > ctx.now => {}
        Some(Some(Ok(_))) => {
            return refusal(RefusalReason::MandateScope, "the mandate has expired".into());
        }
        Some(_) => {
            return refusal(
                RefusalReason::MandateScope,
                "the mandate's expiry cannot be read (invalid_timestamp)".into(),
            );
        }
    }
    if let Some(keys) = ctx.keys {
        let verdict = verify_signature(m, keys, SignedKind::Document);
        if !verdict.is_ok() {
            return refusal(
                RefusalReason::NotAuthorized,
                format!("mandate signature: {}", verdict.reason.as_str()),
            );
        }
    }
    // `irreversible` and `safety_override` are always implied; other categories come from the
    // mandate. A request names the categories it touches in `x-cookwala-confirm-categories`.
    let mut needs_confirmation: BTreeSet<&str> = ["irreversible", "safety_override"].into();
    for c in m.get("confirmBefore").and_then(Value::as_array).unwrap_or_default() {
        if let Some(c) = c.as_str() {
            needs_confirmation.insert(c);
        }
    }
    let asked = ctx.request.get("x-cookwala-confirm-categories").and_then(Value::as_array);
    // A set: both lists come from outside, and a search of one per item of the other was
    // quadratic (issue 22).
    let confirmed: BTreeSet<&str> = ctx.confirmed.iter().map(String::as_str).collect();
    for category in asked.unwrap_or_default().iter().filter_map(Value::as_str) {
        if needs_confirmation.contains(category) && !confirmed.contains(category) {
            return refusal(
                RefusalReason::NotAuthorized,
                format!(
                    "the request involves `{category}`: the principal must confirm it (confirmBefore)"
                ),
            );
        }
    }
    None
}

/// Every allergen the recipe declares (lower-cased): `safety.allergens` lists and ingredient
/// `allergens`.
pub fn recipe_allergens(recipe: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |v: &Value| {
        for a in v.as_array().unwrap_or_default() {
            if let Some(s) = a.as_str() {
                out.insert(s.to_lowercase());
            }
        }
    };
    match recipe.pointer("/safety/allergens") {
        Some(Value::Object(m)) => m.values().for_each(&mut add),
        Some(v) => add(v),
        None => {}
    }
    for ing in recipe.get("ingredients").and_then(Value::as_array).unwrap_or_default() {
        if let Some(a) = ing.get("allergens") {
            add(a);
        }
    }
    out
}

/// Names a block also covers (blocks only ever widen).
fn block_aliases(block: &str) -> &'static [&'static str] {
    match block {
        "nuts" | "nut" => &["tree_nuts", "nuts", "peanuts"],
        "peanut" => &["peanuts"],
        "tree_nut" => &["tree_nuts"],
        "gluten" | "wheat" | "cereals_gluten" => &["cereals_gluten", "wheat", "gluten"],
        "egg" => &["eggs"],
        "shellfish" => &["crustaceans", "molluscs", "shellfish"],
        "fish" => &["fish"],
        "dairy" | "lactose" => &["milk"],
        "soy" | "soya" => &["soybeans", "soy", "soya"],
        _ => &[],
    }
}

fn blocked_allergens(req: &Value, recipe: &Value) -> BTreeSet<String> {
    let present = recipe_allergens(recipe);
    let mut out = BTreeSet::new();
    for b in req.get("allergenBlocks").and_then(Value::as_array).unwrap_or_default() {
        let Some(b) = b.as_str() else { continue };
        let b = b.to_lowercase();
        if present.contains(&b) {
            out.insert(b.clone());
        }
        for alias in block_aliases(&b) {
            if present.contains(*alias) {
                out.insert((*alias).to_owned());
            }
        }
    }
    out
}

/// Phrases that read as instructions to a machine. Text containing one is data, never obeyed.
const INSTRUCTION_PHRASES: &[&str] = &[
    "ignore previous instructions",
    "ignore all previous",
    "ignore prior instructions",
    "ignore the above",
    "disregard the rules",
    "disregard the instructions",
    "disregard the limits",
    "disregard safety",
    "override safety",
    "override the safety",
    "bypass safety",
    "bypass the safety",
    "disable safety",
    "disable the safety",
    "raise the temperature limit",
    "raise the safety limit",
    "increase the heat limit",
    "increase the temperature limit",
    "system prompt",
    "you are now",
    "act as ",
    "skip the allergen",
    "skip allergen",
    "skip the safety",
    "without supervision",
    "without a person",
    "without a human",
];

/// True when `text` holds an instruction-like phrase (case-insensitive).
pub fn looks_like_instruction(text: &str) -> bool {
    let lower = text.to_lowercase();
    INSTRUCTION_PHRASES.iter().any(|p| lower.contains(p))
}

/// Scans every string of the request and the recipe (free text is untrusted data; fields marked
/// `x-cookwala-untrusted` included) and reports instruction-like text as findings.
pub fn untrusted_findings(request: &Value, recipe: Option<&Value>) -> Vec<Finding> {
    let mut out = Vec::new();
    // One path buffer for the whole walk, grown and cut back segment by segment: building each
    // value's pointer afresh from its parent's cost the depth times every value (issue 22).
    let mut path = String::new();
    scan_strings(request, "request", &mut path, &mut out);
    if let Some(r) = recipe {
        path.clear();
        scan_strings(r, "recipe", &mut path, &mut out);
    }
    out
}

/// Walks `v` (whose JSON pointer is `path`) for [`untrusted_findings`]. Recursion is bounded
/// by the nesting a [`Value`] can have (the parser's limit, 512).
fn scan_strings(v: &Value, place: &str, path: &mut String, out: &mut Vec<Finding>) {
    let len = path.len();
    match v {
        Value::String(s) if looks_like_instruction(s) => out.push(Finding {
            incident: "cw.incident.untrusted_instruction".into(),
            location: format!("{place}{path}"),
            action: "ignored_and_logged".into(),
        }),
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                path.truncate(len);
                path.push('/');
                path.push_str(&i.to_string());
                scan_strings(x, place, path, out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                path.truncate(len);
                path.push('/');
                for c in k.chars() {
                    match c {
                        '~' => path.push_str("~0"),
                        '/' => path.push_str("~1"),
                        c => path.push(c),
                    }
                }
                scan_strings(x, place, path, out);
            }
        }
        _ => {}
    }
    path.truncate(len);
}
