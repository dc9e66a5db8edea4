//! The monitor: the SafetyLimits of the one effective pack, checked where each is enforced, and
//! what a fired limit does (cut heat, stop motion, ask a person, stop safely).

#[allow(clippy::wildcard_imports)]
use super::*;

impl Simulation {
    pub(super) fn monitor(&mut self, out: &mut Vec<SimEvent>) {
        if self.is_final() {
            return;
        }
        let op = self.step.as_ref().map(|r| self.specs[r.idx].row.op.as_str());
        let idx = self.step.as_ref().map_or(usize::MAX, |r| r.idx);
        let thermal = self.step.as_ref().and_then(|r| self.specs[r.idx].thermal.as_ref());
        // Which limits apply, and to which body, depends only on the step and the pan's
        // contents: work it out when either changes, not every tick.
        let kind = self.plant.kind;
        if self.max_scope.as_ref().is_none_or(|(i, k, _)| *i != idx || *k != kind) {
            let mut applies = Vec::new();
            for (li, limit) in self.limits.max.iter().enumerate() {
                let scope = &limit.scope;
                if scope.medium.is_none() && scope.ops.is_empty() {
                    continue;
                }
                if !scope.ops.is_empty() && !op.is_some_and(|o| scope.op_matches(o)) {
                    continue;
                }
                let body = match scope.medium.as_deref() {
                    Some("pan_surface") => Body::Pan,
                    Some("oil") if kind == Contents::Oil => Body::Contents,
                    Some("water" | "steam") if kind == Contents::Water => Body::Contents,
                    Some("air" | "radiant") => Body::OvenAir,
                    Some(m) => match thermal {
                        Some(th) if th.medium == m => th.body,
                        _ => continue,
                    },
                    None => match thermal {
                        Some(th) => th.body,
                        None => continue,
                    },
                };
                applies.push((li, body));
            }
            self.max_scope = Some((idx, kind, applies));
        }
        let mut trip = None;
        let applies = self.max_scope.as_ref().map(|(_, _, a)| a.as_slice()).unwrap_or_default();
        for &(li, body) in applies {
            let limit = &self.limits.max[li];
            if self.fired.contains(&limit.id) {
                continue;
            }
            let (value, _) = self.measure(body, idx);
            if value > limit.max {
                trip = Some((limit.id.clone(), limit.action.clone(), value, limit.max));
                break;
            }
        }
        if let Some((id, action, value, max)) = trip {
            self.fired.push(id.clone());
            let detail = format!("{value:.1} °C is above the local limit {id} ({max} °C)");
            self.safety_action(&id, &action, Some(value), detail, out);
            return;
        }
        if self.monitor_time_temp(out) {
            return;
        }
        if self.runaway.is_some() && self.runaway_mismatch_ms >= RUNAWAY_DETECT_MS && !self.heat_cut
        {
            let detail = "a heater draws full power while the controller asks for less".to_owned();
            self.safety_action("x-sim.heater_runaway", "cut_heat", None, detail, out);
        }
    }

