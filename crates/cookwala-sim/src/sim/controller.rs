//! The controller: each tick moves physics, holds the step's medium in its envelope (and in
//! a narrower recipe target once reached), samples the sensors, and walks the plan step by step.

#[allow(clippy::wildcard_imports)]
use super::*;

impl Simulation {
    // ---- the tick

    pub(super) fn tick(&mut self, out: &mut Vec<SimEvent>) {
        self.now_ms += TICK_MS;
        let dt = TICK_MS as f64 / 1000.0;
        // 1. Lifecycle moves that do not depend on physics.
        match self.state {
            S::Accepted => {
                self.set_state(S::Preparing, None, out);
                self.prepare_until = self.now_ms + PREPARE_MS;
            }
            S::Preparing if self.now_ms >= self.prepare_until => self.next_step(0, out),
            _ => {}
        }
        // 2. Heater commands and physics.
        let (mut hob, mut oven) = self.control();
        if let Some(heater) = self.runaway {
            match heater {
                Heater::Hob => {
                    if hob < self.plant.spec.hob_power_w * 0.5 {
                        self.runaway_mismatch_ms += TICK_MS;
                    }
                    hob = self.plant.spec.hob_power_w;
                }
                Heater::Oven => {
                    if oven < self.plant.spec.oven_power_w * 0.5 {
                        self.runaway_mismatch_ms += TICK_MS;
                    }
                    oven = self.plant.spec.oven_power_w;
                }
            }
        }
        if self.heat_cut {
            hob = 0.0;
            oven = 0.0;
        }
        self.plant.step(dt, hob, oven);
        // 3. Sensors.
        if self.now_ms.is_multiple_of(SAMPLE_MS) {
            self.sample(out);
        }
        // 4. Safety monitor (independent of the controller).
        self.monitor(out);
        // 5. Step logic.
        match self.state {
            S::Running => self.step_logic(out),
            S::Stopping => self.stopping_logic(out),
            _ => {}
        }
        // 6. Telemetry publication.
        if self.state == S::Running
            && self.now_ms >= self.last_publish_ms + self.publish_every_ms
            && let Some(run) = &self.step
        {
            let node = self.specs[run.idx].row.node.clone();
            let progress = self.progress();
            self.bump();
            self.last_publish_ms = self.now_ms;
            out.push(self.event(EventKind::Progress { node, progress }));
        }
    }

    pub(super) fn control(&mut self) -> (f64, f64) {
        if self.state != S::Running || self.heat_cut {
            return (0.0, 0.0);
        }
        let Some(run) = &self.step else { return (0.0, 0.0) };
        let spec = &self.specs[run.idx];
        let Some(th) = &spec.thermal else { return (0.0, 0.0) };
        if spec.row.by_human {
            return (0.0, 0.0);
        }
        let (measured, _) = self.measure(th.body, run.idx);
        let mut setpoint = th.target;
        if th.contents == Some(crate::physics::Contents::Water)
            && th.target >= self.plant.boiling_point() - 0.5
        {
            // Keep a gentle rolling boil: aim a little above the boiling point.
            setpoint = self.plant.boiling_point() + 2.0;
        }
        let p = &self.plant;
        let ctrl = if th.body == Body::Contents {
            let c = p.contents_c();
            let excess = p.pan - p.contents - p.steady_pan_offset(setpoint);
            measured + excess * p.spec.pan_c / (p.spec.pan_c + c)
        } else {
            measured
        };
        let loss = match th.body {
            Body::Pan => p.loss_at(Body::Pan, setpoint) + p.loss_at(Body::Contents, setpoint) * 0.3,
            body => p.loss_at(body, setpoint),
        };
        let pmax = match th.heater {
            Heater::Hob => p.spec.hob_power_w,
            Heater::Oven => p.spec.oven_power_w,
        };
        let power = (loss + pmax / 15.0 * (setpoint - ctrl)).clamp(0.0, pmax);
        match th.heater {
            Heater::Hob => (power, 0.0),
            Heater::Oven => (0.0, power),
        }
    }

    /// The executor's view of a body: a fresh reading from a healthy sensor (the step's rung
    /// first), else the model.
    pub(super) fn measure(&self, body: Body, idx: usize) -> (f64, &'static str) {
        let fresh = |s: &SensorSpec| {
            s.body == Some(body)
                && !s.faulted
                && s.latest.is_some_and(|(t, _)| self.now_ms.saturating_sub(t) <= 2_500)
        };
        let rung = self.rung_sensor.get(idx).copied().flatten();
        let pick = rung
            .and_then(|i| self.sensors.get(i))
            .filter(|s| fresh(s))
            .or_else(|| self.sensors.iter().find(|s| fresh(s)));
        match pick.and_then(|s| s.latest) {
            Some((_, v)) => (v, "sensor"),
            None => (self.plant.temp(body), "model"),
        }
    }

