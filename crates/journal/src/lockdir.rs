//! The cooperative lock-directory protocol of the upstream DWP tools.
//!
//! A writer owns a plan while it owns the directory `<plan>/.ledger.lock/`.
//! Acquiring is an atomic `mkdir`; the winner writes `owner.json`:
//!
//! ```text
//! {"epoch_ts":1714000000.25,"host":"box","identity":"dwp-ledger/6.0 pid:42","pid":42,"ts":"2024-04-24T23:06:40Z"}
//! ```
//!
//! (compact, keys sorted; Python writes the same object with `", "` and
//! `": "` separators, and each side reads the other's). Releasing removes
//! `owner.json`, then the directory.
//!
//! An existing lock is **stale**, and is broken and retaken, when
//!
//! * `now - epoch_ts` exceeds [`STALE_AFTER`] (900 s), where a missing
//!   `epoch_ts` counts as 0 and a non-numeric one makes the lock stale
//!   (as upstream), or
//! * its `pid` is not ours, the owner ran on this host (or names no host),
//!   and the process is dead: `kill(pid, 0)` fails with anything but
//!   `EPERM`; a pid `<= 0` counts as dead (as upstream).
//!
//! Two deliberate divergences from the Python implementation, both making
//! this side *less* eager to break a lock:
//!
//! * **Missing or unreadable `owner.json`.** Python breaks such a lock
//!   immediately, which races with a holder that has made the directory
//!   but not yet written `owner.json`. Here such a lock is stale only when
//!   the directory's mtime is more than [`STALE_AFTER`] before `now`;
//!   until then it is reported as held.
//! * **Other hosts.** Python probes the pid even when `host` names another
//!   machine (e.g. a shared file system); here pids of other hosts are not
//!   probed and only the age rule applies.
//!
//! `force` breaks any existing lock. Every broken lock is described by
//! [`LockDir::broken`] so callers can report whose lock they broke.
//!
//! Two further departures from upstream, both about contention:
//!
//! * **A held lock is waited for.** [`LockDir::acquire_within`] retries a lock a
//!   live writer holds, with a jittered backoff, for a bounded time (upstream
//!   fails at once), so writers that merely overlap queue instead of failing.
//! * **Breaking is rename-then-verify.** Upstream judges staleness from an
//!   `owner.json` read earlier and then removes the directory, which can
//!   remove the lock of a *newer*, live holder that took it meanwhile (the
//!   owner judged dead had released it). Here the directory is renamed aside
//!   first and removed only if it still holds the exact `owner.json` that was
//!   judged; anything else is put back.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use rustix::io::Errno;
use rustix::process::{Pid, test_kill_process};
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, IoContext};
use crate::time::{unix_seconds_f64, utc_timestamp};

/// Name of the lock directory inside a plan directory.
pub const LOCK_DIRNAME: &str = ".ledger.lock";
/// Name of the owner file inside the lock directory.
pub const OWNER_FILE: &str = "owner.json";
/// Age after which a lock is stale regardless of its pid.
pub const STALE_AFTER: Duration = Duration::from_secs(900);

/// The lock directory path for a plan directory: `<plan_dir>/.ledger.lock`.
pub fn lock_path(plan_dir: impl AsRef<Path>) -> PathBuf {
    plan_dir.as_ref().join(LOCK_DIRNAME)
}

/// Why an existing lock was broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BreakReason {
    /// Older than [`STALE_AFTER`] by its `epoch_ts` (or `epoch_ts` was not
    /// a number).
    Expired,
    /// Its process no longer exists.
    DeadPid,
    /// `owner.json` was missing or unreadable and the directory is older
    /// than [`STALE_AFTER`].
    UnreadableOwner,
    /// The caller passed `force`.
    Forced,
}

/// A stale (or forced) lock that [`LockDir::acquire`] broke.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BrokenLock {
    /// Why it was broken.
    pub reason: BreakReason,
    /// The previous holder's `identity`, if readable.
    pub identity: Option<String>,
    /// The previous holder's `pid`, if readable.
    pub pid: Option<i64>,
    /// The previous holder's `host`, if readable.
    pub host: Option<String>,
    /// The previous holder's `ts`, if readable.
    pub ts: Option<String>,
}