    /// Time-temperature limits: time out of the band summed over the steps each covers, and the
    /// two-stage cooling rule. Returns true when one fired.
    pub(super) fn monitor_time_temp(&mut self, out: &mut Vec<SimEvent>) -> bool {
        if !matches!(self.state, S::Running | S::Paused | S::NeedsHuman) {
            return false;
        }
        let Some(run) = &self.step else { return false };
        let idx = run.idx;
        let spec = Arc::clone(&self.specs[idx]);
        if spec.row.by_human {
            return false;
        }
        let (op, medium) = (spec.row.op.as_str(), spec.envelope_medium.as_deref());
        let now = self.now_ms;
        let mut value = None;
        let mut trip = None;
        for i in 0..self.limits.time_temp.len() {
            let limit = &self.limits.time_temp[i];
            if self.fired.contains(&limit.id) || !limit.scope.covers(op, medium) {
                continue;
            }
            let v = *value.get_or_insert_with(|| self.product_temp(&spec, idx));
            let limit = &mut self.limits.time_temp[i];
            let detail = match limit.rule {
                TimeTempRule::Below { min, hold_ms } => {
                    if v < min {
                        limit.out_ms += TICK_MS;
                    }
                    (limit.out_ms > hold_ms).then(|| {
                        format!(
                            "{op} at node {}: below {min} °C for more than {} min in total \
                             (now {v:.1} °C)",
                            spec.row.node,
                            hold_ms / 60_000
                        )
                    })
                }
                TimeTempRule::Above { max, hold_ms } => {
                    if v > max {
                        limit.out_ms += TICK_MS;
                    }
                    (limit.out_ms > hold_ms).then(|| {
                        format!(
                            "{op} at node {}: above {max} °C for more than {} min in total \
                             (now {v:.1} °C)",
                            spec.row.node,
                            hold_ms / 60_000
                        )
                    })
                }
                TimeTempRule::TwoStageCooling => {
                    if limit.cool_start_ms.is_none() && v <= limits::COOL_START_C {
                        limit.cool_start_ms = Some(now);
                    }
                    if v <= limits::COOL_STAGE1_C {
                        limit.stage1_done = true;
                    }
                    let elapsed = limit.cool_start_ms.map(|t| now - t);
                    match elapsed {
                        Some(e) if !limit.stage1_done && e > limits::COOL_STAGE1_MS => {
                            Some(format!(
                                "{op} at node {}: not below {} °C within 2 h of reaching {} °C \
                                 (now {v:.1} °C)",
                                spec.row.node,
                                limits::COOL_STAGE1_C,
                                limits::COOL_START_C
                            ))
                        }
                        Some(e) if v > limits::COOL_STAGE2_C && e > limits::COOL_TOTAL_MS => {
                            Some(format!(
                                "{op} at node {}: not below {} °C within 6 h of reaching {} °C \
                                 (now {v:.1} °C)",
                                spec.row.node,
                                limits::COOL_STAGE2_C,
                                limits::COOL_START_C
                            ))
                        }
                        _ => None,
                    }
                }
            };
            if let Some(detail) = detail {
                trip = Some((limit.id.clone(), limit.action.clone(), v, detail));
                break;
            }
        }
        let Some((id, action, v, detail)) = trip else { return false };
        self.fired.push(id.clone());
        self.safety_action(&id, &action, Some(v), detail, out);
        true
    }

    /// The product's temperature for a time-temperature limit: the step's medium when it has a
    /// thermal envelope, else the core probe, else the pan's contents (sensor, else model).
    pub(super) fn product_temp(&self, spec: &StepSpec, idx: usize) -> f64 {
        if let Some(th) = &spec.thermal {
            return self.measure(th.body, idx).0;
        }
        let probe = self.sensors.iter().any(|s| s.body == Some(Body::Core) && !s.faulted);
        let body = if probe { Body::Core } else { Body::Contents };
        self.measure(body, idx).0
    }

    /// A sensor reading of the product core for a `min_core_temp` check: the core probe, else
    /// (when the pan holds the product itself, not frying oil) a liquid or product sensor. No
    /// model: `None` when no sensor reads it.
    pub(super) fn core_reading(&self, spec: Option<&StepSpec>) -> Option<(f64, String)> {
        let fresh = |s: &&SensorSpec| {
            !s.faulted && s.latest.is_some_and(|(t, _)| self.now_ms.saturating_sub(t) <= 2_500)
        };
        let read = |s: &SensorSpec| s.latest.map(|(_, v)| (v, s.id.clone()));
        if let Some(s) = self.sensors.iter().filter(fresh).find(|s| s.body == Some(Body::Core)) {
            return read(s);
        }
        let contents_is_product = match spec.and_then(|s| s.thermal.as_ref()) {
            Some(th) => th.body == Body::Contents && th.contents != Some(Contents::Oil),
            None => self.plant.kind != Contents::Oil,
        };
        if !contents_is_product {
            return None;
        }
        self.sensors
            .iter()
            .filter(fresh)
            .find(|s| s.body == Some(Body::Contents) && s.id != "cw.sense.oil_temp")
            .and_then(read)
    }

