//! Deep, out-of-order, high-key documents (issue 22) through every writer: the one-pass
//! `canonicalize` agrees with `parse` then `to_jcs`, the JCS writer matches its RFC 8785 oracle,
//! the Python-compatible writers match theirs. Run with `-timeout` (fuzz/run.sh sets it): a
//! writer whose work grows faster than its input shows up as a slow unit, which is a crash.
#![no_main]

use canonical_json::{CanonicalizeError, Limits, canonicalize, parse_with, to_jcs};
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(text) = canonical_json_fuzz::arbitrary_deep_text(&mut u) else { return };
    let input = text.as_bytes();
    let parsed = parse_with(input, Limits::default());
    let two_steps = parsed
        .clone()
        .map_err(CanonicalizeError::Parse)
        .and_then(|v| to_jcs(&v).map_err(CanonicalizeError::Write));
    assert_eq!(canonicalize(input, Limits::default()), two_steps, "canonicalize disagrees");
    if let Ok(value) = &parsed {
        canonical_json_fuzz::check_jcs(value);
        canonical_json_fuzz::check_python(value);
    }
});
