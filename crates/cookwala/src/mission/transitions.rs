//! The mission state transition table, authored from the facts of
//! `profiles/mission/transitions.json` (profile `mission` 0.2.0).
//!
//! Roles are checked per `(from, to)` pair (open point 22: the file's prose says "for the target
//! state", but its table is keyed by the pair, and so is the reference).

/// The initial state of every mission.
pub const INITIAL: &str = "draft";

/// The final states (no transitions leave them).
pub const FINALS: [&str; 3] = ["closed", "failed", "cancelled"];

/// One legal transition and the roles that may make it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MissionTransition {
    /// Source state.
    pub from: &'static str,
    /// Target state.
    pub to: &'static str,
    /// Roles allowed to make the transition.
    pub roles: &'static [&'static str],
}

const ANY: &[&str] = &["holder", "initiator", "executor", "arbiter"];
const CANCEL: &[&str] = &["initiator", "holder"];
const FAIL: &[&str] = &["holder", "executor"];
const PAUSE: &[&str] = &["holder", "executor", "initiator"];
const HOLDER: &[&str] = &["holder"];

const fn t(
    from: &'static str,
    to: &'static str,
    roles: &'static [&'static str],
) -> MissionTransition {
    MissionTransition { from, to, roles }
}

/// The 30 legal transitions.
pub const TRANSITIONS: [MissionTransition; 30] = [
    t("draft", "open", ANY),
    t("draft", "cancelled", CANCEL),
    t("open", "enriching", ANY),
    t("open", "ready", ANY),
    t("open", "cancelled", CANCEL),
    t("enriching", "ready", ANY),
    t("enriching", "open", ANY),
    t("enriching", "cancelled", CANCEL),
    t("enriching", "failed", FAIL),
    t("ready", "committed", HOLDER),
    t("ready", "enriching", ANY),
    t("ready", "cancelled", CANCEL),
    t("committed", "executing", ANY),
    t("committed", "cancelled", CANCEL),
    t("committed", "failed", FAIL),
    t("executing", "paused", PAUSE),
    t("executing", "degraded", FAIL),
    t("executing", "closing", ANY),
    t("executing", "failed", FAIL),
    t("paused", "executing", ANY),
    t("paused", "degraded", FAIL),
    t("paused", "closing", ANY),
    t("paused", "cancelled", CANCEL),
    t("paused", "failed", FAIL),
    t("degraded", "executing", ANY),
    t("degraded", "paused", PAUSE),
    t("degraded", "closing", ANY),
    t("degraded", "failed", FAIL),
    t("closing", "closed", HOLDER),
    t("closing", "failed", FAIL),
];

/// The row for `from → to`, if the pair is legal.
pub fn find(from: &str, to: &str) -> Option<&'static MissionTransition> {
    TRANSITIONS.iter().find(|row| row.from == from && row.to == to)
}

/// True when `role` may move a mission from `from` to `to`.
pub fn allowed(from: &str, to: &str, role: &str) -> bool {
    find(from, to).is_some_and(|row| row.roles.contains(&role))
}
