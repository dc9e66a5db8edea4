//! Strict document types: one compact shape table per document kind, used both to validate
//! documents ([`validate`]) and to export JSON Schemas ([`json_schema`]).
//!
//! Rules (COOKWALA.md §1, §2): unknown fields are errors unless their name starts with `x-`
//! (those are kept and ignored); Core documents carry `core` = `0.2.x` and any other version is
//! `unsupported_version`; recipes and capabilities carry `cookwala` (0.2.x accepted; 0.1.x
//! accepted with a warning pointing at `cookwala migrate`; others `unsupported_version`).
//! Every problem names the JSON pointer of the offending value. Deprecated vocabulary ids in
//! recipes and capabilities are warnings naming the replacement.
//!
//! Open point 16 (nested objects without an `x-` allowance): we accept `x-` fields everywhere,
//! following the rule "readers ignore unknown x- fields".

use canonical_json::{Map, Value};

use crate::time::parse_timestamp;
use crate::units::{quantity_problems, valid_amount};
use crate::vocab::Vocabulary;

/// A field type.
#[derive(Debug)]
pub enum Ty {
    /// Anything.
    Any,
    /// A string.
    Str,
    /// A string of at most this many characters.
    StrMax(usize),
    /// An integer ≥ 0.
    Count,
    /// Any integer.
    Int,
    /// A number.
    Num,
    /// A number > 0.
    Positive,
    /// A boolean.
    Bool,
    /// The value `true`.
    True,
    /// One of these strings.
    Enum(&'static [&'static str]),
    /// Exactly this string.
    Const(&'static str),
    /// A reference timestamp.
    DateTime,
    /// `YYYY-MM-DD`.
    Date,
    /// `sha256:<64 hex>`.
    Hash,
    /// `x.y.z`.
    SpecVersion,
    /// A vocabulary id `cw.…` or `x-vendor.…`.
    VocabId,
    /// A GlobalRef.
    GlobalRef,
    /// An execution/request id.
    Id,
    /// A Quantity (checked by [`quantity_problems`]).
    Quantity,
    /// Money `{amount, currency}`.
    Money,
    /// An ISO 8601 duration `PnDTnHnMnS`.
    Duration,
    /// An object of this shape.
    Obj(&'static Shape),
    /// Any object (its fields are not typed here).
    AnyObj,
    /// An array of at least `min` items of a type.
    Arr(&'static Ty, usize),
    /// One of several types (first that fits).
    Either(&'static [Ty]),
    /// A `{name}` parameter placeholder.
    Param,
}

/// An object shape.
#[derive(Debug)]
pub struct Shape {
    /// Name used in messages and schema titles.
    pub name: &'static str,
    /// `(name, type, required)`.
    pub fields: &'static [(&'static str, Ty, bool)],
}

const fn f(name: &'static str, ty: Ty) -> (&'static str, Ty, bool) {
    (name, ty, false)
}

const fn r(name: &'static str, ty: Ty) -> (&'static str, Ty, bool) {
    (name, ty, true)
}

const STRS: Ty = Ty::Arr(&Ty::Str, 0);
const SEVERITY: Ty = Ty::Enum(&["info", "low", "medium", "high", "critical"]);
const CORE: Ty = Ty::Str;

/// Signature.
pub static SIGNATURE: Shape = Shape {
    name: "Signature",
    fields: &[
        r("alg", Ty::Enum(&["EdDSA", "ES256"])),
        r("kid", Ty::Str),
        r("sig", Ty::Str),
        r("signedAt", Ty::DateTime),
    ],
};

static MONEY: Shape =
    Shape { name: "Money", fields: &[r("amount", Ty::Str), r("currency", Ty::Str)] };

/// KeyRecord.
pub static KEY_RECORD: Shape = Shape {
    name: "KeyRecord",
    fields: &[
        r("kid", Ty::Str),
        r("alg", Ty::Enum(&["EdDSA", "ES256"])),
        r("publicKey", Ty::Str),
        f("actor", Ty::Str),
        r("validFrom", Ty::DateTime),
        f("validTo", Ty::DateTime),
        f("revokedAt", Ty::DateTime),
        f("revocationReason", Ty::Enum(&["compromised", "superseded", "retired"])),
        f("hardwareBacked", Ty::Bool),
    ],
};

const SCOPES: &[&str] = &[
    "plan_meals",
    "search_recipes",
    "start_cooking",
    "stop_cooking",
    "order_groceries",
    "accept_deliveries",
    "offer_surplus",
    "claim_surplus",
    "share_data",
    "change_settings",
];
const CONFIRM: &[&str] = &[
    "any_payment",
    "payment_over_cap",
    "irreversible",
    "safety_override",
    "new_provider",
    "sharing_data",
    "diet_or_allergen_change",
];

/// AgentMandate.
pub static AGENT_MANDATE: Shape = Shape {
    name: "AgentMandate",
    fields: &[
        r("principal", Ty::Str),
        r("agent", Ty::Str),
        f("agentInfo", Ty::AnyObj),
        r("scopes", Ty::Arr(&Ty::Enum(SCOPES), 1)),
        f("spendCap", Ty::Money),
        f("perOrderCap", Ty::Money),
        f("allowedProviders", STRS),
        f("confirmBefore", Ty::Arr(&Ty::Enum(CONFIRM), 0)),
        r("expires", Ty::DateTime),
        f("signature", Ty::Obj(&SIGNATURE)),
    ],
};

/// Disclosure.
pub static DISCLOSURE: Shape = Shape {
    name: "Disclosure",
    fields: &[r("digest", Ty::Hash), f("salt", Ty::Str), f("value", Ty::Any)],
};

static LIMIT_APPLIES: Shape = Shape {
    name: "AppliesTo",
    fields: &[f("medium", Ty::Str), f("ops", Ty::Arr(&Ty::VocabId, 0)), f("foodClass", Ty::Str)],
};

static SAFETY_LIMIT: Shape = Shape {
    name: "SafetyLimit",
    fields: &[
        r("id", Ty::Str),
        r(
            "kind",
            Ty::Enum(&[
                "max_temp",
                "min_core_temp",
                "time_temp",
                "allergen_block",
                "unattended",
                "pressure",
                "smoke_or_fire",
                "stop",
                "untrusted_input",
            ]),
        ),
        f("appliesTo", Ty::Obj(&LIMIT_APPLIES)),
        f("min", Ty::Num),
        f("max", Ty::Num),
        f("unit", Ty::Enum(&["degC", "kPa", "s", "min", "h"])),
        f("holdFor", Ty::Duration),
        r(
            "action",
            Ty::Enum(&[
                "refuse_start",
                "cut_heat",
                "stop_motion",
                "stop_all",
                "ask_human",
                "alert",
            ]),
        ),
        f("message", Ty::Str),
        r("source", Ty::Str),
    ],
};

/// SafetyLimits.
pub static SAFETY_LIMITS: Shape = Shape {
    name: "SafetyLimits",
    fields: &[
        r("core", CORE),
        r("kind", Ty::Const("SafetyLimits")),
        r("id", Ty::Str),
        r("version", Ty::SpecVersion),
        f("status", Ty::Enum(&["draft", "reviewed", "adopted"])),
        f("reviewedBy", STRS),
        r("limits", Ty::Arr(&Ty::Obj(&SAFETY_LIMIT), 1)),
        r("disclaimer", Ty::Str),
    ],
};

static RECALL_TARGET: Shape = Shape {
    name: "RecallTarget",
    fields: &[r("ref", Ty::GlobalRef), f("hash", Ty::Hash), f("allRevisions", Ty::Bool)],
};

/// Recall.
pub static RECALL: Shape = Shape {
    name: "Recall",
    fields: &[
        r("core", CORE),
        r("kind", Ty::Const("Recall")),
        r("id", Ty::Id),
        r("issuedAt", Ty::DateTime),
        r("issuer", Ty::Str),
        r("targets", Ty::Arr(&Ty::Obj(&RECALL_TARGET), 1)),
        r("severity", SEVERITY),
        r(
            "reason",
            Ty::Enum(&["food_safety", "allergen", "device_safety", "security", "legal", "quality"]),
        ),
        r("action", Ty::Enum(&["block", "block_and_stop_running", "warn"])),
        f("replacement", Ty::GlobalRef),
        f("detail", Ty::Str),
        r("signature", Ty::Obj(&SIGNATURE)),
    ],
};

/// IncidentReport.
pub static INCIDENT_REPORT: Shape = Shape {
    name: "IncidentReport",
    fields: &[
        r("core", CORE),
        r("kind", Ty::Const("IncidentReport")),
        r("id", Ty::Id),
        r("date", Ty::Date),
        r("category", Ty::Str),
        r("severity", SEVERITY),
        f(
            "outcome",
            Ty::Enum(&[
                "near_miss",
                "minor_injury",
                "injury",
                "property_damage",
                "illness_suspected",
                "none",
            ]),
        ),
        f("op", Ty::VocabId),
        f("deviceModel", Ty::Str),
        f("recipe", Ty::GlobalRef),
        f("safetyLimitsFired", STRS),
        r("description", Ty::StrMax(4000)),
        f(
            "contributingFactors",
            Ty::Arr(
                &Ty::Enum(&[
                    "sensor_missing",
                    "sensor_fault",
                    "envelope_unclear",
                    "recipe_error",
                    "agent_instruction",
                    "human_override",
                    "network",
                    "power",
                    "other",
                ]),
                0,
            ),
        ),
    ],
};

/// ExecuteRequest.
pub static EXECUTE_REQUEST: Shape = Shape {
    name: "ExecuteRequest",
    fields: &[
        r("core", CORE),
        r("kind", Ty::Const("ExecuteRequest")),
        r("id", Ty::Id),
        r("recipe", Ty::GlobalRef),
        r("recipeHash", Ty::Hash),
        f("servings", Ty::Positive),
        f("serveBy", Ty::DateTime),
        r("requestedBy", Ty::Str),
        f("mandate", Ty::Obj(&AGENT_MANDATE)),
        f("allergenBlocks", STRS),
        f("operatingMode", Ty::Str),
        r("idempotencyKey", Ty::Str),
    ],
};

const STATES: &[&str] = &[
    "accepted",
    "refused",
    "preparing",
    "running",
    "paused",
    "needs_human",
    "stopping",
    "stopped",
    "completed",
    "failed",
];

/// ExecutionStatus.
pub static EXECUTION_STATUS: Shape = Shape {
    name: "ExecutionStatus",
    fields: &[
        r("core", CORE),
        r("kind", Ty::Const("ExecutionStatus")),
        r("id", Ty::Id),
        r("request", Ty::Id),
        r("state", Ty::Enum(STATES)),
        r("seq", Ty::Count),
        r("updatedAt", Ty::DateTime),
        f("step", Ty::AnyObj),
        f("eta", Ty::DateTime),
        f("refusal", Ty::AnyObj),
        f("humanNeeded", Ty::AnyObj),
    ],
};

/// StopRequest.
pub static STOP_REQUEST: Shape = Shape {
    name: "StopRequest",
    fields: &[
        r("core", CORE),
        r("kind", Ty::Const("StopRequest")),
        r("execution", Ty::Id),
        r("requestedBy", Ty::Str),
        f("reason", Ty::Str),
    ],
};

static LOG_DEVICE: Shape = Shape {
    name: "LogDevice",
    fields: &[
        r("vendor", Ty::Str),
        r("model", Ty::Str),
        f("firmware", Ty::Str),
        f("capabilitiesHash", Ty::Hash),
        f("safetyLimits", Ty::Str),
    ],
};

static LOG_STEP: Shape = Shape {
    name: "LogStep",
    fields: &[
        r("node", Ty::Str),
        r("op", Ty::VocabId),
        f("startedAt", Ty::DateTime),
        f("endedAt", Ty::DateTime),
        r("verifiedBy", Ty::Enum(&["sensor", "model", "time", "human"])),
        r("envelopeOk", Ty::Bool),
        f("summary", Ty::Arr(&Ty::AnyObj, 0)),
        f("deviation", Ty::Any),
    ],
};

static CONSENT: Shape = Shape {
    name: "Consent",
    fields: &[
        r("dataset", Ty::Enum(&["none", "research_only", "open"])),
        f("grantedBy", Ty::Str),
        f("grantedAt", Ty::DateTime),
        f("withdrawable", Ty::True),
    ],
};

static PRIVACY: Shape = Shape {
    name: "Privacy",
    fields: &[
        r("personalData", Ty::Const("none")),
        f("timePrecision", Ty::Enum(&["minute", "hour", "day"])),
    ],
};

/// ExecutionLog.
pub static EXECUTION_LOG: Shape = Shape {
    name: "ExecutionLog",
    fields: &[
        r("core", CORE),
        r("kind", Ty::Const("ExecutionLog")),
        r("id", Ty::Id),
        r("recipe", Ty::GlobalRef),
        r("recipeHash", Ty::Hash),
        r("device", Ty::Obj(&LOG_DEVICE)),
        r("startedAt", Ty::DateTime),
        f("endedAt", Ty::DateTime),
        r("outcome", Ty::Enum(&["served", "partial", "aborted_safe", "refused", "failed"])),
        f("servings", Ty::Num),
        r("steps", Ty::Arr(&Ty::Obj(&LOG_STEP), 0)),
        f("safetyEvents", Ty::Arr(&Ty::AnyObj, 0)),
        f("humanInterventions", Ty::Arr(&Ty::AnyObj, 0)),
        f("energyKwh", Ty::Num),
        f("wasteG", Ty::Num),
        f("rating", Ty::AnyObj),
        r("consent", Ty::Obj(&CONSENT)),
        r("privacy", Ty::Obj(&PRIVACY)),
        f("signature", Ty::Obj(&SIGNATURE)),
    ],
};

static WITNESS: Shape = Shape {
    name: "Witness",
    fields: &[
        r("actor", Ty::Str),
        r("signature", Ty::Obj(&SIGNATURE)),
        f("at", Ty::DateTime),
        f("receipt", Ty::Any),
    ],
};

/// MissionEvent.
pub static MISSION_EVENT: Shape = Shape {
    name: "MissionEvent",
    fields: &[
        r("mission", Ty::Str),
        r("seq", Ty::Count),
        r("at", Ty::DateTime),
        r("actor", Ty::Str),
        r("type", Ty::Enum(&crate::mission::EVENT_TYPES)),
        f("transition", Ty::AnyObj),
        f("payload", Ty::AnyObj),
        f("payloadDigest", Ty::Hash),
        r("prev", Ty::Either(&[Ty::Const("genesis"), Ty::Hash])),
        r("hash", Ty::Hash),
        f("signature", Ty::Obj(&SIGNATURE)),
        f("proposedBy", Ty::Obj(&SIGNATURE)),
    ],
};

/// Checkpoint.
pub static CHECKPOINT: Shape = Shape {
    name: "Checkpoint",
    fields: &[
        r("mission", Ty::Str),
        r("seq", Ty::Count),
        r("head", Ty::Hash),
        r("at", Ty::DateTime),
        r("sequencer", Ty::Str),
        r("signature", Ty::Obj(&SIGNATURE)),
        f("witnesses", Ty::Arr(&Ty::Obj(&WITNESS), 0)),
    ],
};

const NUMBER_OR_PARAM: Ty = Ty::Either(&[Ty::Num, Ty::Param]);
const UNITS_ENUM: Ty = Ty::Enum(&crate::units::UNITS);

/// A condition or a single check.
static CONDITION_OR_CHECK: Ty =
    Ty::Either(&[Ty::Obj(&SENSOR_CHECK), Ty::Obj(&VISION_CHECK), Ty::Obj(&CONDITION)]);

static CONDITION: Shape = Shape {
    name: "Condition",
    fields: &[
        f("all", Ty::Arr(&CONDITION_OR_CHECK, 0)),
        f("any", Ty::Arr(&CONDITION_OR_CHECK, 0)),
        f(
            "not",
            Ty::Either(&[Ty::Obj(&SENSOR_CHECK), Ty::Obj(&VISION_CHECK), Ty::Obj(&CONDITION)]),
        ),
        f("minTime", Ty::Duration),
        f("maxTime", Ty::Duration),
        f("nominalTime", Ty::Duration),
        f("onSensorMissing", Ty::Enum(&["estimate", "time", "human", "refuse"])),
    ],
};

/// A Comparison on a sensor (exactly one of `sensor` / `vision`).
static SENSOR_CHECK: Shape = Shape {
    name: "Comparison",
    fields: &[
        r("sensor", Ty::VocabId),
        f("target", Ty::Str),
        f("gte", NUMBER_OR_PARAM),
        f("lte", NUMBER_OR_PARAM),
        f("eq", Ty::Any),
        f("between", Ty::Arr(&NUMBER_OR_PARAM, 2)),
        f("unit", UNITS_ENUM),
        f("holdFor", Ty::Duration),
        f("confidence", Ty::Num),
        f("optional", Ty::Bool),
        f("humanConfirm", Ty::Bool),
    ],
};

/// A Comparison on a vision cue.
static VISION_CHECK: Shape = Shape {
    name: "Comparison",
    fields: &[
        r("vision", Ty::VocabId),
        f("target", Ty::Str),
        f("gte", NUMBER_OR_PARAM),
        f("lte", NUMBER_OR_PARAM),
        f("eq", Ty::Any),
        f("between", Ty::Arr(&NUMBER_OR_PARAM, 2)),
        f("unit", UNITS_ENUM),
        f("holdFor", Ty::Duration),
        f("confidence", Ty::Num),
        f("optional", Ty::Bool),
        f("humanConfirm", Ty::Bool),
    ],
};

static ASSIGNMENT: Shape = Shape {
    name: "Assignment",
    fields: &[
        f("allowed", Ty::Arr(&Ty::Enum(&["human", "robot", "appliance", "any"]), 0)),
        f("preferred", Ty::Enum(&["human", "robot", "appliance"])),
        f("reason", Ty::Str),
    ],
};

static DISH: Shape = Shape {
    name: "Dish",
    fields: &[
        r("names", Ty::AnyObj),
        f("localName", Ty::Str),
        f("cuisine", STRS),
        f(
            "course",
            Ty::Enum(&[
                "breakfast",
                "starter",
                "soup",
                "salad",
                "main",
                "side",
                "bread",
                "dessert",
                "snack",
                "drink",
                "sauce",
                "condiment",
                "baby",
                "other",
            ]),
        ),
        f("tags", STRS),
        f("difficulty", Ty::Enum(&["easy", "medium", "hard"])),
        f("wikidata", Ty::Str),
        f("images", Ty::Arr(&Ty::AnyObj, 0)),
    ],
};

static NODE: Shape = Shape {
    name: "Node",
    fields: &[
        r("id", Ty::Str),
        r("op", Ty::VocabId),
        f("inputs", Ty::Arr(&Ty::Any, 0)),
        f("output", Ty::Any),
        f("into", Ty::Any),
        f("equipment", Ty::Any),
        f("params", Ty::AnyObj),
        f("until", Ty::Obj(&CONDITION)),
        f("onTimeout", Ty::Any),
        f("onFail", Ty::Any),
        f("retry", Ty::AnyObj),
        f("attention", Ty::Enum(&["none", "periodic", "monitor", "continuous"])),
        f("assignment", Ty::Obj(&ASSIGNMENT)),
        f("humanOptional", Ty::Bool),
        f("timing", Ty::Any),
        f("hazards", Ty::Arr(&Ty::Any, 0)),
        f("ccp", Ty::Any),
        f("optional", Ty::Bool),
        f("variants", Ty::Arr(&Ty::Any, 0)),
        f("skill", Ty::Any),
        f("notes", Ty::Any),
        f("sourceSteps", Ty::Arr(&Ty::Any, 0)),
        f("energy", Ty::Any),
        f("alternatives", Ty::Arr(&Ty::Any, 0)),
        f("pre", Ty::Arr(&Ty::Any, 0)),
        f("post", Ty::Arr(&Ty::Any, 0)),
        f("pause", Ty::AnyObj),
        f("failureModes", Ty::Arr(&Ty::Any, 0)),
        f("affordances", Ty::Any),
        f("space", Ty::Any),
    ],
};

static PROCESS: Shape = Shape {
    name: "Process",
    fields: &[
        r("nodes", Ty::Arr(&Ty::Obj(&NODE), 1)),
        f("edges", Ty::Either(&[Ty::Const("implicit-from-inputs"), Ty::Arr(&Ty::AnyObj, 0)])),
        f("parallelGroups", Ty::Any),
        f("activeTime", Ty::Any),
        f("totalTime", Ty::Any),
        f("makeAhead", Ty::Any),
    ],
};

static INGREDIENT: Shape = Shape {
    name: "Ingredient",
    fields: &[
        r("ref", Ty::Str),
        r("ingredientId", Ty::VocabId),
        f("legacyId", Ty::Any),
        r("qty", Ty::Quantity),
        f("display", Ty::Any),
        f("prep", Ty::AnyObj),
        f("startTemp", Ty::Any),
        f("scaling", Ty::Enum(&["linear", "sublinear", "fixed"])),
        f("toTaste", Ty::Bool),
        f("optional", Ty::Bool),
        f("substitutions", Ty::Arr(&Ty::Any, 0)),
        f("gtin", Ty::Arr(&Ty::Any, 0)),
        f("allergens", STRS),
        f("economy", Ty::Any),
        f("certifications", Ty::Arr(&Ty::Any, 0)),
    ],
};

static ALLERGENS: Shape = Shape {
    name: "Allergens",
    fields: &[
        f(
            "eu14",
            Ty::Arr(
                &Ty::Enum(&[
                    "cereals_gluten",
                    "crustaceans",
                    "eggs",
                    "fish",
                    "peanuts",
                    "soybeans",
                    "milk",
                    "nuts",
                    "celery",
                    "mustard",
                    "sesame",
                    "sulphites",
                    "lupin",
                    "molluscs",
                ]),
                0,
            ),
        ),
        f(
            "us9",
            Ty::Arr(
                &Ty::Enum(&[
                    "milk",
                    "eggs",
                    "fish",
                    "crustacean_shellfish",
                    "tree_nuts",
                    "peanuts",
                    "wheat",
                    "soybeans",
                    "sesame",
                ]),
                0,
            ),
        ),
        f("mayContain", STRS),
    ],
};

static SUPERVISION: Shape = Shape {
    name: "Supervision",
    fields: &[
        r("default", Ty::Enum(&["unattended_ok", "presence_required", "hands_on_required"])),
        f("reasons", Ty::AnyObj),
    ],
};

static ABORT: Shape = Shape {
    name: "Abort",
    fields: &[
        r(
            "steps",
            Ty::Arr(
                &Ty::Enum(&[
                    "heat_off",
                    "lid_on",
                    "vent_on",
                    "move_pan_to_cool_zone_if_capable",
                    "retract_arm",
                    "stop_motion",
                    "unlock_doors",
                    "alert_user",
                    "alert_emergency_contact",
                    "call_emergency_services_if_fire",
                ]),
                0,
            ),
        ),
        f("neverLeave", STRS),
    ],
};

static SAFETY: Shape = Shape {
    name: "Safety",
    fields: &[
        r("hazards", Ty::Arr(&Ty::AnyObj, 0)),
        f("ccps", Ty::Arr(&Ty::AnyObj, 0)),
        r("allergens", Ty::Obj(&ALLERGENS)),
        f("dietary", Ty::Arr(&Ty::AnyObj, 0)),
        r("supervision", Ty::Obj(&SUPERVISION)),
        r("abort", Ty::Obj(&ABORT)),
        f("environment", Ty::Any),
    ],
};

static VERIFICATION: Shape = Shape {
    name: "Verification",
    fields: &[
        r("level", Ty::Enum(&["V0", "V1", "V2", "V3"])),
        f("evidence", Ty::AnyObj),
        f("reviewedBy", Ty::Any),
        f("generatedBy", Ty::Any),
        f("notes", Ty::Any),
    ],
};

static YIELD: Shape = Shape {
    name: "Yield",
    fields: &[r("servings", Ty::Positive), f("totalMass", Ty::Quantity), f("scaling", Ty::AnyObj)],
};

static EQUIPMENT: Shape = Shape {
    name: "Equipment",
    fields: &[
        r("ref", Ty::Str),
        r("class", Ty::VocabId),
        f("optional", Ty::Bool),
        f("constraints", Ty::AnyObj),
    ],
};

/// Recipe.
pub static RECIPE: Shape = Shape {
    name: "Recipe",
    fields: &[
        f("$schema", Ty::Str),
        f("@context", Ty::Any),
        r("cookwala", Ty::SpecVersion),
        r("id", Ty::Str),
        r("revision", Ty::Count),
        f("updated", Ty::Any),
        f("hash", Ty::Hash),
        f("signature", Ty::Obj(&SIGNATURE)),
        f("legacy", Ty::Any),
        r("verification", Ty::Obj(&VERIFICATION)),
        r("dish", Ty::Obj(&DISH)),
        r("yield", Ty::Obj(&YIELD)),
        r("ingredients", Ty::Arr(&Ty::Obj(&INGREDIENT), 1)),
        r("equipment", Ty::Arr(&Ty::Obj(&EQUIPMENT), 0)),
        r("process", Ty::Obj(&PROCESS)),
        r("safety", Ty::Obj(&SAFETY)),
        f("requires", Ty::Any),
        f("nutrition", Ty::Any),
        f("cost", Ty::Any),
        f("storage", Ty::Any),
        r("text", Ty::AnyObj),
        f("bindings", Ty::AnyObj),
        f("source", Ty::AnyObj),
        r("license", Ty::Str),
        f("textSidecars", Ty::Any),
        f("meta", Ty::Any),
        f("identity", Ty::Any),
        f("sensory", Ty::Any),
        f("formula", Ty::Any),
        f("prep", Ty::Any),
        f("service", Ty::Any),
        f("acceptance", Ty::Arr(&Ty::Any, 0)),
        f("layers", Ty::AnyObj),
    ],
};

static ACTOR: Shape = Shape {
    name: "Actor",
    fields: &[
        r("kind", Ty::Enum(&["human", "robot", "appliance", "agent", "hub", "service", "sensor"])),
        r("id", Ty::Str),
        f("name", Ty::Str),
        f("vendor", Ty::Str),
        f("model", Ty::Str),
    ],
};

/// Capabilities.
pub static CAPABILITIES: Shape = Shape {
    name: "Capabilities",
    fields: &[
        r("cookwala", Ty::SpecVersion),
        r("actor", Ty::Obj(&ACTOR)),
        f("firmware", Ty::Any),
        r(
            "roles",
            Ty::Arr(
                &Ty::Enum(&[
                    "executor",
                    "appliance",
                    "sensor",
                    "inventory",
                    "orderer",
                    "notifier",
                    "safety_monitor",
                    "planner",
                    "hub",
                    "display",
                    "voice",
                ]),
                1,
            ),
        ),
        f("location", Ty::Any),
        r("capabilities", Ty::AnyObj),
        r("safety", Ty::AnyObj),
        r("interfaces", Ty::AnyObj),
        f("signature", Ty::Obj(&SIGNATURE)),
        f("meta", Ty::Any),
        f("currentLimitations", Ty::Arr(&Ty::Any, 0)),
    ],
};

/// How a kind's version is gated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionField {
    /// `core` must be 0.2.x.
    Core,
    /// `cookwala` (SpecVersion): 0.2.x; 0.1.x with a warning.
    Spec,
    /// No version field.
    None,
}