    /// Checks the `min_core_temp` limits that cover the current step's end (`dish` false) or
    /// the finished dish (`dish` true). Returns true when one fired with an action that holds
    /// the execution (anything but `alert`).
    pub(super) fn check_core(&mut self, dish: bool, out: &mut Vec<SimEvent>) -> bool {
        let spec = if dish {
            None
        } else {
            match &self.step {
                Some(run) => Some(Arc::clone(&self.specs[run.idx])),
                None => return false,
            }
        };
        let mut covering: Vec<_> = self
            .limits
            .core
            .iter()
            .filter(|l| match &spec {
                Some(s) => l.covers_step(&s.row.op, &s.food_classes, &self.recipe_classes),
                None => l.covers_dish(&self.recipe_classes),
            })
            .cloned()
            .collect();
        if covering.is_empty() {
            return false;
        }
        // The strictest first.
        covering.sort_by(|a, b| b.min.total_cmp(&a.min));
        let reading = self.core_reading(spec.as_deref());
        let Some(limit) =
            covering.into_iter().find(|l| reading.as_ref().is_none_or(|r| r.0 < l.min))
        else {
            return false;
        };
        let class =
            limit.scope.food_class.as_deref().map_or_else(String::new, |c| format!(" for {c}"));
        let place = match &spec {
            Some(s) => format!("at the end of node {} ({})", s.row.node, s.row.op),
            None => "before the dish is served".to_owned(),
        };
        let detail = match &reading {
            Some((v, sensor)) => format!(
                "product core {v:.1} °C ({sensor}) is below the {} °C minimum{class} {place}",
                limit.min
            ),
            None => format!(
                "no sensor reads the product core, so the {} °C minimum{class} cannot be \
                 verified {place}",
                limit.min
            ),
        };
        self.safety_action(&limit.id, &limit.action, reading.map(|r| r.0), detail, out);
        limit.action != "alert"
    }

    /// Carries out a limit's action: `alert` records it and goes on, `ask_human` waits for a
    /// person, `cut_heat` / `stop_motion` / `stop_all` (and `refuse_start`, which can only
    /// refuse before the start, so fired mid-run it stops everything) stop the execution.
    pub(super) fn safety_action(
        &mut self,
        id: &str,
        action: &str,
        value: Option<f64>,
        detail: String,
        out: &mut Vec<SimEvent>,
    ) {
        let level = match action {
            "stop_all" | "refuse_start" => "emergency",
            "cut_heat" | "stop_motion" => "alarm",
            _ => "warning",
        };
        let node = self.step.as_ref().map(|r| self.specs[r.idx].row.node.clone());
        self.record_safety(id, action, level, node.as_deref(), value, &detail);
        let stops = matches!(action, "cut_heat" | "stop_all" | "stop_motion" | "refuse_start");
        if matches!(action, "cut_heat" | "stop_all" | "refuse_start") {
            self.cut_heat(&format!("safety limit {id}"), out);
        }
        if matches!(action, "stop_all" | "stop_motion" | "refuse_start") {
            self.motion_on = false;
        }
        // Every limit of the pack that fires is an incident; our own guards only when they stop.
        if stops || !id.starts_with("x-sim.") {
            self.record_incident(id, action, &detail);
        }
        self.bump();
        out.push(self.event(EventKind::Safety {
            limit: id.to_owned(),
            action: action.to_owned(),
            level,
            value,
            detail: detail.clone(),
        }));
        if stops {
            let reason = format!("safety_limit {id}");
            self.begin_stopping(&reason, "aborted_safe", out);
            if action != "cut_heat" {
                self.stop_motion(&reason, out);
            }
        } else if action == "ask_human" && matches!(self.state, S::Running | S::Preparing) {
            self.motion_on = false;
            if let Some(run) = self.step.as_mut() {
                run.waiting_human = run.waiting_human || run.core_checked;
            }
            self.human_why = Some(format!("safety limit {id}: {detail}"));
            self.set_state(S::NeedsHuman, self.human_why.clone(), out);
        }
    }

    /// Appends a Core `safetyEvents` row `{at, limit, action, node}` and, in `x-sim`, the
    /// details the Core row has no room for.
    pub(super) fn record_safety(
        &mut self,
        id: &str,
        action: &str,
        level: &str,
        node: Option<&str>,
        value: Option<f64>,
        detail: &str,
    ) {
        let at = self.stamp(self.now_ms);
        let mut rec = Map::new();
        rec.insert("at".into(), at.as_str().into());
        rec.insert("limit".into(), id.into());
        rec.insert("action".into(), action.into());
        if let Some(n) = node {
            rec.insert("node".into(), n.into());
        }
        self.safety_events.push(Value::Object(rec));
        let mut x = Map::new();
        x.insert("at".into(), at.into());
        x.insert("atMs".into(), self.now_ms.into());
        x.insert("limit".into(), id.into());
        x.insert("level".into(), level.into());
        if let Some(v) = value {
            x.insert("value".into(), num(v));
            x.insert("unit".into(), "degC".into());
        }
        x.insert("detail".into(), detail.into());
        self.safety_details.push(Value::Object(x));
    }