    pub(super) fn sample(&mut self, out: &mut Vec<SimEvent>) {
        let step = self.step.as_ref().map(|r| r.idx);
        for i in 0..self.sensors.len() {
            let Some(body) = self.sensors[i].body else { continue };
            if self.sensors[i].faulted {
                continue;
            }
            let noise = self.rng.normal(self.sensors[i].sd);
            let value = ((self.plant.temp(body) + noise) * 100.0).round() / 100.0;
            self.sensors[i].latest = Some((self.now_ms, value));
            let series = self.trace.sensors.iter().position(|s| *s == self.sensors[i].id);
            if let Some(series) = series {
                self.trace.points.push(TracePoint { t_ms: self.now_ms, series, value, step });
            }
            out.push(self.event(EventKind::Reading {
                sensor: self.sensors[i].id.clone(),
                value,
                unit: "degC",
            }));
        }
    }

    // ---- steps

    pub(super) fn next_step(&mut self, idx: usize, out: &mut Vec<SimEvent>) {
        self.next_idx = idx;
        if idx >= self.specs.len() {
            if !std::mem::replace(&mut self.completion_checked, true) && self.check_core(true, out)
            {
                self.pending_completion = self.state == S::NeedsHuman;
                return;
            }
            self.motion_on = false;
            self.heat_cut = true;
            self.runaway = None;
            if self.state == S::Preparing {
                self.set_state(S::Running, None, out);
            }
            self.set_state(S::Completed, None, out);
            self.finish("served");
            return;
        }
        let spec = &self.specs[idx];
        let by_human = spec.row.by_human;
        let run = StepRun {
            idx,
            started_ms: self.now_ms,
            run_ms: 0,
            hold_ms: 0,
            reached: false,
            reached_after_ms: None,
            cmp_since: vec![None; spec.comparisons.len()],
            temps: Vec::new(),
            settled_at: None,
            verified_by: spec.row.verified_by.clone(),
            deviation: None,
            timed_out: false,
            block_done: false,
            sensor_fault_at: None,
            sensor_lost: false,
            waiting_human: by_human,
            core_checked: false,
        };
        if let (Some(th), false) = (&spec.thermal, by_human) {
            if let Some(kind) = th.contents {
                self.plant.fill(kind);
            }
            self.plant.lid = th.lid;
            self.plant.core_in_contents = th.heater == crate::steps::Heater::Hob;
        }
        let (node, op) = (spec.row.node.clone(), spec.row.op.clone());
        let band = spec.thermal.as_ref().map(|t| (t.band.min, t.band.max));
        let target = spec.thermal.as_ref().map(|t| t.target);
        let medium = spec.thermal.as_ref().map(|t| t.medium.clone());
        self.motion_on = self.has_motion && spec.motion;
        self.step = Some(run);
        for &(fidx, kind) in &self.faults {
            if fidx != idx {
                continue;
            }
            if let Some(run) = self.step.as_mut() {
                match kind {
                    FaultKind::Sensor => {
                        run.sensor_fault_at = Some(self.now_ms + SENSOR_FAULT_AFTER_MS)
                    }
                    FaultKind::Timeout => run.block_done = true,
                    FaultKind::Overheat => {}
                }
            }
            if kind == FaultKind::Overheat {
                let heater = self.specs[idx].thermal.as_ref().map_or(Heater::Hob, |t| t.heater);
                self.runaway = Some(heater);
            }
        }
        self.trace.steps.push(TraceStep {
            node: node.clone(),
            op: op.clone(),
            start_ms: self.now_ms,
            end_ms: None,
            band,
            target,
            medium,
        });
        if by_human {
            let why = format!("a person performs {op}");
            self.human_why = Some(why.clone());
            self.motion_on = false;
            self.set_state(S::NeedsHuman, Some(why), out);
        } else if self.state == S::Preparing {
            self.set_state(S::Running, None, out);
        }
        self.bump();
        self.last_publish_ms = self.now_ms;
        out.push(self.event(EventKind::StepStarted { node, op, by_human }));
    }

