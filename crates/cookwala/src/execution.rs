//! The execution state machine (COOKWALA.md §6), as the reference library defines it.

/// An execution state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExecutionState {
    /// Request accepted, not started.
    Accepted,
    /// Refused (final).
    Refused,
    /// Preparing (preheating, staging).
    Preparing,
    /// Running.
    Running,
    /// Paused.
    Paused,
    /// Waiting for a person.
    NeedsHuman,
    /// Stopping.
    Stopping,
    /// Stopped (final).
    Stopped,
    /// Completed (final).
    Completed,
    /// Failed (final).
    Failed,
}

use ExecutionState as S;

impl ExecutionState {
    /// Every state.
    pub const ALL: [ExecutionState; 10] = [
        S::Accepted,
        S::Refused,
        S::Preparing,
        S::Running,
        S::Paused,
        S::NeedsHuman,
        S::Stopping,
        S::Stopped,
        S::Completed,
        S::Failed,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            S::Accepted => "accepted",
            S::Refused => "refused",
            S::Preparing => "preparing",
            S::Running => "running",
            S::Paused => "paused",
            S::NeedsHuman => "needs_human",
            S::Stopping => "stopping",
            S::Stopped => "stopped",
            S::Completed => "completed",
            S::Failed => "failed",
        }
    }

    /// The state named `name`.
    pub fn parse(name: &str) -> Option<ExecutionState> {
        S::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// The states reachable in one step.
    pub fn next(self) -> &'static [ExecutionState] {
        match self {
            S::Accepted => &[S::Preparing, S::Refused, S::Stopped],
            S::Preparing => &[S::Running, S::NeedsHuman, S::Stopping, S::Failed],
            S::Running => &[S::Paused, S::NeedsHuman, S::Stopping, S::Completed, S::Failed],
            S::Paused => &[S::Running, S::Stopping],
            S::NeedsHuman => &[S::Running, S::Stopping, S::Failed],
            S::Stopping => &[S::Stopped],
            S::Refused | S::Stopped | S::Completed | S::Failed => &[],
        }
    }

    /// True for the final states.
    pub fn is_final(self) -> bool {
        self.next().is_empty()
    }
}

/// True when `from → to` is a legal step.
pub fn transition_allowed(from: ExecutionState, to: ExecutionState) -> bool {
    from.next().contains(&to)
}

/// [`transition_allowed`] on wire names; unknown names are never allowed.
pub fn allowed(from: &str, to: &str) -> bool {
    match (ExecutionState::parse(from), ExecutionState::parse(to)) {
        (Some(f), Some(t)) => transition_allowed(f, t),
        _ => false,
    }
}
