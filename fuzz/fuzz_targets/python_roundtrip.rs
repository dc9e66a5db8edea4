//! Structured values into the Python-compatible writers: compact output equals an independent
//! `json.dumps(sort_keys=True, separators=(',', ':'))` oracle, and every layout re-parses to an
//! equal value (integers stay integers, floats stay floats).
#![no_main]

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    if let Ok(value) = canonical_json_fuzz::arbitrary_value(&mut u) {
        canonical_json_fuzz::check_python(&value);
    }
});
