//! Gates that run what was declared (issue 23): shell syntax refused, the program resolved as
//! the allow-list means it, the exact argv recorded, and the command bound to its criterion.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use canonical_json::Value;

use crate::support::{Scratch, expect, text};

/// A folder `name` beside the scratch repository (never inside it) holding one executable
/// `#!/bin/sh` script per `(program, body)`.
pub(crate) fn fake_programs(s: &Scratch, name: &str, programs: &[(&str, &str)]) -> PathBuf {
    let dir = s._tmp.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for (program, body) in programs {
        write_script(&dir.join(program), body);
    }
    dir
}

fn write_script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn ledger_with_path(s: &Scratch, path: &str, args: &[&str]) -> Output {
    let plan = s.plan();
    Command::new(env!("CARGO_BIN_EXE_dwp"))
        .args(["ledger", "--plan", plan.to_str().unwrap()])
        .args(args)
        .env("PATH", path)
        .output()
        .unwrap()
}

/// `dwp ledger ARGS` with `dir` first on PATH.
pub(crate) fn ledger_on_path(s: &Scratch, dir: &Path, args: &[&str]) -> Output {
    let old = std::env::var("PATH").unwrap_or_default();
    ledger_with_path(s, &format!("{}:{old}", dir.display()), args)
}

/// `dwp ledger ARGS` with `dir` as the whole PATH.
pub(crate) fn ledger_only_path(s: &Scratch, dir: &Path, args: &[&str]) -> Output {
    ledger_with_path(s, &dir.display().to_string(), args)
}

fn started() -> Scratch {
    let s = Scratch::new();
    s.materialize();
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "OK");
    s
}

fn gate(s: &Scratch, task: &str, criterion: &str, json: &str) -> Output {
    s.ledger(&["gate", "--task", task, "--criterion", criterion, "--json", json, "--no-reuse"])
}

