//! The wall clock and diagnostics. The hub reads the time of day through the [`Clock`] in its
//! configuration ([`crate::HubConfig::clock`]), so tests can set it; [`SystemClock`] is the
//! real one, and the one place the time of day is read.

/// Writes one diagnostic line to stderr; a closed stderr is ignored (never a panic).
pub fn note(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(line).and_then(|()| err.write_all(b"\n"));
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Where the hub reads the time of day.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The operating system's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        unix_ms()
    }
}
