//! The fast parser against the reference parser it replaced (`reference.rs`) and against
//! serde_json: same values (floats compared bit for bit), same refusals, same offsets. And the
//! one-pass `canonicalize` (and `canonicalize_into`, with buffers of every interesting size)
//! against `parse_with` then `to_jcs`: same bytes, same errors. And
//! `skim` against `parse_with`: same acceptance, same errors, the same top-level members.

use canonical_json::{
    CanonicalizeError, Limits, ParseError, Value, canonicalize, canonicalize_into, parse_with,
    to_jcs, to_python_compact,
};
use proptest::prelude::*;

use crate::reference;

/// `Debug` tells `-0.0` from `0.0` and prints every double exactly; `PartialEq` would not.
fn outcome(result: &Result<Value, ParseError>) -> String {
    format!("{result:?}")
}

fn assert_same(input: &[u8], limits: Limits) -> Result<(), TestCaseError> {
    let ours = parse_with(input, limits);
    let theirs = reference::parse_with(input, limits);
    prop_assert_eq!(outcome(&ours), outcome(&theirs), "input {:?}", String::from_utf8_lossy(input));
    assert_same_canon(input, limits, theirs)?;
    assert_same_skim(input, limits, &ours)
}

/// The one-pass writers give `to_jcs` of the parsed value, or the parser's or writer's error:
/// `canonicalize`, and `canonicalize_into` a roomy buffer, one of exactly the right size (no
/// room for its wide copies at the end) and one a byte too small (`None`).
fn assert_same_canon(
    input: &[u8],
    limits: Limits,
    parsed: Result<Value, ParseError>,
) -> Result<(), TestCaseError> {
    let two_steps = parsed
        .map_err(CanonicalizeError::Parse)
        .and_then(|v| to_jcs(&v).map_err(CanonicalizeError::Write));
    let text = String::from_utf8_lossy(input);
    prop_assert_eq!(&canonicalize(input, limits), &two_steps, "input {:?}", text);
    let into = |size: usize| {
        let mut buf = vec![0xAA; size];
        canonicalize_into(input, limits, &mut buf).map(|n| n.map(|n| buf[..n].to_vec()))
    };
    match &two_steps {
        Ok(bytes) => {
            let expected = Ok(Some(bytes.clone()));
            prop_assert_eq!(&into(bytes.len() + 64), &expected, "input {:?}", text);
            prop_assert_eq!(&into(bytes.len()), &expected, "input {:?}", text);
            if let Some(short) = bytes.len().checked_sub(1) {
                prop_assert_eq!(into(short), Ok(None), "input {:?}", text);
            }
        }
        Err(e) => prop_assert_eq!(into(input.len() + 64), Err(e.clone()), "input {:?}", text),
    }
    Ok(())
}

/// `skim` accepts what the parser accepts, refuses with the parser's error, and finds the raw
/// text of exactly the top-level members the parsed value holds.
fn assert_same_skim(
    input: &[u8],
    limits: Limits,
    parsed: &Result<Value, ParseError>,
) -> Result<(), TestCaseError> {
    const WANTED: [&str; 5] = ["a", "b", "ab", "", "\u{e9}"];
    let mut found = [None; 5];
    let wanted = canonical_json::Wanted::new(&WANTED);
    let skimmed = canonical_json::skim(input, limits, &wanted, &mut found);
    let lossy = String::from_utf8_lossy(input);
    match parsed {
        Err(e) => prop_assert_eq!(skimmed, Err(e.clone()), "input {:?}", lossy),
        Ok(value) => {
            prop_assert_eq!(skimmed, Ok(()), "input {:?}", lossy);
            for (key, raw) in WANTED.iter().zip(found) {
                let from_skim = raw.map(|r| outcome(&canonical_json::parse(r)));
                let from_parse = value.get(key).map(|v| outcome(&Ok(v.clone())));
                prop_assert_eq!(from_skim, from_parse, "key {:?} input {:?}", key, lossy);
            }
        }
    }
    Ok(())
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", canonical_json::Finite::new).prop_map(Value::from),
        "[a-z\"\\\\\u{0}-\u{1f}é😀\u{e000}]{0,12}".prop_map(Value::String),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 24, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..24).prop_map(Value::Array),
            prop::collection::btree_map("[a-d]{0,3}", inner, 0..24)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Bytes that keep a mutated document close to JSON, so edits reach deep into the parser.
