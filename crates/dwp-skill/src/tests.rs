#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::identify::identify;
use crate::launcher::{MARKER, is_launcher, launcher};

const SKILL_MD: &str = "---\nname: deepworkplan\nversion: \"2.10.0\"\n---\n# x\n";

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn identify_reads_the_front_matter_and_the_helpers() {
    let shared = names(&["ledger.py", "contract_v6.py", "config.py", "notes.md", "context.sh"]);
    let info = identify(Some(SKILL_MD), &shared, false).unwrap();
    assert_eq!(info.version, "2.10.0");
    let listed: Vec<(&str, Option<&str>)> =
        info.helpers.iter().map(|h| (h.name.as_str(), h.runs)).collect();
    assert_eq!(
        listed,
        [
            ("config.py", None),
            ("context.sh", None),
            ("contract_v6.py", Some("contract")),
            ("ledger.py", Some("ledger")),
        ]
    );
}

#[test]
fn identify_refuses_with_the_missing_sign() {
    let shared = names(&["ledger.py", "contract_v6.py"]);
    let cases: &[(Option<&str>, &[String], bool, &str)] = &[
        (None, &shared, false, "no SKILL.md"),
        (None, &shared, true, "give that folder"),
        (Some("# no front matter\n"), &shared, false, "no front matter"),
        (Some("---\nname: deepworkplan\n"), &shared, false, "no front matter"),
        (Some("---\nname: other\nversion: 1.0\n---\n"), &shared, false, "\"other\""),
        (Some("---\nversion: 1.0\n---\n"), &shared, false, "no `name:`"),
        (Some("---\nname: deepworkplan\n---\n"), &shared, false, "no version"),
        (Some("---\nname: deepworkplan\nversion: latest\n---\n"), &shared, false, "release"),
        (Some("---\nname: deepworkplan\nversion: 2\n---\n"), &shared, false, "release"),
        (Some(SKILL_MD), &shared[..1], false, "contract_v6.py is missing"),
    ];
    for (text, shared, holds, needle) in cases {
        let err = identify(*text, shared, *holds).unwrap_err();
        assert!(err.contains(needle), "{text:?}: {err}");
    }
}

#[test]
fn launcher_quotes_any_path_and_is_recognised() {
    let text = launcher("ledger.py", "ledger", "/opt/it's a \\ path\n@NAME@/dwp");
    assert!(
        text.contains(r"_dwp = os.environ.get('DWP_BIN') or '/opt/it\'s a \\ path\x0a@NAME@/dwp'")
    );
    assert!(text.contains("[_dwp, 'ledger']"));
    assert!(text.contains("'originals', 'shared', 'ledger.py')"));
    assert!(is_launcher(text.as_bytes()));
    assert!(!is_launcher(b"#!/usr/bin/env python3\nprint('hi')\n"));
    assert!(text.lines().nth(1).unwrap().starts_with(MARKER));
}
