use canonical_json::{Value, parse};
use dwp::contract::{contract_id, revision_content_bytes};
use test_support::{read, shared};

const FIXTURES: [(&str, &str); 2] = [
    (
        "standards/dwp/fixtures/v6/contract-minimal.json",
        "1ce682d409b7fc34813498a0b53765a40e11bb22c5e7a531d7b4a705d376cd5c",
    ),
    (
        "standards/dwp/fixtures/v7/contract-minimal-v7.json",
        "c7969f00e7422e0567ed492442f90f1909c14e40d2d354fb2aa099f801304e9f",
    ),
];

#[test]
fn fixture_contract_ids_recompute() {
    for (path, expected) in FIXTURES {
        let Some(file) = shared(path) else { return };
        let doc = parse(read(&file).as_bytes()).unwrap();
        assert_eq!(doc.get("contract_id").and_then(Value::as_str), Some(expected), "{path}");
        assert_eq!(contract_id(&doc).unwrap(), expected, "{path}");
    }
}

#[test]
fn any_substantive_edit_changes_the_id_but_chain_fields_do_not_change_substance() {
    let Some(file) = shared(FIXTURES[0].0) else { return };
    let doc = parse(read(&file).as_bytes()).unwrap();
    let mut edited = doc.clone();
    if let Some(map) = edited.as_object_mut() {
        map.insert("title".into(), Value::from("a different title ü"));
    }
    assert_ne!(contract_id(&edited).unwrap(), contract_id(&doc).unwrap());
    let mut bumped = doc.clone();
    if let Some(map) = bumped.as_object_mut() {
        map.insert("revision".into(), Value::from(2i64));
        map.insert("parent_contract_id".into(), Value::from(FIXTURES[0].1));
    }
    assert_ne!(contract_id(&bumped).unwrap(), contract_id(&doc).unwrap());
    assert_eq!(revision_content_bytes(&bumped).unwrap(), revision_content_bytes(&doc).unwrap());
}

#[test]
fn non_objects_have_no_identity() {
    assert!(contract_id(&Value::from(vec![Value::Null])).is_err());
}