fn last(s: &Scratch) -> Value {
    s.journal().pop().unwrap()
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Each compound command of issue 23 (every one of them `touch`es a file when a shell reads
/// it) is refused, runs nothing, and leaves exactly one `refusal` naming the rule.
#[test]
fn shell_syntax_is_refused_recorded_and_never_run() {
    let s = started();
    let cases: &[(&str, &str)] = &[
        ("true && touch X", "shell-syntax"),
        ("true $(touch X)", "shell-syntax"),
        ("true `touch X`", "shell-syntax"),
        ("true | touch X", "shell-syntax"),
        ("true > X", "shell-syntax"),
        ("false || touch X", "shell-syntax"),
        ("  true ; touch X", "shell-syntax"),
        ("true\ntouch X", "shell-syntax"),
        ("true # ; touch X", "shell-syntax"),
        ("true 'unterminated", "shell-syntax"),
    ];
    for (command, rule) in cases {
        let json = canonical_json::to_python_compact(&Value::String((*command).to_owned()))
            .map(|b| text(&b))
            .unwrap();
        let before = s.journal().len();
        let out = gate(&s, "T-one", "AC-pass", &json);
        expect(&out, 1, "ERROR: gate command ");
        assert!(!s.root.join("X").exists(), "{command:?} ran a second command");
        let added = &s.journal()[before..];
        assert_eq!(added.len(), 1, "{command:?}: exactly one event, the refusal");
        let r = &added[0];
        assert_eq!(str_at(r, "type"), "refusal");
        assert_eq!(str_at(r, "subject"), "T-one");
        assert_eq!(str_at(r, "stage"), "gate");
        assert!(str_at(r, "reason").starts_with(&format!("{rule}: ")), "{r:?}");
        assert!(str_at(r, "note").starts_with("request: ledger gate; rule: "), "{r:?}");
    }
    // The argv form is held to the same rule: no word is shell syntax.
    expect(&gate(&s, "T-one", "AC-pass", r#"["true", "&&", "touch", "X"]"#), 1, "shell syntax");
    assert!(!s.root.join("X").exists());
    // Nothing observed was recorded for any of them.
    assert!(s.types().iter().all(|t| t != "gate_run"));
}

/// A class names a program found on PATH: an executable of one's own named like the class (a
/// file `true` in the repository, `./true`, an absolute path to it, a PATH entry that points
/// into the repository or is relative) never passes for it.
#[test]
fn an_executable_of_ones_own_is_never_the_class() {
    let s = started();
    write_script(&s.root.join("true"), "touch X");
    let own = s.root.join("true");
    for json in [r#""./true""#.to_owned(), format!("\"{}\"", own.display())] {
        let out = gate(&s, "T-one", "AC-pass", &json);
        expect(&out, 1, "is not a declared command class");
        assert!(!s.root.join("X").exists());
        assert!(str_at(&last(&s), "reason").starts_with("command-class: "));
    }
    // PATH entries inside the repository, or relative ones, are skipped: the real `true` runs.
    for path_dir in [s.root.clone(), PathBuf::from(".")] {
        let out = ledger_on_path(
            &s,
            &path_dir,
            &[
                "gate",
                "--task",
                "T-one",
                "--criterion",
                "AC-pass",
                "--json",
                "\"true\"",
                "--no-reuse",
            ],
        );
        expect(&out, 0, "RAN: exit 0");
        assert!(!s.root.join("X").exists(), "the repository's own `true` ran");
    }
    // A program named like a class found on PATH outside the repository is the class: that is
    // what a class means.
    let bin = fake_programs(&s, "bin", &[("true", "echo from-path")]);
    let out = ledger_on_path(
        &s,
        &bin,
        &["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\"", "--no-reuse"],
    );
    expect(&out, 0, "RAN: exit 0");
    let log = str_at(&last(&s), "evidence_path").to_owned();
    assert!(std::fs::read_to_string(s.plan().join(log)).unwrap().contains("from-path"));
}

/// A criterion closes only on the command its task declares for it: `AC-fail` (declared
/// `false`) cannot be closed by gating `true`, and completion stays refused.
#[test]
fn a_gate_is_bound_to_its_criterion() {
    let s = started();
    expect(&gate(&s, "T-one", "AC-pass", "\"true\""), 0, "RAN: exit 0");
    std::fs::write(s.plan().join("REVIEW.txt"), "read\n").unwrap();
    let signoff = ["signoff", "--criterion", "AC-review", "--evidence-path", "REVIEW.txt"];
    let signoff: Vec<&str> = signoff.iter().copied().chain(["--authority", "dev"]).collect();
    expect(&s.ledger(&signoff), 0, "OK");
    expect(&s.ledger(&["start", "--task", "T-two"]), 0, "OK");
    let before = s.journal().len();
    let out = gate(&s, "T-two", "AC-fail", "\"true\"");
    expect(&out, 1, "is not the check 'false' that task T-two declares for AC-fail");
    let r = last(&s);
    assert_eq!(s.journal().len(), before + 1);
    assert!(str_at(&r, "reason").starts_with("criterion-binding: "), "{r:?}");
    assert_eq!(str_at(&r, "note"), "request: ledger gate; rule: criterion-binding; value: 'true'");
    // The declared check runs (and fails, as declared); completion is refused.
    expect(&gate(&s, "T-two", "AC-fail", "[\"false\"]"), 1, "RAN: exit 1");
    expect(&s.ledger(&["complete", "--task", "T-two"]), 4, "REFUSED");
}

/// With a shell class declared and a check written as `sh -c '…'`, the script runs through
/// that shell and the recorded command is the exact argv (POSIX-quoted when an argv array
/// holds spaces); shell syntax in any other word (a second command after the script) is
/// refused.
#[test]
fn a_declared_shell_class_runs_its_script_and_the_argv_is_recorded() {
    let s = Scratch::new();
    let check = "sh -c 'true && echo ok > shell-ok.txt'";
    let contract = crate::support::CONTRACT.replace(
        r#"{"criterion":"AC-pass","check":"true"}"#,
        &format!(r#"{{"criterion":"AC-pass","check":"{check}"}}"#),
    );
    std::fs::write(s.contract_file(), contract).unwrap();
    s.materialize();
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "OK");
    let tail = "sh -c 'true && echo ok > shell-ok.txt' ; touch X";
    expect(
        &gate(&s, "T-one", "AC-pass", &format!("\"{tail}\"")),
        1,
        "every other word must be plain",
    );
    // A shell class running a script file by name is plain words: it passes the syntax rule
    // (and is then refused only because it is not the declared check).
    expect(&gate(&s, "T-one", "AC-pass", "\"sh check.sh\""), 1, "is not the check");
    assert!(str_at(&last(&s), "reason").starts_with("criterion-binding: "));
    let argv = r#"["sh", "-c", "true && echo ok > shell-ok.txt"]"#;
    expect(&gate(&s, "T-one", "AC-pass", argv), 0, "RAN: exit 0");
    assert!(s.root.join("shell-ok.txt").is_file());
    assert!(!s.root.join("X").exists());
    let run = last(&s);
    assert_eq!(str_at(&run, "type"), "gate_run");
    assert_eq!(str_at(&run, "command"), check);
    assert_eq!(
        shlex::split(str_at(&run, "command")).unwrap(),
        ["sh", "-c", "true && echo ok > shell-ok.txt"]
    );
}
