//! The execution operations: start (admission, then the simulation), stop. The only code that
//! takes the hub's locks for them; the HTTP layer extracts, calls one operation, and responds.

use std::sync::Arc;

use crate::executor::{Run, RunEvent};
use canonical_json::{Map, Value};

use crate::auth::{Principal, Role};
use crate::service::Error;
use crate::service::idempotency::{
    Answer, KeyHold, answered, hold_key, idem_record, request_digest,
};
use crate::service::live::{InsertRefused, LiveRun, Slot, lock_live};
use crate::service::{Device, Hub, RunConfig, snapshot};
use crate::storage::{
    Commit, ExecutionRecord, IdempotencyRecord, NewIncident, StorageError, jcs_text,
};

/// A start the HTTP layer has read and checked (fields, version, shape).
#[derive(Debug)]
pub(crate) struct Start<'a> {
    pub who: &'a Principal,
    pub device: &'a Device,
    /// The idempotency key, scoped to the principal.
    pub key: String,
    /// The request's digest (route and canonical body).
    pub digest: String,
    pub doc: &'a Value,
    pub id: String,
    pub recipe_ref: &'a str,
    pub human_present: bool,
}

/// The 403 for a principal that is not a person asking to act as one.
pub(crate) fn only_a_person(who: &Principal, what: &str) -> Error {
    Error::OnlyAPerson {
        name: who.name.clone(),
        role: who.role.as_str().to_owned(),
        what: what.to_owned(),
    }
}

fn parse_stored(text: &str) -> Result<Value, Error> {
    canonical_json::parse(text.as_bytes()).map_err(|e| Error::internal(&e))
}

fn seed_for(id: &str) -> u64 {
    let hex = canonical_json::digest::sha256_hex(id.as_bytes());
    // 53 bits, so the seed stays a JCS-safe integer wherever the log shows it.
    u64::from_str_radix(hex.get(..16).unwrap_or("1"), 16).unwrap_or(1) & ((1 << 53) - 1)
}

/// A start decided: what its commit writes, its answer, and its slot in the live map.
pub(crate) struct Decided {
    commit: Commit,
    status: Value,
    /// Accepted (not refused at once).
    accepted: bool,
    /// The refusal's reason code, when refused.
    refusal: Option<&'static str>,
    slot: Slot,
}

/// Why one attempt of a start failed.
pub(crate) enum StartFailure {
    /// The device was taken by another replica before the commit; the key is still held.
    Busy(KeyHold),
    /// Anything else.
    Failed(Error),
}

impl From<Error> for StartFailure {
    fn from(e: Error) -> StartFailure {
        StartFailure::Failed(e)
    }
}

// ---- where an execution is

/// The device an execution was started on (its stored run configuration; `None` for a record
/// that cannot be read).
pub(crate) fn device_of(rec: &ExecutionRecord) -> Option<String> {
    RunConfig::from_text(&rec.config).map(|r| r.device)
}

/// The 404 for an execution that is not on `device`; it names the device that has it.
pub(crate) fn elsewhere(id: &str, other: Option<&str>, device: &Device) -> Error {
    match other {
        Some(d) => Error::OnOtherDevice {
            id: id.to_owned(),
            device: device.id.clone(),
            other: d.to_owned(),
        },
        None => Error::NoExecution { id: id.to_owned() },
    }
}

/// The stored execution `id` if it belongs to `device`; a 404 otherwise.
pub(crate) async fn stored_on(
    hub: &Hub,
    id: &str,
    device: &Device,
) -> Result<ExecutionRecord, Error> {
    let lookup = id.to_owned();
    let rec = hub
        .db(move |s| s.execution(&lookup))
        .await?
        .ok_or_else(|| Error::NoExecution { id: id.to_owned() })?;
    // A record whose run configuration cannot be read cannot be placed: every device
    // serves it rather than none. An execution of a device this hub no longer serves (a
    // restart without its `--bundle`) is read at the root.
    match device_of(&rec) {
        Some(d) if d == device.id => Ok(rec),
        Some(d) if device.root && hub.find_device(&d).is_none() => Ok(rec),
        Some(d) => Err(elsewhere(id, Some(&d), device)),
        None => Ok(rec),
    }
}

