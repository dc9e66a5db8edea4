//! The wall clock and diagnostics. The hub reads the time of day through the [`Clock`] in its
//! configuration ([`crate::HubConfig::clock`]), so tests can set it; [`SystemClock`] is the
//! real one, and the one place the time of day is read.

/// Writes one diagnostic line to stderr; a closed stderr is ignored (never a panic). A line
/// identical to the previous one within [`REPEAT_QUIET`] is counted, not written again (a
/// database outage would otherwise print the same failure ten times a second); the count is
/// written with the next line that differs.
pub fn note(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let text = line.to_string();
    let now = std::time::Instant::now();
    let mut last = LAST_NOTE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((prev, at, repeats)) = last.as_mut()
        && *prev == text
        && now.duration_since(*at) < REPEAT_QUIET
    {
        *repeats += 1;
        return;
    }
    // With a log subscriber installed (`serve --log-format json`), the line is an event of
    // target `cookwala_hub` (one JSON object a line); without one, plain text as always.
    if tracing::dispatcher::has_been_set() {
        if let Some((prev, _, repeats)) = last.as_ref()
            && *repeats > 0
        {
            tracing::info!(target: "cookwala_hub", repeats = *repeats, "(repeated) {prev}");
        }
        tracing::info!(target: "cookwala_hub", "{text}");
        *last = Some((text, now, 0));
        return;
    }
    let mut err = std::io::stderr().lock();
    if let Some((prev, _, repeats)) = last.as_ref()
        && *repeats > 0
    {
        let _ = writeln!(err, "(the line before was repeated {repeats} more time(s): {prev})");
    }
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.write_all(b"\n"));
    *last = Some((text, now, 0));
}

/// How long an identical diagnostic line stays quiet (see [`note`]).
pub const REPEAT_QUIET: std::time::Duration = std::time::Duration::from_secs(10);

type LastNote = Option<(String, std::time::Instant, u64)>;
static LAST_NOTE: std::sync::Mutex<LastNote> = std::sync::Mutex::new(None);

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
