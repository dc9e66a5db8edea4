//! What the simulation reports: the published ExecutionStatus, its `eta`, and the ExecutionLog
//! once it ends.

#[allow(clippy::wildcard_imports)]
use super::*;

impl Simulation {
    // ---- bookkeeping

    pub(super) fn event(&self, kind: EventKind) -> SimEvent {
        SimEvent { at_ms: self.now_ms, seq: self.seq, kind }
    }

    pub(super) fn stamp(&self, ms: u64) -> String {
        rfc3339_ms(self.wall_unix_ms(ms))
    }

    /// Increments `seq` and rebuilds the published status.
    pub(super) fn bump(&mut self) {
        self.seq += 1;
        self.updated_ms = self.now_ms;
        self.publish();
    }

    pub(super) fn publish(&mut self) {
        let mut m = Map::new();
        m.insert("core".into(), "0.2.0".into());
        m.insert("kind".into(), "ExecutionStatus".into());
        m.insert("id".into(), self.execution_id.as_str().into());
        m.insert("request".into(), self.request_id.as_str().into());
        m.insert("state".into(), self.state.as_str().into());
        m.insert("seq".into(), self.seq.into());
        m.insert("updatedAt".into(), self.stamp(self.updated_ms).into());
        if let Some(run) = &self.step {
            let spec = &self.specs[run.idx];
            let mut s = Map::new();
            s.insert("node".into(), spec.row.node.as_str().into());
            s.insert("op".into(), spec.row.op.as_str().into());
            s.insert("startedAt".into(), self.stamp(run.started_ms).into());
            s.insert("progress".into(), num(self.progress()));
            s.insert("verifiedBy".into(), run.verified_by.as_str().into());
            let readings: Vec<Value> = self
                .sensors
                .iter()
                .filter(|x| x.body.is_some() && !x.faulted)
                .filter_map(|x| {
                    let (t, v) = x.latest?;
                    let mut r = Map::new();
                    r.insert("sensor".into(), x.id.as_str().into());
                    r.insert("value".into(), num(v));
                    r.insert("unit".into(), "degC".into());
                    r.insert("at".into(), self.stamp(t).into());
                    Some(Value::Object(r))
                })
                .collect();
            s.insert("readings".into(), Value::Array(readings));
            m.insert("step".into(), Value::Object(s));
        }
        if let Some(eta) = self.eta_ms() {
            m.insert("eta".into(), self.stamp(eta).into());
        }
        if let Some(r) = &self.refusal {
            let mut refusal = r.to_value();
            if let Some(o) = refusal.as_object_mut()
                && let Some(Value::String(d)) = o.get_mut("detail")
                && d.chars().count() > 500
            {
                *d = d.chars().take(500).collect();
            }
            m.insert("refusal".into(), refusal);
        }
        if self.state == S::NeedsHuman {
            let mut h = Map::new();
            let why = self.human_why.as_deref().unwrap_or("a person is needed");
            let why: String = why.chars().take(300).collect();
            h.insert("why".into(), why.into());
            m.insert("humanNeeded".into(), Value::Object(h));
        }
        let mut x = Map::new();
        x.insert("simMs".into(), self.now_ms.into());
        x.insert("heatOn".into(), self.heat_on().into());
        x.insert("motionOn".into(), self.motion_on.into());
        if !self.rejected_transitions.is_empty() {
            let list = self.rejected_transitions.iter().map(|t| Value::from(t.as_str())).collect();
            x.insert("rejectedTransitions".into(), Value::Array(list));
        }
        m.insert("x-sim".into(), Value::Object(x));
        self.status = Value::Object(m);
    }

    /// The estimated end (simulated ms) while the execution moves on by itself: now, plus what
    /// is left of the current step's nominal time (its time in band, for a heated step), plus
    /// the nominal time of every later step. Warm-up is not predicted, so the estimate moves
    /// later while a step heats up. `None` when final, paused, waiting for a person or stopping.
    pub(super) fn eta_ms(&self) -> Option<u64> {
        let after = |i: usize| {
            self.specs
                .get(i)
                .map_or(0, |s| s.duration_ms + self.eta_after.get(i).copied().unwrap_or(0))
        };
        match (self.state, &self.step) {
            (S::Running, Some(run)) => {
                let spec = &self.specs[run.idx];
                let done = if spec.thermal.is_some() { run.hold_ms } else { run.run_ms };
                let left = spec.duration_ms.saturating_sub(done);
                Some(self.now_ms + left + self.eta_after.get(run.idx).copied().unwrap_or(0))
            }
            (S::Running, None) => Some(self.now_ms + after(self.next_idx)),
            (S::Accepted, _) => Some(self.now_ms + TICK_MS + PREPARE_MS + after(0)),
            (S::Preparing, _) => Some(self.prepare_until.max(self.now_ms) + after(self.next_idx)),
            _ => None,
        }
    }

