//! The DWP records layer (v6/v7) as a library.
//!
//! A DWP plan keeps agent work as durable records: a content-addressed contract, an
//! append-only journal, and projections regenerated from the journal. This crate is a
//! drop-in for the upstream Python helpers' records layer.
//!
//! Identity is the one place where bytes must match the upstream tools exactly: a
//! `contract_id` is the SHA-256 of Python's `json.dumps(body, sort_keys=True,
//! separators=(',', ':'))` over the contract without its `contract_id` key, produced here by
//! [`canonical_json::to_python_compact`] and nothing else.
//!
//! Everything here is pure: [`contract`], [`validate`], [`projection`], [`mint`] (what an
//! `append` may record), [`gate`] (what a gate run, a control pair's legs or a sign-off
//! admit), [`refusal`] (how a refused request is recorded) and [`py`] are functions over
//! parsed [`canonical_json::Value`]s with no I/O and no clock. The plan folder, the journal
//! writer and the gate runner live in the `dwp-ledger` crate.

pub mod context;
pub mod context_manifest;
pub mod contract;
pub mod event;
pub mod gate;
pub mod migrate;
pub mod mint;
pub mod outcomes;
pub mod projection;
pub mod py;
pub mod refusal;
pub mod resources;
pub mod scheduler;
pub mod status;
pub mod validate;
pub mod views;
