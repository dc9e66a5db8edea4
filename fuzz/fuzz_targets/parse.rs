//! Arbitrary bytes into the strict parser: it never panics, and whatever it accepts goes
//! through both writers (JCS and Python) with their round-trip and oracle checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = canonical_json::parse(data) {
        canonical_json_fuzz::check_python(&value);
        canonical_json_fuzz::check_jcs(&value);
    }
});
