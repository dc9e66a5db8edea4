//! Throughput benchmarks for the canonical-JSON hashing and signature paths, and the hub
//! benchmark ([`hub`], behind the default `hub` feature; see `bench/hub.sh`).
//!
//! The binary `cw-bench` prints one JSON object per measurement on stdout; `bench/run.sh`
//! combines them with the Python reference's numbers (`bench/py_jcs.py`) and prints ratios.
//! Nothing here asserts on time: the numbers are reported, never checked.
//!
//! Every implementation works on the same documents: a *document set* is a directory of `.json`
//! files (walked recursively, sorted by relative path), read once before timing. Throughput in
//! MB/s always uses the same denominator for every implementation: the length of the JCS bytes
//! that the Cookwala document hash covers (the document without top-level `hash`/`signature`).

pub mod corpus;
pub mod docgen;
#[cfg(feature = "cookwala")]
pub mod dryrun;
pub mod harness;
#[cfg(feature = "hub")]
pub mod hub;
pub mod parsing;
pub mod sig;

#[cfg(test)]
mod tests;
