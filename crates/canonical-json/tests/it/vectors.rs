use canonical_json::{digest, parse, to_jcs};
use test_support::{read, shared};

#[test]
fn rfc8785_input_output_pairs() {
    let Some(dir) = shared("vectors/jcs") else { return };
    let mut checked = 0;
    let mut names: Vec<_> =
        std::fs::read_dir(dir.join("input")).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    for name in names {
        let input = std::fs::read(dir.join("input").join(&name)).unwrap();
        let expected = std::fs::read(dir.join("output").join(&name)).unwrap();
        let value = parse(&input).unwrap_or_else(|e| panic!("{name:?}: {e}"));
        let got = to_jcs(&value).unwrap();
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&expected), "{name:?}");
        // The canonical form is a fixed point.
        assert_eq!(to_jcs(&parse(&got).unwrap()).unwrap(), got, "{name:?} not idempotent");
        checked += 1;
    }
    assert_eq!(checked, 6, "expected the six RFC 8785 pairs");
}

#[test]
fn cookwala_hash_vectors() {
    let Some(path) = shared("standards/cookwala/conformance/hash.json") else { return };
    let vectors = parse(read(&path).as_bytes()).unwrap();
    let vectors = vectors.as_array().unwrap();
    assert_eq!(vectors.len(), 4);
    for v in vectors {
        let id = v.get("id").and_then(|i| i.as_str()).unwrap();
        let input = v.get("input").unwrap();
        let expected = v.get("expected").unwrap();
        let body = digest::without_top_level(input, &["hash", "signature"]);
        let canonical = String::from_utf8(to_jcs(&body).unwrap()).unwrap();
        assert_eq!(
            Some(canonical.as_str()),
            expected.get("canonical").and_then(|c| c.as_str()),
            "{id}"
        );
        let hash = digest::document_hash(input).unwrap();
        assert_eq!(Some(hash.as_str()), expected.get("hash").and_then(|h| h.as_str()), "{id}");
    }
}
