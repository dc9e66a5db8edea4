//! UTC timestamp formatting, through the workspace's `timefmt` crate.

use std::time::SystemTime;

pub(crate) use timefmt::{unix_seconds, unix_seconds_f64};

/// Formats `time` as UTC `YYYY-MM-DDTHH:MM:SSZ` (whole seconds, rounded
/// down), the format of Python's
/// `time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())`.
pub fn utc_timestamp(time: SystemTime) -> String {
    timefmt::format_utc(unix_seconds(time))
}
