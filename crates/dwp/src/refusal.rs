//! Recorded refusals: the `refusal` event a writer appends when a request breaks a plan rule.
//!
//! The records layer promises that every refusal is itself recorded. A refusal names three
//! things: which request was refused (`ledger gate`, `ledger start`, …), which rule it broke
//! ([`Rule`]), and the offending value. The journal-event schema gives a `refusal` exactly
//! `subject`, `stage`, `reason` and the common `note` (at most 500 characters), so the three
//! are laid out as follows, and [`refusal_errors`] checks that layout when `dwp verify` reads
//! it back:
//!
//! - `subject`: the task the request names when it is a task of the contract, else the
//!   request's own id (criterion, event type) — raw when short and printable, else its digest.
//! - `stage`: the schema's enum (`task_start`, `gate`, `dispatch`, `authorize`) for the request.
//! - `reason`: `"<rule>: <message>"`, the message cut to [`REASON_LIMIT`] characters.
//! - `note`: `"request: <request>; rule: <rule>; value: <value>"`, the value quoted with
//!   Python's `repr` up to [`VALUE_LIMIT`] bytes and, beyond that, recorded as
//!   `sha256:<hex> (<n> bytes)`: a value too large to quote is still identified, never cut to a
//!   prefix that could name a different value.
//!
//! The two refusals the upstream helper already records (a `task_start` with no approval of
//! the live contract, a completion without evidence) keep upstream's form, without a note;
//! [`refusal_errors`] accepts both forms.

use canonical_json::{Map, Value};

use crate::py::repr_str;

/// The largest value (in bytes) quoted as it is in a refusal's note.
pub const VALUE_LIMIT: usize = 200;
/// The largest reason message (in characters) recorded; longer ones are cut with `…`.
pub const REASON_LIMIT: usize = 300;
/// The prefix of the note of every refusal this crate lays out.
pub const NOTE_PREFIX: &str = "request: ";

/// The plan rule a request broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// The request names a task, criterion or event that the contract does not declare.
    UnknownId,
    /// A gate run without a criterion of the task's `gate_intent`.
    GateIntent,
    /// Evidence outside the task's attempt window (the task has not started).
    TaskWindow,
    /// The command's program is not one of `scope.allowed_command_classes`.
    CommandClass,
    /// The command is shell syntax (operators, substitutions, redirections) with no shell
    /// class declared for it.
    ShellSyntax,
    /// The command differs from the check the task declares for the criterion.
    CriterionBinding,
    /// A task started before its prerequisites completed.
    Prerequisite,
    /// An evidence pointer (or a control pair's check artifact) that does not resolve inside
    /// the plan or the repository.
    Evidence,
    /// A trust label or event type that only execution may mint.
    MintRule,
    /// An event outside the journal-event catalog or schema.
    Catalog,
    /// A sign-off the criterion does not accept, or one without authority or evidence.
    Signoff,
    /// A human actor with no human-authority marker.
    HumanAuthority,
    /// A contract amendment the amendment rules refuse (revision, parent, plan, generation,
    /// validity, a different pending revision, the mechanism).
    Amendment,
    /// A control pair for a criterion that declares no `regression` or `discrimination` control.
    ControlKind,
}

impl Rule {
    /// Every rule, for tables and checks.
    pub const ALL: [Rule; 14] = [
        Rule::UnknownId,
        Rule::GateIntent,
        Rule::TaskWindow,
        Rule::CommandClass,
        Rule::ShellSyntax,
        Rule::CriterionBinding,
        Rule::Prerequisite,
        Rule::Evidence,
        Rule::MintRule,
        Rule::Catalog,
        Rule::Signoff,
        Rule::HumanAuthority,
        Rule::Amendment,
        Rule::ControlKind,
    ];

    /// The rule's name as recorded.
    pub fn name(self) -> &'static str {
        match self {
            Rule::UnknownId => "unknown-id",
            Rule::GateIntent => "gate-intent",
            Rule::TaskWindow => "task-window",
            Rule::CommandClass => "command-class",
            Rule::ShellSyntax => "shell-syntax",
            Rule::CriterionBinding => "criterion-binding",
            Rule::Prerequisite => "prerequisite",
            Rule::Evidence => "evidence-path",
            Rule::MintRule => "mint-rule",
            Rule::Catalog => "event-catalog",
            Rule::Signoff => "signoff",
            Rule::HumanAuthority => "human-authority",
            Rule::Amendment => "amendment",
            Rule::ControlKind => "control-kind",
        }
    }

    /// The rule of a recorded name.
    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.name() == name)
    }
}