const JSONISH: &[u8] = b"{}[]\",:\\/ u0123456789abcdefABCDEFeE+-.tfnrl\t\n\r\x00\x1f\x7f\xc3\xa9\xed\xa0\x80\xf0\x9f\x98\x80";

#[derive(Clone, Debug)]
enum Edit {
    Insert(usize, u8),
    Delete(usize),
    Replace(usize, u8),
}

fn arb_edit() -> impl Strategy<Value = Edit> {
    let byte = prop_oneof![prop::sample::select(JSONISH), any::<u8>()];
    prop_oneof![
        (any::<usize>(), byte.clone()).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), byte).prop_map(|(i, b)| Edit::Replace(i, b)),
    ]
}

fn apply(text: &mut Vec<u8>, edit: &Edit) {
    let len = text.len();
    match *edit {
        Edit::Insert(i, b) => text.insert(i % (len + 1), b),
        Edit::Delete(i) if len > 0 => {
            text.remove(i % len);
        }
        Edit::Replace(i, b) if len > 0 => text[i % len] = b,
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn same_outcome_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        assert_same(&bytes, Limits::default())?;
    }

    #[test]
    fn same_outcome_on_json_like_bytes(bytes in prop::collection::vec(prop::sample::select(JSONISH), 0..128)) {
        assert_same(&bytes, Limits::default())?;
    }

    #[test]
    fn same_outcome_on_mutated_documents(
        v in arb_value(),
        edits in prop::collection::vec(arb_edit(), 0..4),
        jcs in any::<bool>(),
        depth in 1usize..8,
    ) {
        let mut text = if jcs {
            match to_jcs(&v) { Ok(bytes) => bytes, Err(_) => to_python_compact(&v).unwrap() }
        } else {
            canonical_json::to_python(&v, canonical_json::PyFormat::PRETTY).unwrap()
        };
        for edit in &edits {
            apply(&mut text, edit);
        }
        assert_same(&text, Limits::default())?;
        assert_same(&text, Limits { max_depth: depth, max_bytes: 1 << 20 })?;
        assert_same(&text, Limits { max_depth: 512, max_bytes: text.len().saturating_sub(1) })?;
    }

    #[test]
    fn parse_prefix_reads_the_leading_value_and_stops_after_it(
        v in arb_value(),
        tail in prop::collection::vec(prop::sample::select(JSONISH), 0..8),
    ) {
        let text = canonical_json::to_python(&v, canonical_json::PyFormat::PRETTY).unwrap();
        let mut input = text.clone();
        // A delimiter first, so a number is not continued by the tail.
        input.push(b',');
        input.extend_from_slice(&tail);
        let (value, end) = canonical_json::parse_prefix(&input, Limits::default()).unwrap();
        prop_assert_eq!(end, text.len());
        prop_assert_eq!(outcome(&Ok(value)), outcome(&canonical_json::parse(&text)));
        // And an error in the value is the parser's error.
        if !tail.is_empty() {
            let cut = &text[..text.len() / 2];
            let prefix = canonical_json::parse_prefix(cut, Limits::default()).map(|(v, _)| v);
            if let Err(e) = canonical_json::parse(cut)
                && e.kind != canonical_json::ParseErrorKind::TrailingData
            {
                prop_assert_eq!(outcome(&prefix), outcome(&Err(e)));
            }
        }
    }

    #[test]
    fn same_numbers(text in "-?(0|[1-9][0-9]{0,24})(\\.[0-9]{1,24})?([eE][+-]?[0-9]{1,4})?") {
        assert_same(text.as_bytes(), Limits::default())?;
        // And the same double as serde_json (built with float_roundtrip).
        if let Ok(Value::Number(canonical_json::Number::Float(x))) = canonical_json::parse(text.as_bytes()) {
            let theirs: f64 = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(x.get().to_bits(), theirs.to_bits(), "{}", text);
        }
    }

    #[test]
    fn same_numbers_near_the_edges(
        mantissa in prop_oneof![any::<u64>(), (1u64 << 53) - 2..(1u64 << 53) + 2, 0u64..1000],
        point in 0usize..22,
        exponent in -30i32..30,
        negative in any::<bool>(),
    ) {
        let digits = mantissa.to_string();
        let text = if point > 0 && point < digits.len() {
            format!("{}{}.{}e{exponent}", if negative { "-" } else { "" }, &digits[..point], &digits[point..])
        } else {
            format!("{}{digits}", if negative { "-" } else { "" })
        };
        assert_same(text.as_bytes(), Limits::default())?;
    }

    /// Strings written with every escape JSON allows, chosen per character, as values and
    /// keys: the one-pass writer rewrites escapes without decoding the string.
    #[test]
    fn same_outcome_on_strings_with_any_escapes(
        chars in prop::collection::vec((any::<char>(), 0u8..4), 0..24),
        as_key in any::<bool>(),
    ) {
        let mut literal = String::from("\"");
        for (c, style) in &chars {
            let short = match c {
                '"' => Some("\\\""),
                '\\' => Some("\\\\"),
                '/' => Some("\\/"),
                '\u{8}' => Some("\\b"),
                '\u{c}' => Some("\\f"),
                '\n' => Some("\\n"),
                '\r' => Some("\\r"),
                '\t' => Some("\\t"),
                _ => None,
            };
            let must_escape = u32::from(*c) < 0x20 || *c == '"' || *c == '\\';
            match (style, short) {
                (0, Some(short)) => literal.push_str(short),
                (0 | 1, _) if !must_escape => literal.push(*c),
                (2, _) => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        literal.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                _ => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        literal.push_str(&format!("\\u{unit:04X}"));
                    }
                }
            }
        }
        literal.push('"');
        let text = if as_key { format!("{{{literal}:0,\"m\":1}}") } else { format!("[{literal},{literal}]") };
        assert_same(text.as_bytes(), Limits::default())?;
    }

    #[test]
    fn same_outcome_on_objects_with_many_keys(
        keys in prop::collection::vec("[a-e]{0,2}", 0..48),
        nested in any::<bool>(),
    ) {
        let members: Vec<String> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| if nested { format!("\"{k}\":{{\"{k}\":[{i}]}}") } else { format!("\"{k}\":{i}") })
            .collect();
        let text = format!("{{{}}}", members.join(","));
        assert_same(text.as_bytes(), Limits::default())?;
    }
}

