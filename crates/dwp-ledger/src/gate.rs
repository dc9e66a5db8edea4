//! The gate runner: admission ([`dwp::gate::admit`]), the reuse cache, the run itself (logs
//! under `gates/<T>/`), the observed `gate_run` and its `evidence.jsonl` line.

use std::fs;

use canonical_json::{Number, Value};
use dwp::gate;
use dwp::projection::{self, seq_of};

use dwp::refusal::{Rule, Stage};

use crate::command::{GateCommand, RunResult, resolve_program, run_command};
use crate::error::{Result, fail, io_fail};
use crate::evidence;
use crate::files::refuse_symlink;
use crate::plan::EVIDENCE_NAME;
use crate::refusal::refusal;
use crate::values::{int, obj, s};
use crate::writer::Writer;

/// `re.sub(r'[^A-Za-z0-9._-]+', '-', cmd)[:40].strip('-')`.
pub fn gate_slug(command: &str) -> String {
    let mut out = String::new();
    let mut in_run = false;
    for c in command.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    let cut: String = out.chars().take(40).collect();
    cut.trim_matches('-').to_owned()
}

/// A gate timeout as the user wrote it (`--timeout 5` records `5.0`, the default `600`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timeout {
    /// The default, an integer 600.
    Default,
    /// `--timeout S` (a float, as argparse parses it).
    Given(f64),
}

impl Timeout {
    fn seconds(self) -> f64 {
        match self {
            Timeout::Default => 600.0,
            Timeout::Given(s) => s,
        }
    }

    fn text(self) -> String {
        match self {
            Timeout::Default => "600".to_owned(),
            Timeout::Given(s) => canonical_json::python_float_repr(s),
        }
    }

    fn to_value(self) -> Value {
        match self {
            Timeout::Default => int(600),
            Timeout::Given(secs) => canonical_json::Finite::new(secs)
                .map_or_else(|| int(600), |f| Value::Number(Number::Float(f))),
        }
    }
}

/// A `gate` request.
#[derive(Clone, Debug)]
pub struct GateRequest {
    /// Task id.
    pub task: String,
    /// Criterion id.
    pub criterion: Option<String>,
    /// The command.
    pub command: GateCommand,
    /// Timeout.
    pub timeout: Timeout,
    /// `--selection`.
    pub selection: Option<String>,
    /// Reuse cached evidence (not `--no-reuse`).
    pub reuse: bool,
}

/// What a gate did.
#[derive(Clone, Debug)]
pub struct GateOutcome {
    /// Replayed from the cache.
    pub reused: bool,
    /// The fingerprint.
    pub fingerprint: String,
    /// Exit code.
    pub exit_code: i64,
    /// Log path relative to the plan.
    pub log: String,
    /// The `gate_run` seq.
    pub seq: Option<i64>,
}

impl Writer {
    /// A cached result for an exact fingerprint match of the same (task, criterion), still in
    /// the task's evidence window.
    pub fn evidence_lookup(
        &self,
        fingerprint: &str,
        task: &str,
        criterion: Option<&str>,
    ) -> Option<Value> {
        evidence::lookup(&self.plan, &self.events, fingerprint, task, criterion)
    }