/// A held plan lock; released on [`LockDir::release`] or drop.
#[derive(Debug)]
pub struct LockDir {
    dir: PathBuf,
    /// The exact `owner.json` bytes written, to recognise our own lock at
    /// release time.
    owner: Vec<u8>,
    broken: Option<BrokenLock>,
    held: bool,
}

/// The `owner.json` document; fields in sorted key order.
#[derive(Serialize)]
struct OwnerJson<'a> {
    epoch_ts: f64,
    host: &'a str,
    identity: &'a str,
    pid: u32,
    ts: String,
}

impl LockDir {
    /// Acquires the lock directory `dir` (usually [`lock_path`]`(plan_dir)`)
    /// for `identity` (DWP callers use e.g. `dwp-ledger/6.0 pid:N`), failing at once if a
    /// live writer holds it: [`LockDir::acquire_within`] with no wait.
    ///
    /// # Errors
    ///
    /// As for [`LockDir::acquire_within`].
    pub fn acquire(
        dir: impl AsRef<Path>,
        identity: &str,
        now: SystemTime,
        force: bool,
    ) -> Result<Self, Error> {
        Self::acquire_within(dir, identity, now, force, Duration::ZERO)
    }

    /// Acquires the lock directory `dir` for `identity`, waiting up to `wait` for a live
    /// holder to release it.
    ///
    /// `now` is the current time; it is written to `owner.json` and, advanced by the time
    /// spent waiting, used for the staleness rules. With `force`, any existing lock is broken.
    /// While a live writer holds the lock the attempt is retried with a backoff (1 ms doubling
    /// to 50 ms, with a jitter so that waiting writers do not retry in step) until `wait`
    /// has passed.
    ///
    /// A stale lock is broken *atomically*: the lock directory is first renamed to a name of
    /// our own, and only if the `owner.json` it then holds is byte for byte the one judged
    /// stale is it removed. Otherwise a new holder took the lock between the judgement and
    /// the rename, and its directory is put back (the rename is undone) before trying again,
    /// so a live holder's lock is never removed on the strength of an older owner's file.
    ///
    /// # Errors
    ///
    /// [`Error::LockHeld`] if a live writer still holds the lock after `wait`;
    /// [`Error::LockContended`] if the directory kept changing hands while a stale lock was
    /// being broken; [`Error::Io`] for I/O failures.
    pub fn acquire_within(
        dir: impl AsRef<Path>,
        identity: &str,
        now: SystemTime,
        force: bool,
        wait: Duration,
    ) -> Result<Self, Error> {
        let dir = dir.as_ref().to_path_buf();
        let host = hostname();
        let started = Instant::now();
        let mut broken = None;
        let mut breaks = 0;
        let mut attempt = 0u32;
        loop {
            let now = now + started.elapsed();
            match fs::create_dir(&dir) {
                Ok(()) => {
                    let owner = owner_json(identity, &host, now).at(&dir)?;
                    let owner_path = dir.join(OWNER_FILE);
                    if let Err(error) = write_new(&owner_path, &owner) {
                        let _ = fs::remove_file(&owner_path);
                        let _ = fs::remove_dir(&dir);
                        return Err(Error::io(owner_path, error));
                    }
                    return Ok(Self { dir, owner, broken, held: true });
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(Error::io(dir, error)),
            }
            let bytes = fs::read(dir.join(OWNER_FILE)).ok();
            let owner = bytes.as_deref().and_then(parse_owner);
            let reason = if force {
                BreakReason::Forced
            } else {
                match staleness(&dir, owner.as_ref(), &host, now)? {
                    Verdict::Gone => continue,
                    Verdict::Stale(reason) => reason,
                    Verdict::Held { identity, started_ts } => {
                        let elapsed = started.elapsed();
                        if elapsed >= wait {
                            return Err(Error::LockHeld { path: dir, identity, started_ts });
                        }
                        std::thread::sleep(backoff(attempt).min(wait - elapsed));
                        attempt = attempt.saturating_add(1);
                        continue;
                    }
                }
            };
            breaks += 1;
            if breaks > 8 {
                return Err(Error::LockContended { path: dir });
            }
            if break_if_unchanged(&dir, bytes.as_deref())? {
                broken = Some(describe(reason, owner.as_ref()));
            }
        }
    }

    /// The lock this acquisition broke, if any.
    pub fn broken(&self) -> Option<&BrokenLock> {
        self.broken.as_ref()
    }

    /// The lock directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Releases the lock: removes `owner.json`, then the directory.
    ///
    /// # Errors
    ///
    /// [`Error::LockLost`] if `owner.json` is no longer the one this holder
    /// wrote (the lock was broken, and possibly retaken, by someone else);
    /// the directory is then left alone. [`Error::Io`] if removal fails.
    pub fn release(mut self) -> Result<(), Error> {
        self.release_inner()
    }

    fn release_inner(&mut self) -> Result<(), Error> {
        if !self.held {
            return Ok(());
        }
        self.held = false;
        let owner_path = self.dir.join(OWNER_FILE);
        match fs::read(&owner_path) {
            Ok(bytes) if bytes == self.owner => {}
            Ok(_) => return Err(Error::LockLost { path: self.dir.clone() }),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(Error::LockLost { path: self.dir.clone() });
            }
            Err(error) => return Err(Error::io(owner_path, error)),
        }
        fs::remove_file(&owner_path).at(&owner_path)?;
        match fs::remove_dir(&self.dir) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => {
                Err(Error::io(&self.dir, error))
            }
            _ => Ok(()),
        }
    }
}

