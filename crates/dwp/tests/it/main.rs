//! Integration tests for `dwp`: interop with the upstream fixtures in `../shared/standards/dwp`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod admission;
mod identity;
mod projection;
mod records;
mod validation;
