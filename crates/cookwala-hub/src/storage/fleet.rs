//! What a store shared by several hub replicas adds: device leases, taking over the executions
//! of a replica that died, and handing a stop or resume to the replica that runs the
//! execution.
//!
//! **Why leases.** A simulation lives in the memory of one replica; a second copy of it on
//! another replica would heat the same pan twice. So a device runs on one replica at a time:
//! the replica that accepts an execution takes the device's lease in the same transaction
//! (refused `busy` if another replica holds it), renews it while the execution runs, and gives
//! it up when the execution ends. Every write of a running execution is fenced by its owner, so
//! a replica that stalled past its lease and wakes up finds nothing it may still write.
//!
//! **Failover ends, never resumes.** When a lease runs out unrenewed (the replica was killed,
//! lost its database, or stalled), any replica claims the executions it covered and ends them
//! the way a restart does — `stopped`, log outcome `aborted_safe` — because the heater state
//! died with the process. Nothing is run twice.
//!
//! **Commands.** A stop or resume that reaches a replica not running the execution is written
//! as a command row for the owner, which runs it as if it had received the request and writes
//! the answer back; the receiving replica waits for that answer (or for the execution to end,
//! when the owner is gone and failover ends it).

use super::{ExecutionRecord, IdempotencyRecord, StorageError};

/// What a start reads before it decides, in one round trip.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StartReads {
    /// The stored answer for the request's idempotency key.
    pub idempotency: Option<IdempotencyRecord>,
    /// True when an execution with the request's id is stored.
    pub stored: bool,
    /// [`Fleet::device_busy`] of the device.
    pub busy: bool,
    /// Every stored recall (JCS text), oldest `issuedAt` first.
    pub recalls: Vec<String>,
}

/// A request for the replica that runs an execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FleetCommand {
    /// The execution it is for.
    pub execution: String,
    /// `stop` or `resume`.
    pub kind: String,
    /// What the owner needs to answer it as if the request had reached it (JCS text).
    pub payload: String,
}

/// The fleet operations of a shared store. Every method is one transaction.
pub trait Fleet: Send + Sync + std::fmt::Debug {
    /// This replica's name (unique among the replicas of the store).
    fn replica(&self) -> &str;

    /// How long an unrenewed lease lasts, in milliseconds.
    fn lease_ms(&self) -> u64;

    /// True when an unfinished execution is stored for `device`, or another replica holds
    /// its lease.
    ///
    /// # Errors
    /// Any backend failure.
    fn device_busy(&self, device: &str) -> Result<bool, StorageError>;

    /// Everything a start reads before deciding (the idempotency record for `key`, whether
    /// `id` is stored, whether `device` is busy, the recalls), as of one moment.
    ///
    /// # Errors
    /// Any backend failure.
    fn start_reads(&self, key: &str, id: &str, device: &str) -> Result<StartReads, StorageError>;

    /// Renews this replica's leases on `devices` (those it runs executions on) and gives up
    /// its other leases. Returns the devices of `devices` whose lease it no longer holds
    /// (another replica took their executions over).
    ///
    /// # Errors
    /// Any backend failure.
    fn renew_leases(&self, devices: &[String]) -> Result<Vec<String>, StorageError>;

    /// Takes or renews the relay lease (one replica delivers the shared outbox to webhooks
    /// and MQTT); true while this replica holds it.
    ///
    /// # Errors
    /// Any backend failure.
    fn hold_relay(&self) -> Result<bool, StorageError>;

    /// Gives up every lease held under this replica's name (at start: a previous process of
    /// the same name is gone, and what it ran must be ended, not renewed).
    ///
    /// # Errors
    /// Any backend failure.
    fn forget_leases(&self) -> Result<(), StorageError>;

    /// Claims every unfinished execution whose owner no longer holds its device's lease (the
    /// owner died or stalled past its lease): they are owned by this replica when this
    /// returns, for it to end safely.
    ///
    /// # Errors
    /// Any backend failure.
    fn claim_orphans(&self) -> Result<Vec<ExecutionRecord>, StorageError>;

    /// Stores a command for the owner of `cmd.execution`; returns its id.
    ///
    /// # Errors
    /// Any backend failure.
    fn post_command(&self, cmd: &FleetCommand) -> Result<i64, StorageError>;

    /// Unanswered commands for executions this replica owns, oldest first.
    ///
    /// # Errors
    /// Any backend failure.
    fn pending_commands(&self) -> Result<Vec<(i64, FleetCommand)>, StorageError>;

    /// Stores the answer to command `id` (an HTTP status and its body).
    ///
    /// # Errors
    /// Any backend failure.
    fn answer_command(&self, id: i64, status: u16, body: &str) -> Result<(), StorageError>;

    /// The answer to command `id`, once given.
    ///
    /// # Errors
    /// Any backend failure.
    fn command_answer(&self, id: i64) -> Result<Option<(u16, String)>, StorageError>;
}
