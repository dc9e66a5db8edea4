//! The `.ledger.lock/` directory protocol.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use journal::Error;
use journal::lockdir::{BreakReason, LOCK_DIRNAME, LockDir, OWNER_FILE, lock_path};
use journal::utc_timestamp;
use serde_json::{Value, json};
use tempfile::TempDir;

const IDENTITY: &str = "dwp-ledger/6.0 pid:4242";

/// An instant with a fractional second, like Python's `time.time()`.
fn t0() -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(1_714_000_000_250)
}

fn plan() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let lock = lock_path(dir.path());
    (dir, lock)
}

fn hostname() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_owned()
}

fn owner(lock: &Path) -> Value {
    serde_json::from_slice(&fs::read(lock.join(OWNER_FILE)).unwrap()).unwrap()
}

/// Plants a lock as another (possibly Python) holder would leave it.
fn plant(lock: &Path, owner: &Value) {
    fs::create_dir(lock).unwrap();
    fs::write(lock.join(OWNER_FILE), serde_json::to_vec(owner).unwrap()).unwrap();
}

fn python_owner(pid: i64, epoch_ts: f64, host: &str) -> Value {
    json!({
        "identity": "dwp-ledger/6.0 pid:99",
        "pid": pid,
        "ts": "2024-04-24T23:06:40Z",
        "epoch_ts": epoch_ts,
        "host": host,
    })
}

/// A pid that certainly belonged to a process which is now reaped.
fn dead_pid() -> i64 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    i64::from(pid)
}

#[test]
fn fresh_acquire_writes_owner_json() {
    let (_dir, lock) = plan();
    assert!(lock.ends_with(LOCK_DIRNAME));
    let held = LockDir::acquire(&lock, IDENTITY, t0(), false).unwrap();
    assert_eq!(held.path(), lock);
    assert!(held.broken().is_none());
    let raw = fs::read_to_string(lock.join(OWNER_FILE)).unwrap();
    // compact, sorted keys
    assert!(raw.starts_with("{\"epoch_ts\":1714000000.25,\"host\":"), "{raw}");
    let owner = owner(&lock);
    let keys: Vec<&String> = owner.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["epoch_ts", "host", "identity", "pid", "ts"]);
    assert_eq!(owner["identity"], IDENTITY);
    assert_eq!(owner["pid"], std::process::id());
    assert_eq!(owner["ts"], "2024-04-24T23:06:40Z");
    assert_eq!(owner["epoch_ts"].as_f64(), Some(1_714_000_000.25));
    assert_eq!(owner["host"], hostname());
    assert_eq!(utc_timestamp(t0()), "2024-04-24T23:06:40Z");
}

#[test]
fn a_live_recent_holder_is_refused_with_the_upstream_message() {
    let (_dir, lock) = plan();
    let held = LockDir::acquire(&lock, IDENTITY, t0(), false).unwrap();
    let before = fs::read(lock.join(OWNER_FILE)).unwrap();
    let later = t0() + Duration::from_secs(900); // not yet stale: must exceed 900 s
    let error = LockDir::acquire(&lock, "dwp-ledger/6.0 pid:1", later, false).unwrap_err();
    assert_eq!(
        error.to_string(),
        "another writer holds the plan lock: dwp-ledger/6.0 pid:4242 (started 2024-04-24T23:06:40Z); use --force only after verifying that writer is dead"
    );
    assert!(matches!(&error, Error::LockHeld { path, .. } if *path == lock));
    assert_eq!(fs::read(lock.join(OWNER_FILE)).unwrap(), before);
    held.release().unwrap();
}

#[test]
fn an_old_lock_is_stale_and_broken() {
    let (_dir, lock) = plan();
    let epoch = 1_714_000_000.25;
    // our own pid: alive, so only age can make it stale
    plant(&lock, &python_owner(i64::from(std::process::id()), epoch, &hostname()));
    let now = t0() + Duration::from_secs(901);
    let held = LockDir::acquire(&lock, IDENTITY, now, false).unwrap();
    let broken = held.broken().unwrap();
    assert_eq!(broken.reason, BreakReason::Expired);
    assert_eq!(broken.identity.as_deref(), Some("dwp-ledger/6.0 pid:99"));
    assert_eq!(broken.ts.as_deref(), Some("2024-04-24T23:06:40Z"));
    assert_eq!(owner(&lock)["identity"], IDENTITY);
    assert_eq!(owner(&lock)["ts"], utc_timestamp(now));
}

#[test]
fn a_lock_of_a_dead_process_is_stale_and_broken() {
    let (_dir, lock) = plan();
    let pid = dead_pid();
    plant(&lock, &python_owner(pid, 1_714_000_000.0, &hostname()));
    let held = LockDir::acquire(&lock, IDENTITY, t0(), false).unwrap();
    let broken = held.broken().unwrap();
    assert_eq!((broken.reason, broken.pid), (BreakReason::DeadPid, Some(pid)));
    assert_eq!(owner(&lock)["pid"], std::process::id());
}

#[test]
fn pids_of_other_hosts_are_not_probed() {
    let (_dir, lock) = plan();
    plant(&lock, &python_owner(dead_pid(), 1_714_000_000.0, "some-other-host.example"));
    let error = LockDir::acquire(&lock, IDENTITY, t0(), false).unwrap_err();
    assert!(matches!(error, Error::LockHeld { .. }), "{error}");
}

#[test]
fn a_process_we_may_not_signal_counts_as_alive() {
    // pid 1 always exists; unprivileged kill(1, 0) fails with EPERM (as
    // root it succeeds): either way the holder counts as alive
    let (_dir, lock) = plan();
    plant(&lock, &python_owner(1, 1_714_000_000.0, &hostname()));
    let error = LockDir::acquire(&lock, IDENTITY, t0(), false).unwrap_err();
    assert!(matches!(error, Error::LockHeld { .. }), "{error}");
}

