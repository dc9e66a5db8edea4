//! The file layer of a plan: folder layout, generation detection, the journal writer and the
//! gate runner (upstream `ledger.py`'s `PlanRecords`, `CooperativeLock` and `Writer`).
//!
//! Everything that touches files, git or processes lives here; the rules themselves are the
//! pure functions of [`dwp::validate`] (what an event may look like), [`dwp::mint`] (what an
//! `append` may record), [`dwp::gate`] (what a gate run or sign-off admits) and
//! [`dwp::projection`]. The wall clock is passed in (`now`) so callers and tests decide what
//! time it is.
//!
//! # Layout
//!
//! From the bottom up (each module uses only modules listed before it):
//!
//! * `error` ([`LedgerError`]), `values` (JSON builders), `files` (hashing, the atomic pretty
//!   write, the symlink refusal), `summary` (the journal summary: a cache, outside the plan
//!   folder, of what the read paths take from the journal, used only once the bytes it covers
//!   hash to its digest; [`cache_file`]), `reader` (read-only journal views through
//!   [`journal::read_typed`], and [`read_compact`], the read paths' one pass), `command`
//!   (resolving a gate program through `PATH`, running a command in its own process group);
//! * `plan` ([`Plan`]: the folder, its generation and live contract), `evidence` (evidence
//!   pointers and the `evidence.jsonl` reuse cache);
//! * `writer` ([`Writer`]: the plan lock, waited for with a bound ([`set_lock_wait`]), the
//!   journal crate's lock and repair of a torn final line, the one append path, where every
//!   event is validated against the live contract, and [`Writer::repair_lines`], the explicit
//!   and recorded repair of damaged lines, which no writer repairs on its own; every line is
//!   read under one rule, [`dwp::event::record`], by the writer and every reader alike);
//! * `refusal` ([`Writer::refused`]: a refused request's `refusal` event, appended before the
//!   refusal is reported);
//! * the operations on a writer: `git` (tree state and the gate fingerprint), `mint`
//!   ([`Writer::append`]), `lifecycle` (`start`, `signoff`, `complete`), `gate`
//!   ([`Writer::run_gate`]: the admitted argv run without a shell), `project`, `roll`,
//!   `export` (only files inside the plan or the repository, into a fresh destination),
//!   `materialize`;
//! * the part-2 edges: [`records`], [`verify`], [`outcomes`] (the control-pair executor, the
//!   second path that mints observed evidence: admitted by the gate's rules, both legs run
//!   without a shell, its refusals recorded), [`views`], [`amend`], [`migrate`], [`delegate`],
//!   [`context`].
//!
//! # Durability
//!
//! Journal appends go through [`journal::Journal`] (one write, then `fdatasync`); projections
//! (`state.json`, manifests, contracts) through [`journal::atomic_replace`]; `evidence.jsonl`
//! lines are appended by `evidence` and fsynced the same way.

mod command;
mod error;
mod evidence;
mod export;
mod files;
mod gate;
mod git;
mod lifecycle;
mod materialize;
mod mint;
mod plan;
mod project;
mod reader;
mod refusal;
mod roll;
mod summary;
mod values;
mod writer;

pub mod amend;
pub mod context;
pub mod delegate;
pub mod migrate;
pub mod outcomes;
pub mod records;
pub mod verify;
pub mod views;

pub use command::GateCommand;
pub use dwp::gate::SIGNOFF_COMMAND;
pub use error::LedgerError;
pub use files::{
    hash_file, read_json_named, refuse_symlink, safe_relative, timestamp, write_pretty,
};
pub use gate::{GateOutcome, GateRequest, Timeout, gate_slug};
pub use git::git;
pub use materialize::materialize;
pub use mint::{human_marker_missing, human_note_marker};
pub use plan::{
    EVIDENCE_NAME, FolderGeneration, JOURNAL_NAME, LOCK_IDENTITY, MANIFEST_URL_V6, MANIFEST_URL_V7,
    Plan, detect_generation, find_plan_dir, plan_markdown_digest, repo_root,
};
pub use reader::{
    CompactView, DamagedLine, JournalItem, JournalView, inspect_journal, read_compact,
    read_journal, stream_journal, type_positions,
};
pub use summary::cache_file;
pub use values::actor;
pub use writer::{
    AppendRequest, DEFAULT_LOCK_WAIT, Load, RepairReport, Writer, lock_wait, set_lock_wait,
};
