//! `dwp skill install|status|remove` on a skill folder made here (files with the helpers'
//! names and a SKILL.md with a version; no upstream code): the launchers run `dwp` with the
//! same arguments, working directory and exit code, and `remove` restores every byte.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{Scratch, Tool, text};

const COVERED: &[(&str, &str)] = &[
    ("ledger.py", "ledger"),
    ("contract_v6.py", "contract"),
    ("scheduler.py", "scheduler"),
    ("outcomes.py", "outcomes"),
    ("views.py", "views"),
    ("migrate_v6.py", "migrate"),
    ("context_manifest.py", "context"),
    ("resources.py", "resources"),
];

/// A skill folder: SKILL.md, every covered helper plus `config.py` and `context.sh` (which
/// dwp does not cover), and an `addons/` folder. Each helper prints who it is and exits 7.
fn make_skill(root: &Path) -> PathBuf {
    let skill = root.join("skills").join("deepworkplan");
    std::fs::create_dir_all(skill.join("shared")).unwrap();
    std::fs::create_dir_all(skill.join("addons")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: deepworkplan\ndescription: test skill\nversion: \"2.10.0\"\n---\n\n# Test\n",
    )
    .unwrap();
    for (i, name) in COVERED.iter().map(|(n, _)| *n).chain(["config.py"]).enumerate() {
        let path = skill.join("shared").join(name);
        std::fs::write(
            &path,
            format!(
                "#!/usr/bin/env python3\nimport sys\nVALUE = {name:?}\n\
                 if __name__ == '__main__':\n    print('original', VALUE)\n    sys.exit(7)\n"
            ),
        )
        .unwrap();
        let mode = if i % 2 == 0 { 0o755 } else { 0o644 };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    std::fs::write(skill.join("shared/context.sh"), "#!/bin/sh\necho context\n").unwrap();
    skill
}

fn skill_cmd(args: &[&str], dir: &Path) -> Output {
    let mut all = vec!["skill"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--skill-dir", dir.to_str().unwrap()]);
    crate::dwp(&all)
}

/// Every file under `dir` with its bytes and mode.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>, u32)> {
    let mut out = Vec::new();
    fn walk(d: &Path, out: &mut Vec<(PathBuf, Vec<u8>, u32)>) {
        let mut entries: Vec<_> = std::fs::read_dir(d).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                walk(&p, out);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap(), meta.permissions().mode()));
            }
        }
    }
    walk(dir, &mut out);
    out
}

fn same_output(a: &Output, b: &Output, what: &str) {
    assert_eq!(a.status.code(), b.status.code(), "{what}: exit codes differ");
    assert_eq!(text(&a.stdout), text(&b.stdout), "{what}: stdout differs");
    assert_eq!(text(&a.stderr), text(&b.stderr), "{what}: stderr differs");
}