impl Drop for LockDir {
    fn drop(&mut self) {
        let _ = self.release_inner();
    }
}

/// The verdict on an existing lock directory.
enum Verdict {
    /// It disappeared while we looked: retry.
    Gone,
    /// It may be broken.
    Stale(BreakReason),
    /// A live writer holds it.
    Held { identity: String, started_ts: String },
}

fn staleness(
    dir: &Path,
    owner: Option<&Value>,
    host: &str,
    now: SystemTime,
) -> Result<Verdict, Error> {
    let Some(owner) = owner else {
        let modified = match fs::metadata(dir).and_then(|meta| meta.modified()) {
            Ok(modified) => modified,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Verdict::Gone),
            Err(error) => return Err(Error::io(dir, error)),
        };
        if now.duration_since(modified).is_ok_and(|age| age > STALE_AFTER) {
            return Ok(Verdict::Stale(BreakReason::UnreadableOwner));
        }
        return Ok(Verdict::Held {
            identity: "unknown (owner.json missing or unreadable)".to_owned(),
            started_ts: utc_timestamp(modified),
        });
    };
    // Python: `time.time() - float(info.get('epoch_ts', 0))`.
    let epoch_ts = match owner.get("epoch_ts") {
        None => Some(0.0),
        Some(Value::Number(number)) => number.as_f64(),
        Some(Value::String(text)) => text.trim().parse::<f64>().ok(),
        Some(_) => None,
    };
    let Some(epoch_ts) = epoch_ts else {
        return Ok(Verdict::Stale(BreakReason::Expired));
    };
    if unix_seconds_f64(now) - epoch_ts > STALE_AFTER.as_secs_f64() {
        return Ok(Verdict::Stale(BreakReason::Expired));
    }
    let same_host = owner.get("host").and_then(Value::as_str).is_none_or(|owner| owner == host);
    if let Some(pid) = owner.get("pid").and_then(Value::as_i64)
        && same_host
        && pid != i64::from(std::process::id())
        && !pid_alive(pid)
    {
        return Ok(Verdict::Stale(BreakReason::DeadPid));
    }
    Ok(Verdict::Held {
        identity: text_field(owner, "identity").unwrap_or_else(|| "unknown".to_owned()),
        started_ts: text_field(owner, "ts").unwrap_or_else(|| "unknown".to_owned()),
    })
}

