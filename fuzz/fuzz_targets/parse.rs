//! Arbitrary bytes into the strict parser: it never panics, and whatever it accepts goes
//! through both writers (JCS and Python) with their round-trip and oracle checks. The one-pass
//! `canonicalize` must agree with `parse` then `to_jcs` on every input, bytes and errors (and
//! so must `canonicalize_into`, with room to spare, exactly enough room, or a byte too little), and
//! `parse_prefix` must read the same value as `parse` wherever `parse` accepts. `skim` must
//! accept exactly what `parse` accepts, with the same error, and find the raw text of exactly
//! the top-level members the parsed value holds.
#![no_main]

use canonical_json::{
    CanonicalizeError, Limits, canonicalize, canonicalize_into, parse_prefix, parse_with, to_jcs,
};
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
        let into = |size: usize| {
            let mut buf = vec![0xAA; size];
            canonicalize_into(data, limits, &mut buf).map(|n| n.map(|n| buf[..n].to_vec()))
        };
        match &two_steps {
            Ok(bytes) => {
                let expected = Ok(Some(bytes.clone()));
                assert_eq!(into(bytes.len() + 64), expected, "canonicalize_into disagrees");
                assert_eq!(into(bytes.len()), expected, "canonicalize_into, exact room");
                if let Some(short) = bytes.len().checked_sub(1) {
                    assert_eq!(into(short), Ok(None), "canonicalize_into, no room");
                }
            }
            Err(e) => assert_eq!(into(data.len() + 64), Err(e.clone()), "canonicalize_into errs"),
        }
    }
    const WANTED: [&str; 6] = ["a", "b", "type", "seq", "", "\u{e9}"];
    let wanted = canonical_json::Wanted::new(&WANTED);
    let mut found = [None; 6];
    let skimmed = canonical_json::skim(data, Limits::default(), &wanted, &mut found);
    match &parsed {
        Err(e) => assert_eq!(skimmed, Err(e.clone()), "skim refuses differently"),
        Ok(value) => {
            assert_eq!(skimmed, Ok(()), "skim refuses what parse accepts");
            for (key, raw) in WANTED.iter().zip(found) {
                let from_skim = raw.map(|r| canonical_json::parse(r).expect("skimmed member"));
                assert_eq!(from_skim.as_ref(), value.get(key), "skim finds another {key:?}");
            }
        }
    }
});
