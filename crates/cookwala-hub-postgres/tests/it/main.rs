//! Integration tests of the PostgreSQL store (one test binary; see each module).

mod contract;
