use crate::{assert_exit, cookwala, stdout};

#[test]
fn demo_runs_on_built_in_data_and_its_artifacts_verify_with_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = cookwala(d, &["demo", "--out", "art"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("all 8 checks came out as the standard requires"), "{text}");
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
