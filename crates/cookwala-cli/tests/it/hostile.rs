//! The CLI on worst shapes at the documented maxima (issue 22): the parser's 512 levels, a
//! document the size of the hub's 1 MiB body, 256 keys in a key set. Each command here would
//! not finish (or take quadratic time) with the code before issue 22; CI's time limit is the
//! failure, not a timed assertion.

use crate::{assert_exit, cookwala, cookwala_in, stdout};

/// Issue 22's reproduction at the parser's limit: `[{"k":…,"😀":i}]` per level (two levels
/// of nesting each), inside `{"doc":{"d":…}}`.
fn emoji_levels() -> String {
    let steps = (512 - 2) / 2;
    let mut text = String::from("1");
    for i in 0..steps {
        text = format!("[{{\"k{i}\":{text},\"😀\":{i}}}]");
    }
    format!("{{\"doc\":{{\"d\":{text}}}}}")
}

#[test]
fn hash_and_canon_of_emoji_keys_at_the_depth_limit() {
    let dir = tempfile::tempdir().unwrap();
    let text = emoji_levels();
    let canon = cookwala_in(dir.path(), &["canon", "-"], text.as_bytes());
    assert_exit(&canon, 0);
    // The canonical bytes hold each level once: `"😀"` sorts after `"k…"` in both orders.
    assert_eq!(canon.stdout.len(), text.len());
    let hash = cookwala_in(dir.path(), &["hash", "-"], text.as_bytes());
    assert_exit(&hash, 0);
    // `hash` is SHA-256 over the same bytes (the document has no hash or signature field).
    let expected = canonical_json::digest::sha256_prefixed(&canon.stdout);
    assert_eq!(stdout(&hash).trim(), expected);
}

#[test]
fn canon_of_a_body_limit_out_of_order_at_every_level() {
    // 511 objects whose keys arrive out of UTF-16 order (U+E000 after 😀), 2 KiB each: the
    // one-pass writer moved everything below a level once per level.
    let mut text = String::from("0");
    for _ in 0..511 {
        text = format!("{{\"\u{e000}\":\"{}\",\"😀\":{text}}}", "x".repeat(2020));
    }
    assert!(text.len() <= 1 << 20);
    let dir = tempfile::tempdir().unwrap();
    let out = cookwala_in(dir.path(), &["canon", "-"], text.as_bytes());
    assert_exit(&out, 0);
    let value = canonical_json::parse(text.as_bytes()).unwrap();
    assert_eq!(out.stdout, canonical_json::to_jcs(&value).unwrap());
}

#[test]
fn verify_with_a_full_key_set() {
    // 256 keys (the most a set holds), the signer's last, and a signed document at the limit
    // of nesting.
    let dir = tempfile::tempdir().unwrap();
    let mut records = Vec::new();
    for i in 0..256 {
        let kid = format!("did:web:example.org#key-{i}");
        assert_exit(&cookwala(dir.path(), &["keygen", "--kid", &kid, "--out", "k"]), 0);
        let path = dir.path().join(format!("k/did_web_example.org_key-{i}.pub.json"));
        let set = canonical_json::parse(&std::fs::read(path).unwrap()).unwrap();
        records.extend(set.as_array().unwrap().iter().cloned());
    }
    let set = canonical_json::Value::Array(records);
    std::fs::write(dir.path().join("set.json"), canonical_json::to_jcs(&set).unwrap()).unwrap();
    let doc = emoji_levels().replacen('{', r#"{"kind":"Recall","id":"rc-1","#, 1);
    std::fs::write(dir.path().join("doc.json"), doc).unwrap();
    let key = "k/did_web_example.org_key-255.key.json";
    // Signed now: the keys are valid from their creation.
    let signed = cookwala(dir.path(), &["sign", "--key", key, "doc.json"]);
    assert_exit(&signed, 0);
    std::fs::write(dir.path().join("signed.json"), &signed.stdout).unwrap();
    let out = cookwala(dir.path(), &["verify", "--keys", "set.json", "signed.json"]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), "ok");
}