    pub(super) fn step_logic(&mut self, out: &mut Vec<SimEvent>) {
        let Some(run) = self.step.as_ref() else { return };
        let idx = run.idx;
        let spec = Arc::clone(&self.specs[idx]);
        if spec.row.by_human {
            return;
        }
        // Injected sensor fault.
        if let Some(at) = run.sensor_fault_at
            && self.now_ms >= at
        {
            let victim = spec
                .row
                .rung
                .clone()
                .filter(|r| self.sensors.iter().any(|s| &s.id == r && s.body.is_some()))
                .or_else(|| {
                    let body = spec.thermal.as_ref()?.body;
                    self.sensors.iter().find(|s| s.body == Some(body)).map(|s| s.id.clone())
                });
            if let Some(v) = victim
                && let Some(s) = self.sensors.iter_mut().find(|s| s.id == v)
            {
                s.faulted = true;
            }
            if let Some(r) = self.step.as_mut() {
                r.sensor_fault_at = None;
            }
        }
        // Fault detection on the verifying sensor.
        if spec.row.verified_by == "sensor"
            && let Some(rung) = spec.row.rung.as_deref()
            && let Some(s) = self.sensors.iter().find(|s| s.id == rung && s.body.is_some())
        {
            let last = s.latest.map_or(self.step.as_ref().map_or(0, |r| r.started_ms), |(t, _)| t);
            let current = self.step.as_ref().is_some_and(|r| !r.sensor_lost);
            if current && self.now_ms.saturating_sub(last) >= STALE_MS && s.faulted {
                self.sensor_lost(rung, &spec, out);
                if self.state != S::Running {
                    return;
                }
            }
        }
        let Some(run) = self.step.as_mut() else { return };
        run.run_ms += TICK_MS;
        let sampling = self.now_ms.is_multiple_of(SAMPLE_MS);
        if let Some(th) = &spec.thermal {
            let body = th.body;
            let (value, _) = self.measure(body, idx);
            let Some(run) = self.step.as_mut() else { return };
            if sampling {
                if run.settled_at.is_none() && (value - th.target).abs() <= SETTLE_C {
                    run.settled_at = Some(run.temps.len());
                }
                run.temps.push(value);
            }
            if !run.reached && th.band.contains(value) {
                run.reached = true;
                run.reached_after_ms = Some(run.run_ms);
            }
            if run.reached {
                run.hold_ms += TICK_MS;
            }
        }
        // Comparisons.
        let mut cmp_ok = true;
        for (i, c) in spec.comparisons.iter().enumerate() {
            let value = self.comparison_value(&c.sensor, idx);
            let Some(run) = self.step.as_mut() else { return };
            let now_ok =
                value.is_some_and(|v| c.gte.is_none_or(|g| v >= g) && c.lte.is_none_or(|l| v <= l));
            if now_ok {
                let since = *run.cmp_since[i].get_or_insert(self.now_ms);
                if self.now_ms - since < c.hold_ms {
                    cmp_ok = false;
                }
            } else {
                run.cmp_since[i] = None;
                cmp_ok = false;
            }
        }
        let Some(run) = self.step.as_mut() else { return };
        let done = !run.block_done
            && cmp_ok
            && run.run_ms >= spec.min_ms
            && match &spec.thermal {
                Some(_) => run.reached && run.hold_ms >= spec.duration_ms,
                None => run.run_ms >= spec.duration_ms,
            };
        if done {
            self.end_step(out);
            return;
        }
        if run.run_ms >= spec.max_ms && !run.timed_out {
            run.timed_out = true;
            let why = format!(
                "{} (node {}) reached its maxTime without its completion cue",
                spec.row.op, spec.row.node
            );
            run.deviation = Some(("extended_time", "ran past maxTime".to_owned()));
            match spec.on_timeout.as_str() {
                "abort_safe" => self.begin_stopping("timeout", "aborted_safe", out),
                "extend" | "retry" => {
                    // One extension of half the planned time, then ask a person.
                    if let Some(s) = self.specs.get_mut(idx) {
                        let s = Arc::make_mut(s);
                        s.max_ms += s.duration_ms / 2 + 60_000;
                    }
                    if let Some(r) = self.step.as_mut() {
                        r.timed_out = false;
                        r.deviation =
                            Some(("extended_time", "ran past maxTime; extended once".to_owned()));
                    }
                    if let Some(s) = self.specs.get_mut(idx) {
                        Arc::make_mut(s).on_timeout = "ask_human".to_owned();
                    }
                }
                _ => {
                    if let Some(r) = self.step.as_mut() {
                        r.waiting_human = true;
                    }
                    self.motion_on = false;
                    self.human_why = Some(why.clone());
                    self.set_state(S::NeedsHuman, Some(why), out);
                }
            }
        }
    }