/// The run of `id`, locked, if it is live on `device`: `Ok(None)` when it is not live (or its
/// start's commit failed), a 404 when it runs on another device. Waits while its start is
/// being committed.
pub(crate) async fn live_on(
    hub: &Hub,
    id: &str,
    device: &Device,
) -> Result<Option<crate::service::live::RunGuard>, Error> {
    let Some(slot) = hub.inner.live.slot(id) else { return Ok(None) };
    if slot.device != device.id {
        return Err(elsewhere(id, Some(&slot.device), device));
    }
    let run = slot.run.lock_owned().await;
    Ok((!run.gone).then_some(run))
}

pub(crate) async fn current_status_stored(
    hub: &Hub,
    id: &str,
    device: &Device,
) -> Result<Value, Error> {
    parse_stored(&stored_on(hub, id, device).await?.status)
}

/// The most simulated time shutdown moves on to bring stopping executions to `stopped`.
pub(crate) const SHUTDOWN_SIM_MS: u64 = 600_000;

impl Hub {
    /// The stored answer for the scoped `key`, if it answered this request (`digest`); a 422
    /// when the key answered another request.
    pub(crate) async fn stored_answer(
        &self,
        key: &str,
        digest: &str,
    ) -> Result<Option<IdempotencyRecord>, Error> {
        let k = key.to_owned();
        answered(self.db(move |s| s.idempotency(&k)).await?, digest)
    }

    /// Applies `op` to the live run `id` and returns the commit that persists what it changed
    /// (the status, its events, the incidents it recorded), with what `op` returned.
    pub(crate) fn apply<T, E>(
        &self,
        id: &str,
        run: &mut LiveRun,
        op: impl FnOnce(&mut dyn Run) -> Result<(Vec<RunEvent>, T), E>,
    ) -> Result<(Commit, T), E> {
        let (prev, incidents) = (run.state(), run.incidents().len());
        let (events, out) = op(&mut *run.sim)?;
        Ok((self.change(id, run, prev, &events, incidents), out))
    }

    /// Stops execution `id`, never refused: a live one is stopped safely, an ended one answers
    /// with its final status. `key` is the scoped idempotency key and the request digest.
    ///
    /// # Errors
    /// No such execution (404), a reused key (422), the storage fails.
    pub(crate) async fn stop(
        &self,
        id: &str,
        reason: &str,
        key: Option<(String, String)>,
    ) -> Result<Answer, Error> {
        if self.in_fleet() && !self.inner.live.contains(id) {
            // Not run here: if it runs on another replica, that replica stops it.
            let lookup = id.to_owned();
            if let Some(rec) = self.db(move |s| s.execution(&lookup)).await?
                && !rec.is_final
            {
                let req = crate::service::fleet::StopRequest { reason, key: key.as_ref() };
                return self.forward_stop(id, &req).await;
            }
        }
        self.stop_here(id, reason, key).await
    }

    /// Shutdown's first step: refuses new executions from now on, stops every execution live
    /// on this replica, and moves simulated time on (without waiting for the wall clock)
    /// until each has reached `stopped`, every change committed with its events and log.
    /// Returns the ids stopped. Bounded: at most [`SHUTDOWN_SIM_MS`] of simulated time; one
    /// still `stopping` after that is ended by the next start's recovery.
    pub(crate) async fn stop_all(&self, reason: &str) -> Vec<String> {
        self.inner.closing.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut stopped = Vec::new();
        // A start that passed its check before the flag was set may still be committing:
        // a second pass stops it too.
        for _ in 0..2 {
            match self.stop_every_live(reason).await {
                Ok(ids) => stopped.extend(ids),
                Err(e) => crate::clock::note(format_args!(
                    "cookwala-hub: stopping the live executions at shutdown failed: {e}"
                )),
            }
            let mut moved = 0;
            while moved < SHUTDOWN_SIM_MS && self.inner.live.len() > 0 {
                if let Err(e) = self.advance(1_000).await {
                    crate::clock::note(format_args!("cookwala-hub: a shutdown step failed: {e}"));
                    break;
                }
                moved += 1_000;
            }
        }
        stopped.sort();
        stopped.dedup();
        stopped
    }

