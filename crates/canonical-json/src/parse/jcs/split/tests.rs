//! The split pass against the one-thread pass: the same bytes and the same errors for any
//! number of threads, on documents whose guesses land anywhere (inside strings that look like
//! elements, in objects, past arrays), whose objects span parts out of order, whose numbers
//! grow, at the depth limit.

use proptest::prelude::*;

use crate::parse::{Limits, canonicalize, split_into};

/// A JSON tree printed with its members in the order given (JCS must reorder them).
#[derive(Clone, Debug)]
enum Tree {
    Leaf(String),
    Arr(Vec<Tree>),
    Obj(Vec<(String, Tree)>),
}

fn print(t: &Tree, ws: &str, out: &mut String) {
    match t {
        Tree::Leaf(s) => out.push_str(s),
        Tree::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                    out.push_str(ws);
                }
                print(item, ws, out);
            }
            out.push(']');
        }
        Tree::Obj(members) => {
            out.push('{');
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                    out.push_str(ws);
                }
                out.push_str(&format!("{k:?}:"));
                print(v, ws, out);
            }
            out.push('}');
        }
    }
}

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("1".to_owned()),
        Just("-0".to_owned()),
        Just("1e20".to_owned()),
        Just("2.50".to_owned()),
        Just("true".to_owned()),
        Just("null".to_owned()),
        // Strings that look like element starts, and escapes.
        Just(r#"", {\"x\":[1, {\"y\":2}]} ,[""#.to_owned()),
        Just(r#""a,{b""#.to_owned()),
        Just(r#""\u00e9\n\"""#.to_owned()),
        "[a-z ,{}\\[\\]]{0,12}".prop_map(|s| format!("{s:?}")),
    ]
}

fn tree() -> impl Strategy<Value = Tree> {
    leaf().prop_map(Tree::Leaf).prop_recursive(6, 200, 12, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..12).prop_map(Tree::Arr),
            prop::collection::vec(("[a-e]{1,2}", inner), 0..6).prop_map(Tree::Obj),
        ]
    })
}

fn same_as_one_thread(input: &str, limits: Limits) -> Result<(), TestCaseError> {
    let expected = canonicalize(input.as_bytes(), limits);
    for jobs in 2..=5 {
        // Room for the bytes (numbers may make them longer than the input).
        let room = expected.as_ref().map_or(0, Vec::len).max(input.len());
        let mut out = vec![0u8; room + 64];
        let got = split_into(input.as_bytes(), limits, &mut out, jobs, 0);
        let got = got.map(|ranges| {
            ranges
                .map(|ranges| ranges.into_iter().flat_map(|r| out[r].to_vec()).collect::<Vec<u8>>())
        });
        match &expected {
            Ok(bytes) => {
                prop_assert_eq!(got, Ok(Some(bytes.clone())), "jobs {} input {}", jobs, input)
            }
            Err(e) => prop_assert_eq!(got, Err(e.clone()), "jobs {} input {}", jobs, input),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn split_writes_what_one_thread_writes(t in tree(), ws in prop_oneof![Just(""), Just(" "), Just("\n  ")]) {
        let mut text = String::new();
        print(&t, ws, &mut text);
        same_as_one_thread(&text, Limits::default())?;
        // The same inside a long array of such documents, out-of-order members around it.
        let mut big = String::from("{\"z\":1,\"items\":[");
        for i in 0..8 {
            if i > 0 {
                big.push(',');
                big.push_str(ws);
            }
            big.push_str(&text);
        }
        big.push_str("],\"a\":[{\"k\":1}]}");
        same_as_one_thread(&big, Limits::default())?;
        // At the depth limit: only the parts' depths together decide.
        for max_depth in 2..7 {
            same_as_one_thread(&big, Limits { max_depth, ..Limits::default() })?;
        }
    }

    #[test]
    fn split_refuses_what_one_thread_refuses(t in tree(), cut in 0usize..400, junk in prop_oneof![Just("}"), Just(","), Just("\"a\":1"), Just("\u{1}")]) {
        let mut text = String::from("[");
        for i in 0..6 {
            if i > 0 {
                text.push(',');
            }
            print(&t, "", &mut text);
        }
        text.push(']');
        let at = (cut % (text.len() + 1)).min(text.len());
        if text.is_char_boundary(at) {
            text.insert_str(at, junk);
            same_as_one_thread(&text, Limits::default())?;
        }
    }
}

#[test]
fn a_guess_inside_a_string_is_never_adopted() {
    // The middle of the document is one long string full of element-like text.
    let fake = r#", {\"a\":1}, [2]"#.repeat(200);
    let text = format!(r#"[{{"b":2,"a":1}},"{fake}",{{"d":[1,2],"c":3}}]"#);
    same_as_one_thread(&text, Limits::default()).unwrap();
}

#[test]
fn an_output_too_short_is_reported_as_not_fitting() {
    let text = format!("[{}]", vec!["1e20"; 2000].join(","));
    let expected = canonicalize(text.as_bytes(), Limits::default()).unwrap();
    let mut out = vec![0u8; text.len()];
    let got = split_into(text.as_bytes(), Limits::default(), &mut out, 3, 0).unwrap();
    assert!(got.is_none());
    let mut out = vec![0u8; expected.len() + text.len()];
    let got = split_into(text.as_bytes(), Limits::default(), &mut out, 3, 0).unwrap().unwrap();
    let bytes: Vec<u8> = got.into_iter().flat_map(|r| out[r].to_vec()).collect();
    assert_eq!(bytes, expected);
}

#[test]
fn a_long_array_is_written_in_parts_by_each_thread() {
    let element = r#"{"name": "x", "id": 7, "tags": ["a", "b"]}"#;
    let text = format!(r#"{{"z": 0, "items": [{}], "a": 1}}"#, vec![element; 5000].join(", "));
    let expected = canonicalize(text.as_bytes(), Limits::default()).unwrap();
    for jobs in 2..=4 {
        let mut out = vec![0u8; text.len()];
        let got =
            split_into(text.as_bytes(), Limits::default(), &mut out, jobs, 0).unwrap().unwrap();
        // Each worker's part was adopted (and the object around them reordered across parts).
        assert!(got.len() >= jobs, "{jobs} threads wrote {} parts", got.len());
        let bytes: Vec<u8> = got.into_iter().flat_map(|r| out[r].to_vec()).collect();
        assert_eq!(bytes, expected);
    }
}
