//! Committing changes with their events, waking subscribers, and heartbeats: the service's
//! side of the outbox (see [`crate::outbox`] for why events are read back from storage).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use canonical_json::Value;
use cookwala::execution::ExecutionState;
use cookwala_sim::SimEvent;

use crate::outbox::LiveEvent;
use crate::outbox::events::{self, Execution};
use crate::service::live::LiveRun;
use crate::service::{Error, Hub, snapshot};
use crate::storage::{Commit, NewEvent, NewIncident, StorageError, jcs_text};

impl Hub {
    /// Commits `commit` in one storage transaction, then wakes the event subscribers. With
    /// `retry_events`, the events and incidents of a failed commit are kept and written first
    /// by the next commit (for changes already made in memory, which later commits persist).
    pub(crate) async fn commit(&self, commit: Commit, retry_events: bool) -> Result<(), Error> {
        Ok(self.commit_raw(commit, retry_events).await?)
    }

    /// [`Hub::commit`] with the storage's own error (the caller tells a fenced execution
    /// apart). A fenced commit's events are never retried: the execution was taken over and
    /// ended by another replica, and what this one did meanwhile never happened.
    pub(crate) async fn commit_raw(
        &self,
        mut commit: Commit,
        retry_events: bool,
    ) -> Result<(), StorageError> {
        let bus = &self.inner.bus;
        let has_pending = || {
            let pending = bus.pending.lock().unwrap_or_else(PoisonError::into_inner);
            !pending.0.is_empty() || !pending.1.is_empty()
        };
        // Events a failed commit left behind go first, in a commit that holds the gate alone:
        // no other commit (the same execution's next one, say) lands while they are in flight.
        let mut shared = None;
        let mut alone = None;
        if !has_pending() {
            let guard = bus.retry_gate.read().await;
            if has_pending() {
                drop(guard);
            } else {
                shared = Some(guard);
            }
        }
        if shared.is_none() {
            alone = Some(bus.retry_gate.write().await);
        }
        let absorbed = match alone {
            Some(_) => {
                let mut pending = bus.pending.lock().unwrap_or_else(PoisonError::into_inner);
                std::mem::take(&mut *pending)
            }
            None => (Vec::new(), Vec::new()),
        };
        if !absorbed.0.is_empty() || !absorbed.1.is_empty() {
            commit.events.splice(0..0, absorbed.0.iter().cloned());
            commit.incidents.splice(0..0, absorbed.1.iter().cloned());
        }
        if commit.is_empty() {
            return Ok(());
        }
        let has_events = !commit.events.is_empty();
        // On failure, what was absorbed goes back in any case (it belongs to other changes, made
        // in memory already); this commit's own events only with `retry_events`, and never when
        // its execution was fenced (another replica took it over: what this one did meanwhile
        // never happened).
        let (skip_events, skip_incidents) = (absorbed.0.len(), absorbed.1.len());
        let own = retry_events.then(|| {
            (
                commit.events.get(skip_events..).unwrap_or_default().to_vec(),
                commit.incidents.get(skip_incidents..).unwrap_or_default().to_vec(),
            )
        });
        let began = std::time::Instant::now();
        let res = crate::outbox::db(&self.inner.storage, move |s| s.commit(&commit)).await;
        let metrics = &self.inner.metrics;
        metrics.commit_seconds.observe(began.elapsed().as_secs_f64());
        if res.is_err() {
            metrics.commit_failures.inc();
        }
        match res {
            Ok(()) => {
                if has_events {
                    bus.committed.send_modify(|n| *n = n.wrapping_add(1));
                }
                Ok(())
            }
            Err(e) => {
                let (mut events, mut incidents) = absorbed;
                if let Some((own_events, own_incidents)) = own
                    && !matches!(e, StorageError::Fenced(_))
                {
                    events.extend(own_events);
                    incidents.extend(own_incidents);
                }
                if !events.is_empty() || !incidents.is_empty() {
                    let mut pending = bus.pending.lock().unwrap_or_else(PoisonError::into_inner);
                    pending.0.splice(0..0, events);
                    pending.1.splice(0..0, incidents);
                }
                drop((shared, alone));
                Err(e)
            }
        }
    }

    /// The event reporting a new execution (`accepted` or `refused`) on `device`.
    pub(crate) fn created_events(
        &self,
        id: &str,
        device: &str,
        sim: &dyn crate::executor::Run,
    ) -> Vec<NewEvent> {
        let status = sim.status();
        let request = status.get("request").and_then(Value::as_str).unwrap_or(id);
        let exe = Execution {
            id,
            request,
            device,
            start_unix_ms: sim.start_unix_ms(),
            time_scale: sim.time_scale(),
        };
        vec![events::to_new(&events::created(&exe, &status))]
    }

