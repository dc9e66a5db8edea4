//! Arbitrary bytes into the strict parser: it never panics, and whatever it accepts goes
//! through both writers (JCS and Python) with their round-trip and oracle checks. The one-pass
//! `canonicalize` must agree with `parse` then `to_jcs` on every input, bytes and errors, and
//! `parse_prefix` must read the same value as `parse` wherever `parse` accepts.
#![no_main]

use canonical_json::{CanonicalizeError, Limits, canonicalize, parse_prefix, parse_with, to_jcs};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = canonical_json::parse(data);
    if let Ok(value) = &parsed {
        canonical_json_fuzz::check_python(value);
        canonical_json_fuzz::check_jcs(value);
        let (prefix, end) = parse_prefix(data, Limits::default()).expect("parse_prefix refuses");
        assert_eq!(&prefix, value, "parse_prefix reads another value");
        assert!(data[end..].iter().all(|b| b" \t\n\r".contains(b)), "parse_prefix stops early");
    }
    for limits in [Limits::default(), Limits { max_depth: 3, max_bytes: 1 << 20 }] {
        let two_steps = parse_with(data, limits)
            .map_err(CanonicalizeError::Parse)
            .and_then(|v| to_jcs(&v).map_err(CanonicalizeError::Write));
        assert_eq!(canonicalize(data, limits), two_steps, "canonicalize disagrees");
    }
});