    pub(super) fn comparison_value(&self, sensor: &str, idx: usize) -> Option<f64> {
        match self.sensors.iter().find(|s| s.id == sensor) {
            Some(s) if s.body.is_some() && !s.faulted => s.latest.map(|(_, v)| v),
            Some(s) if s.body.is_some() => s.body.map(|b| self.measure(b, idx).0),
            _ => sensor_body(sensor).map(|b| self.plant.temp(b)),
        }
    }

    pub(super) fn sensor_lost(&mut self, sensor: &str, spec: &StepSpec, out: &mut Vec<SimEvent>) {
        if let Some(run) = self.step.as_mut() {
            run.sensor_lost = true;
        }
        let fallback = spec.ladder.iter().find(|rung| match rung.as_str() {
            "model" => self.allow_model,
            "time" => true,
            "human" => self.human_present,
            other => self
                .sensors
                .iter()
                .any(|s| s.id == *other && s.trusted && !s.faulted && other != sensor),
        });
        match fallback.cloned() {
            Some(rung) => {
                let verified = if rung.starts_with("cw.") || rung.starts_with("x-") {
                    "sensor".to_owned()
                } else {
                    rung.clone()
                };
                if let Some(run) = self.step.as_mut() {
                    run.verified_by = verified;
                    run.deviation = Some((
                        "other",
                        format!("sensor {sensor} stopped reporting; verified by {rung}"),
                    ));
                }
                let detail = format!("sensor {sensor} stopped reporting; falling back to {rung}");
                self.safety_action("x-sim.sensor_fault", "alert", None, detail, out);
            }
            None => {
                let detail = format!(
                    "sensor {sensor} stopped reporting and {} has no other rung",
                    spec.row.op
                );
                let node = spec.row.node.clone();
                self.record_safety(
                    "x-sim.sensor_fault",
                    "cut_heat",
                    "alarm",
                    Some(&node),
                    None,
                    &detail,
                );
                self.stop = Some(StopRecord {
                    reason: "sensor_fault".to_owned(),
                    requested_ms: self.now_ms,
                    heat_cut_ms: None,
                    motion_stopped_ms: None,
                });
                self.cut_heat("sensor fault", out);
                self.stop_motion("sensor fault", out);
                if let Some(run) = self.step.as_mut() {
                    run.deviation = Some(("other", format!("sensor {sensor} lost")));
                }
                self.bump();
                out.push(self.event(EventKind::Safety {
                    limit: "x-sim.sensor_fault".to_owned(),
                    action: "cut_heat".to_owned(),
                    level: "alarm",
                    value: None,
                    detail,
                }));
                self.close_step(None, out);
                self.set_state(S::Failed, Some("sensor fault".to_owned()), out);
                self.finish("failed");
            }
        }
    }

    pub(super) fn progress(&self) -> f64 {
        let Some(run) = &self.step else { return 0.0 };
        // Waiting for a person: the device has done its part of the step.
        if self.state == S::NeedsHuman {
            return 1.0;
        }
        let spec = &self.specs[run.idx];
        let elapsed = if spec.thermal.is_some() { run.hold_ms } else { run.run_ms };
        if spec.duration_ms == 0 {
            return if run.reached { 1.0 } else { 0.0 };
        }
        #[allow(clippy::cast_precision_loss)]
        let p = elapsed as f64 / spec.duration_ms as f64;
        (p.clamp(0.0, 1.0) * 100.0).round() / 100.0
    }