/// Every kind: name, shape, version rule.
pub static KINDS: &[(&str, &Shape, VersionField)] = &[
    ("Recipe", &RECIPE, VersionField::Spec),
    ("Capabilities", &CAPABILITIES, VersionField::Spec),
    ("SafetyLimits", &SAFETY_LIMITS, VersionField::Core),
    ("KeyRecord", &KEY_RECORD, VersionField::None),
    ("AgentMandate", &AGENT_MANDATE, VersionField::None),
    ("Recall", &RECALL, VersionField::Core),
    ("IncidentReport", &INCIDENT_REPORT, VersionField::Core),
    ("ExecuteRequest", &EXECUTE_REQUEST, VersionField::Core),
    ("ExecutionStatus", &EXECUTION_STATUS, VersionField::Core),
    ("StopRequest", &STOP_REQUEST, VersionField::Core),
    ("ExecutionLog", &EXECUTION_LOG, VersionField::Core),
    ("Disclosure", &DISCLOSURE, VersionField::None),
    ("MissionEvent", &MISSION_EVENT, VersionField::None),
    ("Checkpoint", &CHECKPOINT, VersionField::None),
];

/// One problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// JSON pointer ("" is the whole document).
    pub pointer: String,
    /// A short code: `unknown_field`, `required`, `type`, `unsupported_version`, `deprecated`, …
    pub code: &'static str,
    /// What is wrong.
    pub message: String,
}

