//! Evidence stays inside the repository (issue 23): evidence paths, absolute or relative,
//! resolve (after symlinks) inside the plan or the repository; `verify` flags any recorded
//! path that does not; `export` copies only such files, into a fresh destination outside the
//! plan.

use std::os::unix::fs::symlink;

use canonical_json::Value;

use crate::support::{Scratch, expect, text, tree};

fn started() -> Scratch {
    let s = Scratch::new();
    s.materialize();
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "OK");
    s
}

fn signoff(s: &Scratch, path: &str) -> std::process::Output {
    s.ledger(&[
        "signoff",
        "--criterion",
        "AC-review",
        "--evidence-path",
        path,
        "--authority",
        "dev",
    ])
}

/// The absolute `/etc/passwd` is refused like `../../../etc/passwd`; the refusal is recorded
/// and no event cites the file. An absolute path inside the repository is accepted.
#[test]
fn absolute_evidence_outside_the_repository_is_refused_and_recorded() {
    let s = started();
    let outside = s._tmp.path().join("outside.txt");
    std::fs::write(&outside, "secret\n").unwrap();
    symlink(&outside, s.root.join("escape.txt")).unwrap();
    let refused = [
        "/etc/passwd".to_owned(),
        "/proc/self/environ".to_owned(),
        outside.display().to_string(),
        s.root.join("escape.txt").display().to_string(),
        "escape.txt".to_owned(),
    ];
    for p in &refused {
        let before = s.journal().len();
        expect(&signoff(&s, p), 1, "does not resolve inside the plan or the repository");
        let added = &s.journal()[before..];
        assert_eq!(added.len(), 1, "{p}");
        assert_eq!(added[0].get("type").and_then(Value::as_str), Some("refusal"));
        assert!(
            added[0].get("reason").and_then(Value::as_str).unwrap().starts_with("evidence-path: ")
        );
    }
    let raw = std::fs::read_to_string(s.plan().join("journal.ndjson")).unwrap();
    assert!(s.journal().iter().all(|e| e.get("evidence_path").is_none()), "{raw}");
    // Inside the repository, absolute or relative, it is accepted.
    std::fs::write(s.root.join("REVIEW.txt"), "read\n").unwrap();
    let inside = s.root.join("REVIEW.txt").display().to_string();
    expect(&signoff(&s, &inside), 0, "OK: signoff AC-review");
}

/// A hand-written journal citing `/etc/shadow` and `/proc/self/environ` fails `verify`, and
/// `export` copies neither (they are listed as `outside_evidence`).
#[test]
fn recorded_paths_outside_the_repository_fail_verify_and_are_never_exported() {
    let s = started();
    let journal = s.plan().join("journal.ndjson");
    let mut raw = std::fs::read_to_string(&journal).unwrap();
    let first = s.journal()[0].clone();
    let cid = first.get("contract_id").and_then(Value::as_str).unwrap().to_owned();
    for (seq, path) in [(3, "/etc/shadow"), (4, "/proc/self/environ")] {
        raw.push_str(&format!(
            "{{\"actor\":{{\"identity\":\"dwp-ledger/6.0\",\"kind\":\"helper\"}},\"command\":\"true\",\"contract_id\":\"{cid}\",\"criterion\":\"AC-pass\",\"cwd\":\"/\",\"evidence_path\":\"{path}\",\"exit_code\":0,\"plan\":\"PLAN_001_demo_plan\",\"schema\":\"https://deepworkplan.com/schema/journal-event/v6.json\",\"seq\":{seq},\"task\":\"T-one\",\"timeout_seconds\":600,\"trust\":\"observed\",\"ts\":\"2026-12-01T00:00:00Z\",\"type\":\"gate_run\"}}\n"
        ));
    }
    std::fs::write(&journal, raw).unwrap();
    let p = s.plan();
    let out = crate::dwp(&["verify", p.to_str().unwrap()]);
    expect(
        &out,
        1,
        "[ ] 2 cited path(s) outside the plan and the repository; first: seq 3: '/etc/shadow'",
    );
    let dest = s._tmp.path().join("export");
    let out = s.ledger(&["export", "--dest", dest.to_str().unwrap()]);
    expect(&out, 0, "");
    let copied: Vec<String> = tree(&dest)
        .into_iter()
        .map(|(p, _)| p.strip_prefix(&dest).unwrap().display().to_string())
        .collect();
    assert!(copied.iter().all(|c| !c.contains("shadow") && !c.contains("environ")), "{copied:?}");
    assert!(!copied.iter().any(|c| c.starts_with("external")), "{copied:?}");
    let manifest = std::fs::read_to_string(dest.join("EXPORT_MANIFEST.json")).unwrap();
    let manifest = canonical_json::parse(manifest.as_bytes()).unwrap();
    let listed: Vec<&str> = manifest
        .get("outside_evidence")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(listed, ["/etc/shadow", "/proc/self/environ"]);
}

/// `export --dest` refuses a destination that is not empty or lies inside the plan, writing
/// nothing; a fresh one receives the bundle, repository evidence under `repo/`.
#[test]
fn export_goes_to_a_fresh_place_outside_the_plan() {
    let s = started();
    std::fs::write(s.root.join("REVIEW.txt"), "read\n").unwrap();
    expect(&signoff(&s, "REVIEW.txt"), 0, "OK");
    let plan_before = tree(&s.plan());
    for dest in [s.plan(), s.plan().join("bundle"), s.plan().join("gates/x")] {
        let out = s.ledger(&["export", "--dest", dest.to_str().unwrap()]);
        expect(&out, 1, "lies inside the plan folder");
    }
    let full = s._tmp.path().join("full");
    std::fs::create_dir_all(&full).unwrap();
    std::fs::write(full.join("keep.txt"), "mine\n").unwrap();
    expect(
        &s.ledger(&["export", "--dest", full.to_str().unwrap()]),
        1,
        "exists and is not an empty folder",
    );
    assert_eq!(tree(&full).len(), 1, "nothing written into a refused destination");
    assert_eq!(plan_before, tree(&s.plan()), "nothing written into the plan");
    // A pointer whose text climbs (`<repo>/../../<tmp>/repo/…`) but resolves inside the
    // repository is copied by its real path, never by its text.
    let tmp_name = s._tmp.path().file_name().unwrap().to_str().unwrap().to_owned();
    let climbing = format!("{}/../../{tmp_name}/repo/NOTE.txt", s.root.display());
    std::fs::write(s.root.join("NOTE.txt"), "note\n").unwrap();
    let add = [
        "append",
        "--type",
        "observation",
        "--trust",
        "imported",
        "--evidence-path",
        &climbing,
        "--json",
        "{\"statement\":\"x\"}",
    ];
    expect(&s.ledger(&add), 0, "OK: appended observation");
    let empty = s._tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = s.ledger(&["export", "--dest", empty.to_str().unwrap()]);
    expect(&out, 0, "");
    assert_eq!(std::fs::read_to_string(empty.join("repo/REVIEW.txt")).unwrap(), "read\n");
    assert_eq!(std::fs::read_to_string(empty.join("repo/NOTE.txt")).unwrap(), "note\n");
    let outside_dest = tree(s._tmp.path()).into_iter().filter(|(p, _)| !p.starts_with(&empty));
    let written_elsewhere: Vec<_> =
        outside_dest.filter(|(p, _)| p.ends_with("NOTE.txt") && !p.starts_with(&s.root)).collect();
    assert!(written_elsewhere.is_empty(), "{written_elsewhere:?}");
    let _ = text(&out.stdout);
}
