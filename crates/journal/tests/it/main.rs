//! Integration tests for `journal`: one binary, one module per topic.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod atomic;
mod checkpoint;
mod crash;
mod lockdir;
mod reader;
mod repair;
mod support;
mod writer;