/// The result of [`validate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The kind validated.
    pub kind: String,
    /// Errors (the document is invalid when there is any).
    pub errors: Vec<Issue>,
    /// Warnings.
    pub warnings: Vec<Issue>,
}

impl Report {
    /// True when there are no errors.
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    /// True when the only errors are version errors.
    pub fn unsupported_version(&self) -> bool {
        self.errors.iter().any(|e| e.code == "unsupported_version")
    }
}

/// Guesses a document's kind from its fields.
pub fn detect_kind(doc: &Value) -> Option<&'static str> {
    let has = |k: &str| doc.get(k).is_some();
    if let Some(kind) = doc.get("kind").and_then(Value::as_str)
        && let Some((name, _, _)) =
            KINDS.iter().find(|(n, _, v)| *n == kind && *v == VersionField::Core)
    {
        return Some(name);
    }
    if has("process") && has("cookwala") {
        Some("Recipe")
    } else if has("actor") && has("capabilities") {
        Some("Capabilities")
    } else if has("kid") && has("publicKey") {
        Some("KeyRecord")
    } else if has("principal") && has("scopes") {
        Some("AgentMandate")
    } else if has("mission") && has("prev") {
        Some("MissionEvent")
    } else if has("head") && has("sequencer") {
        Some("Checkpoint")
    } else if has("digest") {
        Some("Disclosure")
    } else {
        None
    }
}

