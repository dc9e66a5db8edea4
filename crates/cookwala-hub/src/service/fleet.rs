//! Several hub replicas on one shared store (see [`crate::storage::Fleet`] for the rules):
//! the loop that keeps this replica's device leases, ends the executions of a replica that
//! died, runs the stops and resumes other replicas hand over, and wakes the event streams when
//! another replica commits events; and the handing over itself.
//!
//! **Outbox polling, not LISTEN/NOTIFY.** Every replica's SSE streams read the shared outbox;
//! they only need to be woken when it grows. The loop polls the outbox's end every 100 ms
//! (one index lookup) instead of holding a LISTEN connection: a notification is only a hint
//! anyway (lost while the listener reconnects, so the outbox would still have to be read), a
//! poll survives a database restart with no resubscription logic, and 100 ms is well inside
//! what a kitchen display or a webhook needs. Events committed on this replica wake its own
//! streams at once, as with SQLite.

use std::time::Duration;

use canonical_json::{Map, Value};

use crate::auth::{Principal, Role};
use crate::service::idempotency::Answer;
use crate::service::{Error, Hub, Loss, recover_one};
use crate::storage::{ExecutionRecord, FleetCommand, StorageError, jcs_text};

/// How often the loop looks at the outbox and at commands for this replica.
const POLL: Duration = Duration::from_millis(100);

/// How a failure is answered to the replica that handed a request over: its status and body.
/// The fleet loop is given it when spawned (`http::problem_parts`), so the service stays free of
/// HTTP and a handed-over request answers with the same bytes as one answered here.
pub type Problem = fn(Error) -> (u16, String);

/// What a forwarded request answered: an HTTP status and its body.
fn answer_parts(res: Result<Answer, Error>, problem: Problem) -> (u16, String) {
    match res {
        Ok(Answer::Fresh(doc)) => (202, jcs_text(&doc)),
        Ok(Answer::Replay(rec)) => (rec.status, rec.body),
        Ok(Answer::Forwarded { status, body }) => (status, body),
        Err(e) => problem(e),
    }
}

fn principal_value(who: &Principal) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), who.name.as_str().into());
    m.insert("role".into(), who.role.as_str().into());
    if let Some(a) = &who.agent {
        m.insert("agent".into(), a.as_str().into());
    }
    m.insert("scope".into(), who.scope.as_str().into());
    Value::Object(m)
}

fn principal_from(v: &Value) -> Option<Principal> {
    Some(Principal {
        name: v.get("name")?.as_str()?.to_owned(),
        role: Role::parse(v.get("role")?.as_str()?)?,
        agent: v.get("agent").and_then(Value::as_str).map(str::to_owned),
        scope: v.get("scope")?.as_str()?.to_owned(),
    })
}

/// A stop to hand over.
pub(crate) struct StopRequest<'a> {
    pub reason: &'a str,
    pub key: Option<&'a (String, String)>,
}

/// A resume to hand over.
pub(crate) struct ResumeRequest<'a> {
    pub who: &'a Principal,
    pub device: &'a str,
    pub key: &'a str,
    pub if_match: Option<&'a str>,
    pub body: &'a [u8],
}

impl StopRequest<'_> {
    fn payload(&self) -> Value {
        let mut m = Map::new();
        m.insert("reason".into(), self.reason.into());
        if let Some((k, d)) = self.key {
            m.insert("key".into(), k.as_str().into());
            m.insert("digest".into(), d.as_str().into());
        }
        Value::Object(m)
    }
}

impl ResumeRequest<'_> {
    fn payload(&self) -> Value {
        let mut m = Map::new();
        m.insert("principal".into(), principal_value(self.who));
        m.insert("device".into(), self.device.into());
        m.insert("key".into(), self.key.into());
        if let Some(t) = self.if_match {
            m.insert("ifMatch".into(), t.into());
        }
        m.insert("body".into(), String::from_utf8_lossy(self.body).as_ref().into());
        Value::Object(m)
    }
}

impl Hub {
    /// True while this hub delivers the outbox to webhooks and MQTT (see `Inner::relay`).
    pub(crate) fn relays(&self) -> bool {
        self.inner.relay.load(std::sync::atomic::Ordering::Acquire)
    }

    /// True when this hub shares its store with other replicas.
    pub(crate) fn in_fleet(&self) -> bool {
        self.inner.storage.fleet().is_some()
    }

    /// Hands a stop of `id` (stored, not final, not live here) to the replica running it.
    pub(crate) async fn forward_stop(
        &self,
        id: &str,
        req: &StopRequest<'_>,
    ) -> Result<Answer, Error> {
        self.forward(id, "stop", req.payload()).await
    }

