//! Integration tests for `dwp-ledger`: the writer in-process (the CLI tests drive the binary).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod reads;
mod writer;
