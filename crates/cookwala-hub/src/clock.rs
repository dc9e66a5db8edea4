//! The wall clock and diagnostics: the only places the hub reads the time of day or writes
//! to stderr.

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