/// Validates `doc` as `kind` (or its detected kind).
pub fn validate(doc: &Value, kind: Option<&str>, vocab: &Vocabulary) -> Report {
    let mut report = Report { kind: String::new(), errors: Vec::new(), warnings: Vec::new() };
    let Some(kind) = kind.or_else(|| detect_kind(doc)) else {
        report.errors.push(issue("", "unknown_kind", "cannot tell which kind of document this is"));
        return report;
    };
    report.kind = kind.to_owned();
    let Some((_, shape, version)) = KINDS.iter().find(|(n, _, _)| *n == kind) else {
        report.errors.push(issue("", "unknown_kind", &format!("unknown kind {kind}")));
        return report;
    };
    check_version(doc, *version, &mut report);
    check(doc, &Ty::Obj(shape), "", &mut report.errors);
    if kind == "Recipe" || kind == "Capabilities" {
        vocab_warnings(doc, kind, vocab, &mut report);
    }
    report
}

fn issue(pointer: &str, code: &'static str, message: &str) -> Issue {
    Issue { pointer: pointer.to_owned(), code, message: message.to_owned() }
}

fn check_version(doc: &Value, rule: VersionField, report: &mut Report) {
    let (field, text) = match rule {
        VersionField::None => return,
        VersionField::Core => ("core", doc.get("core").and_then(Value::as_str)),
        VersionField::Spec => ("cookwala", doc.get("cookwala").and_then(Value::as_str)),
    };
    let Some(text) = text else { return };
    let ptr = format!("/{field}");
    let parts: Vec<&str> = text.split('.').collect();
    let well_formed = parts.len() == 3
        && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if !well_formed {
        report.errors.push(issue(&ptr, "unsupported_version", &format!("{text} is not x.y.z")));
    } else if parts[0] == "0" && parts[1] == "2" {
    } else if rule == VersionField::Spec && parts[0] == "0" && parts[1] == "1" {
        report.warnings.push(issue(
            &ptr,
            "old_version",
            &format!("{text} is a 0.1 document; `cookwala migrate` converts it to 0.2"),
        ));
    } else {
        report.errors.push(issue(
            &ptr,
            "unsupported_version",
            &format!("version {text}: only 0.2.x is supported"),
        ));
    }
}

