//! The wall clock, read only here (the libraries take time as a parameter).

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Result;
use cookwala::time::{Instant, parse_timestamp};

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn now_rfc3339() -> String {
    journal::utc_timestamp(SystemTime::now())
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn unix_millis() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis())
}

/// The instant `--now` (or a batch line's `now`) names, or the current time.
///
/// # Errors
/// A timestamp the reference grammar refuses.
pub(crate) fn parse_now(text: Option<&str>) -> Result<Instant> {
    let owned;
    let text = match text {
        Some(t) => t,
        None => {
            owned = now_rfc3339();
            &owned
        }
    };
    parse_timestamp(text).map_err(|e| anyhow::anyhow!("--now {text:?}: {e}"))
}