    /// Hands a resume of `id` to the replica running it.
    pub(crate) async fn forward_resume(
        &self,
        id: &str,
        req: &ResumeRequest<'_>,
    ) -> Result<Answer, Error> {
        self.forward(id, "resume", req.payload()).await
    }

    /// Posts a command for the owner of `id` and waits for its answer. When the owner is gone,
    /// failover ends the execution within the lease time: a stop then answers the final
    /// status, a resume that it cannot resume.
    async fn forward(&self, id: &str, kind: &str, payload: Value) -> Result<Answer, Error> {
        let cmd = FleetCommand {
            execution: id.to_owned(),
            kind: kind.to_owned(),
            payload: jcs_text(&payload),
        };
        let posted = self
            .db(move |s| match s.fleet() {
                Some(f) => f.post_command(&cmd).map(|n| (n, f.lease_ms())),
                None => Err(crate::storage::StorageError::Backend("no fleet".into())),
            })
            .await?;
        let (cmd_id, lease_ms) = posted;
        let deadline = tokio::time::Instant::now()
            + Duration::from_millis(lease_ms.saturating_mul(2))
            + Duration::from_secs(10);
        loop {
            let lookup = id.to_owned();
            let (answer, rec) = self
                .db(move |s| {
                    let answer = match s.fleet() {
                        Some(f) => f.command_answer(cmd_id)?,
                        None => None,
                    };
                    Ok((answer, s.execution(&lookup)?))
                })
                .await?;
            if let Some((status, body)) = answer {
                return Ok(Answer::Forwarded { status, body });
            }
            if let Some(rec) = rec.filter(|r| r.is_final) {
                return ended_answer(kind, &rec);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::ReplicaUnavailable { id: id.to_owned() });
            }
            tokio::time::sleep(POLL / 2).await;
        }
    }

    /// Runs a command another replica handed over, as if its request had reached this one.
    async fn run_command(&self, cmd: &FleetCommand, problem: Problem) -> (u16, String) {
        let Ok(p) = canonical_json::parse(cmd.payload.as_bytes()) else {
            return answer_parts(
                Err(Error::BadCommand("unreadable fleet command".into())),
                problem,
            );
        };
        let res = match cmd.kind.as_str() {
            "stop" => {
                let reason = p.get("reason").and_then(Value::as_str).unwrap_or("requested");
                let key = match (p.get("key"), p.get("digest")) {
                    (Some(k), Some(d)) => {
                        k.as_str().zip(d.as_str()).map(|(k, d)| (k.to_owned(), d.to_owned()))
                    }
                    _ => None,
                };
                self.stop_here(&cmd.execution, reason, key).await
            }
            "resume" => self.resume_handed_over(&cmd.execution, &p).await,
            other => Err(Error::BadCommand(format!("unknown fleet command {other}"))),
        };
        answer_parts(res, problem)
    }

    async fn resume_handed_over(&self, id: &str, p: &Value) -> Result<Answer, Error> {
        let who = p
            .get("principal")
            .and_then(principal_from)
            .ok_or_else(|| Error::BadCommand("fleet command without a principal".into()))?;
        let device = p
            .get("device")
            .and_then(Value::as_str)
            .and_then(|d| self.find_device(d))
            .ok_or(Error::DeviceNotServed)?;
        let key = p.get("key").and_then(Value::as_str).unwrap_or_default().to_owned();
        let if_match = p.get("ifMatch").and_then(Value::as_str).map(str::to_owned);
        let body = p.get("body").and_then(Value::as_str).unwrap_or_default().as_bytes().to_vec();
        self.resume_here(&who, &device, id, key, if_match, &body).await
    }

    /// Starts the fleet loop (nothing when the store is not shared), answering handed-over
    /// requests that fail with `problem` (the public `Hub::spawn_fleet`, in `http/problem.rs`,
    /// passes the HTTP mapping).
    pub(crate) fn spawn_fleet_with(&self, problem: Problem) -> Option<tokio::task::JoinHandle<()>> {
        let lease_ms = self.inner.storage.fleet()?.lease_ms();
        let hub = self.clone();
        Some(tokio::spawn(async move {
            let renew_every = Duration::from_millis((lease_ms / 3).max(200));
            let claim_every = Duration::from_millis((lease_ms / 3).clamp(200, 1000));
            let mut last_renew = tokio::time::Instant::now();
            let mut last_claim = tokio::time::Instant::now();
            let mut outbox_end = 0u64;
            let mut interval = tokio::time::interval(POLL);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut failing = false;
            let mut first = true;
            loop {
                interval.tick().await;
                let mut res = hub.fleet_tick(&mut outbox_end, problem).await;
                if res.is_ok() && (first || last_renew.elapsed() >= renew_every) {
                    first = false;
                    last_renew = tokio::time::Instant::now();
                    res = hub.renew_leases().await;
                    if res.is_ok() {
                        let now = hub.now_ms();
                        hub.inner
                            .leases_renewed_ms
                            .store(now, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                if res.is_ok() && last_claim.elapsed() >= claim_every {
                    last_claim = tokio::time::Instant::now();
                    res = hub.end_orphans().await;
                }
                // One line when the store fails and one when it answers again, not one per
                // tick of an outage.
                match res {
                    Err(e) if !failing => {
                        failing = true;
                        crate::clock::note(format_args!(
                            "cookwala-hub: fleet: the store fails ({e}); retrying every {} ms",
                            POLL.as_millis()
                        ));
                    }
                    Ok(()) if failing => {
                        failing = false;
                        crate::clock::note(format_args!(
                            "cookwala-hub: fleet: the store answers again"
                        ));
                    }
                    _ => {}
                }
            }
        }))
    }

    /// Wakes the event streams when the outbox grew (another replica committed) and runs the
    /// commands handed to this replica.
    async fn fleet_tick(&self, outbox_end: &mut u64, problem: Problem) -> Result<(), StorageError> {
        let (end, commands) = crate::outbox::db(&self.inner.storage, |s| {
            let commands = match s.fleet() {
                Some(f) => f.pending_commands()?,
                None => Vec::new(),
            };
            Ok((s.last_event_position()?, commands))
        })
        .await?;
        if end != *outbox_end {
            *outbox_end = end;
            self.inner.bus.committed.send_modify(|n| *n = n.wrapping_add(1));
        }
        for (id, cmd) in commands {
            let (status, body) = self.run_command(&cmd, problem).await;
            crate::outbox::db(&self.inner.storage, move |s| match s.fleet() {
                Some(f) => f.answer_command(id, status, &body),
                None => Ok(()),
            })
            .await?;
        }
        Ok(())
    }

    /// Renews the leases of the devices this replica runs executions on; executions whose
    /// device another replica took over are dropped here (that replica ended them).
    async fn renew_leases(&self) -> Result<(), StorageError> {
        let devices: Vec<String> = self.inner.live.busy_devices();
        let (lost, relay) = crate::outbox::db(&self.inner.storage, move |s| match s.fleet() {
            Some(f) => Ok((f.renew_leases(&devices)?, f.hold_relay()?)),
            None => Ok((Vec::new(), true)),
        })
        .await?;
        let was = self.inner.relay.swap(relay, std::sync::atomic::Ordering::AcqRel);
        if relay && !was {
            // Wake the deliveries: they start from their durable cursors.
            self.inner.bus.committed.send_modify(|n| *n = n.wrapping_add(1));
        }
        if !lost.is_empty() {
            // A step holding one of these runs finds it fenced when it commits.
            for (id, device) in self.inner.live.remove_on(&lost) {
                crate::clock::note(format_args!(
                    "cookwala-hub: lost the lease of device {device}; execution {id} was taken \
                     over by another replica and is no longer run here"
                ));
            }
        }
        Ok(())
    }

    /// Claims the executions of replicas whose leases expired and ends them safely, as a
    /// restart does (`stopped`, log outcome `aborted_safe`); and refreshes the recalls other
    /// replicas published (admission reads them from the store anyway; this keeps
    /// `GET /v1/recalls` current).
    async fn end_orphans(&self) -> Result<(), StorageError> {
        let catalog = self.inner.config.catalog.clone();
        let device = self.inner.device_id.clone();
        let now = self.now_ms();
        let (ended, recalls) = crate::outbox::db(&self.inner.storage, move |s| {
            let Some(f) = s.fleet() else { return Ok((Vec::new(), Vec::new())) };
            let mut ended = Vec::new();
            for rec in f.claim_orphans()? {
                recover_one(s, &rec, &catalog, &device, now, Loss::Failover)?;
                ended.push(rec.id);
            }
            Ok((ended, s.recalls()?))
        })
        .await?;
        self.inner.metrics.failovers.inc_by(ended.len() as u64);
        if !ended.is_empty() {
            self.inner.bus.committed.send_modify(|n| *n = n.wrapping_add(1));
        }
        self.set_recalls(&recalls);
        Ok(())
    }
}

/// What a handed-over request answers when the execution ended before its owner answered.
fn ended_answer(kind: &str, rec: &ExecutionRecord) -> Result<Answer, Error> {
    if kind == "stop" {
        return Ok(Answer::Forwarded { status: 202, body: rec.status.clone() });
    }
    Err(Error::NotResumable { state: rec.state.clone() })
}