fn type_name(ty: &Ty) -> String {
    match ty {
        Ty::Any => "any value".into(),
        Ty::Str | Ty::StrMax(_) => "a string".into(),
        Ty::Count => "an integer ≥ 0".into(),
        Ty::Int => "an integer".into(),
        Ty::Num => "a number".into(),
        Ty::Positive => "a number > 0".into(),
        Ty::Bool => "a boolean".into(),
        Ty::True => "true".into(),
        Ty::Enum(v) => format!("one of {}", v.join(", ")),
        Ty::Const(c) => format!("\"{c}\""),
        Ty::DateTime => "a timestamp like 2026-01-01T00:00:00Z".into(),
        Ty::Date => "a date YYYY-MM-DD".into(),
        Ty::Hash => "sha256:<64 lowercase hex>".into(),
        Ty::SpecVersion => "a version x.y.z".into(),
        Ty::VocabId => "a vocabulary id (cw.… or x-vendor.…)".into(),
        Ty::GlobalRef => "a reference (https://…#id, cw:authority:id or an id)".into(),
        Ty::Id => "an id of 3–128 characters [A-Za-z0-9._:-]".into(),
        Ty::Quantity => "a quantity".into(),
        Ty::Money => "money {amount, currency}".into(),
        Ty::Duration => "an ISO 8601 duration".into(),
        Ty::Obj(s) => format!("a {} object", s.name),
        Ty::AnyObj => "an object".into(),
        Ty::Arr(t, 0) => format!("an array of {}", type_name(t)),
        Ty::Arr(t, n) => format!("an array of at least {n} of {}", type_name(t)),
        Ty::Either(ts) => ts.iter().map(type_name).collect::<Vec<_>>().join(" or "),
        Ty::Param => "a {parameter} placeholder".into(),
    }
}