    /// Stops every execution live on this replica in one decision under the hub's lock and one
    /// commit (heat and motion are cut by the simulation at once; the commit stores every
    /// change with its events): what a kitchen alarm and shutdown use, so no execution waits
    /// for another's fsync. Returns the ids stopped.
    ///
    /// # Errors
    /// The storage fails (the stops are made in memory; their events are kept and retried).
    pub(crate) async fn stop_every_live(&self, reason: &str) -> Result<Vec<String>, Error> {
        self.stop_every_live_by(|run| run.stop(reason)).await
    }

    /// The device's own stop control (`cookwala device`: SIGUSR1 stands for the button):
    /// every live execution stopped as [`Hub::stop_every_live`] does, each recorded as a local
    /// stop (`x-localStop` in its log). Nothing here waits for a network: the events it
    /// commits go out when a connection allows.
    ///
    /// # Errors
    /// The storage fails (the stops are made in memory; their events are kept and retried).
    pub async fn local_stop(&self) -> Result<Vec<String>, Error> {
        self.stop_every_live_by(|run| run.stop_local()).await
    }

    async fn stop_every_live_by(
        &self,
        stop: impl Fn(&mut dyn crate::executor::Run) -> Vec<crate::executor::RunEvent>,
    ) -> Result<Vec<String>, Error> {
        let mut held = lock_live(self.inner.live.slots()).await;
        let mut commit = Commit::default();
        let mut stopped = Vec::new();
        for (id, run) in &mut held {
            let (change, ()) = self.apply(id, run, |sim| Ok::<_, Error>((stop(sim), ())))?;
            commit.absorb(change);
            stopped.push(id.clone());
        }
        if !stopped.is_empty() {
            self.commit(commit, true).await?;
        }
        self.drop_finals(&held);
        Ok(stopped)
    }

    /// Removes from the live map the runs among `held` that have ended.
    pub(crate) fn drop_finals(&self, held: &[(String, crate::service::live::RunGuard)]) {
        for (id, run) in held {
            if run.is_final() {
                self.inner.live.remove(id);
            }
        }
    }

