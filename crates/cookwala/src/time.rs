//! The reference timestamp rule and comparable UTC instants.
//!
//! Cookwala accepts exactly the timestamps the upstream reference parser accepts:
//! `^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$` (ASCII digits), with
//! the ranges Python's `datetime.fromisoformat` enforces: year 1–9999, a real calendar day, hour
//! 0–23, minute and second 0–59 (no leap second), and an offset strictly inside ±24 h (the
//! offset's minute field itself is not range-checked, as in Python: `+05:99` is 6 h 39 min).
//! Fractions are truncated to microseconds, as Python does, so comparisons agree with the
//! reference at the edges.

use std::fmt;

/// A UTC instant: seconds since 1970-01-01T00:00:00Z plus nanoseconds (`0..1_000_000_000`).
///
/// Ordering is chronological.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    secs: i64,
    nanos: u32,
}

/// A timestamp the reference parser would refuse (callers report `invalid_timestamp`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimestampError {
    /// The text does not have the shape of the reference regular expression.
    #[error("timestamp does not match yyyy-mm-ddThh:mm:ss[.f](z|+hh:mm)")]
    Shape,
    /// A field is out of range (month 13, February 30, hour 24, second 60, offset ≥ 24 h, …).
    #[error("timestamp field out of range: {0}")]
    Range(&'static str),
}

impl Instant {
    /// The instant `secs` seconds and `nanos` nanoseconds after the Unix epoch.
    ///
    /// Returns `None` when `nanos` is a billion or more.
    pub fn from_unix(secs: i64, nanos: u32) -> Option<Instant> {
        (nanos < 1_000_000_000).then_some(Instant { secs, nanos })
    }

    /// Whole seconds since the Unix epoch (floor).
    pub fn unix_seconds(self) -> i64 {
        self.secs
    }

    /// The sub-second part in nanoseconds.
    pub fn subsec_nanos(self) -> u32 {
        self.nanos
    }

    /// RFC 3339 in UTC with whole seconds: `YYYY-MM-DDTHH:MM:SSZ` (the fraction is dropped).
    pub fn to_rfc3339(self) -> String {
        timefmt::format_utc(self.secs)
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

/// Parses a timestamp with the reference rule (see the module documentation).
///
/// # Errors
/// [`TimestampError`] for any text the reference would refuse.
pub fn parse_timestamp(text: &str) -> Result<Instant, TimestampError> {
    let b = text.as_bytes();
    if b.len() < 20 {
        return Err(TimestampError::Shape);
    }
    let fixed = |range: std::ops::Range<usize>| -> Result<i64, TimestampError> {
        let mut n = 0i64;
        for &c in b.get(range).ok_or(TimestampError::Shape)? {
            if !c.is_ascii_digit() {
                return Err(TimestampError::Shape);
            }
            n = n * 10 + i64::from(c - b'0');
        }
        Ok(n)
    };
    let sep = |i: usize, allowed: &[u8]| -> Result<(), TimestampError> {
        match b.get(i) {
            Some(c) if allowed.contains(c) => Ok(()),
            _ => Err(TimestampError::Shape),
        }
    };
    let year = fixed(0..4)?;
    sep(4, b"-")?;
    let month = fixed(5..7)?;
    sep(7, b"-")?;
    let day = fixed(8..10)?;
    sep(10, b"Tt ")?;
    let hour = fixed(11..13)?;
    sep(13, b":")?;
    let minute = fixed(14..16)?;
    sep(16, b":")?;
    let second = fixed(17..19)?;

    let mut pos = 19;
    let mut micros = 0i64;
    if b.get(pos) == Some(&b'.') {
        pos += 1;
        let start = pos;
        while b.get(pos).is_some_and(u8::is_ascii_digit) {
            if pos - start < 6 {
                micros = micros * 10 + i64::from(b[pos] - b'0');
            }
            pos += 1;
        }
        let digits = pos - start;
        if digits == 0 {
            return Err(TimestampError::Shape);
        }
        for _ in digits..6 {
            micros *= 10;
        }
    }
    let offset_minutes = match b.get(pos) {
        Some(b'Z' | b'z') if pos + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if pos + 6 == b.len() => {
            let hh = fixed(pos + 1..pos + 3)?;
            sep(pos + 3, b":")?;
            let mm = fixed(pos + 4..pos + 6)?;
            let total = hh * 60 + mm;
            if total >= 24 * 60 {
                return Err(TimestampError::Range("offset"));
            }
            if sign == b'-' { -total } else { total }
        }
        _ => return Err(TimestampError::Shape),
    };

    if !(1..=9999).contains(&year) {
        return Err(TimestampError::Range("year"));
    }
    if !(1..=12).contains(&month) {
        return Err(TimestampError::Range("month"));
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(TimestampError::Range("day"));
    }
    if hour > 23 {
        return Err(TimestampError::Range("hour"));
    }
    if minute > 59 {
        return Err(TimestampError::Range("minute"));
    }
    if second > 59 {
        return Err(TimestampError::Range("second"));
    }
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
        - offset_minutes * 60;
    // `micros` < 1_000_000, so the product fits in u32.
    let nanos = u32::try_from(micros * 1000).map_err(|_| TimestampError::Range("fraction"))?;
    Ok(Instant { secs, nanos })
}

/// True when `text` is a timestamp the reference accepts.
pub fn is_timestamp(text: &str) -> bool {
    parse_timestamp(text).is_ok()
}

// The calendar arithmetic is the workspace's one implementation; the grammar above is ours.
use timefmt::{days_from_civil, days_in_month};
