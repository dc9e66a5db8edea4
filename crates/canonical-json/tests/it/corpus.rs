use std::process::Command;

use canonical_json::{PyFormat, Value, es_number_string, parse, python_float_repr, to_python};
use test_support::tool;

fn gen_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gen")
}

fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(out.status.success(), "{program} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn double(hex: &str) -> f64 {
    f64::from_bits(u64::from_str_radix(hex, 16).unwrap())
}

#[test]
fn es6_number_corpus_from_node() {
    let Some(node) = tool("node") else { return };
    let script = gen_dir().join("es6-numbers.mjs");
    let text = run(node.to_str().unwrap(), &[script.to_str().unwrap(), "120000", "20261130"]);
    let mut n = 0;
    let mut failures = Vec::new();
    for line in text.lines() {
        let (hex, expected) = line.split_once(',').unwrap();
        let x = double(hex);
        let got = es_number_string(x);
        if got != expected && failures.len() < 20 {
            failures.push(format!("{hex}: got {got}, node {expected}"));
        }
        // Our parser must read Node's text back to the same double.
        let reparsed = parse(expected.as_bytes()).unwrap().as_f64().unwrap();
        assert!(reparsed == x || (x == 0.0 && reparsed == 0.0), "{hex} does not round-trip");
        n += 1;
    }
    assert!(n >= 100_000, "only {n} numbers generated");
    assert!(failures.is_empty(), "{} mismatches, first: {failures:#?}", failures.len());
}

#[test]
fn python_repr_and_dumps_corpus() {
    let Some(python) = tool("python3") else { return };
    let script = gen_dir().join("python-corpus.py");
    let text =
        run(python.to_str().unwrap(), &[script.to_str().unwrap(), "50000", "3000", "20261130"]);
    let (mut floats, mut docs) = (0, 0);
    for line in text.lines() {
        let row = parse(line.as_bytes()).unwrap();
        let row = row.as_array().unwrap();
        let field = |i: usize| row[i].as_str().unwrap();
        if row.len() == 2 {
            assert_eq!(python_float_repr(double(field(0))), field(1), "repr of {}", field(0));
            floats += 1;
            continue;
        }
        let doc = parse(field(0).as_bytes()).unwrap_or_else(|e| panic!("{e}: {}", field(0)));
        let compact = to_python(&doc, PyFormat::COMPACT).unwrap();
        assert_eq!(String::from_utf8(compact).unwrap(), field(1));
        let mut pretty = to_python(&doc, PyFormat::PRETTY).unwrap();
        pretty.push(b'\n');
        assert_eq!(String::from_utf8(pretty).unwrap(), field(2));
        // Python's own compact output parses back to the same value.
        assert_eq!(parse(field(1).as_bytes()).unwrap(), doc);
        docs += 1;
    }
    assert_eq!((floats, docs), (50_000, 3_000));
    let _: Option<Value> = None;
}
