//! Golden interop: one scenario (our contract, our scratch repository) run by the upstream
//! Python helpers once, normalised and committed under `tests/it/golden/`; every CI run replays
//! the same scenario with `dwp` and compares byte for byte after the same normalisation.
//!
//! Regenerate (needs a checkout of the upstream pack): `tests/it/golden/regen.sh`, which runs
//! this binary with `DWP_GOLDEN_REGEN=1` and `DWP_UPSTREAM_PACK` set. The goldens are outputs
//! of the upstream tools on our inputs; no upstream source is stored here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{Scratch, Tool, text};

impl Tool<'_> {
    fn ledger(self, plan: &Path, args: &[&str]) -> Output {
        self.command("ledger", "ledger.py").arg("--plan").arg(plan).args(args).output().unwrap()
    }

    fn contract(self, args: &[&str]) -> Output {
        self.command("contract", "contract_v6.py").args(args).output().unwrap()
    }
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/golden")
}

/// Replaces run-specific text: absolute paths, timestamps, git hashes, pids, hostnames and
/// the gate fingerprint (it hashes the interpreter/toolchain, so it differs by design).
pub(crate) struct Normaliser {
    pairs: Vec<(String, &'static str)>,
}

impl Normaliser {
    pub(crate) fn for_scratch(s: &Scratch) -> Normaliser {
        let mut pairs = Vec::new();
        let (head, _) = dwp_ledger_git_head(&s.root);
        if head.len() == 40 {
            pairs.push((head.clone(), "<GIT_HEAD>"));
            pairs.push((head[..12].to_owned(), "<GIT_HEAD12>"));
        }
        for (p, tag) in [(s.root.clone(), "<REPO>"), (s._tmp.path().to_path_buf(), "<TMP>")] {
            if let Ok(real) = p.canonicalize() {
                pairs.push((real.to_string_lossy().into_owned(), tag));
            }
            pairs.push((p.to_string_lossy().into_owned(), tag));
        }
        if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
            let host = host.trim();
            if host.len() > 3 {
                pairs.push((format!("\"host\":\"{host}\""), "\"host\":\"<HOST>\""));
            }
        }
        Normaliser { pairs }
    }

    pub(crate) fn apply(&self, raw: &str) -> String {
        let mut out = raw.to_owned();
        for (from, to) in &self.pairs {
            out = out.replace(from.as_str(), to);
        }
        let out = replace_timestamps(&out);
        let out = replace_after(&out, "pid:", |c| c.is_ascii_digit(), "<PID>");
        let out = replace_after(&out, "fingerprint ", |c| c.is_ascii_hexdigit(), "<FP>");
        replace_after(&out, "\"fingerprint\":\"", |c| c.is_ascii_hexdigit(), "<FP>")
    }
}

fn dwp_ledger_git_head(root: &Path) -> (String, bool) {
    let out = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(root).output().unwrap();
    (text(&out.stdout).trim().to_owned(), out.status.success())
}

