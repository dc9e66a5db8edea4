//! The counted limits the hub's state keeps: the caps on open event streams (overall and per
//! principal), the per-address rate of unauthenticated incident reports, and the connection
//! limits ([`ConnLimits`]) the accept loop enforces.
//!
//! No HTTP here: a refused stream is a [`StreamRefused`], which `http/problem.rs` answers as a
//! 503 problem; the request-size limits (the body limit's 413, the anonymous report size) and
//! CORS are in `http/limits.rs`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

/// The open event streams (SSE and WebSocket), counted overall and per principal.
///
/// One principal holds at most a quarter of `--max-streams` (at least one), so a viewer token
/// cannot take every place; and an owner who holds no stream gets one even when every place
/// is taken, from a small reserve ([`OWNER_RESERVE`]), so the person who runs the hub can
/// always watch it.
#[derive(Debug, Default)]
pub(crate) struct StreamSlots {
    open: std::sync::Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_principal: HashMap<String, usize>,
}

/// Places beyond `--max-streams` kept for owners holding no stream.
pub(crate) const OWNER_RESERVE: usize = 4;

/// Why a stream was refused a place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamRefused {
    /// The token holds its share (a quarter of `--max-streams`) already.
    TokenShare {
        /// How many it holds.
        mine: usize,
    },
    /// Every place is taken.
    Full {
        /// `--max-streams`.
        max: usize,
    },
}

/// One open event stream; dropping it frees its place.
#[derive(Debug)]
pub(crate) struct StreamSlot {
    slots: Arc<StreamSlots>,
    scope: String,
}

impl StreamSlots {
    /// The counts (a poisoned lock is recovered: every update leaves them consistent).
    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A place for one more stream of `who` among at most `max`.
    ///
    /// # Errors
    /// `who` holds its share already, or every place is taken.
    /// Streams open now.
    pub(crate) fn open_count(&self) -> usize {
        self.open().total
    }

    pub(crate) fn take(
        self: &Arc<Self>,
        who: &crate::auth::Principal,
        max: usize,
    ) -> Result<StreamSlot, StreamRefused> {
        let mut open = self.open();
        let mine = open.by_principal.get(&who.scope).copied().unwrap_or(0);
        let per_principal = (max / 4).max(1);
        if mine >= per_principal {
            return Err(StreamRefused::TokenShare { mine });
        }
        let owner_reserve =
            who.role == crate::auth::Role::Owner && mine == 0 && open.total < max + OWNER_RESERVE;
        if open.total >= max && !owner_reserve {
            return Err(StreamRefused::Full { max });
        }
        open.total += 1;
        *open.by_principal.entry(who.scope.clone()).or_insert(0) += 1;
        Ok(StreamSlot { slots: self.clone(), scope: who.scope.clone() })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open();
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.by_principal.get_mut(&self.scope) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.by_principal.remove(&self.scope);
            }
        }
    }
}

/// Counts per client address within one minute (fixed windows; the map is cleared each
/// minute, so it holds at most one minute's addresses).
#[derive(Debug, Default)]
pub(crate) struct RateWindow {
    minute: i64,
    counts: HashMap<IpAddr, u32>,
}

impl RateWindow {
    /// Counts one request from `addr` at `now_ms`; false when it is over `per_minute`.
    pub(crate) fn admit(&mut self, addr: IpAddr, now_ms: i64, per_minute: u32) -> bool {
        let minute = now_ms.div_euclid(60_000);
        if minute != self.minute {
            self.minute = minute;
            self.counts.clear();
        }
        let n = self.counts.entry(addr).or_insert(0);
        if *n >= per_minute {
            return false;
        }
        *n += 1;
        true
    }
}

/// What bounds a connection (enforced by the accept loop, `src/http/server.rs`): how long its parts
/// may take, how large its head may be, and how many connections are open at once (`cookwala serve` flags of the same names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnLimits {
    /// Connections open at once (`--max-connections`); keep it below the file limit.
    pub max_connections: usize,
    /// Connections open at once from one client address (`--max-connections-per-address`).
    pub max_per_address: usize,
    /// Time for a request head to arrive, from when the hub waits for it (`--header-timeout`).
    pub header_timeout: std::time::Duration,
    /// Time for a request body to arrive once its head is in (`--body-timeout`).
    pub body_timeout: std::time::Duration,
    /// Time a kept-alive connection may wait for its next request (`--idle-timeout`). The
    /// header timeout also runs during that wait, so the shorter of the two applies.
    pub idle_timeout: std::time::Duration,
    /// The largest request head, start line included (`--max-header-bytes`; at least 8192).
    pub max_header_bytes: usize,
    /// Time connections get to finish their answer at shutdown (`--shutdown-grace`).
    pub shutdown_grace: std::time::Duration,
}

impl Default for ConnLimits {
    fn default() -> ConnLimits {
        ConnLimits {
            max_connections: 512,
            max_per_address: 128,
            header_timeout: std::time::Duration::from_secs(10),
            body_timeout: std::time::Duration::from_secs(30),
            idle_timeout: std::time::Duration::from_secs(5),
            max_header_bytes: 16 * 1024,
            shutdown_grace: std::time::Duration::from_secs(5),
        }
    }
}

/// hyper refuses a read buffer below this many bytes.
pub const MIN_HEADER_BYTES: usize = 8192;
