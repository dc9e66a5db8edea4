use crate::{assert_exit, cookwala, stdout};

#[test]
fn cook_builtin_soup_completes_and_writes_a_plot() {
    let dir = tempfile::tempdir().unwrap();
    let out = cookwala(dir.path(), &["cook", "red-lentil-soup", "--plot", "soup.svg"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("state running"), "{text}");
    assert!(text.contains("band 85–96 °C"), "{text}");
    assert!(text.contains("completed: outcome served"), "{text}");
    let svg = std::fs::read_to_string(dir.path().join("soup.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("<polyline") && svg.contains("simmer band 85–96 °C"));
}

#[test]
fn cook_refuses_hot_oil_without_a_person() {
    let dir = tempfile::tempdir().unwrap();
    let out = cookwala(dir.path(), &["cook", "chickpea-fritters"]);
    assert_exit(&out, 1);
    assert!(stdout(&out).starts_with("refused: needs_human_present at node fry"));
}

#[test]
fn cook_json_reports_status_and_log() {
    let dir = tempfile::tempdir().unwrap();
    let out = cookwala(dir.path(), &["cook", "oat-honey-loaf", "--json", "--seed", "7"]);
    assert_exit(&out, 0);
    let doc = canonical_json::parse(&out.stdout).unwrap();
    assert_eq!(doc.pointer("/status/state").unwrap().as_str(), Some("completed"));
    assert_eq!(doc.pointer("/log/outcome").unwrap().as_str(), Some("served"));
    assert_eq!(doc.pointer("/log/consent/dataset").unwrap().as_str(), Some("none"));
    // Deterministic: the same seed prints the same bytes apart from the wall-clock start.
    let again = cookwala(dir.path(), &["cook", "oat-honey-loaf", "--json", "--seed", "7"]);
    let doc2 = canonical_json::parse(&again.stdout).unwrap();
    assert_eq!(doc.pointer("/log/steps/0/summary"), doc2.pointer("/log/steps/0/summary"));
}

#[test]
fn cook_overheat_fault_stops_safely_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = cookwala(
        dir.path(),
        &["cook", "chickpea-fritters", "--human-present", "--fault", "overheat", "--json"],
    );
    assert_exit(&out, 1);
    let doc = canonical_json::parse(&out.stdout).unwrap();
    assert_eq!(doc.pointer("/status/state").unwrap().as_str(), Some("stopped"));
    assert_eq!(doc.pointer("/log/outcome").unwrap().as_str(), Some("aborted_safe"));
    assert_eq!(doc.pointer("/log/safetyEvents/0/limit").unwrap().as_str(), Some("oil.max_temp"));
    assert_eq!(doc.pointer("/incidents/0/kind").unwrap().as_str(), Some("IncidentReport"));
}

#[test]
fn cook_knife_step_by_a_person_on_the_hob_robot() {
    let dir = tempfile::tempdir().unwrap();
    let out = cookwala(
        dir.path(),
        &["cook", "cucumber-herb-salad", "--device", "sim-hob-robot", "--human-present"],
    );
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("state needs_human (a person performs cw.op.cut"), "{text}");
    assert!(text.contains("a person confirms"), "{text}");
}

#[test]
fn cook_from_files_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cookwala/data");
    let recipe = root.join("recipes/garlic-greens.cookwala.json");
    let device = root.join("devices/sim-hob-robot.json");
    let out = cookwala(
        d,
        &[
            "cook",
            recipe.to_str().unwrap(),
            "--device",
            device.to_str().unwrap(),
            "--human-present",
            "--fault",
            "sensor",
        ],
    );
    // The pan sensor is lost; saute falls back to the model rung and finishes.
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("SAFETY x-sim.sensor_fault"));
    // --speed runs N times real time; a large N keeps the test quick but takes the sleeping path.
    let out = cookwala(d, &["cook", "cucumber-herb-salad", "--human-present", "--speed", "5000"]);
    assert_exit(&out, 0);
    let out = cookwala(d, &["cook", "no-such-recipe"]);
    assert_exit(&out, 1);
    let out = cookwala(d, &["cook", "red-lentil-soup", "--fault", "gremlins"]);
    assert_exit(&out, 2);
    let out = cookwala(d, &["cook", "oat-honey-loaf", "--device", "sim-counter-arm"]);
    assert_exit(&out, 1);
    assert!(stdout(&out).starts_with("refused: missing_capability"));
}

#[test]
fn cook_outputs_and_builtin_data_match_the_standards_schemas() {
    let Some(schemas) = test_support::shared("standards/cookwala/schemas") else { return };
    let schemas = schemas.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cookwala/data");
    for sub in ["recipes", "devices"] {
        for entry in std::fs::read_dir(root.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            let out = cookwala(d, &["validate", "--schemas", schemas, path.to_str().unwrap()]);
            assert_exit(&out, 0);
        }
    }
    let runs: [&[&str]; 3] = [
        &["cook", "chickpea-fritters", "--human-present", "--fault", "overheat", "--json"],
        &["cook", "cucumber-herb-salad", "--device", "sim-hob-robot", "--human-present", "--json"],
        &["cook", "red-lentil-soup", "--fault", "sensor", "--json"],
    ];
    for args in runs {
        let out = cookwala(d, args);
        let doc = canonical_json::parse(&out.stdout).unwrap();
        for (key, kind) in [("status", "ExecutionStatus"), ("log", "ExecutionLog")] {
            let file = d.join(format!("{key}.json"));
            std::fs::write(&file, canonical_json::to_jcs(doc.get(key).unwrap()).unwrap()).unwrap();
            let out = cookwala(
                d,
                &["validate", "--kind", kind, "--schemas", schemas, file.to_str().unwrap()],
            );
            assert_exit(&out, 0);
        }
    }
}
