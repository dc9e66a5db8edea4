//! Servers run as child processes: started, found through the address they print, measured
//! through `/proc/<pid>`, and stopped (SIGTERM, then SIGKILL) when dropped.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// A running server process.
#[derive(Debug)]
pub struct Server {
    /// What it is (for messages).
    pub name: String,
    /// The address it listens on.
    pub addr: SocketAddr,
    child: Child,
    stderr_log: PathBuf,
}

/// How long a server may take to print its address.
const START_TIMEOUT: Duration = Duration::from_secs(60);

impl Server {
    /// Starts `cmd` (stdout piped, stderr to `stderr_log`) and waits for the first stdout line
    /// with `http://ADDR` in it.
    ///
    /// # Errors
    /// The process cannot start, exits, or prints no address in time.
    pub fn spawn(name: &str, mut cmd: Command, stderr_log: &Path) -> anyhow::Result<Server> {
        let err = std::fs::File::create(stderr_log)
            .with_context(|| format!("creating {}", stderr_log.display()))?;
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(err);
        let mut child = cmd.spawn().with_context(|| format!("starting {name}: {cmd:?}"))?;
        let stdout = child.stdout.take().context("child stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut found = false;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if !found
                    && let Some(rest) = line.split("http://").nth(1)
                    && let Ok(addr) = rest.trim().trim_end_matches('/').parse::<SocketAddr>()
                {
                    found = true;
                    let _ = tx.send(addr);
                }
            }
        });
        let mut server = Server {
            name: name.to_owned(),
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            child,
            stderr_log: stderr_log.to_owned(),
        };
        match rx.recv_timeout(START_TIMEOUT) {
            Ok(addr) => {
                server.addr = addr;
                Ok(server)
            }
            Err(_) => {
                let tail = server.stderr_tail();
                drop(server);
                bail!(
                    "{name} printed no listening address within {START_TIMEOUT:?}; stderr:\n{tail}"
                )
            }
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr_log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// `VmRSS` and `VmHWM` (peak) in KiB, from `/proc/<pid>/status`.
    ///
    /// # Errors
    /// The file cannot be read or lacks the fields.
    pub fn rss_kib(&self) -> anyhow::Result<(u64, u64)> {
        let path = format!("/proc/{}/status", self.pid());
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        let field = |name: &str| -> anyhow::Result<u64> {
            let line = text
                .lines()
                .find(|l| l.starts_with(name))
                .with_context(|| format!("{name} in {path}"))?;
            let kib = line.split_whitespace().nth(1).unwrap_or_default();
            kib.parse().with_context(|| format!("{line:?}"))
        };
        Ok((field("VmRSS:")?, field("VmHWM:")?))
    }

    /// User + system CPU seconds so far (all threads), from `/proc/<pid>/stat` (clock ticks of
    /// 1/100 s, the Linux `USER_HZ`).
    ///
    /// # Errors
    /// The file cannot be read or parsed.
    pub fn cpu_secs(&self) -> anyhow::Result<f64> {
        proc_cpu_secs(self.pid())
    }
}

/// User + system CPU seconds of process `pid` (see [`Server::cpu_secs`]).
///
/// # Errors
/// The file cannot be read or parsed.
pub fn proc_cpu_secs(pid: u32) -> anyhow::Result<f64> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = text.rsplit_once(')').map(|(_, r)| r).context("stat format")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15; `rest` starts at field 3.
    let tick = |i: usize| -> anyhow::Result<f64> {
        Ok(fields.get(i).context("stat field")?.parse::<u64>()? as f64 / 100.0)
    };
    Ok(tick(11)? + tick(12)?)
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(raw) = i32::try_from(self.child.id())
            && let Some(pid) = rustix::process::Pid::from_raw(raw)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
