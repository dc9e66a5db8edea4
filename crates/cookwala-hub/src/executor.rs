//! What the hub asks of a device: the [`Executor`] interface, and the in-process simulator as
//! its first implementation ([`SimExecutor`]).
//!
//! The hub's service never builds or drives a simulation itself: it asks a device's executor
//! to decide on a start ([`Executor::admit`], the device's one decision, stored with the
//! execution), to start the run admission decided ([`Executor::start`]), and then asks the
//! [`Run`] to stop, pause, resume, report its status, its log, its incidents and its trace. Every
//! operation that changes a run returns the events it produced ([`RunEvent`]s, in order): the
//! hub commits them to its outbox with the change, which is how it subscribes to a device's
//! events. The clock is the hub's for an in-process device ([`Run::advance`]); a device in
//! another process keeps its own and reports through the same events (issue 25).
//!
//! A leaf: it knows the Core documents and the simulator, nothing of HTTP, storage or the
//! service.

use canonical_json::Value;
use cookwala::admission::{Admission, AdmissionError, PlanStep, Request};
use cookwala::execution::ExecutionState;
use cookwala_sim::{Fault, SimConfig, SimError, Simulation};

/// An event a run produced (the simulator's event vocabulary: a type, a priority, data).
pub type RunEvent = cookwala_sim::SimEvent;

/// What an [`Executor`] starts a run with, besides its admission.
#[derive(Debug, Clone)]
pub struct RunStart {
    /// The Recipe document (empty object for a recipe the hub did not know: a refused run).
    pub recipe: Value,
    /// A person is present in the kitchen.
    pub human_present: bool,
    /// The noise seed (a simulated device's; a real one ignores it).
    pub seed: u64,
    /// The wall-clock time of the run's start (Unix ms).
    pub start_unix_ms: i64,
    /// Device ms per wall ms (the hub's speed for a simulated device).
    pub time_scale: f64,
    /// The execution id (its status's `id` and `request`).
    pub execution_id: String,
}

/// One device, as the hub drives it.
pub trait Executor: std::fmt::Debug + Send + Sync {
    /// The device's decision on a start: the Core admission (prechecks, the dry run with the
    /// effective limits) and what this device cannot enforce.
    ///
    /// # Errors
    /// A request missing a required field, documents the dry run cannot read.
    fn admit(&self, req: &Request<'_>) -> Result<Admission, AdmissionError>;

    /// Starts the run `admission` decided (a refused admission starts a run already final).
    ///
    /// # Errors
    /// The device cannot build it (a start time out of range, limits it cannot enforce).
    fn start(&self, start: RunStart, admission: &Admission) -> Result<Box<dyn Run>, SimError>;
}

/// One execution on a device.
pub trait Run: std::fmt::Debug + Send {
    /// Moves the device's clock on by `dt_ms` (an in-process device; the hub's clock).
    fn advance(&mut self, dt_ms: u64) -> Vec<RunEvent>;
    /// Stops safely (never refused; a final run stays as it is).
    fn stop(&mut self, reason: &str) -> Vec<RunEvent>;
    /// Stops safely from the device's own stop control (recorded as a local stop in the log).
    fn stop_local(&mut self) -> Vec<RunEvent>;
    /// Pauses a running execution.
    ///
    /// # Errors
    /// It is not running.
    fn pause(&mut self) -> Result<Vec<RunEvent>, SimError>;
    /// Resumes from `paused`, or confirms a person's step (`needs_human`) by `by`; returns
    /// the events and the status as it moved to `running`.
    ///
    /// # Errors
    /// It is in neither state.
    fn resume_by(&mut self, by: Option<&str>) -> Result<(Vec<RunEvent>, Value), SimError>;
    /// The current ExecutionStatus.
    fn status(&self) -> Value;
    /// Its `seq`.
    fn seq(&self) -> u64;
    /// Its state.
    fn state(&self) -> ExecutionState;
    /// True once the state is final.
    fn is_final(&self) -> bool;
    /// The ExecutionLog, once final.
    fn log(&self) -> Option<Value>;
    /// Incident documents recorded so far, oldest first.
    fn incidents(&self) -> &[Value];
    /// Every reading and each step's band, as the dashboard draws them.
    fn trace(&self) -> Value;
    /// The admitted plan (empty when refused).
    fn plan(&self) -> &[PlanStep];
    /// The wall-clock time of its start (Unix ms).
    fn start_unix_ms(&self) -> i64;
    /// Device ms per wall ms.
    fn time_scale(&self) -> f64;
}

/// The in-process simulator as a device: one per served device.
#[derive(Debug, Clone)]
pub struct SimExecutor {
    /// The device's Capabilities document.
    device: Value,
    /// Faults injected into every run (tests and demos).
    faults: Vec<Fault>,
}

impl SimExecutor {
    /// A simulated device with this Capabilities document.
    pub fn new(device: Value, faults: Vec<Fault>) -> SimExecutor {
        SimExecutor { device, faults }
    }
}

impl Executor for SimExecutor {
    fn admit(&self, req: &Request<'_>) -> Result<Admission, AdmissionError> {
        cookwala_sim::admit(req)
    }

    fn start(&self, start: RunStart, admission: &Admission) -> Result<Box<dyn Run>, SimError> {
        let mut config = SimConfig::new(start.recipe, self.device.clone());
        config.human_present = start.human_present;
        config.seed = start.seed;
        config.start_unix_ms = start.start_unix_ms;
        config.time_scale = start.time_scale;
        config.request_id.clone_from(&start.execution_id);
        config.execution_id = start.execution_id;
        config.faults.clone_from(&self.faults);
        Ok(Box::new(Simulation::from_admission(config, admission)?))
    }
}

impl Run for Simulation {
    fn advance(&mut self, dt_ms: u64) -> Vec<RunEvent> {
        Simulation::advance(self, dt_ms)
    }
    fn stop(&mut self, reason: &str) -> Vec<RunEvent> {
        Simulation::stop(self, reason)
    }
    fn stop_local(&mut self) -> Vec<RunEvent> {
        Simulation::stop_local(self)
    }
    fn pause(&mut self) -> Result<Vec<RunEvent>, SimError> {
        Simulation::pause(self)
    }
    fn resume_by(&mut self, by: Option<&str>) -> Result<(Vec<RunEvent>, Value), SimError> {
        Simulation::resume_by(self, by)
    }
    fn status(&self) -> Value {
        Simulation::status(self)
    }
    fn seq(&self) -> u64 {
        Simulation::seq(self)
    }
    fn state(&self) -> ExecutionState {
        Simulation::state(self)
    }
    fn is_final(&self) -> bool {
        Simulation::is_final(self)
    }
    fn log(&self) -> Option<Value> {
        Simulation::log(self)
    }
    fn incidents(&self) -> &[Value] {
        Simulation::incidents(self)
    }
    fn trace(&self) -> Value {
        Simulation::trace(self).to_value()
    }
    fn plan(&self) -> &[PlanStep] {
        Simulation::plan(self)
    }
    fn start_unix_ms(&self) -> i64 {
        Simulation::start_unix_ms(self)
    }
    fn time_scale(&self) -> f64 {
        Simulation::time_scale(self)
    }
}
