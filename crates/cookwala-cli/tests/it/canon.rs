use crate::{assert_exit, cookwala, cookwala_in, stderr, stdout};

#[test]
fn canon_writes_jcs_without_trailing_newline() {
    let dir = tempfile::tempdir().unwrap();
    let out = cookwala_in(dir.path(), &["canon"], br#"{ "b": 1.0, "a": [1e21, "\u00e9"] }"#);
    assert_exit(&out, 0);
    assert_eq!(out.stdout, "{\"a\":[1e+21,\"é\"],\"b\":1}".as_bytes());
    std::fs::write(dir.path().join("d.json"), br#"{"z":1,"a":-0.0}"#).unwrap();
    let out = cookwala(dir.path(), &["canon", "d.json"]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), r#"{"a":0,"z":1}"#);
}

#[test]
fn canon_refuses_bad_input_with_a_message_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let cases: Vec<(&[u8], &str)> = vec![
        (br#"{"a":1,"a":2}"#, "duplicate object key \"a\" at byte 7"),
        (b"[1,2", "unexpected end of input at byte 4"),
        (b"{} {}", "trailing data"),
        (b"NaN", "unexpected character 'N' at byte 0"),
        (br#""\ud800""#, "lone UTF-16 surrogate"),
        (b"9007199254740993", "outside the JCS safe range"),
        (b"\xff\xfe", "unexpected byte 0xff"),
        (b"", "unexpected end of input"),
        (deep.as_bytes(), "nesting deeper than 512 levels"),
    ];
    for (input, message) in cases {
        let out = cookwala_in(dir.path(), &["canon", "-"], input);
        assert_exit(&out, 1);
        assert!(out.stdout.is_empty(), "no partial output");
        assert!(stderr(&out).contains(message), "{message}: {}", stderr(&out));
    }
    let out = cookwala(dir.path(), &["canon", "missing.json"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("cannot open missing.json"));
}

#[test]
fn hash_prints_the_document_hash() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("d.json"), br#"{"a":1,"hash":"sha256:00","signature":{}}"#)
        .unwrap();
    let expected = canonical_json::digest::sha256_prefixed(br#"{"a":1}"#);
    let out = cookwala(dir.path(), &["hash", "d.json"]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), format!("{expected}\n"));
    let out = cookwala(dir.path(), &["hash", "--json", "d.json"]);
    assert_eq!(stdout(&out), format!("{{\"hash\":\"{expected}\"}}\n"));
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    assert_exit(&cookwala(dir.path(), &["hash"]), 2);
    assert_exit(&cookwala(dir.path(), &["frobnicate"]), 2);
    assert_exit(&cookwala(dir.path(), &["verify", "x.json"]), 2);
}

#[test]
fn oversized_input_is_refused_without_reading_it_all() {
    let dir = tempfile::tempdir().unwrap();
    // One byte over the 64 MiB limit, as a valid JSON string so only the size can fail.
    let mut big = vec![b'"'];
    big.resize(64 * 1024 * 1024, b'a');
    big.push(b'"');
    let out = cookwala_in(dir.path(), &["canon"], &big);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("input larger than 67108864 bytes"), "{}", stderr(&out));
}

/// Files of 4 MiB and more are read into, and written from, prepared memory: the bytes are
/// the library's, whether the output fits the buffer sized from the input (whitespace goes
/// away) or not (`1e20` grows to 21 digits), and errors read as for small files.
#[test]
fn large_files_give_the_same_bytes_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let member = "{ \"z\": [1.5, -0.0, \"tab\\there \\u00e9 \\ud83d\\ude00 \\/\"], \"a\": 17 },\n";
    let pretty = format!("[\n{}{{}}\n]", member.repeat(4 * 1024 * 1024 / member.len() + 1));
    let growing = format!("[{}1e20]", "1e20,".repeat(4 * 1024 * 1024 / 5 + 1));
    let mut too_large = growing.clone().into_bytes();
    too_large.resize(64 * 1024 * 1024 + 1, b' ');
    for (name, text) in [("pretty.json", pretty.as_bytes()), ("growing.json", growing.as_bytes())] {
        assert!(text.len() >= 4 << 20, "{name} is {} bytes", text.len());
        std::fs::write(dir.path().join(name), text).unwrap();
        let out = cookwala(dir.path(), &["canon", name]);
        assert_exit(&out, 0);
        let expected = canonical_json::canonicalize(text, canonical_json::Limits::default());
        assert!(out.stdout == expected.unwrap(), "{name}: other bytes than the library's");
    }
    let mut broken = pretty.clone().into_bytes();
    let at = broken.len() - 3;
    broken[at] = b',';
    std::fs::write(dir.path().join("broken.json"), &broken).unwrap();
    std::fs::write(dir.path().join("huge.json"), &too_large).unwrap();
    for (name, message) in [
        ("broken.json", "broken.json is not valid JSON"),
        ("huge.json", "input larger than 67108864 bytes"),
    ] {
        let out = cookwala(dir.path(), &["canon", name]);
        assert_exit(&out, 1);
        assert!(out.stdout.is_empty(), "no partial output");
        assert!(stderr(&out).contains(message), "{message}: {}", stderr(&out));
    }
}