    /// The commit for a change of a live simulation: its new status, the events of `sim_events`
    /// (the simulator's output since the state `prev`; their `source` is the run's device), and
    /// the incidents it recorded beyond the first `incidents_before`.
    pub(crate) fn change(
        &self,
        id: &str,
        run: &LiveRun,
        prev: ExecutionState,
        sim_events: &[SimEvent],
        incidents_before: usize,
    ) -> Commit {
        let sim = &run.sim;
        self.count_change(id, &run.device, prev, &**sim, sim_events);
        let status = sim.status();
        let request = status.get("request").and_then(Value::as_str).unwrap_or(id);
        let exe = Execution {
            id,
            request,
            device: &run.device,
            start_unix_ms: sim.start_unix_ms(),
            time_scale: sim.time_scale(),
        };
        let docs = {
            let mut gate = self.inner.bus.gate.lock().unwrap_or_else(PoisonError::into_inner);
            events::from_sim(&exe, prev, sim_events, &mut gate)
        };
        let incidents = sim
            .incidents()
            .get(incidents_before..)
            .unwrap_or_default()
            .iter()
            .map(|doc| NewIncident {
                id: doc.get("id").and_then(Value::as_str).unwrap_or(id).to_owned(),
                body: jcs_text(doc),
            })
            .collect();
        Commit {
            updates: vec![snapshot(id, &**sim)],
            incidents,
            events: docs.iter().map(events::to_new).collect(),
            ..Commit::default()
        }
    }

    /// Counts what a change did for `/metrics`: an accepted execution reaching a final state,
    /// each safety limit that fired.
    fn count_change(
        &self,
        id: &str,
        device: &str,
        prev: ExecutionState,
        run: &dyn crate::executor::Run,
        sim_events: &[SimEvent],
    ) {
        let metrics = &self.inner.metrics;
        if !prev.is_final() && run.is_final() {
            let state = run.state().as_str();
            let labels = crate::metrics::StateLabels { state: state.to_owned() };
            metrics.ended.get_or_create(&labels).inc();
            tracing::info!(target: "cookwala_hub", execution = id, device, state, "ended");
        }
        for e in sim_events {
            if let cookwala_sim::EventKind::Safety { limit, action, .. } = &e.kind {
                let labels =
                    crate::metrics::LimitLabels { limit: limit.clone(), action: action.clone() };
                metrics.safety_firings.get_or_create(&labels).inc();
                tracing::warn!(
                    target: "cookwala_hub",
                    execution = id,
                    device,
                    limit = %limit,
                    action = %action,
                    "safety limit fired"
                );
            }
        }
    }

    /// Publishes a `cookwala.recall.published` event for a Recall document (durable: it goes
    /// to the outbox, SSE and webhooks). Publishing the same document again is a no-op.
    ///
    /// # Errors
    /// The storage fails.
    pub async fn publish_recall_event(&self, recall: &Value) -> Result<(), Error> {
        let event = events::recall(recall, self.now_ms());
        let commit = Commit { events: vec![events::to_new(&event)], ..Commit::default() };
        self.commit(commit, false).await
    }

    /// Emits one `cookwala.device.heartbeat` for the device served at the root to the SSE
    /// subscribers connected now, records it as the device's last heartbeat, and returns it.
    pub async fn heartbeat(&self) -> Value {
        let device = self.inner.device_id.clone();
        let active = self.active_on(&device).await;
        self.emit_heartbeat(&device, &active, None)
    }

    /// Emits one heartbeat per served device (the root device first, then the others by id),
    /// each with the executions live on that device, and returns them. A device of the
    /// kitchen that shadows a served one sends its own (the hub sends none for it). A device
    /// process sends one, with its announcement and its executions in detail, and a telemetry
    /// reading per running execution.
    pub async fn heartbeats(&self) -> Vec<Value> {
        if let Some(a) = &self.inner.announce {
            return vec![self.device_heartbeat(a).await];
        }
        let by_device: Vec<(String, Vec<String>)> = {
            let live = self.inner.live.stored();
            let root = std::iter::once(self.inner.device_id.as_str());
            let others = self.inner.devices.keys().map(String::as_str);
            root.chain(others.filter(|d| *d != self.inner.device_id))
                .map(|d| {
                    let active = live.iter().filter(|(_, dev)| dev == d).map(|(id, _)| id.clone());
                    (d.to_owned(), active.collect())
                })
                .collect()
        };
        by_device
            .iter()
            .filter(|(d, _)| !self.is_remote(d))
            .map(|(d, active)| self.emit_heartbeat(d, active, None))
            .collect()
    }