/// The `stage` enum of the journal-event schema's `refusal`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stage {
    /// `ledger start`.
    TaskStart,
    /// Gates, sign-offs, completion and raw appends (the evidence path).
    Gate,
    /// Delegation.
    Dispatch,
    /// Authorization (amendments, proposals).
    Authorize,
}

impl Stage {
    /// The schema's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Stage::TaskStart => "task_start",
            Stage::Gate => "gate",
            Stage::Dispatch => "dispatch",
            Stage::Authorize => "authorize",
        }
    }
}

/// One refused request, ready to be recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The request as a command name (`ledger gate`).
    pub request: &'static str,
    /// Its stage.
    pub stage: Stage,
    /// The rule it broke.
    pub rule: Rule,
    /// What was refused (see [`subject`]).
    pub subject: String,
    /// The offending value, as the request gave it.
    pub value: String,
    /// The refusal as the operator sees it.
    pub message: String,
}

impl Refusal {
    /// The `subject`, `stage` and `reason` of the event.
    pub fn payload(&self) -> Map {
        let mut map = Map::new();
        map.insert("subject".into(), Value::String(subject(&self.subject)));
        map.insert("stage".into(), Value::String(self.stage.name().to_owned()));
        map.insert(
            "reason".into(),
            Value::String(format!("{}: {}", self.rule.name(), cut(&self.message, REASON_LIMIT))),
        );
        map
    }

    /// The `note`: request, rule and the bounded value (always under the schema's 500).
    pub fn note(&self) -> String {
        format!(
            "{NOTE_PREFIX}{}; rule: {}; value: {}",
            self.request,
            self.rule.name(),
            bounded(&self.value)
        )
    }
}

/// A value as a refusal quotes it: its `repr` up to [`VALUE_LIMIT`] bytes, else its digest and
/// size.
pub fn bounded(value: &str) -> String {
    if value.len() <= VALUE_LIMIT { repr_str(value) } else { digest_form(value) }
}

/// A subject: the id itself when it is 1 to [`VALUE_LIMIT`] printable bytes, else its digest.
pub fn subject(id: &str) -> String {
    if !id.is_empty() && id.len() <= VALUE_LIMIT && !id.chars().any(char::is_control) {
        id.to_owned()
    } else {
        digest_form(id)
    }
}

fn digest_form(value: &str) -> String {
    format!(
        "sha256:{} ({} bytes)",
        canonical_json::digest::sha256_hex(value.as_bytes()),
        value.len()
    )
}

fn cut(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

/// What is wrong with a `refusal` event beyond its schema: empty fields, a stage outside the
/// enum, and, for a refusal in this crate's layout (its note starts with [`NOTE_PREFIX`]), a
/// note that does not name a request, a known rule and a value, or a reason that does not
/// start with that rule.
pub fn refusal_errors(event: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let text = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or("");
    for key in ["subject", "reason"] {
        if text(key).is_empty() {
            errors.push(format!("refusal without a {key}"));
        }
    }
    let stage = text("stage");
    if ![Stage::TaskStart, Stage::Gate, Stage::Dispatch, Stage::Authorize]
        .iter()
        .any(|s| s.name() == stage)
    {
        errors.push(format!("refusal stage {} is not a schema stage", repr_str(stage)));
    }
    let Some(rest) = text("note").strip_prefix(NOTE_PREFIX) else { return errors };
    let mut parts = rest.splitn(3, "; ");
    let request = parts.next().unwrap_or("");
    let rule = parts.next().and_then(|p| p.strip_prefix("rule: ")).and_then(Rule::from_name);
    let value = parts.next().and_then(|p| p.strip_prefix("value: "));
    match (request.is_empty(), rule, value) {
        (false, Some(rule), Some(value)) => {
            if !text("reason").starts_with(&format!("{}: ", rule.name())) {
                errors.push(format!("refusal reason does not name its rule {}", rule.name()));
            }
            let quoted = value.starts_with('\'') || value.starts_with('"');
            if !(quoted || value.starts_with("sha256:")) {
                errors.push("refusal value is neither quoted nor a digest".to_owned());
            }
        }
        _ => errors.push("refusal note does not name a request, a known rule and a value".into()),
    }
    errors
}