    pub(super) fn finish(&mut self, outcome: &'static str) {
        self.pending_outcome = outcome;
        self.build_log();
        self.publish();
    }

    pub(super) fn build_log(&mut self) {
        let mut m = Map::new();
        m.insert("core".into(), "0.2.0".into());
        m.insert("kind".into(), "ExecutionLog".into());
        m.insert("id".into(), format!("log-{}", self.execution_id).into());
        m.insert("recipe".into(), self.recipe_id.as_str().into());
        m.insert("recipeHash".into(), self.recipe_hash.as_str().into());
        let mut device = Map::new();
        device.insert("vendor".into(), self.device_vendor.as_str().into());
        device.insert("model".into(), self.device_model.as_str().into());
        device
            .insert("firmware".into(), concat!("cookwala-sim ", env!("CARGO_PKG_VERSION")).into());
        if let Some(h) = &self.capabilities_hash {
            device.insert("capabilitiesHash".into(), h.as_str().into());
        }
        device.insert("safetyLimits".into(), self.limits_label.as_str().into());
        m.insert("device".into(), Value::Object(device));
        m.insert("startedAt".into(), self.stamp(0).into());
        m.insert("endedAt".into(), self.stamp(self.now_ms).into());
        m.insert("outcome".into(), self.pending_outcome.into());
        if let Some(s) = self.servings {
            m.insert("servings".into(), num(s));
        }
        m.insert("steps".into(), Value::Array(self.log_steps.clone()));
        // A stop asked for is an action, not a limit that fired: it is in `outcome` and
        // `x-sim.stop`, and `safetyEvents` lists only the limits that fired (a stop a limit
        // caused has that limit's row).
        let safety = self.safety_events.clone();
        let mut x = Map::new();
        if let Some(stop) = &self.stop {
            let mut r = Map::new();
            r.insert("reason".into(), stop.reason.as_str().into());
            r.insert("requestedAt".into(), self.stamp(stop.requested_ms).into());
            r.insert("requestedAtMs".into(), stop.requested_ms.into());
            if let Some(t) = stop.heat_cut_ms {
                r.insert("heatCutAt".into(), self.stamp(t).into());
                r.insert("heatCutAfterMs".into(), t.saturating_sub(stop.requested_ms).into());
            }
            if let Some(t) = stop.motion_stopped_ms {
                r.insert("motionStoppedAt".into(), self.stamp(t).into());
                r.insert("motionStoppedAfterMs".into(), t.saturating_sub(stop.requested_ms).into());
            }
            x.insert("stop".into(), Value::Object(r));
            if stop.reason == super::LOCAL_STOP {
                let mut l = Map::new();
                l.insert("requestedAt".into(), self.stamp(stop.requested_ms).into());
                if let Some(t) = stop.motion_stopped_ms {
                    l.insert("motionStoppedAt".into(), self.stamp(t).into());
                }
                if let Some(t) = stop.heat_cut_ms {
                    l.insert("heatOffAt".into(), self.stamp(t).into());
                }
                m.insert("x-localStop".into(), Value::Object(l));
            }
        }
        m.insert("safetyEvents".into(), Value::Array(safety));
        m.insert("humanInterventions".into(), Value::Array(self.human_interventions.clone()));
        if !self.confirmations.is_empty() {
            m.insert("x-confirmedBy".into(), Value::Array(self.confirmations.clone()));
        }
        m.insert("energyKwh".into(), num(self.plant.energy_j / 3.6e6));
        let mut consent = Map::new();
        consent.insert("dataset".into(), "none".into());
        consent.insert("withdrawable".into(), true.into());
        m.insert("consent".into(), Value::Object(consent));
        let mut privacy = Map::new();
        privacy.insert("personalData".into(), "none".into());
        m.insert("privacy".into(), Value::Object(privacy));
        x.insert("seed".into(), self.seed.into());
        x.insert("steps".into(), Value::Array(self.step_details.clone()));
        x.insert("safety".into(), Value::Array(self.safety_details.clone()));
        x.insert("simulatedMs".into(), self.now_ms.into());
        x.insert("heatOnAtEnd".into(), self.heat_on().into());
        m.insert("x-sim".into(), Value::Object(x));
        self.log = Some(Value::Object(m));
    }
}