/// `kill(pid, 0)`: alive unless the process does not exist (`EPERM`
/// means it exists but belongs to someone else).
fn pid_alive(pid: i64) -> bool {
    let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return false;
    };
    match test_kill_process(pid) {
        Ok(()) => true,
        Err(errno) => errno == Errno::PERM,
    }
}

fn describe(reason: BreakReason, owner: Option<&Value>) -> BrokenLock {
    BrokenLock {
        reason,
        identity: owner.and_then(|owner| text_field(owner, "identity")),
        pid: owner.and_then(|owner| owner.get("pid")).and_then(Value::as_i64),
        host: owner.and_then(|owner| text_field(owner, "host")),
        ts: owner.and_then(|owner| text_field(owner, "ts")),
    }
}

/// A field rendered as text: strings as-is, other values as JSON.
fn text_field(owner: &Value, key: &str) -> Option<String> {
    match owner.get(key)? {
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// `owner.json`'s bytes as a JSON object, or `None` if they are not one.
fn parse_owner(bytes: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(bytes).ok().filter(Value::is_object)
}

/// The pause before retry `attempt` of a held lock: 1 ms doubling to 50 ms, plus a jitter of
/// up to half that from the process id and the attempt (no randomness source needed: what
/// matters is that writers waiting together do not retry in step).
fn backoff(attempt: u32) -> Duration {
    let base = 1u64.checked_shl(attempt.min(6)).unwrap_or(64).min(50);
    let salt = u64::from(std::process::id()).wrapping_mul(2_654_435_761) ^ u64::from(attempt);
    let jitter_us = salt % (base * 500 + 1);
    Duration::from_millis(base) + Duration::from_micros(jitter_us)
}

/// Breaks the lock at `dir` if it still is the one whose `owner.json` read `judged` (`None`:
/// had none): renames the directory aside (atomic), compares, and removes it only on a match;
/// otherwise puts it back. Returns whether a lock was broken (false: it had already gone, or
/// it changed hands and was put back; the caller looks again).
pub(crate) fn break_if_unchanged(dir: &Path, judged: Option<&[u8]>) -> Result<bool, Error> {
    let mut aside = dir.as_os_str().to_owned();
    aside.push(format!(".breaking-{}-{}", std::process::id(), unique()));
    let aside = PathBuf::from(aside);
    match fs::rename(dir, &aside) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(Error::io(dir, error)),
    }
    let now_there = fs::read(aside.join(OWNER_FILE)).ok();
    if now_there.as_deref() == judged {
        match fs::remove_dir_all(&aside) {
            Ok(()) => return Ok(true),
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(true),
            Err(error) => return Err(Error::io(aside, error)),
        }
    }
    // A new holder took the lock after it was judged: give it back. Should a third writer
    // have made a lock in the instant it was aside, two would think they hold it; the
    // journal's own file lock still serialises their appends, and the displaced holder's
    // release reports [`Error::LockLost`]. Its directory is then removed here, not left behind.
    if fs::rename(&aside, dir).is_err() {
        let _ = fs::remove_dir_all(&aside);
    }
    Ok(false)
}

/// A number no other call in this process returns (for unique side names).
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn owner_json(identity: &str, host: &str, now: SystemTime) -> io::Result<Vec<u8>> {
    let owner = OwnerJson {
        epoch_ts: unix_seconds_f64(now),
        host,
        identity,
        pid: std::process::id(),
        ts: utc_timestamp(now),
    };
    serde_json::to_vec(&owner).map_err(io::Error::other)
}

/// Writes `owner.json` into the freshly created lock directory. Not fsynced (upstream does not
/// either): mutual exclusion comes from the atomic `mkdir`, and `owner.json` only describes the
/// holder. A killed process leaves the bytes in the page cache; only a power loss can leave it
/// missing or empty, and such a lock is then broken by age ([`STALE_AFTER`]) or `force`.
fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = File::create_new(path)?;
    file.write_all(bytes)
}

/// This machine's host name, as Python's `os.uname().nodename`.
fn hostname() -> String {
    rustix::system::uname().nodename().to_string_lossy().into_owned()
}
