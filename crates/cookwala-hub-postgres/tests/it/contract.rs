//! The storage contract, run against both stores: SQLite (a temporary file) and PostgreSQL (a
//! cluster the test starts itself, see `test_support::postgres`). Then the fleet rules, which
//! only a shared store has: device leases, fencing, failover claims and commands.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use cookwala_hub::storage::{
    Commit, DeadLetter, ExecutionRecord, FleetCommand, IdempotencyRecord, NewEvent, NewRecall,
    SqliteStorage, StatusUpdate, Storage, StorageError,
};
use cookwala_hub_postgres::{PgOptions, PgStorage};
use test_support::postgres::PgCluster;

fn record(id: &str, device: &str, is_final: bool) -> ExecutionRecord {
    ExecutionRecord {
        id: id.to_owned(),
        request: format!("{{\"id\":\"{id}\"}}"),
        config: format!("{{\"device\":\"{device}\",\"recipe\":\"r\"}}"),
        status: format!("{{\"seq\":1,\"state\":\"accepted\",\"id\":\"{id}\"}}"),
        seq: 1,
        state: if is_final { "refused" } else { "accepted" }.to_owned(),
        is_final,
        log: None,
        recipe_doc: Some("{}".to_owned()),
        device_doc: Some("{\"device\":1}".to_owned()),
        limits_doc: None,
        admission: None,
    }
}

fn event(id: &str) -> NewEvent {
    NewEvent {
        id: id.to_owned(),
        ty: "cookwala.execution.state_changed".to_owned(),
        subject: "ex".to_owned(),
        body: format!("{{\"id\":\"{id}\"}}"),
    }
}

fn idem(key: &str) -> IdempotencyRecord {
    IdempotencyRecord {
        key: key.to_owned(),
        digest: format!("sha256:{key}"),
        status: 202,
        body: "{\"ok\":true}".to_owned(),
    }
}

fn update(id: &str, seq: u64, state: &str, is_final: bool) -> StatusUpdate {
    StatusUpdate {
        id: id.to_owned(),
        status: format!("{{\"seq\":{seq},\"state\":\"{state}\"}}"),
        seq,
        state: cookwala::execution::ExecutionState::parse(state).unwrap(),
        is_final,
        log: is_final.then(|| "{\"outcome\":\"completed\"}".to_owned()),
    }
}

