use canonical_json::digest;
use canonical_json::{
    Finite, Integer, Map, Number, PyFormat, Value, WriteError, parse, to_jcs, to_python,
    to_python_compact,
};
use proptest::prelude::*;

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-(1i64 << 53) + 1..(1i64 << 53))
            .prop_map(|n| Value::Number(Number::Int(Integer::Small(n)))),
        any::<f64>()
            .prop_filter_map("finite", Finite::new)
            .prop_map(|x| Value::Number(Number::Float(x))),
        "\\PC{0,12}".prop_map(Value::String),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m: std::collections::BTreeMap<String, Value>| Value::Object(m as Map)),
        ]
    })
}

/// JCS collapses integral floats into integers, so compare numerically.
fn same(a: &Value, b: &Value) -> bool {
    a.loose_eq(b)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn jcs_reparses_to_an_equal_value_and_is_idempotent(v in arb_value()) {
        let bytes = to_jcs(&v).unwrap();
        let back = parse(&bytes).unwrap();
        prop_assert!(same(&v, &back));
        match to_jcs(&back) {
            Ok(again) => prop_assert_eq!(again, bytes),
            // An integral double between 2^53 and 1e21 is written in integer layout, and
            // integer literals that large are refused on input, as the reference does.
            Err(WriteError::IntegerOutOfRange(_)) => {}
            Err(e) => prop_assert!(false, "unexpected {e}"),
        }
    }

    #[test]
    fn python_forms_reparse_exactly(v in arb_value()) {
        let compact = to_python_compact(&v).unwrap();
        prop_assert_eq!(&parse(&compact).unwrap(), &v);
        let pretty = to_python(&v, PyFormat::PRETTY).unwrap();
        prop_assert_eq!(&parse(&pretty).unwrap(), &v);
        let unicode = to_python(&v, PyFormat { indent: None, keep_unicode: true }).unwrap();
        prop_assert_eq!(&parse(&unicode).unwrap(), &v);
        // Compact ensure_ascii output is pure ASCII.
        prop_assert!(compact.is_ascii());
    }

    #[test]
    fn streamed_document_hash_equals_hash_of_the_materialised_bytes(
        v in arb_value(),
        pad in prop::collection::vec("\\PC{0,400}", 0..40),
    ) {
        // Wrap the value in a document with hash/signature keys and enough padding to cross the
        // hasher's buffer boundary several times.
        let mut doc = Map::new();
        doc.insert("hash".into(), Value::String("sha256:00".into()));
        doc.insert("signature".into(), v.clone());
        doc.insert("body".into(), v);
        doc.insert("pad".into(), Value::Array(pad.into_iter().map(Value::String).collect()));
        let doc = Value::Object(doc);
        let expected = to_jcs(&digest::without_top_level(&doc, &["hash", "signature"]))
            .map(|bytes| digest::sha256_prefixed(&bytes));
        prop_assert_eq!(digest::document_hash(&doc), expected);
        let whole = to_jcs(&doc).map(|bytes| digest::sha256_prefixed(&bytes));
        prop_assert_eq!(digest::jcs_hash_without(&doc, &[]), whole);
    }

    #[test]
    fn jcs_key_order_is_utf16_code_unit_order(keys in prop::collection::btree_set(any::<String>(), 0..12)) {
        let map: Map = keys.iter().map(|k| (k.clone(), Value::Null)).collect();
        let mut sorted: Vec<&String> = keys.iter().collect();
        sorted.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        let members: Vec<String> = sorted
            .into_iter()
            .map(|k| format!("{}:null", String::from_utf8(to_jcs(&Value::String(k.clone())).unwrap()).unwrap()))
            .collect();
        let expected = format!("{{{}}}", members.join(","));
        prop_assert_eq!(String::from_utf8(to_jcs(&Value::Object(map)).unwrap()).unwrap(), expected);
    }

    #[test]
    fn parser_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse(&bytes);
    }

    #[test]
    fn parser_agrees_with_serde_json_on_valid_text(v in arb_value()) {
        let text = to_python_compact(&v).unwrap();
        let theirs: serde_json::Value = serde_json::from_slice(&text).unwrap();
        let ours = parse(&text).unwrap();
        let rendered = serde_json::to_vec(&theirs).unwrap();
        prop_assert!(same(&parse(&rendered).unwrap(), &ours));
    }
}
