//! The lifecycle: every move of the execution state is checked against the Core state table
//! (`cookwala::execution::transition_allowed`). A command that asks for an illegal move gets an
//! `Err`; a move the simulator's own logic asks for and the table refuses is kept out of the
//! state and counted in the status (`x-sim.rejectedTransitions`), never applied silently.

#[allow(clippy::wildcard_imports)]
use super::*;

impl Simulation {
    /// Moves to `to` (a move to the current state is no move).
    ///
    /// # Errors
    /// [`SimError::IllegalTransition`] when the Core state table has no such move.
    pub(super) fn transition(
        &mut self,
        to: ExecutionState,
        why: Option<String>,
        out: &mut Vec<SimEvent>,
    ) -> Result<(), SimError> {
        let from = self.state;
        if from == to {
            return Ok(());
        }
        if !transition_allowed(from, to) {
            return Err(SimError::IllegalTransition { from: from.as_str(), to: to.as_str() });
        }
        self.state = to;
        if to != S::NeedsHuman {
            self.human_why = None;
        }
        if to.is_final() {
            self.motion_on = false;
            self.heat_cut = true;
            self.runaway = None;
        }
        self.bump();
        out.push(self.event(EventKind::State { from, to, why }));
        Ok(())
    }

    /// [`Simulation::transition`] for the simulator's own logic: a refused move is recorded
    /// (and shown in the status), not applied.
    pub(super) fn set_state(
        &mut self,
        to: ExecutionState,
        why: Option<String>,
        out: &mut Vec<SimEvent>,
    ) {
        if let Err(SimError::IllegalTransition { from, to }) = self.transition(to, why, out) {
            self.rejected_transitions.push(format!("{from}->{to}"));
            self.publish();
        }
    }
}