fn is_hash(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

fn is_vocab_id(s: &str) -> bool {
    let (prefix, rest) = match s.split_once('.') {
        Some(p) => p,
        None => return false,
    };
    let prefix_ok = prefix == "cw"
        || prefix.strip_prefix("x-").is_some_and(|v| {
            !v.is_empty()
                && v.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        });
    prefix_ok
        && !rest.is_empty()
        && rest.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b))
}

fn id_chars(s: &str, extra: &[u8]) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
}

fn is_global_ref(s: &str) -> bool {
    if let Some(rest) = s.strip_prefix("https://").or_else(|| s.strip_prefix("http://")) {
        return rest.split_once('#').is_some_and(|(base, frag)| {
            !base.is_empty() && !base.chars().any(char::is_whitespace) && id_chars(frag, b"._:-")
        });
    }
    if let Some(rest) = s.strip_prefix("cw:") {
        return rest.split_once(':').is_some_and(|(auth, id)| {
            !auth.is_empty()
                && auth
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b".-".contains(&b))
                && id_chars(id, b"._:-")
        });
    }
    id_chars(s, b"._-")
}

fn is_id(s: &str) -> bool {
    (3..=128).contains(&s.len()) && s.as_bytes()[0].is_ascii_alphanumeric() && id_chars(s, b"._:-")
}

fn is_date(s: &str) -> bool {
    parse_timestamp(&format!("{s}T00:00:00Z")).is_ok() && s.len() == 10
}

fn is_duration(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('P') else { return false };
    if rest.is_empty() || rest == "T" {
        return false;
    }
    let (date, time) = rest.split_once('T').unwrap_or((rest, ""));
    if rest.contains('T') && time.is_empty() {
        return false;
    }
    let units_ok = |part: &str, units: &[u8]| {
        let mut num = String::new();
        let mut seen = 0;
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' {
                num.push(c);
            } else {
                let Some(pos) = units.iter().position(|&u| u as char == c) else { return false };
                if num.is_empty() || pos < seen || num.parse::<f64>().is_err() {
                    return false;
                }
                seen = pos + 1;
                num.clear();
            }
        }
        num.is_empty()
    };
    units_ok(date, b"YMWD") && units_ok(time, b"HMS")
}

