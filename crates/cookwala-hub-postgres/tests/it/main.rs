//! Integration tests of the PostgreSQL store (one test binary; see each module).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod contract;
mod hubs;
mod tls;
