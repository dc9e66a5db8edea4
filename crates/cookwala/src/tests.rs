use super::time::{Instant, parse_timestamp};
use timefmt::{civil_from_days, days_from_civil};

#[test]
fn civil_round_trip() {
    for days in -800_000..800_000 {
        let (y, m, d) = civil_from_days(days);
        assert_eq!(days_from_civil(y, m, d), days);
    }
}

#[test]
fn timestamps_parse_like_the_reference() {
    let t = |s: &str| parse_timestamp(s).map(Instant::unix_seconds);
    assert_eq!(t("1970-01-01T00:00:00Z"), Ok(0));
    assert_eq!(t("1970-01-01t01:00:00+01:00"), Ok(0));
    assert_eq!(t("1970-01-01 00:00:00z"), Ok(0));
    assert_eq!(t("2026-01-01T00:00:00+05:99"), t("2025-12-31T17:21:00Z"));
    assert!(t("2026-01-01T00:00:00+23:60").is_err());
    assert!(t("2026-02-29T00:00:00Z").is_err());
    assert!(t("2024-02-29T00:00:00Z").is_ok());
    assert!(t("2026-01-01T24:00:00Z").is_err());
    assert!(t("2026-01-01T00:00:60Z").is_err());
    assert!(t("0000-01-01T00:00:00Z").is_err());
    assert!(t("2026-01-01T00:00:00").is_err());
    assert!(t("2026-01-01T00:00:00.Z").is_err());
    assert!(t("2026-01-01T00:00:00Z\n").is_err());
    assert!(t("2026-1-01T00:00:00Z").is_err());
    assert!(t("2026-01-01T00:00:00+0100").is_err());
    assert!(t("").is_err());
    assert!(t("٢٠٢٦-01-01T00:00:00Z").is_err());
}

#[test]
fn fractions_truncate_to_microseconds() {
    let a = parse_timestamp("2026-01-01T00:00:00.1234567Z").unwrap();
    let b = parse_timestamp("2026-01-01T00:00:00.123456Z").unwrap();
    assert_eq!(a, b);
    assert_eq!(a.subsec_nanos(), 123_456_000);
    let c = parse_timestamp("2026-01-01T00:00:00.5Z").unwrap();
    assert_eq!(c.subsec_nanos(), 500_000_000);
    assert!(c > b);
}

#[test]
fn formats_rfc3339() {
    let i = parse_timestamp("2026-10-04T19:00:00+02:00").unwrap();
    assert_eq!(i.to_rfc3339(), "2026-10-04T17:00:00Z");
    assert_eq!(Instant::from_unix(0, 0).unwrap().to_rfc3339(), "1970-01-01T00:00:00Z");
    assert_eq!(Instant::from_unix(-1, 0).unwrap().to_rfc3339(), "1969-12-31T23:59:59Z");
    let first = parse_timestamp(super::keys::UNBOUNDED_VALID_FROM).unwrap();
    assert_eq!(first.to_rfc3339(), "0001-01-01T00:00:00Z");
}