    /// True once shutdown has begun.
    pub(crate) fn is_closing(&self) -> bool {
        self.inner.closing.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Stops execution `id` on this replica (a stored execution not live here answers its
    /// stored status).
    pub(crate) async fn stop_here(
        &self,
        id: &str,
        reason: &str,
        key: Option<(String, String)>,
    ) -> Result<Answer, Error> {
        // A repeat with the same key waits for this one's answer.
        let _hold = match &key {
            Some((k, _)) => Some(hold_key(self, k).await),
            None => None,
        };
        if let Some((k, digest)) = &key
            && let Some(rec) = self.stored_answer(k, digest).await?
        {
            return Ok(Answer::Replay(rec));
        }
        let slot = self.inner.live.slot(id);
        let mut run = match slot {
            Some(slot) => Some(slot.run.lock_owned().await).filter(|r| !r.gone),
            None => None,
        };
        let (status, change) = match run.as_mut() {
            Some(run) => {
                tracing::info!(target: "cookwala_hub", execution = id, device = %run.device, "stop");
                let (change, ()) =
                    self.apply(id, run, |sim| Ok::<_, Error>((sim.stop(reason), ())))?;
                (run.status(), Some(change))
            }
            None => {
                let lookup = id.to_owned();
                match self.db(move |s| s.execution(&lookup)).await? {
                    Some(rec) => (parse_stored(&rec.status)?, None),
                    None => return Err(Error::NoExecution { id: id.to_owned() }),
                }
            }
        };
        let idempotency = key.as_ref().map(|(k, d)| idem_record(k, d, 202, &status));
        let commit = match change {
            Some(c) => Commit { idempotency, ..c },
            None => Commit { idempotency, ..Commit::default() },
        };
        self.commit(commit, true).await?;
        if let Some(run) = run
            && run.is_final()
        {
            self.inner.live.remove(id);
        }
        Ok(Answer::Fresh(status))
    }

    /// Starts an execution: admission (prechecks, then the dry run with the limits the device
    /// enforces), then the simulation built from it, committed with its idempotency record,
    /// findings and events.
    ///
    /// # Errors
    /// A duplicate id (409), a reused key (422), the storage fails.
    pub(crate) async fn start(&self, req: Start<'_>) -> Result<Answer, Error> {
        // A repeat gets the original answer; a repeat arriving while the original is still being
        // committed waits for it. From here on this request holds the key.
        let mut key_hold = hold_key(self, &req.key).await;
        // A device found busy only when the commit ran (another replica accepted an execution
        // on it meanwhile) is decided again as busy: the request is then refused `busy`.
        let mut busy_elsewhere = false;
        loop {
            match self.start_once(&req, key_hold, busy_elsewhere).await {
                Err(StartFailure::Busy(hold)) if !busy_elsewhere => {
                    key_hold = hold;
                    busy_elsewhere = true;
                }
                Err(StartFailure::Busy(_)) => {
                    return Err(StorageError::Busy(req.device.id.clone()).into());
                }
                Err(StartFailure::Failed(e)) => return Err(e),
                Ok(answer) => return Ok(answer),
            }
        }
    }

    /// One decision and commit of a start (see [`Hub::start`]).
    ///
    /// The decision is made without any lock: it reads what it depends on from the live map
    /// (whether the device is occupied, the recalls generation), and the new run is inserted
    /// only if those still hold, else it is decided again. A few attempts, then once more
    /// with the map's lock held across the decision, so a start cannot be starved by others.
    async fn start_once(
        &self,
        req: &Start<'_>,
        key_hold: KeyHold,
        busy_elsewhere: bool,
    ) -> Result<Answer, StartFailure> {
        let (key, id) = (req.key.clone(), req.id.clone());
        // One read for all: the key's stored answer (a holder that finished has stored it before
        // letting go), whether the id is already stored, and — with other replicas on the store
        // — whether the device runs an execution elsewhere and the recalls they published.
        let (k, lookup, dev) = (key.clone(), id.clone(), req.device.id.clone());
        let (previous, stored, remote_busy, recalls) = self
            .db(move |s| match s.fleet() {
                Some(f) => {
                    let r = f.start_reads(&k, &lookup, &dev)?;
                    Ok((r.idempotency, r.stored, r.busy, Some(r.recalls)))
                }
                None => Ok((s.idempotency(&k)?, s.execution(&lookup)?.is_some(), false, None)),
            })
            .await?;
        if let Some(rec) = answered(previous, &req.digest)? {
            return Ok(Answer::Replay(rec));
        }
        if let Some(texts) = recalls {
            self.set_recalls(&texts);
        }
        // 3. duplicate id (on any device): stored, live, or being created right now.
        let exists = || Error::ExecutionExists { id: id.clone() };
        if stored {
            return Err(exists().into());
        }
        let elsewhere = remote_busy || busy_elsewhere;
        let mut attempt = 0;
        let (decided, guard) = loop {
            attempt += 1;
            let seen = self.inner.live.seen(&id, &req.device.id).ok_or_else(exists)?;
            let decided = self.decide(req, seen.busy || elsewhere)?;
            match self.inner.live.insert_if(&id, seen, decided.slot.clone()) {
                Ok(guard) => break (decided, guard),
                Err(InsertRefused::Exists) => return Err(exists().into()),
                Err(InsertRefused::Changed) if attempt < 4 => {}
                Err(InsertRefused::Changed) => {
                    let (decided, guard) = self
                        .inner
                        .live
                        .decide_locked(&id, &req.device.id, |busy| {
                            self.decide(req, busy || elsewhere).map(|d| {
                                let slot = d.slot.clone();
                                (d, slot)
                            })
                        })
                        .map_err(|e| match e {
                            crate::service::live::Locked::Exists => exists(),
                            crate::service::live::Locked::Failed(e) => e,
                        })?;
                    break (decided, guard);
                }
            }
        };
        let Decided { commit, status, accepted, refusal, .. } = decided;
        let mut run = guard;
        // Commit with the run locked by this start (nobody sees it until it is durable). The
        // rest runs in its own task: a client that hangs up must not leave a stored execution
        // without its simulation, nor a slot without its record.
        let task_hub = self.clone();
        let finish = tokio::spawn(async move {
            let hub = task_hub;
            let res = hub.commit_raw(commit, false).await;
            if res.is_ok() && accepted {
                hub.inner.live.mark_stored(&id);
            } else {
                run.gone |= res.is_err();
                hub.inner.live.remove(&id);
            }
            drop(run);
            match res {
                // Another replica took the device between the decision and the commit: the
                // caller decides again, still holding the key.
                Err(crate::storage::StorageError::Busy(_)) => Err(StartFailure::Busy(key_hold)),
                Err(e) => Err(StartFailure::Failed(e.into())),
                Ok(()) => Ok(()),
            }
        });
        finish.await.map_err(|e| StartFailure::Failed(e.into()))??;
        let metrics = &self.inner.metrics;
        let device = req.device.id.as_str();
        match refusal {
            None => {
                let labels = crate::metrics::DeviceLabels { device: device.to_owned() };
                metrics.started.get_or_create(&labels).inc();
                tracing::info!(target: "cookwala_hub", execution = %req.id, device, "accepted");
            }
            Some(reason) => {
                let labels = crate::metrics::ReasonLabels { reason: reason.to_owned() };
                metrics.refused.get_or_create(&labels).inc();
                tracing::info!(
                    target: "cookwala_hub",
                    execution = %req.id,
                    device,
                    reason,
                    "refused"
                );
            }
        }
        Ok(Answer::Fresh(status))
    }

    /// The admission of a start, and everything its commit writes, for a device found busy or
    /// not (`busy`); the recalls are those in force now. Pure work: no lock, no I/O.
    fn decide(&self, req: &Start<'_>, busy: bool) -> Result<Decided, Error> {
        let Start { who, device, key, digest, doc, id, recipe_ref, human_present } = req;
        let (id, human_present) = (id.clone(), *human_present);
        // 4.–9. prechecks (recipe, hash, recall, mandate, allergens, busy), then the dry run.
        let catalog = &self.inner.config.catalog;
        let recipe_id = catalog
            .recipe_id(recipe_ref)
            .unwrap_or_else(|| cookwala::precheck::ref_id(recipe_ref))
            .to_owned();
        let held = self.inner.recipes.get(&recipe_id);
        let recipe = held.map(|h| h.doc.as_ref());
        let now_ms = self.now_ms();
        let now = cookwala::time::Instant::from_unix(now_ms.div_euclid(1000), 0)
            .ok_or_else(|| Error::internal(&"clock out of range"))?;
        let recalls = crate::service::recalls::blocking(&self.recalls());
        let empty = Value::Object(Map::new());
        let context = cookwala::precheck::Context {
            request: doc,
            recipe,
            recalls: &recalls,
            // An agent's mandate must carry a principal signature the hub can verify; a person's
            // request is checked when the hub has trusted keys to check it with.
            keys: (who.role == Role::Agent || !self.inner.config.trusted_keys.is_empty())
                .then_some(&self.inner.config.trusted_keys),
            confirmed: &[],
            busy,
            now,
        };
        // One decision: prechecks, then the dry run with the limits this device enforces, then
        // what the executor cannot enforce. Stored with the execution; the run is built from it.
        let admission = device
            .executor
            .admit(&cookwala::admission::Request {
                precheck: Some(context),
                recipe: recipe.unwrap_or(&empty),
                device: &device.doc,
                pack: catalog.pack(),
                narrowing: device.extra_limits.as_ref(),
                human_present,
                allow_model: true,
                now,
            })
            .map_err(|e| match e {
                cookwala::admission::AdmissionError::Request(why) => {
                    Error::InvalidRequest(why.to_string())
                }
                other => Error::internal(&other),
            })?;
        let run = RunConfig {
            recipe: recipe_id.clone(),
            device: device.id.clone(),
            human_present,
            seed: seed_for(&id),
            start_unix_ms: now_ms,
            time_scale: self.time_scale(),
        };
        let recipe_doc = held.map(|h| h.jcs.clone());
        let start = crate::executor::RunStart {
            recipe: recipe.cloned().unwrap_or_else(|| Value::Object(Map::new())),
            human_present,
            seed: run.seed,
            start_unix_ms: now_ms,
            time_scale: self.time_scale(),
            execution_id: id.clone(),
        };
        // The device builds the run from the admission (its plan, or its refusal, under its
        // effective limits: the device's own pack, what `/v1/safety-limits` serves); it does
        // not decide again.
        let sim = device.executor.start(start, &admission).map_err(|e| Error::internal(&e))?;
        // The start answer carries the plan the hub accepted (`x-hub-plan`, as the upstream hub
        // sends it and its clients read it); later statuses do not repeat it.
        let mut status = sim.status();
        if !sim.plan().is_empty()
            && let Some(m) = status.as_object_mut()
        {
            let plan = sim.plan().iter().map(cookwala_sim::PlanStep::to_value).collect();
            m.insert("x-hub-plan".into(), Value::Array(plan));
        }
        let snap = snapshot(&id, &*sim);
        let rec = ExecutionRecord {
            id: id.clone(),
            request: jcs_text(doc),
            config: jcs_text(&run.to_value()),
            status: snap.status,
            seq: snap.seq,
            state: snap.state.as_str().to_owned(),
            is_final: snap.is_final,
            log: snap.log,
            recipe_doc,
            device_doc: Some(device.doc_jcs.clone()),
            limits_doc: device.extra_limits_jcs.clone(),
            admission: Some(jcs_text(&admission.to_value())),
        };
        let idem = idem_record(key, digest, 202, &status);
        let incidents: Vec<NewIncident> = admission
            .findings
            .iter()
            .map(|f| {
                let mut m = Map::new();
                m.insert("kind".into(), "HubFinding".into());
                m.insert("incident".into(), f.incident.as_str().into());
                m.insert("location".into(), f.location.as_str().into());
                m.insert("action".into(), f.action.as_str().into());
                m.insert("execution".into(), id.as_str().into());
                NewIncident { id: id.clone(), body: jcs_text(&Value::Object(m)) }
            })
            .collect();
        let events = self.created_events(&id, &device.id, &*sim);
        let commit = Commit {
            create: Some(rec),
            idempotency: Some(idem),
            incidents,
            events,
            ..Commit::default()
        };
        let accepted = !sim.is_final();
        let slot = Slot {
            device: device.id.clone(),
            occupies: accepted,
            stored: false,
            recipe: held.filter(|_| accepted).map(|h| (h.doc.clone(), h.hash.clone())),
            owed_ms: Arc::default(),
            run: Arc::new(tokio::sync::Mutex::new(LiveRun {
                device: device.id.clone(),
                sim,
                gone: false,
            })),
        };
        let refusal = (!accepted).then(|| {
            admission.refusal().map_or(cookwala::dryrun::RefusalReason::SafetyLimit.as_str(), |r| {
                r.reason.as_str()
            })
        });
        Ok(Decided { commit, status, accepted, refusal, slot })
    }

    /// The status of `id` if it is live on `device` (`None` when it is not live; a 404 when it
    /// runs on another device).
    ///
    /// # Errors
    /// The execution runs on another device.
    pub(crate) async fn live_status(
        &self,
        id: &str,
        device: &Device,
    ) -> Result<Option<Value>, Error> {
        Ok(live_on(self, id, device).await?.map(|run| run.status()))
    }

    /// Resumes `id` from `paused`, or confirms a human step (`needs_human`, a person only),
    /// checked against `If-Match` (`if_match`, the seq the caller saw).
    ///
    /// # Errors
    /// 404 (no such execution or another device's), 412 (stale seq), 428 (no `If-Match`), 403
    /// (not a person confirming a person), 409 (not resumable), 422 (a reused key).
    pub(crate) async fn resume(
        &self,
        who: &Principal,
        device: &Device,
        id: &str,
        key: String,
        if_match: Option<String>,
        body: &[u8],
    ) -> Result<Answer, Error> {
        if self.in_fleet() && !self.inner.live.contains(id) {
            let rec = stored_on(self, id, device).await?;
            if !rec.is_final {
                // Run on another replica: that replica checks and answers it.
                let req = crate::service::fleet::ResumeRequest {
                    who,
                    device: &device.id,
                    key: &key,
                    if_match: if_match.as_deref(),
                    body,
                };
                return self.forward_resume(id, &req).await;
            }
        }
        self.resume_here(who, device, id, key, if_match, body).await
    }

    /// Resumes `id` on this replica.
    pub(crate) async fn resume_here(
        &self,
        who: &Principal,
        device: &Device,
        id: &str,
        key: String,
        if_match: Option<String>,
        body: &[u8],
    ) -> Result<Answer, Error> {
        // A repeat with the same key waits for this one's answer.
        let _hold = hold_key(self, &key).await;
        let if_match_given = if_match.clone();
        let mut run = live_on(self, id, device).await?;
        let current = match &run {
            Some(run) => run.status(),
            None => current_status_stored(self, id, device).await?,
        };
        let if_match = if_match_given.ok_or(Error::IfMatchRequired)?;
        let route = format!("POST {}/v1/executions/{id}/resume {if_match}", device.route_prefix());
        let digest = request_digest(&route, body);
        if let Some(rec) = self.stored_answer(&key, &digest).await? {
            return Ok(Answer::Replay(rec));
        }
        let seq = current.get("seq").and_then(Value::as_i64).unwrap_or(-1);
        if if_match != seq.to_string() {
            return Err(Error::StaleSeq { seq });
        }
        let state = current.get("state").and_then(Value::as_str).unwrap_or("unknown").to_owned();
        let Some(sim) = run.as_mut() else {
            return Err(Error::NotResumable { state });
        };
        if sim.state() == cookwala::execution::ExecutionState::NeedsHuman && !who.is_person() {
            return Err(only_a_person(who, "confirm a human step (resume from needs_human)"));
        }
        // The answer is the status as it moved to `running`, even when the confirmed step then
        // ended at once (the stored status, and the stream, show what followed).
        let label = who.label();
        let (change, status) = self.apply(id, sim, |sim| {
            sim.resume_by(Some(&label)).map_err(|e| Error::WrongState(e.to_string()))
        })?;
        let idempotency = Some(idem_record(&key, &digest, 202, &status));
        self.commit(Commit { idempotency, ..change }, true).await?;
        if sim.is_final() {
            self.inner.live.remove(id);
        }
        Ok(Answer::Fresh(status))
    }

    /// The live executions (stored ones: not those being created) and the device each runs on.
    pub(crate) async fn live_executions(&self) -> Vec<(String, String)> {
        self.inner.live.stored()
    }

    /// Every live execution with its device and current status. Each run is locked, read and
    /// released in turn (a reader needs no snapshot across runs, and holding one run while
    /// waiting for the next would make a stop on the first wait for the second's commit).
    pub(crate) async fn live_statuses(&self) -> Vec<(String, String, Value)> {
        let mut out = Vec::new();
        for (id, slot) in self.inner.live.slots() {
            let run = slot.run.lock().await;
            if !run.gone && !run.is_final() {
                out.push((id, run.device.clone(), run.status()));
            }
        }
        out
    }

    /// A live execution's device, status and trace (every reading and each step's band).
    pub(crate) async fn live_trace(&self, id: &str) -> Option<(String, Value, Value)> {
        let slot = self.inner.live.slot(id)?;
        let run = slot.run.lock().await;
        if run.gone {
            return None;
        }
        Some((run.device.clone(), run.status(), run.trace()))
    }
}
