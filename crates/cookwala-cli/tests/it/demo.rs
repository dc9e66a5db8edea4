use crate::{assert_exit, cookwala, stdout};

#[test]
fn demo_runs_on_built_in_data_and_its_artifacts_verify_with_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = cookwala(d, &["demo", "--out", "art"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("all 11 checks came out as the standard requires"), "{text}");
    // The cooking artifacts: the refusal repeats with the dry-run command, the soup's log is a
    // valid ExecutionLog, the plot is an SVG.
    let out = cookwala(
        d,
        &["dry-run", "--recipe", "art/fritters.json", "--device", "art/hob-robot.json"],
    );
    assert_exit(&out, 1);
    assert!(stdout(&out).starts_with("refused: needs_human_present"), "{}", stdout(&out));
    let out = cookwala(d, &["validate", "art/soup.log.json"]);
    assert_exit(&out, 0);
    let svg = std::fs::read_to_string(d.join("art/soup.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("simmer"), "{}", &svg[..200.min(svg.len())]);
    let out = cookwala(d, &["verify", "--keys", "art/keys.json", "art/recipe.signed.json"]);
    assert_exit(&out, 0);
    let out = cookwala(d, &["verify", "--keys", "art/keys.json", "art/recipe.tampered.json"]);
    assert_eq!(stdout(&out), "bad_signature\n");
    let out = cookwala(
        d,
        &[
            "log",
            "verify",
            "--log",
            "art/mission.ndjson",
            "--keys",
            "art/keys.json",
            "--checkpoint",
            "art/checkpoint.json",
        ],
    );
    assert_exit(&out, 0);
    assert!(stdout(&out).starts_with("ok sha256:"));
}
