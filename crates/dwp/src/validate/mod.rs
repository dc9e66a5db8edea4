//! Contract and journal-event validation (upstream `contract_v6.py`), v6 and v7.
//!
//! Every function is pure: it takes parsed values and returns the list of upstream message
//! texts (empty = valid). Messages reproduce the upstream wording, including Python `%r`
//! formatting of offending values. Object keys are visited in sorted order (the value model
//! does not keep insertion order), so several `unexpected field` errors in one object may be
//! listed in a different order than upstream.

mod contract;
mod fields;
mod journal;
mod schema;

pub use contract::{closure_errors, command_head, contract_errors, gate_command_errors};
pub use journal::{
    TaskIndex, journal_errors, journal_event_errors, journal_event_errors_with, type_counts,
};
pub use schema::{
    ADAPTATION_FIELDS, ADAPTATION_KINDS, CAPABILITIES, CONTRACT_URL_V6, CONTRACT_URL_V7,
    EVENT_TYPES_V6, EVIDENCE_TYPES, EXECUTING_ACTORS, Generation, INTERVENTION_CATEGORIES,
    JOURNAL_URL_V6, JOURNAL_URL_V7, MECHANISMS, TRUST_LABELS, contract_generation,
    event_generation, journal_url_for,
};
