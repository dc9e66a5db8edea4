//! A throwaway Mosquitto broker for tests: a generated config on a free loopback port in a
//! temporary folder (anonymous access, persistence on, so sessions survive a restart), killed
//! when the value is dropped.
//!
//! The binary comes from Debian's `mosquitto` package; `.ci/run` installs it when missing.
//! Without it the harness returns `None` with a notice, and under `CI=true` it panics: the bus
//! suites must not skip there.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The mosquitto binary, or `None` with a notice.
///
/// # Panics
/// Under CI when mosquitto is not installed.
pub fn mosquitto() -> Option<PathBuf> {
    for p in ["/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto", "/usr/bin/mosquitto"] {
        if Path::new(p).is_file() {
            return Some(PathBuf::from(p));
        }
    }
    assert!(
        !crate::in_ci(),
        "CI=true but mosquitto is not installed (.ci/run installs the Debian package)"
    );
    eprintln!("notice: mosquitto not installed (apt-get install mosquitto); skipping");
    None
}

/// A loopback port nothing listens on right now (the OS picks it; racy, but fine for tests).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free loopback port: {e}"))
}

/// A Mosquitto of our own; killed when dropped.
///
/// The port and folder stay the same across [`Broker::down`] and [`Broker::up`], so clients
/// reconnect to the same address and persistent sessions come back.
#[derive(Debug)]
pub struct Broker {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl Broker {
    /// A broker on a free port, started; `None` when mosquitto is missing (outside CI).
    pub fn start() -> Option<Broker> {
        let mut b = Broker::new()?;
        b.up();
        Some(b)
    }

    /// A broker on a free port, not started yet (for tests where the broker comes up late).
    pub fn new() -> Option<Broker> {
        let bin = mosquitto()?;
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temporary folder: {e}"));
        let port = free_port();
        let conf = format!(
            "listener {port} 127.0.0.1\nallow_anonymous true\npersistence true\n\
             persistence_location {}/\nlog_dest file {}/mosquitto.log\nuser root\n",
            dir.path().display(),
            dir.path().display()
        );
        let path = dir.path().join("mosquitto.conf");
        std::fs::write(&path, conf).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Some(Broker { bin, dir, port, child: None })
    }

    /// Starts the broker and waits (10 s at most) until it accepts connections.
    ///
    /// # Panics
    /// When mosquitto cannot be spawned or does not listen in time (the message holds its log).
    pub fn up(&mut self) {
        let child = Command::new(&self.bin)
            .arg("-c")
            .arg(self.dir.path().join("mosquitto.conf"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", self.bin.display()));
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < until, "mosquitto did not start: {}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the broker with SIGTERM (it saves its sessions) and waits for it; SIGKILL after
    /// 5 s.
    pub fn down(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
            let until = Instant::now() + Duration::from_secs(5);
            let exited = |c: &mut Child| {
                c.try_wait().unwrap_or_else(|e| panic!("waiting for mosquitto: {e}")).is_some()
            };
            while !exited(&mut child) {
                if Instant::now() > until {
                    let _ = child.kill();
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// Kills the broker with SIGKILL and waits for it: a crash, so it saves nothing since its
    /// last autosave.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// What the broker logged so far (empty when it has not written a log yet).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("mosquitto.log")).unwrap_or_default()
    }

    /// `mqtt://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.port)
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("mosquitto log:\n{}", self.log());
        }
        self.kill();
    }
}