fn check(v: &Value, ty: &Ty, at: &str, errors: &mut Vec<Issue>) {
    // An object is checked against the first object option whose required fields it has (one
    // pass: nested conditions never re-validate a subtree once per option).
    if let (Ty::Either(options), Some(map)) = (ty, v.as_object()) {
        let pick = options.iter().find_map(|t| match t {
            Ty::Obj(sh) if sh.fields.iter().all(|(n, _, req)| !req || map.contains_key(*n)) => {
                Some(*sh)
            }
            _ => None,
        });
        if let Some(shape) = pick {
            check_object(map, shape, at, errors);
            return;
        }
    }
    let bad = |errors: &mut Vec<Issue>| {
        errors.push(Issue {
            pointer: at.to_owned(),
            code: "type",
            message: format!("expected {}", type_name(ty)),
        });
    };
    let s = v.as_str();
    let ok = match ty {
        Ty::Any => true,
        Ty::Str => s.is_some(),
        Ty::StrMax(n) => s.is_some_and(|s| s.chars().count() <= *n),
        Ty::Count => {
            v.as_i64().is_some_and(|n| n >= 0)
                && matches!(v, Value::Number(canonical_json::Number::Int(_)))
        }
        Ty::Int => matches!(v, Value::Number(canonical_json::Number::Int(_))),
        Ty::Num => matches!(v, Value::Number(_)),
        Ty::Positive => matches!(v, Value::Number(n) if n.to_f64() > 0.0),
        Ty::Bool => matches!(v, Value::Bool(_)),
        Ty::True => matches!(v, Value::Bool(true)),
        Ty::Enum(options) => s.is_some_and(|s| options.contains(&s)),
        Ty::Const(c) => s == Some(*c),
        Ty::DateTime => s.is_some_and(|s| parse_timestamp(s).is_ok()),
        Ty::Date => s.is_some_and(is_date),
        Ty::Hash => s.is_some_and(is_hash),
        Ty::SpecVersion => s.is_some_and(|s| {
            let p: Vec<&str> = s.split('.').collect();
            p.len() == 3 && p.iter().all(|x| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()))
        }),
        Ty::VocabId => s.is_some_and(is_vocab_id),
        Ty::GlobalRef => s.is_some_and(is_global_ref),
        Ty::Id => s.is_some_and(is_id),
        Ty::Duration => s.is_some_and(is_duration),
        Ty::Quantity => {
            let problems = quantity_problems(v, at);
            errors.extend(problems.into_iter().map(|(pointer, message)| Issue {
                pointer,
                code: "quantity",
                message,
            }));
            return;
        }
        Ty::Money => {
            check(v, &Ty::Obj(&MONEY), at, errors);
            if let Some(m) = v.as_object() {
                if let Some(a) = m.get("amount").and_then(Value::as_str)
                    && !valid_amount(a)
                {
                    errors.push(issue(
                        &format!("{at}/amount"),
                        "money",
                        "amount must be a decimal string like \"12.50\"",
                    ));
                }
                if let Some(c) = m.get("currency").and_then(Value::as_str)
                    && !(c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()))
                {
                    errors.push(issue(
                        &format!("{at}/currency"),
                        "money",
                        "currency must be an ISO 4217 code",
                    ));
                }
            }
            return;
        }
        Ty::AnyObj => v.as_object().is_some(),
        Ty::Obj(shape) => {
            let Some(map) = v.as_object() else {
                bad(errors);
                return;
            };
            check_object(map, shape, at, errors);
            return;
        }
        Ty::Arr(item, min) => {
            let Some(items) = v.as_array() else {
                bad(errors);
                return;
            };
            if items.len() < *min {
                errors.push(issue(at, "type", &format!("needs at least {min} item(s)")));
            }
            for (i, x) in items.iter().enumerate() {
                check(x, item, &format!("{at}/{i}"), errors);
            }
            return;
        }
        Ty::Param => s.is_some_and(|s| {
            s.strip_prefix('{').and_then(|x| x.strip_suffix('}')).is_some_and(|name| {
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            })
        }),
        Ty::Either(options) => options.iter().any(|t| {
            let mut scratch = Vec::new();
            check(v, t, at, &mut scratch);
            scratch.is_empty()
        }),
    };
    if !ok {
        bad(errors);
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn check_object(map: &Map, shape: &Shape, at: &str, errors: &mut Vec<Issue>) {
    for (name, _, required) in shape.fields {
        if *required && !map.contains_key(*name) {
            errors.push(Issue {
                pointer: format!("{at}/{}", escape(name)),
                code: "required",
                message: format!("{} requires {name}", shape.name),
            });
        }
    }
    for (key, value) in map {
        let ptr = format!("{at}/{}", escape(key));
        match shape.fields.iter().find(|(n, _, _)| n == key) {
            Some((_, ty, _)) => check(value, ty, &ptr, errors),
            None if key.starts_with("x-") => {}
            None => errors.push(Issue {
                pointer: ptr,
                code: "unknown_field",
                message: format!(
                    "{} has no field {key} (extensions must start with x-)",
                    shape.name
                ),
            }),
        }
    }
}

fn vocab_warnings(doc: &Value, kind: &str, vocab: &Vocabulary, report: &mut Report) {
    let warn = |report: &mut Report, ptr: String, id: &str| {
        if let Some(w) = vocab.deprecation(id) {
            report.warnings.push(Issue { pointer: ptr, code: "deprecated", message: w });
        }
    };
    if kind == "Recipe" {
        let nodes = doc.pointer("/process/nodes").and_then(Value::as_array).unwrap_or_default();
        for (i, n) in nodes.iter().enumerate() {
            if let Some(op) = n.get("op").and_then(Value::as_str) {
                warn(report, format!("/process/nodes/{i}/op"), op);
                if vocab.op(op).is_none() && !op.starts_with("x-") {
                    report.warnings.push(Issue {
                        pointer: format!("/process/nodes/{i}/op"),
                        code: "unknown_op",
                        message: format!("{op} is not in the vocabulary; no device will claim it"),
                    });
                }
            }
        }
    } else {
        let ops = doc.pointer("/capabilities/ops").and_then(Value::as_array).unwrap_or_default();
        for (i, o) in ops.iter().enumerate() {
            if let Some(op) = o.get("op").and_then(Value::as_str) {
                warn(report, format!("/capabilities/ops/{i}/op"), op);
                if op == "cw.op.legacy_step" {
                    report.errors.push(Issue {
                        pointer: format!("/capabilities/ops/{i}/op"),
                        code: "not_executable",
                        message: "cw.op.legacy_step may not be declared by a device".into(),
                    });
                }
            }
        }
    }
}

fn schema_of(ty: &Ty, refs: &mut bool) -> Value {
    let mut m = Map::new();
    let s = |m: &mut Map, k: &str, v: Value| {
        m.insert(k.to_owned(), v);
    };
    match ty {
        Ty::Any => {}
        Ty::Str => s(&mut m, "type", "string".into()),
        Ty::StrMax(n) => {
            s(&mut m, "type", "string".into());
            s(&mut m, "maxLength", Value::from(*n));
        }
        Ty::Count => {
            s(&mut m, "type", "integer".into());
            s(&mut m, "minimum", Value::from(0i64));
        }
        Ty::Int => s(&mut m, "type", "integer".into()),
        Ty::Num => s(&mut m, "type", "number".into()),
        Ty::Positive => {
            s(&mut m, "type", "number".into());
            s(&mut m, "exclusiveMinimum", Value::from(0i64));
        }
        Ty::Bool => s(&mut m, "type", "boolean".into()),
        Ty::True => s(&mut m, "const", true.into()),
        Ty::Enum(v) => s(&mut m, "enum", Value::Array(v.iter().map(|x| (*x).into()).collect())),
        Ty::Const(c) => s(&mut m, "const", (*c).into()),
        Ty::DateTime => {
            s(&mut m, "type", "string".into());
            s(&mut m, "format", "date-time".into());
        }
        Ty::Date => {
            s(&mut m, "type", "string".into());
            s(&mut m, "format", "date".into());
        }
        Ty::Hash => pattern(&mut m, "^sha256:[0-9a-f]{64}$"),
        Ty::SpecVersion => pattern(&mut m, "^[0-9]+\\.[0-9]+\\.[0-9]+$"),
        Ty::VocabId => pattern(&mut m, "^(cw|x-[a-z0-9-]+)\\.[a-z0-9_.-]+$"),
        Ty::GlobalRef => pattern(
            &mut m,
            "^(https?://[^#\\s]+#[A-Za-z0-9._:-]+|cw:[a-z0-9.-]+:[A-Za-z0-9._:-]+|[A-Za-z0-9._-]+)$",
        ),
        Ty::Id => pattern(&mut m, "^[A-Za-z0-9][A-Za-z0-9._:-]{2,127}$"),
        Ty::Duration => pattern(&mut m, "^P"),
        Ty::Quantity => {
            s(&mut m, "$ref", "#/$defs/Quantity".into());
        }
        Ty::Money => return schema_of(&Ty::Obj(&MONEY), refs),
        Ty::AnyObj => s(&mut m, "type", "object".into()),
        // The recursive Condition is written once under $defs and referenced.
        Ty::Obj(shape) if std::ptr::eq(*shape, &CONDITION) => {
            *refs = true;
            s(&mut m, "$ref", "#/$defs/Condition".into());
        }
        Ty::Obj(shape) => return shape_schema(shape, refs),
        Ty::Arr(item, min) => {
            s(&mut m, "type", "array".into());
            s(&mut m, "items", schema_of(item, refs));
            if *min > 0 {
                s(&mut m, "minItems", Value::from(*min));
            }
        }
        Ty::Either(ts) => {
            s(&mut m, "anyOf", Value::Array(ts.iter().map(|t| schema_of(t, refs)).collect()))
        }
        Ty::Param => pattern(&mut m, "^\\{[a-z_]+\\}$"),
    }
    Value::Object(m)
}

fn pattern(m: &mut Map, p: &str) {
    m.insert("type".into(), "string".into());
    m.insert("pattern".into(), p.into());
}

fn shape_schema(shape: &Shape, refs: &mut bool) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), "object".into());
    m.insert("title".into(), shape.name.into());
    let mut props = Map::new();
    let mut required = Vec::new();
    for (name, ty, req) in shape.fields {
        props.insert((*name).to_owned(), schema_of(ty, refs));
        if *req {
            required.push(Value::from(*name));
        }
    }
    m.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        m.insert("required".into(), Value::Array(required));
    }
    let mut pat = Map::new();
    pat.insert("^x-".into(), Value::Object(Map::new()));
    m.insert("patternProperties".into(), Value::Object(pat));
    m.insert("additionalProperties".into(), false.into());
    Value::Object(m)
}

/// A draft 2020-12 JSON Schema for a kind, generated from its shape.
pub fn json_schema(kind: &str) -> Option<Value> {
    let (name, shape, _) = KINDS.iter().find(|(n, _, _)| *n == kind)?;
    let mut refs = false;
    let Value::Object(mut m) = shape_schema(shape, &mut refs) else { return None };
    m.insert("$schema".into(), "https://json-schema.org/draft/2020-12/schema".into());
    m.insert(
        "$id".into(),
        format!("https://cookwala-rs.invalid/schemas/{name}.schema.json").into(),
    );
    let mut q = Map::new();
    q.insert("type".into(), "object".into());
    q.insert("required".into(), Value::Array(vec!["value".into(), "unit".into()]));
    let mut defs = Map::new();
    defs.insert("Quantity".into(), Value::Object(q));
    if refs {
        let mut again = false;
        defs.insert("Condition".into(), shape_schema(&CONDITION, &mut again));
    }
    m.insert("$defs".into(), Value::Object(defs));
    Some(Value::Object(m))
}