#[test]
fn same_outcome_on_large_integers_and_the_i64_edges() {
    for text in [
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "999999999999999999",
        "-999999999999999999",
        "1000000000000000000",
        "123456789012345678901234567890",
        "-0",
        "-0.0",
        "0e0",
        "1e400",
        "-1e400",
        "1e-400",
        "9007199254740993.0",
        "0.1e-22",
        "4.35",
        "1.7976931348623157e308",
        "1.7976931348623159e308",
        "5e-324",
        "1e0000000000000000000000005",
        "9007199254740991",
        "-9007199254740991",
        "9007199254740992",
        "-9007199254740992",
        "[1.0,1e21,1e-7,-0.0,0.000001]",
        "{\"b\":1,\"a\":{\"d\":[],\"c\":{}},\"\\u00e9\":\"\\ud83d\\ude00\",\"\u{e000}\":0,\"\u{1f600}\":1}",
        "{\"a\":1,\"b\":2,\"a\":3}",
        "{\"b\":1,\"a\":2,\"b\":3}",
        "{\"a\":1,\"\\u0061\":2}",
    ] {
        let ours = canonical_json::parse(text.as_bytes());
        let theirs = reference::parse_with(text.as_bytes(), Limits::default());
        assert_eq!(outcome(&ours), outcome(&theirs), "{text}");
        assert_same_skim(text.as_bytes(), Limits::default(), &ours).unwrap();
        let one_pass = canonicalize(text.as_bytes(), Limits::default());
        let two_steps = theirs
            .map_err(CanonicalizeError::Parse)
            .and_then(|v| to_jcs(&v).map_err(CanonicalizeError::Write));
        assert_eq!(one_pass, two_steps, "{text}");
    }
}