    /// `gate`: runs a declared check and records an observed `gate_run`.
    ///
    /// # Errors
    /// A refused request (recorded as a `refusal` event first: unknown task, criterion outside
    /// the task's intent, task not started, command class, shell syntax, criterion binding), a
    /// program not found (nothing ran, nothing recorded), collision, I/O.
    pub fn run_gate(&mut self, req: &GateRequest) -> Result<GateOutcome> {
        let joined = req.command.joined();
        let task = self.known_task("ledger gate", Stage::Gate, &req.task)?;
        let started = projection::task_start_seq_of(&self.events, &req.task).is_some();
        let form = match &req.command {
            GateCommand::Shell(text) => gate::Command::Text(text),
            GateCommand::Argv(argv) => gate::Command::Argv(argv),
        };
        let admitted = gate::admit(
            &self.plan.contract,
            &req.task,
            &task,
            req.criterion.as_deref(),
            started,
            form,
        );
        let admitted = match admitted {
            Ok(admitted) => admitted,
            Err(refused) => {
                // The offending value: the command, except for a criterion refusal.
                let value = match refused.rule {
                    Rule::GateIntent => req.criterion.clone().unwrap_or_default(),
                    _ => joined.clone(),
                };
                let r = refusal(
                    "ledger gate",
                    Stage::Gate,
                    refused.rule,
                    &req.task,
                    &value,
                    &refused.message,
                );
                return Err(self.refused(&r, fail(refused.message)));
            }
        };
        let criterion = admitted.criterion;
        let command_value = req.command.to_value();
        let fp = self.fingerprint(&req.task, &command_value, req.selection.as_deref())?;
        if req.reuse
            && let Some(prior) = self.evidence_lookup(&fp, &req.task, Some(criterion))
        {
            return Ok(GateOutcome {
                reused: true,
                fingerprint: fp,
                exit_code: prior.get("exit_code").and_then(Value::as_i64).unwrap_or(1),
                log: dwp::py::str_opt(prior.get("log")),
                seq: prior.get("seq").and_then(Value::as_i64),
            });
        }
        let root = self.plan.repo_root();
        let log_dir = self.plan.dir.join("gates").join(&req.task);
        refuse_symlink(&log_dir)?;
        fs::create_dir_all(&log_dir).map_err(|e| io_fail(&log_dir, e))?;
        let slug = gate_slug(&joined);
        let log_name =
            format!("{:03}-{}.log", self.next_seq()?, if slug.is_empty() { "gate" } else { &slug });
        let log_path = log_dir.join(&log_name);
        // The program as the allow-list means it: a PATH lookup that skips relative entries and
        // the repository itself, or the exact path a class names (resolved from the repository
        // root). The admitted argv runs directly; no shell reads it.
        let run = match resolve_program(&admitted.argv[0], &root) {
            Some(program) => {
                let mut argv = admitted.argv.clone();
                argv[0] = program.to_string_lossy().into_owned();
                run_command(&GateCommand::Argv(argv), &root, req.timeout.seconds())?
            }
            None => RunResult::NotFound,
        };
        let (exit_code, out, err) = match run {
            RunResult::Finished { code, stdout, stderr } => (code, stdout, stderr),
            RunResult::TimedOut { stdout } => {
                (124, stdout, format!("timeout after {}s", req.timeout.text()))
            }
            RunResult::NotFound => {
                return Err(fail(format!(
                    "gate command not found: {} — no event is recorded for a command that never ran",
                    dwp::py::repr(&command_value)
                )));
            }
        };
        let log = format!(
            "$ {}\n\n--- stdout ---\n{out}\n--- stderr ---\n{err}\n--- exit {exit_code} ---\n",
            dwp::py::str_of(&command_value)
        );
        fs::write(&log_path, log).map_err(|e| io_fail(&log_path, e))?;
        let rel_log = format!("gates/{}/{log_name}", req.task);
        let cwd = std::path::absolute(&root).unwrap_or(root);
        // The exact argv, reversibly: its words as written when they read back as the same
        // words, else POSIX-quoted (an argv array with spaces or quotes inside a word).
        let recorded = gate::shown(&admitted.argv);
        let payload = obj([
            ("command", s(&recorded)),
            ("cwd", s(&cwd.to_string_lossy())),
            ("timeout_seconds", req.timeout.to_value()),
            ("exit_code", int(exit_code)),
            ("task", s(&req.task)),
            ("criterion", s(criterion)),
        ]);
        let event = self.append_raw(
            "gate_run",
            payload,
            self.helper(),
            None,
            Some("observed"),
            Some(&rel_log),
        )?;
        let seq = seq_of(&event);
        let cache = Value::Object(obj([
            ("fingerprint", s(&fp)),
            ("task", s(&req.task)),
            ("criterion", s(criterion)),
            ("exit_code", int(exit_code)),
            ("log", s(&rel_log)),
            ("seq", int(seq)),
            ("ts", event.get("ts").cloned().unwrap_or(Value::Null)),
        ]));
        let mut line =
            canonical_json::to_python_compact(&cache).map_err(|e| fail(e.to_string()))?;
        line.push(b'\n');
        let cache_path = self.plan.dir.join(EVIDENCE_NAME);
        evidence::append_record(&cache_path, &line)?;
        Ok(GateOutcome { reused: false, fingerprint: fp, exit_code, log: rel_log, seq: Some(seq) })
    }
}