    /// A device process's heartbeat and telemetry (see [`Hub::heartbeats`]).
    async fn device_heartbeat(&self, announce: &crate::kitchen::Announce) -> Value {
        let mut ids = Vec::new();
        let mut details = Vec::new();
        let mut telemetry = Vec::new();
        for (id, slot) in self.inner.live.slots() {
            if !slot.stored {
                continue;
            }
            let status = {
                let run = slot.run.lock().await;
                if run.gone || run.is_final() {
                    continue;
                }
                run.status()
            };
            let text = |p: &str| status.pointer(p).and_then(Value::as_str).map(str::to_owned);
            let seq = status.get("seq").and_then(Value::as_i64).and_then(|n| u64::try_from(n).ok());
            let mut a = crate::kitchen::Active::new(
                &id,
                &text("/state").unwrap_or_default(),
                seq.unwrap_or(0),
            );
            a.node = text("/step/node");
            a.op = text("/step/op");
            if let (Some(node), Some((recipe, _))) = (&a.node, &slot.recipe) {
                a.hazards = crate::kitchen::step_hazards(recipe, node);
            }
            if let Some(Value::Array(readings)) = status.pointer("/step/readings")
                && !readings.is_empty()
            {
                telemetry.push((id.clone(), readings.clone()));
            }
            details.push(a.to_value());
            ids.push(id);
        }
        let event = self.emit_heartbeat(&announce.device, &ids, Some((announce, &details)));
        let bus = &self.inner.bus;
        for (exec, readings) in telemetry {
            let n = bus.heartbeats.fetch_add(1, Ordering::Relaxed);
            let t = events::telemetry(
                &announce.device,
                &exec,
                &readings,
                self.now_ms(),
                bus.boot_ms,
                n,
            );
            let _ = bus.live.send(Arc::new(LiveEvent {
                ty: crate::kitchen::TELEMETRY,
                subject: announce.device.clone(),
                body: jcs_text(&t),
            }));
        }
        event
    }

    /// Ids of the executions live on `device`.
    pub(crate) async fn active_on(&self, device: &str) -> Vec<String> {
        let live = self.inner.live.stored();
        live.into_iter().filter(|(_, d)| d == device).map(|(id, _)| id).collect()
    }

    fn emit_heartbeat(
        &self,
        device: &str,
        active: &[String],
        announce: Option<(&crate::kitchen::Announce, &[Value])>,
    ) -> Value {
        let bus = &self.inner.bus;
        let now_ms = self.now_ms();
        let event = events::heartbeat(&events::Heartbeat {
            device,
            boot: bus.boot_ms,
            n: bus.heartbeats.fetch_add(1, Ordering::Relaxed),
            now_ms,
            active,
            uptime_ms: u64::try_from(bus.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            sim_clock_ms: bus.sim_clock_ms.load(Ordering::Relaxed),
            process: announce,
        });
        bus.last_heartbeat
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(device.to_owned(), now_ms);
        // No receiver is not an error: nobody is listening.
        let _ = bus.live.send(Arc::new(LiveEvent {
            ty: events::HEARTBEAT,
            subject: device.to_owned(),
            body: jcs_text(&event),
        }));
        event
    }

    /// When `device` last sent a heartbeat (Unix ms), if ever since the hub started.
    pub fn last_heartbeat(&self, device: &str) -> Option<i64> {
        self.inner
            .bus
            .last_heartbeat
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(device)
            .copied()
    }

    /// Starts the task that emits a heartbeat per device every
    /// [`crate::HubConfig::heartbeat`] (nothing when the interval is zero). The first
    /// heartbeats are sent at once.
    pub fn spawn_heartbeat(&self) -> Option<tokio::task::JoinHandle<()>> {
        let every = self.inner.config.heartbeat;
        if every.is_zero() {
            return None;
        }
        let hub = self.clone();
        Some(tokio::spawn(async move {
            let mut interval = tokio::time::interval(every);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                hub.heartbeats().await;
            }
        }))
    }

    /// Ends every open event stream (at shutdown, so a graceful shutdown does not wait for
    /// SSE clients forever).
    pub fn close_event_streams(&self) {
        self.inner.bus.closing.send_replace(true);
    }
}
