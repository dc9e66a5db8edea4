//! Unit tests: the calendar round trip and the formats.

use super::*;

/// An independent inverse of `civil_from_days` (Hinnant's `days_from_civil` as the journal
/// first wrote it), to cross-check the library's.
fn inverse(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[test]
fn civil_from_days_round_trips_and_advances_one_day_at_a_time() {
    let mut previous = civil_from_days(-800_000);
    for days in -799_999..800_000 {
        let (year, month, day) = civil_from_days(days);
        assert_eq!(inverse(year, month, day), days);
        assert_eq!(days_from_civil(year, month, day), days);
        assert!((1..=12).contains(&month) && (1..=31).contains(&day));
        let next_day = (year, month, previous.2 + 1) == (previous.0, previous.1, day);
        let next_month = day == 1 && (year, month) == (previous.0, previous.1 + 1);
        let next_year = (year, month, day) == (previous.0 + 1, 1, 1);
        assert!(next_day || next_month || next_year, "{previous:?} -> {year}-{month}-{day}");
        previous = (year, month, day);
    }
}

#[test]
fn formats_and_calendar_rules() {
    assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
    assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(format_utc(-1), "1969-12-31T23:59:59Z");
    assert_eq!(format_utc(253_402_300_799), "9999-12-31T23:59:59Z");
    assert_eq!(format_utc_ms(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    assert_eq!(format_utc_ms(-1), "1969-12-31T23:59:59.999Z");
    assert!(is_leap(2000) && !is_leap(1900) && is_leap(2024) && !is_leap(2023));
    assert_eq!(
        (days_in_month(2024, 2), days_in_month(2023, 2), days_in_month(2023, 4)),
        (29, 28, 30)
    );
}