/// `YYYY-MM-DDTHH:MM:SS[.frac]Z` -> `<TS>`.
pub(crate) fn replace_timestamps(s: &str) -> String {
    let b = s.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:dd";
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut last = 0;
    while i + shape.len() < b.len() + 1 {
        let fits = shape.iter().enumerate().all(|(k, &c)| {
            let x = b[i + k];
            if c == b'd' { x.is_ascii_digit() } else { x == c }
        });
        if fits {
            let mut j = i + shape.len();
            if j < b.len() && b[j] == b'.' {
                j += 1;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
            }
            if j < b.len() && b[j] == b'Z' {
                out.push_str(&s[last..i]);
                out.push_str("<TS>");
                last = j + 1;
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&s[last..]);
    out
}

/// Replaces the run of `keep` characters right after every `marker` with `tag`.
pub(crate) fn replace_after(
    s: &str,
    marker: &str,
    keep: impl Fn(char) -> bool,
    tag: &str,
) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find(marker) {
        let (head, tail) = rest.split_at(at + marker.len());
        out.push_str(head);
        let n = tail.find(|c: char| !keep(c)).unwrap_or(tail.len());
        if n > 0 {
            out.push_str(tag);
        }
        rest = &tail[n..];
    }
    out.push_str(rest);
    out
}

/// Inverse of the normaliser for the journal, so a golden journal can be continued in a new
/// scratch repository: `<REPO>` becomes its path and `<TS>` one fixed instant.
fn denormalise(s: &str, scratch: &Scratch) -> String {
    s.replace("<REPO>", scratch.root.to_str().unwrap()).replace("<TS>", "2026-11-30T00:00:00Z")
}

/// One command of the scenario: a name (the golden file stem) and its arguments.
struct Step {
    name: &'static str,
    contract_tool: bool,
    args: Vec<String>,
}

fn steps(s: &Scratch) -> Vec<Step> {
    let c = s.contract_file().to_string_lossy().into_owned();
    let plan = s.plan();
    let journal = plan.join("journal.ndjson").to_string_lossy().into_owned();
    let stamped = plan.join("contract.json").to_string_lossy().into_owned();
    let export = s._tmp.path().join("export").to_string_lossy().into_owned();
    let l = |name, args: &[&str]| Step {
        name,
        contract_tool: false,
        args: args.iter().map(|a| a.to_string()).collect(),
    };
    vec![
        l("01-materialize", &["materialize", "--contract", &c]),
        l("02-materialize-again", &["materialize", "--contract", &c]),
        l("03-start-one", &["start", "--task", "T-one"]),
        l(
            "04-gate-pass",
            &["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""],
        ),
        l(
            "05-gate-reused",
            &["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""],
        ),
        l(
            "06-reuse",
            &["reuse", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""],
        ),
        l("07-complete-one-refused", &["complete", "--task", "T-one"]),
        l(
            "08-signoff",
            &[
                "signoff",
                "--criterion",
                "AC-review",
                "--evidence-path",
                "REVIEW.txt",
                "--authority",
                "dev",
            ],
        ),
        l("09-complete-one", &["complete", "--task", "T-one"]),
        l("10-start-two", &["start", "--task", "T-two"]),
        l(
            "11-gate-fail",
            &["gate", "--task", "T-two", "--criterion", "AC-fail", "--json", "[\"false\"]"],
        ),
        l("12-complete-two-refused", &["complete", "--task", "T-two"]),
        l(
            "13-append",
            &[
                "append",
                "--type",
                "observation",
                "--trust",
                "asserted",
                "--json",
                "{\"statement\":\"T-two gate is red\"}",
            ],
        ),
        l("14-append-gate-run-refused", &["append", "--type", "gate_run", "--json", "{}"]),
        l(
            "14a-gate-unknown-criterion",
            &["gate", "--task", "T-two", "--criterion", "AC-pass", "--json", "\"true\""],
        ),
        l(
            "14b-gate-outside-classes",
            &["gate", "--task", "T-two", "--criterion", "AC-fail", "--json", "\"ls -la\""],
        ),
        l(
            "14c-gate-not-json",
            &["gate", "--task", "T-two", "--criterion", "AC-fail", "--json", "true x"],
        ),
        l(
            "14d-gate-sh-exit-3",
            &[
                "gate",
                "--task",
                "T-two",
                "--criterion",
                "AC-fail",
                "--json",
                "[\"sh\", \"-c\", \"echo out; echo err >&2; exit 3\"]",
            ],
        ),
        l(
            "14e-gate-timeout",
            &[
                "gate",
                "--task",
                "T-two",
                "--criterion",
                "AC-fail",
                "--timeout",
                "1",
                "--json",
                "\"sleep 5\"",
            ],
        ),
        l(
            "14f-signoff-observed-only",
            &[
                "signoff",
                "--criterion",
                "AC-fail",
                "--evidence-path",
                "REVIEW.txt",
                "--authority",
                "dev",
            ],
        ),
        l(
            "14g-signoff-missing-evidence",
            &[
                "signoff",
                "--criterion",
                "AC-review",
                "--evidence-path",
                "NOPE.txt",
                "--authority",
                "dev",
            ],
        ),
        l("14h-start-unknown-task", &["start", "--task", "T-nope"]),
        l(
            "14i-append-human-no-marker",
            &[
                "append",
                "--type",
                "observation",
                "--trust",
                "asserted",
                "--actor-kind",
                "human",
                "--json",
                "{\"statement\":\"x\"}",
            ],
        ),
        l(
            "14j-append-observed-refused",
            &[
                "append",
                "--type",
                "observation",
                "--trust",
                "observed",
                "--evidence-path",
                "REVIEW.txt",
                "--json",
                "{\"statement\":\"x\"}",
            ],
        ),
        l(
            "14k-append-invalid-payload",
            &[
                "append",
                "--type",
                "intervention",
                "--json",
                "{\"category\":\"vibes\",\"description\":\"d\",\"question\":\"q\"}",
            ],
        ),
        l(
            "14l-append-sample",
            &[
                "append",
                "--type",
                "resource_sample",
                "--trust",
                "asserted",
                "--json",
                "{\"source\":\"manual\",\"limit_id\":\"wall_h\",\"value\":0.5,\"unit\":\"hours\"}",
            ],
        ),
        l(
            "14m-append-intervention",
            &[
                "append",
                "--type",
                "intervention",
                "--json",
                "{\"category\":\"new_authority\",\"description\":\"d\",\"question\":\"may we?\"}",
            ],
        ),
        l(
            "14n-append-idempotent",
            &[
                "append",
                "--type",
                "observation",
                "--trust",
                "asserted",
                "--idempotent",
                "--json",
                "{\"statement\":\"T-two gate is red\"}",
            ],
        ),
        l(
            "14o-reuse-none",
            &["reuse", "--task", "T-two", "--criterion", "AC-fail", "--json", "\"true\""],
        ),
        l("14p-complete-unknown", &["complete", "--task", "T-nope"]),
        l("15-project", &["project"]),
        l("16-inspect", &["inspect"]),
        l("17-export", &["export", "--dest", &export]),
        Step {
            name: "18-validate-journal",
            contract_tool: true,
            args: ["validate-journal", &journal, "--contract", &stamped]
                .iter()
                .map(|a| a.to_string())
                .collect(),
        },
    ]
}

/// The files the scenario leaves behind (relative to the plan, or `export/…`).
const FILES: &[&str] = &[
    "manifest.json",
    "contract.json",
    "journal.ndjson",
    "state.json",
    "evidence.jsonl",
    "export/EXPORT_MANIFEST.json",
];

/// Runs the scenario and returns `(golden file name, normalised content)` pairs.
fn run_scenario(tool: Tool<'_>) -> Vec<(String, String)> {
    let s = Scratch::new();
    std::fs::write(s.plan().join("REVIEW.txt"), "reviewed by dev\n").unwrap();
    let norm = Normaliser::for_scratch(&s);
    let mut out = Vec::new();
    for step in steps(&s) {
        let args: Vec<&str> = step.args.iter().map(String::as_str).collect();
        let o =
            if step.contract_tool { tool.contract(&args) } else { tool.ledger(&s.plan(), &args) };
        let record = format!(
            "exit: {}\n--- stdout ---\n{}--- stderr ---\n{}",
            o.status.code().unwrap_or(-1),
            text(&o.stdout),
            text(&o.stderr)
        );
        out.push((format!("{}.out", step.name), norm.apply(&record)));
    }
    let plan = s.plan();
    let mut files: Vec<String> = FILES.iter().map(|f| f.to_string()).collect();
    for (p, _) in crate::support::tree(&plan.join("gates")) {
        files.push(p.strip_prefix(&plan).unwrap().to_string_lossy().into_owned());
    }
    for f in &files {
        let path = match f.strip_prefix("export/") {
            Some(rest) => s._tmp.path().join("export").join(rest),
            None => plan.join(f),
        };
        let body = std::fs::read_to_string(&path).unwrap_or_else(|_| "<missing>\n".to_owned());
        let mut body = norm.apply(&body);
        if f.ends_with("EXPORT_MANIFEST.json") {
            body = mask_digests(&body);
        }
        out.push((f.replace('/', "__"), body));
    }
    let mut listing: Vec<String> = crate::support::tree(&plan)
        .into_iter()
        .map(|(p, _)| p.strip_prefix(&plan).unwrap().to_string_lossy().into_owned())
        .collect();
    listing.sort();
    out.push(("plan-files.txt".to_owned(), listing.join("\n") + "\n"));
    out
}

/// Export digests cover files that carry timestamps; each one is checked for real by
/// `export_manifest_digests_match_the_exported_bytes`, so the golden keeps only the key set.
fn mask_digests(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find(": \"") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let n = tail.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(tail.len());
        if n == 64 && tail[n..].starts_with('"') {
            out.push_str("<SHA256>");
            rest = &tail[n..];
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn normaliser_masks_run_specific_text() {
    let s = Scratch::new();
    let n = Normaliser::for_scratch(&s);
    let raw = format!(
        "{}/x at 2026-11-30T12:34:56Z pid:4242 (fingerprint 0123456789ab, log y) \
         \"fingerprint\":\"{}\" 2026-11-30T12:34:56.25Z",
        s.root.display(),
        "a".repeat(64)
    );
    assert_eq!(
        n.apply(&raw),
        "<REPO>/x at <TS> pid:<PID> (fingerprint <FP>, log y) \"fingerprint\":\"<FP>\" <TS>"
    );
}

/// With `DWP_GOLDEN_REGEN=1` and `DWP_UPSTREAM_PACK`: run the scenario with upstream and
/// rewrite the goldens. With only `DWP_UPSTREAM_PACK`: check the goldens still match upstream.
#[test]
#[ignore = "needs an upstream checkout: DWP_UPSTREAM_PACK=/path/to/skills/deepworkplan cargo test -p dwp-cli --test it -- --ignored"]
fn goldens_match_upstream_when_the_pack_is_at_hand() {
    let pack = upstream_pack(&["ledger.py"]);
    regen_or_check(&golden_dir(), &run_scenario(Tool::Upstream(&pack)));
}

/// The upstream pack named by `DWP_UPSTREAM_PACK`, holding every helper in `helpers` under
/// `shared/`. The upstream comparisons are `#[ignore]`d: run with `--ignored`, a missing pack
/// fails loudly instead of passing without comparing anything.
pub(crate) fn upstream_pack(helpers: &[&str]) -> PathBuf {
    let Some(pack) = std::env::var_os("DWP_UPSTREAM_PACK").map(PathBuf::from) else {
        panic!("set DWP_UPSTREAM_PACK to a checkout of skills/deepworkplan to run this comparison");
    };
    for h in helpers {
        let path = pack.join("shared").join(h);
        assert!(path.is_file(), "DWP_UPSTREAM_PACK has no {}", path.display());
    }
    pack
}

/// Asserts that `dwp` `produced` exactly the golden files in `dir` (same bytes, no file missing
/// on either side). Shared by the golden folders whose outputs need no known divergences.
pub(crate) fn assert_matches_goldens(dir: &Path, produced: &[(String, String)]) {
    let mut failures = Vec::new();
    for (name, body) in produced {
        let golden = std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!("golden {name} unreadable: {e}"));
        if &golden != body {
            failures.push(format!("== {name}\n-- upstream (golden)\n{golden}\n-- dwp\n{body}"));
        }
    }
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !["regen.sh", "README.md", "UPSTREAM_COMMIT"].contains(&name.as_str())
            && !produced.iter().any(|(n, _)| *n == name)
        {
            failures.push(format!("== {name}: upstream produced it, dwp did not"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden mismatch(es):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A golden file that is not (or not only) an upstream recording. The recordings stay as
/// upstream wrote them; `dwp`'s own output for such a file is kept (and compared) under
/// `golden-ours/<set>/<file>`, which holds nothing else. Every entry is checked, so the table
/// cannot go stale; the divergences are listed in ARCHITECTURE.md ("Divergences from the
/// upstream helpers").
pub(crate) struct Divergence {
    /// The golden file name.
    pub(crate) file: &'static str,
    /// Why (the issue and the rule).
    pub(crate) why: &'static str,
    /// How the file relates to the recording.
    pub(crate) kind: DivergenceKind,
}

/// How a [`Divergence`] relates to the upstream recording.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum DivergenceKind {
    /// `dwp` differs from the recorded file on purpose (it must still differ).
    Differs,
    /// Upstream recorded this file; `dwp` produces none.
    Absent,
    /// No upstream recording exists: the expected file was derived, and is ours.
    Derived,
}

/// A diverging file whose `dwp` output is kept in `golden-ours/`.
pub(crate) const fn ours(file: &'static str, why: &'static str) -> Divergence {
    Divergence { file, why, kind: DivergenceKind::Differs }
}

/// A golden file `dwp` does not produce.
pub(crate) const fn absent(file: &'static str, why: &'static str) -> Divergence {
    Divergence { file, why, kind: DivergenceKind::Absent }
}

/// An expected file that no upstream run recorded (kept in `golden-ours/` only).
pub(crate) const fn derived(file: &'static str, why: &'static str) -> Divergence {
    Divergence { file, why, kind: DivergenceKind::Derived }
}

/// Where `dwp`'s own output of a diverging golden file of `set` is kept.
pub(crate) fn ours_dir(set: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/golden-ours").join(set)
}

/// Asserts that `dwp` `produced` the upstream goldens in `dir` (the set `set`), except for the
/// files in `divergences`, which must differ from upstream and match `golden-ours/<set>/`.
/// With `DWP_OURS_REGEN=1`, the `golden-ours/<set>/` files are rewritten from `produced`.
pub(crate) fn assert_matches_with_divergences(
    dir: &Path,
    set: &str,
    produced: &[(String, String)],
    divergences: &[Divergence],
) {
    let ours = ours_dir(set);
    let regen = std::env::var_os("DWP_OURS_REGEN").is_some();
    let mut failures = Vec::new();
    for d in divergences {
        let made = produced.iter().find(|(n, _)| n == d.file);
        let upstream = std::fs::read_to_string(dir.join(d.file)).ok();
        let body = match (d.kind, made) {
            (DivergenceKind::Absent, Some(_)) => {
                failures.push(format!("== {}: listed absent, dwp produced it", d.file));
                continue;
            }
            (DivergenceKind::Absent, None) => {
                if upstream.is_none() {
                    failures.push(format!("== {}: listed absent, no upstream file", d.file));
                }
                continue;
            }
            (_, None) => {
                failures.push(format!("== {}: listed, but dwp did not produce it", d.file));
                continue;
            }
            (DivergenceKind::Differs, Some((_, body))) => {
                if upstream.as_ref() == Some(body) {
                    failures.push(format!("== {}: matches upstream ({})", d.file, d.why));
                }
                body
            }
            (DivergenceKind::Derived, Some((_, body))) => {
                if upstream.is_some() {
                    failures.push(format!("== {}: derived, yet the upstream set has it", d.file));
                }
                body
            }
        };
        if regen {
            std::fs::create_dir_all(&ours).unwrap();
            std::fs::write(ours.join(d.file), body).unwrap();
            continue;
        }
        let kept = std::fs::read_to_string(ours.join(d.file))
            .unwrap_or_else(|e| panic!("golden-ours/{set}/{} unreadable: {e}", d.file));
        if &kept != body {
            failures.push(format!(
                "== {} (ours: {})\n-- golden-ours\n{kept}\n-- dwp\n{body}",
                d.file, d.why
            ));
        }
    }
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !["regen.sh", "README.md", "UPSTREAM_COMMIT"].contains(&name.as_str())
            && !produced.iter().any(|(n, _)| *n == name)
            && !divergences.iter().any(|d| d.file == name)
        {
            failures.push(format!("== {name}: upstream produced it, dwp did not"));
        }
    }
    for (name, body) in produced {
        if divergences.iter().any(|d| d.file == name) {
            continue;
        }
        let golden = std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!("golden {name} unreadable: {e}"));
        if &golden != body {
            failures.push(format!("== {name}\n-- upstream (golden)\n{golden}\n-- dwp\n{body}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden mismatch(es):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// With `DWP_GOLDEN_REGEN`, rewrites the goldens in `dir` from what upstream `produced`;
/// otherwise asserts upstream still produces them. Shared by every golden folder.
pub(crate) fn regen_or_check(dir: &Path, produced: &[(String, String)]) {
    if std::env::var_os("DWP_GOLDEN_REGEN").is_some() {
        std::fs::create_dir_all(dir).unwrap();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !["regen.sh", "README.md", "UPSTREAM_COMMIT"].contains(&name.as_str()) {
                std::fs::remove_file(e.path()).unwrap();
            }
        }
        for (name, body) in produced {
            std::fs::write(dir.join(name), body).unwrap();
        }
        return;
    }
    for (name, body) in produced {
        let golden = std::fs::read_to_string(dir.join(name)).unwrap();
        assert_eq!(&golden, body, "upstream no longer produces golden {name}; run regen.sh");
    }
}

const REFUSALS: &str = "issue 30: dwp records every refusal by a plan rule (14, 14a, 14b, 14d-14k, \
     14p), upstream only the completion and approval ones, so later seqs shift by the refusals";
const BINDING: &str = "issue 23: a gate runs only the check its task declares for the criterion \
     (AC-fail declares `false`); upstream runs any allowed command, through a shell";

/// What `dwp` does differently from the recorded upstream run of this scenario, on purpose.
const DIVERGENCES: &[Divergence] = &[
    ours("14d-gate-sh-exit-3.out", BINDING),
    ours("14e-gate-timeout.out", BINDING),
    absent("gates__T-two__010-sh--c-echo-out-echo-err-2-exit-3.log", BINDING),
    absent("gates__T-two__011-sleep-5.log", BINDING),
    ours("14l-append-sample.out", REFUSALS),
    ours("14m-append-intervention.out", REFUSALS),
    ours("14n-append-idempotent.out", REFUSALS),
    ours("16-inspect.out", REFUSALS),
    ours("17-export.out", REFUSALS),
    ours("18-validate-journal.out", REFUSALS),
    ours("journal.ndjson", REFUSALS),
    ours("state.json", REFUSALS),
    ours("evidence.jsonl", BINDING),
    ours("export__EXPORT_MANIFEST.json", BINDING),
    ours("plan-files.txt", BINDING),
];

/// Always runs: `dwp` on the same scenario writes what upstream wrote (after normalisation),
/// except for the files listed in [`DIVERGENCES`].
#[test]
fn dwp_reproduces_the_upstream_goldens() {
    assert_matches_with_divergences(&golden_dir(), "golden", &run_scenario(Tool::Dwp), DIVERGENCES);
}

/// Always runs: the journal `dwp` writes for the scenario is upstream's plus the refusals it
/// records on purpose: with those removed (and the refused gates' runs, which upstream made),
/// the event types follow upstream's order.
#[test]
fn the_diverging_journal_is_upstreams_plus_recorded_refusals() {
    let types = |raw: &str| -> Vec<String> {
        raw.lines()
            .map(|l| canonical_json::parse(l.as_bytes()).unwrap())
            .filter(|e| {
                e.get("note").and_then(|n| n.as_str()).is_none_or(|n| !n.starts_with("request: "))
            })
            .filter_map(|e| e.get("type").and_then(|t| t.as_str()).map(str::to_owned))
            .collect()
    };
    let upstream = std::fs::read_to_string(golden_dir().join("journal.ndjson")).unwrap();
    let ours = std::fs::read_to_string(ours_dir("golden").join("journal.ndjson")).unwrap();
    let mut expected = types(&upstream);
    // Upstream ran the two gates (14d, 14e) that dwp refuses by the criterion binding.
    let ran: Vec<usize> = upstream
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            l.contains("\"command\":\"sh -c ") || l.contains("\"command\":\"sleep 5\"")
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(ran.len(), 2);
    for i in ran.into_iter().rev() {
        expected.remove(i);
    }
    assert_eq!(types(&ours), expected);
}

/// Always runs: the upstream-written golden plan continues under `dwp`.
#[test]
fn dwp_continues_the_upstream_golden_plan() {
    let dir = golden_dir();
    let s = Scratch::new();
    let plan = s.plan();
    for f in ["manifest.json", "contract.json", "journal.ndjson", "evidence.jsonl"] {
        let golden = std::fs::read_to_string(dir.join(f)).unwrap();
        std::fs::write(plan.join(f), denormalise(&golden, &s)).unwrap();
    }
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rel) = name.strip_prefix("gates__") else { continue };
        let golden = std::fs::read_to_string(e.path()).unwrap();
        let to = plan.join("gates").join(rel.replace("__", "/"));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, denormalise(&golden, &s)).unwrap();
    }
    std::fs::write(plan.join("REVIEW.txt"), "reviewed by dev\n").unwrap();
    let before = s.journal().len();
    let j = plan.join("journal.ndjson");
    let out = crate::dwp(&[
        "contract",
        "validate-journal",
        j.to_str().unwrap(),
        "--contract",
        plan.join("contract.json").to_str().unwrap(),
    ]);
    crate::support::expect(&out, 0, &format!("OK: {before} journal events valid"));
    crate::support::expect(&s.ledger(&["inspect"]), 0, &format!("({before} events)"));
    // T-one was completed upstream; T-two failed its gate there. Gating `true` for AC-fail
    // (declared `false`) is refused and recorded (issue 23); the declared check, passing here
    // as a program named `false` on PATH, closes it.
    let out = s.ledger(&[
        "gate",
        "--task",
        "T-two",
        "--criterion",
        "AC-fail",
        "--json",
        "\"true\"",
        "--no-reuse",
    ]);
    crate::support::expect(&out, 1, "is not the check 'false' that task T-two declares");
    let pass = crate::gates::fake_programs(&s, "pass", &[("false", "exit 0")]);
    let gate = ["gate", "--task", "T-two", "--criterion", "AC-fail", "--json", "\"false\""];
    let gate: Vec<&str> = gate.iter().copied().chain(["--no-reuse"]).collect();
    let out = crate::gates::ledger_on_path(&s, &pass, &gate);
    crate::support::expect(&out, 0, &format!("RAN: exit 0, seq {}", before + 2));
    crate::support::expect(
        &s.ledger(&["complete", "--task", "T-two"]),
        0,
        "OK: T-two criteria satisfied: AC-fail",
    );
    let out = s.ledger(&[
        "append",
        "--type",
        "observation",
        "--trust",
        "asserted",
        "--json",
        "{\"statement\":\"continued by dwp\"}",
    ]);
    crate::support::expect(&out, 0, &format!("OK: appended observation seq {}", before + 3));
    crate::support::expect(&s.ledger(&["project"]), 0, "OK: state.json projected (2 tasks");
    let state = canonical_json::parse(&std::fs::read(plan.join("state.json")).unwrap()).unwrap();
    let tasks = state.get("tasks").and_then(|t| t.as_array()).unwrap();
    let status: Vec<&str> =
        tasks.iter().map(|t| t.get("status").and_then(|s| s.as_str()).unwrap()).collect();
    assert_eq!(status, ["completed", "completed"]);
    let types = s.types();
    assert_eq!(types.len(), before + 3);
    assert_eq!(&types[before..], ["refusal", "gate_run", "observation"]);
}

/// Always runs: every digest dwp writes into `EXPORT_MANIFEST.json` is the exported bytes'.
#[test]
fn export_manifest_digests_match_the_exported_bytes() {
    let s = Scratch::new();
    s.materialize();
    crate::support::expect(&s.ledger(&["start", "--task", "T-one"]), 0, "OK");
    let dest = s._tmp.path().join("export");
    crate::support::expect(&s.ledger(&["export", "--dest", dest.to_str().unwrap()]), 0, "OK");
    let m =
        canonical_json::parse(&std::fs::read(dest.join("EXPORT_MANIFEST.json")).unwrap()).unwrap();
    let files = m.get("files").and_then(|f| f.as_object()).unwrap();
    assert!(!files.is_empty());
    for (rel, digest) in files.iter() {
        let bytes = std::fs::read(dest.join(rel.as_str())).unwrap();
        assert_eq!(digest.as_str().unwrap(), sha256_hex(&bytes), "{rel}");
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    canonical_json::digest::sha256_hex(bytes)
}
