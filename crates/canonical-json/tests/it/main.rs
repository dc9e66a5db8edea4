//! Integration tests for `canonical-json`.
//!
//! - `vectors`: RFC 8785 input/output pairs and the Cookwala `hash` conformance vectors.
//! - `corpus`: 100,000+ doubles formatted by Node's `String(Number)` (JCS) and random documents
//!   and doubles written by CPython's `json.dumps` / `repr` (DWP form), generated at test time.
//! - `props`: property tests (round trips, idempotence, no panics on arbitrary bytes).
//! - `differential`: the parser against the one it replaced (`reference`) and serde_json.
//! - `hostile`: worst shapes at the documented maxima (depth, body size), linear work (issue 22).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod corpus;
mod differential;
mod hostile;
mod props;
mod reference;
mod vectors;
