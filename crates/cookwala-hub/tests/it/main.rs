//! Integration tests for the hub: router tests without a network, restart recovery, a port-0
//! smoke test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod api;
mod auth;
mod catalog;
mod concurrency;
mod dashboard;
mod delivery;
mod devices;
mod events;
mod fair_shares;
mod hardening;
mod health;
mod mqtt;
mod openapi;
mod recalls;
mod restart;
mod samples;
mod schemathesis;
mod smoke;
mod storage;
mod storage_faults;
mod support;
mod tools;
mod ws;