#[test]
fn install_then_launchers_run_dwp_and_remove_restores_every_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let skill = make_skill(tmp.path());
    let before = snapshot(&skill);

    let out = skill_cmd(&["install"], &skill);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("skill 2.10.0"), "{stdout}");
    for (name, group) in COVERED {
        assert!(stdout.contains(&format!("shared/{name}")), "{stdout}");
        assert!(stdout.contains(&format!("-> dwp {group}")), "{stdout}");
    }
    assert!(stdout.contains("config.py") && stdout.contains("keeps running its original"));
    assert!(stdout.contains("context.sh"), "{stdout}");

    // status: where each helper runs.
    let out = skill_cmd(&["status", "--json"], &skill);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = canonical_json::parse(&out.stdout).unwrap();
    assert_eq!(status.get("installed").and_then(|v| v.as_bool()), Some(true));
    let helpers = status.get("helpers").and_then(|v| v.as_array()).unwrap();
    for (name, group) in COVERED {
        let h = helpers
            .iter()
            .find(|h| h.get("helper").and_then(|v| v.as_str()) == Some(&format!("shared/{name}")))
            .unwrap();
        assert_eq!(h.get("runs").and_then(|v| v.as_str()), Some(format!("dwp {group}").as_str()));
    }

    // Each launcher is `dwp GROUP`: the same output and exit code for help, for a usage error,
    // and for a real failure.
    let launcher = Tool::Upstream(&skill);
    for (name, group) in COVERED {
        for args in [&["--help"][..], &["--no-such-flag"][..]] {
            let ours = Tool::Dwp.command(group, name).args(args).output().unwrap();
            let through = launcher.command(group, name).args(args).output().unwrap();
            same_output(&ours, &through, &format!("{name} {args:?}"));
        }
    }
    let missing = tmp.path().join("missing.json");
    let ours = Tool::Dwp
        .command("contract", "contract_v6.py")
        .args(["compute-id", missing.to_str().unwrap()])
        .output()
        .unwrap();
    let through = launcher
        .command("contract", "contract_v6.py")
        .args(["compute-id", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(through.status.code(), Some(1));
    same_output(&ours, &through, "contract_v6.py compute-id missing");

    // The caller's working directory: a relative plan path, materialized and then refused a
    // completion without evidence (exit 4, as `dwp ledger`).
    let scratch = Scratch::new();
    let rel = format!(".dwp/plans/{}", crate::support::PLAN);
    let contract = scratch.contract_file();
    let out = launcher
        .command("ledger", "ledger.py")
        .args(["--plan", &rel, "materialize", "--contract", contract.to_str().unwrap()])
        .current_dir(&scratch.root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(scratch.plan().join("journal.ndjson").is_file());
    let out = launcher
        .command("ledger", "ledger.py")
        .args(["--plan", &rel, "complete", "--task", "T-one"])
        .current_dir(&scratch.root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}{}", text(&out.stdout), text(&out.stderr));

    // A helper dwp does not cover runs its original.
    let out = launcher.command("-", "config.py").output().unwrap();
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(text(&out.stdout), "original config.py\n");

    // Imported as a module, a launcher is the original helper.
    let out = Command::new("python3")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args([
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); import ledger; print(ledger.VALUE)",
        ])
        .arg(skill.join("shared"))
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "ledger.py\n", "{}", text(&out.stderr));

    // Arguments, working directory, environment and exit code as they are: DWP_BIN stands in
    // for dwp with a script that reports what it was given.
    let fake = tmp.path().join("fake-dwp.sh");
    std::fs::write(
        &fake,
        "#!/bin/sh\nprintf '%s|' \"$@\"; printf '\\n%s\\n%s\\n' \"$PWD\" \"$DWP_ADDONS_DIR\"; exit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = launcher
        .command("scheduler", "scheduler.py")
        .args(["ready", "--plan", "a b", "it's \"quoted\"", ""])
        .env("DWP_BIN", &fake)
        .env_remove("DWP_ADDONS_DIR")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let cwd = std::fs::canonicalize(tmp.path()).unwrap();
    assert_eq!(
        text(&out.stdout),
        format!(
            "scheduler|ready|--plan|a b|it's \"quoted\"||\n{}\n{}\n",
            cwd.display(),
            skill.join("addons").display()
        )
    );

    // remove: every byte and mode as before, the backup gone.
    let out = skill_cmd(&["remove"], &skill);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(snapshot(&skill), before);
    let out = skill_cmd(&["status"], &skill);
    assert!(text(&out.stdout).contains("no dwp launchers installed"), "{}", text(&out.stdout));
}

#[test]
fn install_refuses_what_is_not_the_skill() {
    type Spoil = dyn Fn(&Path);
    let cases: &[(&str, &Spoil, &str)] = &[
        ("no SKILL.md", &|s| std::fs::remove_file(s.join("SKILL.md")).unwrap(), "no SKILL.md"),
        (
            "another skill",
            &|s| {
                std::fs::write(s.join("SKILL.md"), "---\nname: other\nversion: 1.0.0\n---\n")
                    .unwrap()
            },
            "names the skill \"other\"",
        ),
        (
            "no version",
            &|s| std::fs::write(s.join("SKILL.md"), "---\nname: deepworkplan\n---\n").unwrap(),
            "no version",
        ),
        (
            "no ledger.py",
            &|s| std::fs::remove_file(s.join("shared/ledger.py")).unwrap(),
            "shared/ledger.py is missing",
        ),
        (
            "a symlinked helper",
            &|s| {
                std::fs::remove_file(s.join("shared/views.py")).unwrap();
                std::os::unix::fs::symlink(s.join("shared/config.py"), s.join("shared/views.py"))
                    .unwrap();
            },
            "not a regular file",
        ),
    ];
    for (what, spoil, needle) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let skill = make_skill(tmp.path());
        spoil(&skill);
        let before = snapshot(&skill);
        let out = skill_cmd(&["install"], &skill);
        assert_eq!(out.status.code(), Some(1), "{what}: {}", text(&out.stdout));
        assert!(text(&out.stderr).contains(needle), "{what}: {}", text(&out.stderr));
        assert_eq!(snapshot(&skill), before, "{what}: install changed the folder");
    }
    // A checkout of the skill's repository is pointed at the skill inside it.
    let tmp = tempfile::tempdir().unwrap();
    make_skill(tmp.path());
    let out = skill_cmd(&["install"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("skills/deepworkplan/"), "{}", text(&out.stderr));
}

#[test]
fn a_second_install_and_a_launcher_without_backup_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let skill = make_skill(tmp.path());
    assert_eq!(skill_cmd(&["install"], &skill).status.code(), Some(0));
    let installed = snapshot(&skill);
    let out = skill_cmd(&["install"], &skill);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("already installed"), "{}", text(&out.stderr));
    assert_eq!(snapshot(&skill), installed);

    // Without the backup, the launchers must not be backed up as if they were the originals.
    std::fs::remove_dir_all(skill.join(".dwp-skill")).unwrap();
    let out = skill_cmd(&["status"], &skill);
    assert!(text(&out.stdout).contains("WITHOUT a backup"), "{}", text(&out.stdout));
    let out = skill_cmd(&["install"], &skill);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("already a dwp launcher"), "{}", text(&out.stderr));
    assert!(!skill.join(".dwp-skill").exists());
    let out = skill_cmd(&["remove"], &skill);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no dwp launchers are installed"));
}

