//! End-to-end tests of the `cookwala` binary: the CLI contracts other checks depend on.
//!
//! - `canon`: `canon` / `hash` output shapes and refusals of bad input.
//! - `keys`: keygen, sign, verify and every reason code reachable from the CLI.
//! - `log`: sequencing, checkpoints, witnesses, hash_only payloads, torn tails.
//! - `conformance`: the runner's text and JSON shapes and exit codes on the standard's vectors.
//! - `demo`: the main job runs to completion.
//! - `hostile`: worst shapes at the documented maxima, linear work (issue 22).
//! - `cook`: the simulator end to end (completion, refusal, faults, JSON, plot).
//! - `docs`: `validate`, `schema`, `migrate`, `logs export`.
//! - `serve`: the hub binary on port 0: token file, auth, graceful SIGTERM.
//! - `rules`: `convert`, `envelope`, `dry-run` (single, batch, explain), bad input.
//! - `profiles`: `sms parse`, `constraints`, `certify`, `registry`, `signal` and
//!   `verify --relayed`, data-driven over the standard's profile vectors.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod canon;
mod conformance;
mod cook;
mod demo;
mod docs;
mod fleet;
mod hostile;
mod keys;
mod kitchen;
mod log;
mod profiles;
mod rules;
mod scenarios;
mod serve;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `cookwala` with `args` in `dir`, feeding `stdin`.
pub fn cookwala_in(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cookwala"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    // A command that does not read stdin may close it early; that is not a test failure.
    let _ = pipe.write_all(stdin);
    drop(pipe);
    child.wait_with_output().unwrap()
}

/// Runs `cookwala` with `args` in `dir`.
pub fn cookwala(dir: &Path, args: &[&str]) -> Output {
    cookwala_in(dir, args, b"")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// Asserts an exit code, showing both streams on failure.
#[track_caller]
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