#[test]
fn a_non_positive_pid_counts_as_dead() {
    let (_dir, lock) = plan();
    plant(&lock, &python_owner(0, 1_714_000_000.0, &hostname()));
    let held = LockDir::acquire(&lock, IDENTITY, t0(), false).unwrap();
    assert_eq!(held.broken().unwrap().reason, BreakReason::DeadPid);
}

#[test]
fn a_non_numeric_epoch_ts_is_stale_like_upstream() {
    let (_dir, lock) = plan();
    let mut planted = python_owner(i64::from(std::process::id()), 0.0, &hostname());
    planted["epoch_ts"] = json!("yesterday");
    plant(&lock, &planted);
    let held = LockDir::acquire(&lock, IDENTITY, t0(), false).unwrap();
    assert_eq!(held.broken().unwrap().reason, BreakReason::Expired);
}

#[test]
fn python_formatted_owner_json_is_understood() {
    let (_dir, lock) = plan();
    fs::create_dir(&lock).unwrap();
    let python = format!(
        "{{\"epoch_ts\": 1714000000.123456, \"host\": \"{}\", \"identity\": \"dwp-ledger/6.0\", \"pid\": {}, \"ts\": \"2024-04-24T23:06:40Z\"}}",
        hostname(),
        std::process::id()
    );
    fs::write(lock.join(OWNER_FILE), python).unwrap();
    let error = LockDir::acquire(&lock, IDENTITY, t0(), false).unwrap_err();
    assert_eq!(
        error.to_string(),
        "another writer holds the plan lock: dwp-ledger/6.0 (started 2024-04-24T23:06:40Z); use --force only after verifying that writer is dead"
    );
}

#[test]
fn force_breaks_a_live_lock() {
    let (_dir, lock) = plan();
    let first = LockDir::acquire(&lock, "first", t0(), false).unwrap();
    let second = LockDir::acquire(&lock, IDENTITY, t0(), true).unwrap();
    let broken = second.broken().unwrap();
    assert_eq!((broken.reason, broken.identity.as_deref()), (BreakReason::Forced, Some("first")));
    assert_eq!(owner(&lock)["identity"], IDENTITY);
    // the first holder must not remove the lock it lost
    let error = first.release().unwrap_err();
    assert!(matches!(&error, Error::LockLost { path } if *path == lock), "{error}");
    assert_eq!(owner(&lock)["identity"], IDENTITY);
    second.release().unwrap();
    assert!(!lock.exists());
}

#[test]
fn release_and_drop_remove_the_directory() {
    let (dir, lock) = plan();
    let held = LockDir::acquire(&lock, IDENTITY, t0(), false).unwrap();
    assert!(lock.join(OWNER_FILE).is_file());
    held.release().unwrap();
    assert!(!lock.exists());
    {
        let _held = LockDir::acquire(&lock, IDENTITY, t0(), false).unwrap();
        assert!(lock.is_dir());
    }
    assert!(!lock.exists());
    // nothing else was touched
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn an_unreadable_owner_is_held_until_the_directory_is_old() {
    for contents in [Some(&b"{\"identity\": \"half-writ"[..]), Some(b"[1,2]"), None] {
        let (_dir, lock) = plan();
        fs::create_dir(&lock).unwrap();
        if let Some(contents) = contents {
            fs::write(lock.join(OWNER_FILE), contents).unwrap();
        }
        let now = SystemTime::now();
        let error = LockDir::acquire(&lock, IDENTITY, now, false).unwrap_err();
        match &error {
            Error::LockHeld { identity, .. } => {
                assert_eq!(identity, "unknown (owner.json missing or unreadable)");
            }
            other => panic!("expected LockHeld, got {other}"),
        }
        assert!(lock.is_dir());
        let later = now + Duration::from_secs(901);
        let held = LockDir::acquire(&lock, IDENTITY, later, false).unwrap();
        let broken = held.broken().unwrap();
        assert_eq!((broken.reason, broken.identity.as_ref()), (BreakReason::UnreadableOwner, None));
        assert_eq!(owner(&lock)["identity"], IDENTITY);
    }
}

/// A live holder is waited for: the lock is taken as soon as the holder releases it, within
/// the bound; with no wait the same lock is refused at once.
#[test]
fn a_held_lock_is_waited_for_until_released() {
    let (_dir, lock) = plan();
    let holder = LockDir::acquire(&lock, IDENTITY, SystemTime::now(), false).unwrap();
    let refused = LockDir::acquire(&lock, IDENTITY, SystemTime::now(), false).unwrap_err();
    assert!(matches!(refused, Error::LockHeld { .. }), "{refused}");
    let released = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        holder.release().unwrap();
    });
    let wait = Duration::from_secs(60);
    let taken = LockDir::acquire_within(&lock, IDENTITY, SystemTime::now(), false, wait).unwrap();
    released.join().unwrap();
    assert_eq!(taken.broken(), None, "a released lock is taken, not broken");
    taken.release().unwrap();
}

/// The wait is bounded: a holder that never releases is reported after the wait.
#[test]
fn the_wait_for_a_held_lock_is_bounded() {
    let (_dir, lock) = plan();
    let _holder = LockDir::acquire(&lock, IDENTITY, SystemTime::now(), false).unwrap();
    let wait = Duration::from_millis(200);
    let error = LockDir::acquire_within(&lock, IDENTITY, SystemTime::now(), false, wait);
    assert!(matches!(error, Err(Error::LockHeld { .. })), "{error:?}");
}
