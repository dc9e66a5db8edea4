//! UTC calendar arithmetic and RFC 3339 formatting, with no dependencies: the one home for
//! dates in the workspace.
//!
//! Days are counted from 1970-01-01 in the proleptic Gregorian calendar with Howard Hinnant's
//! `days_from_civil` / `civil_from_days`, which are exact for every `i64` day count the callers
//! produce (years far beyond ±9999). The formatters write UTC with a `Z` suffix and no offset:
//! [`format_utc`] whole seconds (`YYYY-MM-DDTHH:MM:SSZ`), [`format_utc_ms`] milliseconds
//! (`YYYY-MM-DDTHH:MM:SS.mmmZ`). Parsing stays with the crate that owns a grammar (Cookwala's
//! reference timestamp rule lives in `cookwala::time`); this crate only supplies the arithmetic.
//!
//! Nothing here reads the clock except [`unix_seconds`] and [`unix_seconds_f64`], which convert a
//! `SystemTime` the caller took.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds in a day.
pub const SECS_PER_DAY: i64 = 86_400;

/// True for a leap year of the proleptic Gregorian calendar.
pub fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// The number of days in `month` (1–12) of `year`; months outside 1–12 count 31.
pub fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's `days_from_civil`).
///
/// The date is not range-checked: callers validate month and day first.
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400; // [0, 399]
    let mp = (month + 9) % 12; // [0, 11], March-based
    let doy = (153 * mp + 2) / 5 + day - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian (year, month 1–12, day 1–31) of a day count since 1970-01-01
/// (Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March-based
    let day = doy - (153 * mp + 2) / 5 + 1; // [1, 31]
    let month = if mp < 10 { mp + 3 } else { mp - 9 }; // [1, 12]
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `secs` seconds after the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds).
pub fn format_utc(secs: i64) -> String {
    let (y, m, d) = civil_from_days(secs.div_euclid(SECS_PER_DAY));
    let rem = secs.rem_euclid(SECS_PER_DAY);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, (rem % 3600) / 60, rem % 60)
}

/// `unix_ms` milliseconds after the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
pub fn format_utc_ms(unix_ms: i64) -> String {
    let secs = unix_ms.div_euclid(1000);
    let ms = unix_ms.rem_euclid(1000);
    let (y, m, d) = civil_from_days(secs.div_euclid(SECS_PER_DAY));
    let rem = secs.rem_euclid(SECS_PER_DAY);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Seconds since the Unix epoch, rounded towards negative infinity (saturating).
pub fn unix_seconds(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        Err(before) => {
            let before = before.duration();
            let whole = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
            if before.subsec_nanos() > 0 { -whole - 1 } else { -whole }
        }
    }
}

/// Seconds since the Unix epoch as a float (Python's `time.time()`).
pub fn unix_seconds_f64(time: SystemTime) -> f64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_secs_f64(),
        Err(before) => -before.duration().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests;
