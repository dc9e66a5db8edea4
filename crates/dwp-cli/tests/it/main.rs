//! End-to-end tests of the `dwp` binary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod amend;
mod contention;
mod context;
mod contract;
mod crash;
mod damage;
mod delegate;
mod evidence_paths;
mod gates;
mod golden;
mod golden_context;
mod golden_delegate;
mod golden_migrate;
mod golden_scheduler;
mod golden_views;
mod hostile;
mod interop;
mod ledger;
mod migrate;
mod outcomes;
mod refusals;
mod resources;
mod scheduler;
mod selftest;
mod skill;
mod status;
mod support;
mod views;

use std::process::{Command, Output};

use test_support::shared;

pub(crate) fn dwp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dwp")).args(args).output().unwrap()
}

#[test]
fn compute_id_reproduces_both_fixture_ids() {
    for (path, expected) in [
        (
            "standards/dwp/fixtures/v6/contract-minimal.json",
            "1ce682d409b7fc34813498a0b53765a40e11bb22c5e7a531d7b4a705d376cd5c",
        ),
        (
            "standards/dwp/fixtures/v7/contract-minimal-v7.json",
            "c7969f00e7422e0567ed492442f90f1909c14e40d2d354fb2aa099f801304e9f",
        ),
    ] {
        let Some(file) = shared(path) else { return };
        let out = dwp(&["contract", "compute-id", file.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("{expected}\n"));
    }
}

#[test]
fn compute_id_refuses_bad_input_with_exit_1_and_usage_with_exit_2() {
    let dir = std::env::temp_dir().join(format!("dwp-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dup = dir.join("dup.json");
    std::fs::write(&dup, br#"{"plan":"a","plan":"b"}"#).unwrap();
    let out = dwp(&["contract", "compute-id", dup.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("duplicate object key \"plan\" at byte 12"), "{stderr}");
    let out = dwp(&["contract", "compute-id", dir.join("missing.json").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let out = dwp(&["contract", "compute-id"]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}
