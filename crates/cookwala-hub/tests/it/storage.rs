//! The SQLite store: migrations at open, durability settings, records survive a reopen.

use cookwala_hub::storage::{
    Commit, ExecutionRecord, IdempotencyRecord, SqliteStorage, StatusUpdate, Storage, StorageError,
};

fn record(id: &str) -> ExecutionRecord {
    ExecutionRecord {
        id: id.to_owned(),
        request: "{}".to_owned(),
        config: "{}".to_owned(),
        status: r#"{"seq":0}"#.to_owned(),
        seq: 0,
        state: "accepted".to_owned(),
        is_final: false,
        log: None,
        recipe_doc: None,
        device_doc: None,
        limits_doc: None,
        admission: None,
    }
}

#[test]
fn opens_in_wal_with_full_sync_and_keeps_records_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.sqlite3");
    {
        let s = SqliteStorage::open(&path).unwrap();
        let idem = IdempotencyRecord {
            key: "key-0000001".to_owned(),
            digest: "sha256:00".to_owned(),
            status: 202,
            body: r#"{"seq":0}"#.to_owned(),
        };
        let create =
            |rec, idempotency| Commit { create: Some(rec), idempotency, ..Commit::default() };
        s.commit(&create(record("ex-1"), Some(idem.clone()))).unwrap();
        s.commit(&create(record("ex-2"), None)).unwrap();
        let done = StatusUpdate {
            id: "ex-2".to_owned(),
            status: r#"{"seq":3}"#.to_owned(),
            seq: 3,
            state: cookwala::execution::ExecutionState::Completed,
            is_final: true,
            log: Some("{}".to_owned()),
        };
        s.commit(&Commit { updates: vec![done], ..Commit::default() }).unwrap();
        s.add_incident("inc-1", "{}", None).unwrap();
        // A second insert of the same key or id fails instead of overwriting.
        assert!(s.commit(&create(record("ex-1"), None)).is_err());
        assert!(s.commit(&Commit { idempotency: Some(idem), ..Commit::default() }).is_err());
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, cookwala_hub::storage::SCHEMA_VERSION);
    drop(conn);

    let s = SqliteStorage::open(&path).unwrap();
    assert_eq!(s.idempotency("key-0000001").unwrap().unwrap().status, 202);
    assert!(s.idempotency("key-0000002").unwrap().is_none());
    let unfinished: Vec<String> = s.unfinished().unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(unfinished, ["ex-1"]);
    let done = s.execution("ex-2").unwrap().unwrap();
    assert_eq!((done.seq, done.is_final, done.log.as_deref()), (3, true, Some("{}")));
    assert_eq!(s.incident_count().unwrap(), 1);
}

#[test]
fn refuses_a_schema_from_a_newer_hub() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.sqlite3");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    assert!(matches!(SqliteStorage::open(&path), Err(StorageError::TooNew(99, 6))));
}

#[test]
fn group_commit_writes_every_caller_and_fails_a_duplicate_alone() {
    use cookwala_hub::storage::{Commit, NewEvent};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(SqliteStorage::open(&dir.path().join("hub.sqlite3")).unwrap());
    // 8 threads x 25 commits, every third one a duplicate of an id another thread creates.
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let s = s.clone();
            std::thread::spawn(move || {
                let mut outcomes = Vec::new();
                for i in 0..25 {
                    let id =
                        if i % 3 == 2 { format!("ex-shared-{i}") } else { format!("ex-{t}-{i}") };
                    let commit = Commit {
                        create: Some(record(&id)),
                        events: vec![NewEvent {
                            id: format!("{id}/0/created/{t}"),
                            ty: "cookwala.execution.accepted".to_owned(),
                            subject: id.clone(),
                            body: "{}".to_owned(),
                        }],
                        ..Commit::default()
                    };
                    outcomes.push((id, s.commit(&commit)));
                }
                outcomes
            })
        })
        .collect();
    let mut ok = 0;
    let mut conflicts = 0;
    for t in threads {
        for (id, outcome) in t.join().unwrap() {
            match outcome {
                Ok(()) => {
                    ok += 1;
                    assert!(
                        s.execution(&id).unwrap().is_some(),
                        "{id} acknowledged but not stored"
                    );
                }
                Err(StorageError::Conflict(_)) => {
                    conflicts += 1;
                    assert!(id.starts_with("ex-shared-"), "{id}");
                }
                Err(e) => panic!("{id}: {e}"),
            }
        }
    }
    // Each shared id is created exactly once; every other commit succeeds.
    let shared = (0..25).filter(|i| i % 3 == 2).count();
    assert_eq!(ok, 8 * 25 - 7 * shared);
    assert_eq!(conflicts, 7 * shared);
    // A failed commit leaves nothing behind: exactly one event per stored execution.
    let events = s.events_after(0, 10_000).unwrap();
    assert_eq!(events.len(), ok);
}