/// Every rule of the `Storage` contract, on `s`.
fn contract(s: &Arc<dyn Storage>) {
    // An execution, its idempotency record and its event are one commit.
    let c = Commit {
        create: Some(record("ex-1", "hob", false)),
        idempotency: Some(idem("k1")),
        events: vec![event("e1")],
        ..Commit::default()
    };
    s.commit(&c).expect("first commit");
    assert_eq!(s.execution("ex-1").expect("read"), c.create.clone());
    assert_eq!(s.idempotency("k1").expect("idem"), Some(idem("k1")));
    assert_eq!(s.execution("nope").expect("read"), None);
    assert_eq!(s.idempotency("nope").expect("idem"), None);

    // A second execution with the same id is refused, and nothing of that commit is stored.
    let dup = Commit {
        create: Some(record("ex-1", "oven", true)),
        idempotency: Some(idem("k-dup")),
        events: vec![event("e-dup")],
        ..Commit::default()
    };
    assert!(matches!(s.commit(&dup), Err(StorageError::Conflict(_))), "duplicate id");
    assert_eq!(s.idempotency("k-dup").expect("idem"), None, "all or nothing");
    assert_eq!(s.event_position("e-dup").expect("pos"), None, "all or nothing");
    // The same idempotency key twice is refused too.
    let dup_key = Commit {
        create: Some(record("ex-2", "oven", true)),
        idempotency: Some(idem("k1")),
        ..Commit::default()
    };
    assert!(matches!(s.commit(&dup_key), Err(StorageError::Conflict(_))), "duplicate key");
    assert_eq!(s.execution("ex-2").expect("read"), None);

    // Updates move the status on; unfinished lists what is not final, oldest first.
    s.commit(&Commit { create: Some(record("ex-3", "oven", false)), ..Commit::default() })
        .expect("ex-3");
    s.commit(&Commit { updates: vec![update("ex-1", 2, "running", false)], ..Commit::default() })
        .expect("update");
    let ex1 = s.execution("ex-1").expect("read").expect("stored");
    assert_eq!((ex1.seq, ex1.state.as_str(), ex1.is_final), (2, "running", false));
    let unfinished: Vec<String> =
        s.unfinished().expect("unfinished").into_iter().map(|r| r.id).collect();
    assert_eq!(unfinished, ["ex-1", "ex-3"]);
    s.commit(&Commit { updates: vec![update("ex-1", 3, "completed", true)], ..Commit::default() })
        .expect("final");
    let ex1 = s.execution("ex-1").expect("read").expect("stored");
    assert!(ex1.is_final);
    assert_eq!(ex1.log.as_deref(), Some("{\"outcome\":\"completed\"}"));
    // A later update without a log keeps the stored one.
    assert_eq!(s.unfinished().expect("unfinished").len(), 1);

    // The outbox: positions strictly increase; an event id already stored is skipped.
    s.commit(&Commit { events: vec![event("e2"), event("e3"), event("e1")], ..Commit::default() })
        .expect("events");
    let all = s.events_after(0, 100).expect("events");
    let ids: Vec<&str> = all.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["e1", "e2", "e3"]);
    assert!(all.windows(2).all(|w| w[0].position < w[1].position));
    let p2 = s.event_position("e2").expect("pos").expect("stored");
    let after: Vec<String> =
        s.events_after(p2, 100).expect("after").into_iter().map(|e| e.id).collect();
    assert_eq!(after, ["e3"]);
    assert_eq!(s.events_after(0, 2).expect("limit").len(), 2);
    // The end of the outbox: nothing stored after it, the newest event at or before it.
    let last = s.last_event_position().expect("last");
    assert!(Some(last) >= s.event_position("e3").expect("pos"));
    assert!(s.events_after(last, 10).expect("after the end").is_empty());
    assert_eq!(all[0].body, "{\"id\":\"e1\"}");

    // Webhook cursors and dead letters.
    assert_eq!(s.webhook_cursor("http://x/").expect("cursor"), None);
    s.set_webhook_cursor("http://x/", 2, None).expect("set");
    let dead = DeadLetter {
        position: 3,
        event_id: "e3".to_owned(),
        attempts: 9,
        last_error: "HTTP 500".to_owned(),
    };
    s.set_webhook_cursor("http://x/", 3, Some(&dead)).expect("set dead");
    assert_eq!(s.webhook_cursor("http://x/").expect("cursor"), Some(3));

    // Recalls in issuedAt order (ties by id); the same recall id twice is refused.
    for (id, at) in [("r-b", 20), ("r-a", 20), ("r-0", 10)] {
        let recall =
            NewRecall { id: id.to_owned(), issued_ms: at, body: format!("{{\"id\":\"{id}\"}}") };
        s.commit(&Commit { recall: Some(recall), ..Commit::default() }).expect("recall");
    }
    let again = NewRecall { id: "r-a".to_owned(), issued_ms: 1, body: "{}".to_owned() };
    assert!(s.commit(&Commit { recall: Some(again), ..Commit::default() }).is_err());
    assert_eq!(
        s.recalls().expect("recalls"),
        ["{\"id\":\"r-0\"}", "{\"id\":\"r-a\"}", "{\"id\":\"r-b\"}"]
    );

    // Incidents: hub findings stay, client reports are pruned after their retention.
    let finding = cookwala_hub::storage::NewIncident { id: "ex-3".into(), body: "{}".into() };
    s.commit(&Commit { incidents: vec![finding], ..Commit::default() }).expect("finding");
    s.add_incident("inc-1", "{\"id\":\"inc-1\"}", Some(&idem("k-inc"))).expect("report");
    assert_eq!(s.incident_count().expect("count"), 2);
    assert_eq!(s.idempotency("k-inc").expect("idem").map(|r| r.status), Some(202));
    assert_eq!(s.prune_reports(0).expect("prune none"), 0);
    assert_eq!(s.prune_reports(i64::MAX).expect("prune"), 1);
    assert_eq!(s.incident_count().expect("count"), 1);
    // Idempotency records older than the cut are deleted, newer ones kept.
    assert_eq!(s.prune_idempotency(0).expect("prune none"), 0);
    assert!(s.idempotency("k-inc").expect("idem").is_some());
    assert!(s.prune_idempotency(i64::MAX).expect("prune") >= 1);
    assert_eq!(s.idempotency("k-inc").expect("idem"), None);

    // Concurrent commits from many threads: each gets its own result, every event is stored
    // once, and a reader following the outbox meanwhile sees every event, in position order.
    let before = s.last_event_position().expect("last");
    let reader = {
        let s = s.clone();
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            let mut at = before;
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while seen.len() < 200 && std::time::Instant::now() < deadline {
                for e in s.events_after(at, 50).expect("follow") {
                    assert!(e.position > at, "positions go forward");
                    at = e.position;
                    seen.push(e.id);
                }
            }
            seen
        })
    };
    let writers: Vec<_> = (0..8)
        .map(|t| {
            let s = s.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let id = format!("c-{t}-{i}");
                    let c = Commit {
                        create: Some(record(&id, &format!("dev-{t}-{i}"), true)),
                        idempotency: Some(idem(&format!("ck-{t}-{i}"))),
                        events: vec![event(&format!("ce-{t}-{i}"))],
                        ..Commit::default()
                    };
                    s.commit(&c).expect("concurrent commit");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    let seen = reader.join().expect("reader");
    assert_eq!(seen.len(), 200, "the follower saw every event");
    let distinct: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(distinct.len(), 200, "once each");
    assert!(s.execution("c-7-24").expect("read").is_some());
}

#[test]
fn the_storage_contract_holds_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s: Arc<dyn Storage> =
        Arc::new(SqliteStorage::open(&dir.path().join("hub.sqlite3")).expect("open"));
    contract(&s);
    assert!(s.fleet().is_none(), "one process owns an SQLite store");
}