    /// Writes the log row for the current step (if any) and clears it.
    pub(super) fn close_step(
        &mut self,
        deviation: Option<(&'static str, String)>,
        out: &mut Vec<SimEvent>,
    ) {
        let Some(run) = self.step.take() else { return };
        self.next_idx = run.idx + 1;
        let spec = &self.specs[run.idx];
        let mut summary = Vec::new();
        let mut details = Map::new();
        details.insert("node".into(), spec.row.node.as_str().into());
        let trace_idx = self.trace.steps.len().checked_sub(1);
        for (series, sensor) in self.trace.sensors.iter().enumerate() {
            let mut values = self
                .trace
                .points
                .iter()
                .rev()
                .take_while(|p| p.step == trace_idx)
                .filter(|p| p.series == series)
                .map(|p| p.value);
            let Some(end) = values.next() else { continue };
            let (lo, hi) = values.fold((end, end), |(lo, hi), v| (lo.min(v), hi.max(v)));
            let mut m = Map::new();
            m.insert("sensor".into(), sensor.as_str().into());
            m.insert("unit".into(), "degC".into());
            m.insert("min".into(), num(lo));
            m.insert("max".into(), num(hi));
            m.insert("end".into(), num(end));
            summary.push(Value::Object(m));
        }
        let mut envelope_ok = true;
        if let Some(th) = &spec.thermal
            && !spec.row.by_human
        {
            let target = Some(Target { value: th.target, tolerance: TARGET_TOLERANCE_C });
            // Warm-up lasts until the medium first comes within `SETTLE_C` of the target: a step that
            // starts with the medium still moving (heat stored in the pan after a boil) is not
            // judged on that transient.
            let judged = &run.temps[run.settled_at.unwrap_or(0)..];
            let verdict = cookwala::envelope::check_envelope(
                self.vocab,
                &spec.row.op,
                judged,
                target,
                self.plant.spec.altitude_m,
            );
            let m = &mut details;
            m.insert("medium".into(), th.medium.as_str().into());
            let mut band = Map::new();
            band.insert("min".into(), num(th.band.min));
            band.insert("max".into(), num(th.band.max));
            m.insert("bandC".into(), Value::Object(band));
            m.insert("targetC".into(), num(th.target));
            if let Ok(v) = &verdict {
                envelope_ok = v.envelope_ok;
                m.insert("check".into(), v.reason.into());
                if let Some(t) = v.target_ok {
                    m.insert("targetOk".into(), t.into());
                }
            }
            let lo = run.temps.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = run.temps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if lo.is_finite() && hi.is_finite() {
                m.insert("minC".into(), num(lo));
                m.insert("maxC".into(), num(hi));
            }
            if let Some(r) = run.reached_after_ms {
                #[allow(clippy::cast_precision_loss)]
                m.insert("reachedAfterS".into(), num(r as f64 / 1000.0));
            }
            #[allow(clippy::cast_precision_loss)]
            m.insert("heldS".into(), num(run.hold_ms as f64 / 1000.0));
            m.insert("lid".into(), th.lid.into());
        }
        #[allow(clippy::cast_precision_loss)]
        details.insert("durationS".into(), num((self.now_ms - run.started_ms) as f64 / 1000.0));
        details.insert("by".into(), if spec.row.by_human { "human" } else { "device" }.into());
        // A step a person was asked to perform and never confirmed (the execution stopped while
        // it waited) was not performed: the Core log lists the steps that ran, as the reference
        // hub's does; the details keep it, marked.
        let unperformed = spec.row.by_human && run.waiting_human;
        if unperformed {
            details.insert("performed".into(), false.into());
        }
        self.step_details.push(Value::Object(details));
        let mut row = Map::new();
        row.insert("node".into(), spec.row.node.as_str().into());
        row.insert("op".into(), spec.row.op.as_str().into());
        row.insert("verifiedBy".into(), run.verified_by.as_str().into());
        row.insert("envelopeOk".into(), envelope_ok.into());
        row.insert("startedAt".into(), self.stamp(run.started_ms).into());
        row.insert("endedAt".into(), self.stamp(self.now_ms).into());
        row.insert("summary".into(), Value::Array(summary));
        if let Some((kind, detail)) = deviation.or(run.deviation) {
            let mut d = Map::new();
            d.insert("kind".into(), kind.into());
            d.insert("detail".into(), detail.chars().take(300).collect::<String>().into());
            row.insert("deviation".into(), Value::Object(d));
        }
        if !unperformed {
            self.log_steps.push(Value::Object(row));
        }
        if let Some(t) = self.trace.steps.last_mut() {
            t.end_ms = Some(self.now_ms);
        }
        let (node, op) = (spec.row.node.clone(), spec.row.op.clone());
        self.bump();
        out.push(self.event(EventKind::StepEnded { node, op, envelope_ok }));
    }

    pub(super) fn end_step(&mut self, out: &mut Vec<SimEvent>) {
        // A device step that cooks a product covered by a `min_core_temp` limit ends only with
        // its core at the minimum (or after the limit's action).
        let check =
            self.step.as_mut().is_some_and(|r| !std::mem::replace(&mut r.core_checked, true));
        let by_human = self.step.as_ref().is_some_and(|r| self.specs[r.idx].row.by_human);
        if check && !by_human && self.check_core(false, out) {
            return;
        }
        let next = self.step.as_ref().map_or(0, |r| r.idx + 1);
        self.close_step(None, out);
        self.next_step(next, out);
    }
}
