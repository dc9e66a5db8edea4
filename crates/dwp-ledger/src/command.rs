//! Running a command the way a gate does: a shell string or an argv array, in its own process
//! group, killed as a group on timeout; output decoded as Python text mode.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use canonical_json::Value;

use crate::error::{Result, fail};
use crate::values::s;

/// A gate command: a shell string or an argv array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateCommand {
    /// Run by `/bin/sh -c`.
    Shell(String),
    /// Executed directly.
    Argv(Vec<String>),
}

impl GateCommand {
    /// Parses `--json`: a non-blank JSON string or a non-empty array of non-blank strings.
    pub fn parse(raw: &str) -> Option<GateCommand> {
        match canonical_json::parse(raw.as_bytes()).ok()? {
            Value::String(text) if dwp::py::non_blank(&text) => Some(GateCommand::Shell(text)),
            Value::Array(items) if !items.is_empty() => items
                .iter()
                .map(|i| i.as_str().filter(|t| dwp::py::non_blank(t)).map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(GateCommand::Argv),
            _ => None,
        }
    }

    /// The command as recorded (argv joined with spaces).
    pub fn joined(&self) -> String {
        match self {
            GateCommand::Shell(text) => text.clone(),
            GateCommand::Argv(argv) => argv.join(" "),
        }
    }

    /// The command as parsed (string or list).
    pub fn to_value(&self) -> Value {
        match self {
            GateCommand::Shell(text) => s(text),
            GateCommand::Argv(argv) => Value::Array(argv.iter().map(|a| s(a)).collect()),
        }
    }
}

/// The executable a gate's program names, as the allow-list means it.
///
/// A bare name (`true`) is looked up on `PATH` only, skipping empty and relative entries and
/// any entry inside the repository (`repo`): a file named `true` in the repository, or an
/// `./true`, is never the class `true`. A path-qualified name was admitted only because a
/// class names that exact path; it is taken as written, relative to the repository root.
/// `None` when nothing executable is found.
pub(crate) fn resolve_program(program: &str, repo: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable =
        |p: &Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let path = repo.join(program);
        return executable(&path).then_some(path);
    }
    let repo_real = repo.canonicalize().ok();
    let path_var = std::env::var_os("PATH")?;
    std::env::split_paths(&path_var)
        .filter(|dir| dir.is_absolute())
        .filter(|dir| {
            let real = dir.canonicalize().unwrap_or_else(|_| dir.clone());
            repo_real.as_ref().is_none_or(|r| !real.starts_with(r))
        })
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))
}

pub(crate) enum RunResult {
    Finished { code: i64, stdout: String, stderr: String },
    TimedOut { stdout: String },
    NotFound,
}

/// Python text-mode decoding: lossy UTF-8 with universal newlines.
fn text_mode(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace("\r\n", "\n").replace('\r', "\n")
}

pub(crate) fn run_command(command: &GateCommand, cwd: &Path, timeout: f64) -> Result<RunResult> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use wait_timeout::ChildExt;
    let mut cmd = match command {
        GateCommand::Shell(text) => {
            let mut c = Command::new("/bin/sh");
            c.arg("-c").arg(text);
            c
        }
        GateCommand::Argv(argv) => {
            let Some((program, rest)) = argv.split_first() else {
                return Ok(RunResult::NotFound);
            };
            let mut c = Command::new(program);
            c.args(rest);
            c
        }
    };
    cmd.current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RunResult::NotFound),
        Err(e) => return Err(fail(format!("gate command could not start: {e}"))),
    };
    let pump = |stream: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut s) = stream {
                let _ = s.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out_thread = pump(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let err_thread = pump(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let limit = Duration::try_from_secs_f64(timeout.max(0.0)).unwrap_or(Duration::from_secs(600));
    let status = child.wait_timeout(limit).map_err(|e| fail(format!("gate wait failed: {e}")))?;
    match status {
        Some(status) => {
            // Descendants that outlive the shell keep the pipes open; end the group.
            kill_group(child.id());
            let stdout = out_thread.join().unwrap_or_default();
            let stderr = err_thread.join().unwrap_or_default();
            let code =
                status.code().map_or_else(|| -i64::from(status.signal().unwrap_or(0)), i64::from);
            Ok(RunResult::Finished { code, stdout: text_mode(&stdout), stderr: text_mode(&stderr) })
        }
        None => {
            kill_group(child.id());
            let _ = child.wait();
            let stdout = out_thread.join().unwrap_or_default();
            let _ = err_thread.join();
            Ok(RunResult::TimedOut { stdout: text_mode(&stdout) })
        }
    }
}

fn kill_group(pid: u32) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}