fn pg(url: &str, replica: &str, lease_ms: u64) -> Arc<PgStorage> {
    let options = PgOptions {
        replica: replica.to_owned(),
        lease: Duration::from_millis(lease_ms),
        pool_size: 8,
        tls_roots: Vec::new(),
    };
    Arc::new(PgStorage::connect(url, options).expect("connect"))
}

#[test]
fn the_storage_contract_holds_on_postgres_and_survives_a_database_restart() {
    let Some(mut cluster) = PgCluster::start() else { return };
    let url = cluster.create_db("contract");
    let s: Arc<dyn Storage> = pg(&url, "r1", 10_000);
    contract(&s);
    // A second replica opening the same database finds the schema migrated and the data.
    let other: Arc<dyn Storage> = pg(&url, "r2", 10_000);
    assert!(other.execution("ex-1").expect("read").is_some());
    drop(other);

    // The database restarts (as after a crash): calls fail while it is down, then work again
    // on fresh connections, and nothing acknowledged is lost.
    cluster.stop();
    assert!(s.execution("ex-1").is_err(), "the database is down");
    cluster.start_server();
    let mut back = None;
    for _ in 0..100 {
        if let Ok(Some(r)) = s.execution("ex-1") {
            back = Some(r);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(back.is_some_and(|r| r.is_final), "acknowledged data survives the restart");
    s.commit(&Commit { events: vec![event("after-restart")], ..Commit::default() })
        .expect("writes work again");
}

#[test]
fn fleet_rules_leases_fencing_failover_and_commands() {
    let Some(cluster) = PgCluster::start() else { return };
    let url = cluster.create_db("fleet");
    let a = pg(&url, "replica-a", 1_000);
    let b = pg(&url, "replica-b", 1_000);
    let (fa, fb) = (a.fleet().expect("fleet"), b.fleet().expect("fleet"));
    assert_eq!((fa.replica(), fb.replica()), ("replica-a", "replica-b"));

    // A accepts an execution on the hob: it takes the hob's lease with it.
    a.commit(&Commit { create: Some(record("x1", "hob", false)), ..Commit::default() })
        .expect("a starts");
    assert!(fb.device_busy("hob").expect("busy"));
    assert!(!fb.device_busy("oven").expect("busy"));
    // What a start reads, in one round trip.
    let r = fb.start_reads("kb", "x1", "hob").expect("reads");
    assert_eq!((r.idempotency, r.stored, r.busy, r.recalls.len()), (None, true, true, 0));
    a.commit(&Commit {
        idempotency: Some(idem("ka")),
        recall: Some(NewRecall { id: "rc".into(), issued_ms: 5, body: "{\"id\":\"rc\"}".into() }),
        ..Commit::default()
    })
    .expect("idem and recall");
    let r = fb.start_reads("ka", "x9", "oven").expect("reads");
    assert_eq!((r.idempotency, r.stored, r.busy), (Some(idem("ka")), false, false));
    assert_eq!(r.recalls, ["{\"id\":\"rc\"}"]);
    // B cannot accept another execution on the hob (one active execution per device)...
    let second = Commit {
        create: Some(record("x2", "hob", false)),
        idempotency: Some(idem("kb")),
        ..Commit::default()
    };
    assert!(matches!(b.commit(&second), Err(StorageError::Busy(d)) if d == "hob"));
    assert_eq!(b.idempotency("kb").expect("idem"), None);
    // ...but may store a refused one (refusals hold no device).
    b.commit(&Commit { create: Some(record("x2", "hob", true)), ..Commit::default() })
        .expect("a refusal is stored");
    // Only the owner writes the execution.
    let step = Commit { updates: vec![update("x1", 2, "running", false)], ..Commit::default() };
    assert!(matches!(b.commit(&step), Err(StorageError::Fenced(id)) if id == "x1"));
    a.commit(&step).expect("the owner writes");

    // Commands: B asks A to stop x1; A sees it, answers; B reads the answer.
    let cmd = FleetCommand {
        execution: "x1".into(),
        kind: "stop".into(),
        payload: "{\"reason\":\"test\"}".into(),
    };
    let id = fb.post_command(&cmd).expect("post");
    assert!(fb.pending_commands().expect("b pending").is_empty(), "only the owner sees it");
    let pending = fa.pending_commands().expect("a pending");
    assert_eq!(pending, vec![(id, cmd)]);
    assert_eq!(fb.command_answer(id).expect("not yet"), None);
    fa.answer_command(id, 202, "{\"state\":\"stopping\"}").expect("answer");
    assert_eq!(
        fb.command_answer(id).expect("answer"),
        Some((202, "{\"state\":\"stopping\"}".into()))
    );
    assert!(fa.pending_commands().expect("a pending").is_empty());

    // While A renews its lease, nobody may claim x1.
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(fa.renew_leases(&["hob".into()]).expect("renew"), Vec::<String>::new());
        assert!(fb.claim_orphans().expect("claim").is_empty(), "a renewed lease is kept");
    }
    // A stops renewing (killed): once the lease runs out, B claims x1, exactly once.
    std::thread::sleep(Duration::from_millis(1_300));
    let claimed = fb.claim_orphans().expect("claim");
    assert_eq!(claimed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["x1"]);
    assert_eq!(claimed[0].seq, 2);
    assert!(fa.claim_orphans().expect("claim again").is_empty(), "claimed once, by one replica");
    // A wakes up: its writes are fenced and its renewal reports the hob lost.
    assert!(matches!(
        a.commit(&Commit { updates: vec![update("x1", 3, "running", false)], ..Commit::default() }),
        Err(StorageError::Fenced(_))
    ));
    // B ends x1 safely; the hob is free again for a new execution, on either replica.
    b.commit(&Commit { updates: vec![update("x1", 4, "stopped", true)], ..Commit::default() })
        .expect("b ends x1");
    assert_eq!(fa.renew_leases(&["hob".into()]).expect("renew"), ["hob"]);
    assert!(!fa.device_busy("hob").expect("busy"));
    a.commit(&Commit { create: Some(record("x3", "hob", false)), ..Commit::default() })
        .expect("a new execution on the hob");
    assert!(fb.device_busy("hob").expect("busy"));
    assert_eq!(b.execution("x1").expect("read").map(|r| r.state), Some("stopped".to_owned()));

    // One relay at a time: A holds it while renewing; B gets it once A's runs out.
    assert!(fa.hold_relay().expect("relay"));
    assert!(!fb.hold_relay().expect("relay"), "A holds the relay");
    assert!(fa.hold_relay().expect("renew"));
    std::thread::sleep(Duration::from_millis(1_200));
    assert!(fb.hold_relay().expect("relay"), "A's relay lease ran out");
    assert!(!fa.hold_relay().expect("relay"));

    // A restarts under the same name: it gives up its leases, so what its previous process
    // ran (x3) is claimed and ended, not renewed forever.
    let a2 = pg(&url, "replica-a", 1_000);
    a2.fleet().expect("fleet").forget_leases().expect("forget");
    let claimed = fb.claim_orphans().expect("claim");
    assert_eq!(claimed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["x3"]);
}
