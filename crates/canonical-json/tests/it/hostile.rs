//! Worst shapes at the documented maxima (issue 22): each test here would not finish with a
//! writer that did super-linear work, so CI's time limit is the failure, not a timed assertion.
//!
//! The maxima: the parser's nesting limit ([`DEFAULT_MAX_DEPTH`], 512), the writers' own
//! ([`MAX_WRITE_DEPTH`], for trees built in code), and the hub's request body limit (1 MiB).

use canonical_json::digest::{document_hash, jcs_hash_without, python_id_without};
use canonical_json::{
    DEFAULT_MAX_DEPTH, Limits, MAX_WRITE_DEPTH, Map, Value, Wanted, canonicalize, parse, skim,
    to_jcs, to_python, to_python_compact, to_python_pretty,
};

/// The hub's default request body limit.
const BODY_LIMIT: usize = 1 << 20;

/// Issue 22's reproduction: `levels` arrays each holding an object with an ordinary key
/// (holding the next level) and an emoji key, inside `{"doc":{"d":...}}`.
fn emoji_levels(levels: usize) -> String {
    let mut text = String::new();
    for i in 0..levels {
        text.push_str(&format!("[{{\"k{i}\":"));
    }
    text.push('1');
    for i in (0..levels).rev() {
        text.push_str(&format!(",\"😀\":{i}}}]"));
    }
    format!("{{\"doc\":{{\"d\":{text}}}}}")
}

/// Every writer and digest over one parsed document, checking the one-pass path agrees.
fn write_everything(text: &str) {
    let value = parse(text.as_bytes()).unwrap();
    let jcs = to_jcs(&value).unwrap();
    assert_eq!(canonicalize(text.as_bytes(), Limits::default()).unwrap(), jcs);
    assert!(document_hash(&value).unwrap().starts_with("sha256:"));
    assert!(jcs_hash_without(&value, &["doc"]).unwrap().starts_with("sha256:"));
    assert_eq!(python_id_without(&value, &["x"]).unwrap().len(), 64);
    to_python_compact(&value).unwrap();
    to_python_pretty(&value).unwrap();
    let keep = canonical_json::PyFormat { indent: None, keep_unicode: true };
    to_python(&value, keep).unwrap();
    let mut found = [None];
    skim(text.as_bytes(), Limits::default(), &Wanted::new(&["doc"]), &mut found).unwrap();
    assert!(found[0].is_some());
}

#[test]
fn issue_22_emoji_keys_at_the_parsers_depth_limit() {
    // Two levels of nesting per step, plus the two outer objects: exactly the limit. The old
    // JCS writer doubled its work per step (2^255 here).
    let steps = (DEFAULT_MAX_DEPTH - 2) / 2;
    let text = emoji_levels(steps);
    write_everything(&text);
    // One level more is refused by the parser, as documented.
    assert!(parse(emoji_levels(steps + 1).as_bytes()).is_err());
}

#[test]
fn emoji_keys_at_the_writers_depth_limit() {
    // A tree built in code can nest to the writers' own limit: one object per level, each
    // with a high key beside the next level.
    let mut value = Value::Null;
    for i in 0..MAX_WRITE_DEPTH {
        let mut map = Map::new();
        map.insert("a".into(), value);
        map.insert("\u{e000}".into(), Value::String(i.to_string()));
        map.insert("😀".into(), Value::Bool(true));
        value = Value::Object(map);
    }
    let jcs = to_jcs(&value).unwrap();
    // Each level writes `{"a":` … `,"😀":true,"":"i"}` once: the length is linear in depth,
    // and the keys come out in UTF-16 order (the emoji before U+E000).
    assert!(jcs.starts_with("{\"a\":{\"a\":".as_bytes()));
    assert!(jcs.ends_with(",\"😀\":true,\"\u{e000}\":\"1023\"}".as_bytes()));
    to_python_pretty(&value).unwrap();
    document_hash(&value).unwrap();
}

#[test]
fn a_body_limit_of_high_keys_sorts_in_n_log_n() {
    // One object filling the body limit with keys that all need the UTF-16 sort and share a
    // long prefix (each comparison walks it).
    let prefix = "😀".repeat(64);
    let mut text = String::from("{");
    let mut i = 0;
    while text.len() < BODY_LIMIT - 512 {
        if i > 0 {
            text.push(',');
        }
        let high = if i % 2 == 0 { "\u{e000}" } else { "\u{10000}" };
        text.push_str(&format!("\"{prefix}{high}{i}\":{i}"));
        i += 1;
    }
    text.push('}');
    write_everything(&format!("{{\"doc\":{text}}}"));
}

#[test]
fn a_body_limit_of_nesting_and_escapes() {
    // The deepest the parser takes, around a string that fills the rest of the body with
    // escapes (each written once, expanded or kept).
    let depth = DEFAULT_MAX_DEPTH - 2;
    let filler = "\\u00e9\\n\\\"\\ud83d\\ude00".repeat((BODY_LIMIT - 4 * depth) / 28);
    let text = format!(
        "{{\"doc\":{}{{\"\u{e000}\":\"{filler}\",\"😀\":1}}{}}}",
        "[".repeat(depth - 1),
        "]".repeat(depth - 1)
    );
    assert!(text.len() <= BODY_LIMIT);
    write_everything(&text);
}