    pub(super) fn record_incident(&mut self, id: &str, action: &str, detail: &str) {
        let n = self.incidents.len() + 1;
        let date: String = self.stamp(self.now_ms).chars().take(10).collect();
        let mut m = Map::new();
        m.insert("core".into(), "0.2.0".into());
        m.insert("kind".into(), "IncidentReport".into());
        m.insert("id".into(), format!("inc-{}-{n}", self.execution_id).into());
        m.insert("date".into(), date.into());
        let category = if self.limits.core.iter().any(|l| l.id == id) {
            "cw.incident.undercooked"
        } else if self.limits.time_temp.iter().any(|l| l.id == id) {
            "cw.incident.time_temperature"
        } else if self.limits.max.iter().any(|l| l.id == id) || id == "x-sim.heater_runaway" {
            "cw.incident.overheat"
        } else {
            "cw.incident.other"
        };
        let (severity, then) = match action {
            "cut_heat" => ("medium", "Heat was cut and the execution stopped."),
            "stop_motion" => ("medium", "Motion was stopped and the execution stopped."),
            "stop_all" | "refuse_start" => {
                ("medium", "Heat and motion were cut and the execution stopped.")
            }
            "ask_human" => ("low", "The execution waited for a person to check."),
            _ => ("low", "An alert was raised and the execution went on."),
        };
        m.insert("category".into(), category.into());
        m.insert("severity".into(), severity.into());
        m.insert("outcome".into(), "near_miss".into());
        m.insert("description".into(), format!("Simulated executor: {detail}. {then}").into());
        if let Some(run) = &self.step {
            m.insert("op".into(), self.specs[run.idx].row.op.as_str().into());
        }
        m.insert("deviceModel".into(), self.device_model.as_str().into());
        m.insert("recipe".into(), self.recipe_id.as_str().into());
        m.insert("safetyLimitsFired".into(), Value::Array(vec![id.into()]));
        self.incidents.push(Value::Object(m));
    }

    pub(super) fn cut_heat(&mut self, reason: &str, out: &mut Vec<SimEvent>) {
        let first = !self.heat_cut;
        self.heat_cut = true;
        self.runaway = None;
        if let Some(stop) = self.stop.as_mut()
            && stop.heat_cut_ms.is_none()
        {
            stop.heat_cut_ms = Some(self.now_ms);
        }
        if first {
            out.push(self.event(EventKind::HeatCut { reason: reason.to_owned() }));
        }
    }

    pub(super) fn stop_motion(&mut self, reason: &str, out: &mut Vec<SimEvent>) {
        self.motion_on = false;
        if let Some(stop) = self.stop.as_mut()
            && stop.motion_stopped_ms.is_none()
        {
            stop.motion_stopped_ms = Some(self.now_ms);
            out.push(self.event(EventKind::MotionStopped { reason: reason.to_owned() }));
        }
    }

    pub(super) fn begin_stopping(
        &mut self,
        reason: &str,
        outcome: &'static str,
        out: &mut Vec<SimEvent>,
    ) {
        if !transition_allowed(self.state, S::Stopping) {
            return;
        }
        self.pending_outcome = outcome;
        self.stop = Some(StopRecord {
            reason: reason.to_owned(),
            requested_ms: self.now_ms,
            heat_cut_ms: self.heat_cut.then_some(self.now_ms),
            motion_stopped_ms: None,
        });
        self.set_state(S::Stopping, Some(reason.to_owned()), out);
    }

    pub(super) fn stopping_logic(&mut self, out: &mut Vec<SimEvent>) {
        let Some(stop) = &self.stop else { return };
        let (requested, reason) = (stop.requested_ms, stop.reason.clone());
        let elapsed = self.now_ms - requested;
        if elapsed >= MOTION_STOP_MS {
            self.stop_motion(&reason, out);
        }
        if elapsed >= HEAT_CUT_MS {
            self.cut_heat(&reason, out);
        }
        let done = self
            .stop
            .as_ref()
            .is_some_and(|s| s.heat_cut_ms.is_some() && s.motion_stopped_ms.is_some());
        if done {
            self.close_step(Some(("other", format!("stopped: {reason}"))), out);
            self.set_state(S::Stopped, None, out);
            self.finish(self.pending_outcome);
        }
    }
}
