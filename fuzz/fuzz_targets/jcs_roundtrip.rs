//! Structured values into the JCS writer: output equals an independent RFC 8785 oracle,
//! re-parses to a numerically equal value, and re-canonicalises to identical bytes (or fails
//! only with `IntegerOutOfRange`, for integral floats beyond 2^53).
#![no_main]

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    if let Ok(value) = canonical_json_fuzz::arbitrary_value(&mut u) {
        canonical_json_fuzz::check_jcs(&value);
    }
});
