//! Restart and failover recovery: an execution whose simulation was lost (the hub process
//! stopped, or the replica running it stopped renewing its lease) is ended safely — heat and
//! motion off, `stopped` through `stopping` where the standard's state table requires it,
//! `seq` moved on, the log `aborted_safe` rebuilt from the stored admission — and never resumed.

use canonical_json::{Map, Value};
use cookwala::execution::{ExecutionState, transition_allowed};

use crate::catalog::Catalog;
use crate::executor::Executor as _;
use crate::service::RunConfig;
use crate::storage::{Commit, ExecutionRecord, StatusUpdate, Storage, StorageError, jcs_text};

/// Ends every unfinished execution safely. A simulated device loses its state with the
/// process, so its heaters are off; the execution goes to `stopped` through `stopping` where
/// the state table requires it, `seq` moves on, and the log says `aborted_safe`.
pub(crate) fn recover(
    s: &dyn Storage,
    catalog: &Catalog,
    device: &str,
    now: i64,
) -> Result<Vec<String>, StorageError> {
    let mut ended = Vec::new();
    for rec in s.unfinished()? {
        recover_one(s, &rec, catalog, device, now, Loss::Restart)?;
        ended.push(rec.id);
    }
    Ok(ended)
}

/// How an execution's simulation was lost, for its recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loss {
    /// The hub process stopped while it was active (found at start-up).
    Restart,
    /// The replica running it stopped renewing its device lease (found by another replica).
    Failover,
}

impl Loss {
    /// The reason the recovery's events and the simulator's stop carry.
    fn why(self) -> &'static str {
        match self {
            Loss::Restart => "hub restart",
            Loss::Failover => "replica failover",
        }
    }

    /// What the recovered log says happened.
    fn explanation(self) -> &'static str {
        match self {
            Loss::Restart => {
                "the hub stopped while this execution was active; on restart it was ended safely \
                 (heat off, stopped) and not resumed"
            }
            Loss::Failover => {
                "the hub replica running this execution stopped renewing its device lease; \
                 another replica ended it safely (heat off, stopped) and did not resume it"
            }
        }
    }
}

/// Ends one execution whose simulation is gone (a restart, or a replica that died): `stopped`,
/// log outcome `aborted_safe`, never resumed. The loss's reason goes into the events.
pub(crate) fn recover_one(
    s: &dyn Storage,
    rec: &ExecutionRecord,
    catalog: &Catalog,
    device: &str,
    now: i64,
    loss: Loss,
) -> Result<(), StorageError> {
    let why = loss.why();
    let stamp = cookwala_sim::rfc3339_ms(now);
    let (status, seq) = recovered_status(rec, &stamp);
    let log = recovered_log(rec, &stamp, now, catalog, loss).map(|l| jcs_text(&l));
    let events = recovered_events(rec, &status, seq, &stamp, device, why);
    let update = StatusUpdate {
        id: rec.id.clone(),
        status: jcs_text(&status),
        seq,
        state: ExecutionState::Stopped,
        is_final: true,
        log,
    };
    s.commit(&Commit { updates: vec![update], events, ..Commit::default() })?;
    crate::clock::note(format_args!(
        "cookwala-hub: execution {} was {} when its simulation was lost ({why}); ended safely \
         (stopped, aborted_safe)",
        rec.id, rec.state
    ));
    Ok(())
}

/// The `state_changed` events of a recovery: to `stopping` (when the state table requires it)
/// and to `stopped`, with the `seq`s [`recovered_status`] gave them.
fn recovered_events(
    rec: &ExecutionRecord,
    status: &Value,
    seq: u64,
    stamp: &str,
    device: &str,
    why: &str,
) -> Vec<crate::storage::NewEvent> {
    let run = RunConfig::from_text(&rec.config);
    let exe = crate::outbox::events::Execution {
        id: &rec.id,
        request: status.get("request").and_then(Value::as_str).unwrap_or(&rec.id),
        device: run.as_ref().map_or(device, |r| r.device.as_str()),
        start_unix_ms: run.as_ref().map_or(0, |r| r.start_unix_ms),
        time_scale: run.as_ref().map_or(1.0, |r| r.time_scale),
    };
    let why = Some(why);
    let mut out = Vec::new();
    if seq >= rec.seq + 2 {
        out.push(crate::outbox::events::transition(
            &exe,
            &rec.state,
            "stopping",
            seq - 1,
            stamp,
            why,
        ));
    }
    let from = if seq >= rec.seq + 2 { "stopping" } else { rec.state.as_str() };
    out.push(crate::outbox::events::transition(&exe, from, "stopped", seq, stamp, why));
    out.iter().map(crate::outbox::events::to_new).collect()
}