#[test]
fn remove_never_loses_an_edit_or_trusts_a_changed_backup() {
    let tmp = tempfile::tempdir().unwrap();
    let skill = make_skill(tmp.path());
    let original = snapshot(&skill);
    assert_eq!(skill_cmd(&["install"], &skill).status.code(), Some(0));

    // A helper edited after install: status says so, remove refuses and changes nothing.
    let views = skill.join("shared/views.py");
    let mut edited = std::fs::read(&views).unwrap();
    edited.extend_from_slice(b"# my local change\n");
    std::fs::write(&views, &edited).unwrap();
    let out = skill_cmd(&["status"], &skill);
    assert!(text(&out.stdout).contains("CHANGED since install"), "{}", text(&out.stdout));
    let held = snapshot(&skill);
    let out = skill_cmd(&["remove"], &skill);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("shared/views.py changed"), "{}", text(&out.stderr));
    assert_eq!(snapshot(&skill), held, "a refused remove wrote something");

    // Moved aside, the remove goes through and restores the original.
    std::fs::rename(&views, tmp.path().join("views.mine")).unwrap();
    // A backup that no longer hashes to what was recorded is refused first.
    let backup = skill.join(".dwp-skill/originals/shared/ledger.py");
    let saved = std::fs::read(&backup).unwrap();
    std::fs::write(&backup, b"tampered\n").unwrap();
    let out = skill_cmd(&["remove"], &skill);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no longer holds the original"), "{}", text(&out.stderr));
    std::fs::write(&backup, saved).unwrap();
    let out = skill_cmd(&["remove", "--json"], &skill);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert_eq!(snapshot(&skill), original);
}