fn recovered_status(rec: &ExecutionRecord, stamp: &str) -> (Value, u64) {
    // One step where the standard's state table allows `-> stopped` (accepted, stopping), two
    // (through stopping) from the active states. A stored state the standard does not name
    // (an unreadable row) takes two, like an active one: the safe reading.
    let direct =
        rec.execution_state().is_some_and(|s| transition_allowed(s, ExecutionState::Stopped));
    let steps = if direct { 1 } else { 2 };
    let seq = rec.seq + steps;
    let mut status = canonical_json::parse(rec.status.as_bytes()).unwrap_or(Value::Null);
    if let Some(m) = status.as_object_mut() {
        m.insert("state".into(), "stopped".into());
        m.insert("seq".into(), seq.into());
        m.insert("updatedAt".into(), stamp.into());
        m.remove("humanNeeded");
        m.remove("eta");
        // The simulation is gone with its heaters and motors: the status says so, and when
        // the hub ended it, rather than repeat what the last step before the stop reported.
        if let Some(Value::Object(x)) = m.get_mut("x-sim") {
            x.insert("heatOn".into(), false.into());
            x.insert("motionOn".into(), false.into());
        }
        let mut hub = Map::new();
        hub.insert("recovered".into(), true.into());
        hub.insert("recoveredAt".into(), stamp.into());
        m.insert("x-hub".into(), Value::Object(hub));
    }
    (status, seq)
}

fn recovered_log(
    rec: &ExecutionRecord,
    stamp: &str,
    now_ms: i64,
    catalog: &Catalog,
    loss: Loss,
) -> Option<Value> {
    let run = RunConfig::from_text(&rec.config)?;
    let config = run.sim_config(rec, catalog)?;
    // The run as it was admitted (its stored admission: the plan and the limits it ran under),
    // never a new decision against today's pack; a row from before admissions were stored is
    // decided from its documents, as it was then.
    let stored = rec.admission.as_ref().and_then(|text| {
        let v = canonical_json::parse(text.as_bytes()).ok()?;
        cookwala::admission::Admission::from_value(&v).ok()
    });
    let admission = match stored {
        Some(admission) => admission,
        None => {
            let pack = config.pack.clone().unwrap_or_else(cookwala::limits::default_pack);
            let now = cookwala::time::Instant::from_unix(config.start_unix_ms.div_euclid(1000), 0)?;
            cookwala_sim::admit(&cookwala::admission::Request {
                precheck: None,
                recipe: &config.recipe,
                device: &config.device,
                pack: &pack,
                narrowing: config.extra_limits.as_ref(),
                human_present: config.human_present,
                allow_model: config.allow_model,
                now,
            })
            .ok()?
        }
    };
    let executor = crate::executor::SimExecutor::new(config.device.clone(), Vec::new());
    let start = crate::executor::RunStart {
        recipe: config.recipe,
        human_present: config.human_present,
        seed: config.seed,
        start_unix_ms: config.start_unix_ms,
        time_scale: config.time_scale,
        execution_id: rec.id.clone(),
    };
    let mut sim = executor.start(start, &admission).ok()?;
    sim.stop(loss.why());
    let mut log = sim.log()?;
    let m = log.as_object_mut()?;
    m.insert("endedAt".into(), stamp.into());
    let mut note = Map::new();
    note.insert("recovered".into(), true.into());
    note.insert("lastState".into(), rec.state.as_str().into());
    note.insert("lastSeq".into(), rec.seq.into());
    note.insert("endedUnixMs".into(), now_ms.into());
    note.insert("why".into(), loss.explanation().into());
    m.insert("x-hub".into(), Value::Object(note));
    Some(log)
}

#[cfg(test)]
mod recovery_tests {
    use super::{ExecutionRecord, recovered_status};

    /// The steps a recovery takes come from the standard's state table: one where `-> stopped`
    /// is a legal step, two (through `stopping`) otherwise, and two for a state it does not name.
    #[test]
    fn recovery_steps_follow_the_standards_state_table() {
        for (state, steps) in [
            ("accepted", 1),
            ("stopping", 1),
            ("preparing", 2),
            ("running", 2),
            ("paused", 2),
            ("needs_human", 2),
            ("not-a-state", 2),
        ] {
            let rec = ExecutionRecord {
                id: "ex".into(),
                request: "{}".into(),
                config: "{}".into(),
                status: r#"{"state":"x","seq":5}"#.into(),
                seq: 5,
                state: state.into(),
                is_final: false,
                log: None,
                recipe_doc: None,
                device_doc: None,
                limits_doc: None,
                admission: None,
            };
            let (status, seq) = recovered_status(&rec, "2026-01-01T00:00:00.000Z");
            assert_eq!(seq, 5 + steps, "{state}");
            assert_eq!(
                status.get("state").and_then(canonical_json::Value::as_str),
                Some("stopped")
            );
        }
    }
}
