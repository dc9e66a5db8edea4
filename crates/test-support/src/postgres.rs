//! A throwaway PostgreSQL cluster for tests: `initdb` into a temporary folder, the server on a
//! free loopback port (and a private Unix socket folder), run as the `postgres` user when the
//! tests run as root (the server refuses to run as root), stopped with `-m immediate` and
//! removed when the value is dropped.
//!
//! The binaries come from Debian's `postgresql` package (`/usr/lib/postgresql/<major>/bin`);
//! `.ci/run` installs it when missing. Without it the harness returns `None` with a notice, and
//! under `CI=true` it panics: the fleet suites must not skip there.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A running test cluster.
#[derive(Debug)]
pub struct PgCluster {
    bin: PathBuf,
    dir: PathBuf,
    /// The loopback port it listens on.
    pub port: u16,
    as_postgres: bool,
}

/// The folder holding `initdb`, `pg_ctl` and `postgres` (the newest major version installed).
fn pg_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("COOKWALA_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut majors: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let major = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((major, bin))
        })
        .collect();
    majors.sort();
    majors.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free loopback port: {e}"))
}

impl PgCluster {
    /// Starts a new cluster with a database `cookwala` owned by `postgres` (trust auth on
    /// loopback), or `None` (with a notice) when PostgreSQL is not installed.
    ///
    /// # Panics
    /// Under CI when PostgreSQL is missing, or when the cluster cannot be started.
    pub fn start() -> Option<PgCluster> {
        let Some(bin) = pg_bin() else {
            if crate::in_ci() {
                panic!(
                    "CI=true but PostgreSQL is not installed (.ci/run installs the Debian package \
                     postgresql): the fleet suites cannot run"
                );
            }
            eprintln!("notice: PostgreSQL not installed; skipping this test");
            return None;
        };
        let as_postgres = is_root();
        let base = std::env::temp_dir().join(format!(
            "cookwala-pg-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&base).unwrap_or_else(|e| panic!("{}: {e}", base.display()));
        let mut c = PgCluster { bin, dir: base, port: free_port(), as_postgres };
        if as_postgres {
            c.chown();
        }
        let data = c.data();
        let out = c.run(
            "initdb",
            &["-D", path_str(&data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
        );
        check(&out, "initdb");
        c.start_server();
        let out = c.run(
            "createdb",
            &["-h", "127.0.0.1", "-p", &c.port.to_string(), "-U", "postgres", "cookwala"],
        );
        check(&out, "createdb");
        Some(c)
    }

    /// `postgres://postgres@127.0.0.1:PORT/cookwala`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/cookwala", self.port)
    }

    /// Creates database `name` and returns its URL.
    pub fn create_db(&self, name: &str) -> String {
        let out = self.run(
            "createdb",
            &["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "postgres", name],
        );
        check(&out, "createdb");
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// Turns TLS on with this certificate and key (PEM) and restarts the server; plain
    /// connections stay allowed.
    pub fn enable_tls(&mut self, cert_pem: &str, key_pem: &str) {
        let data = self.data();
        let write = |name: &str, text: &str| {
            let path = data.join(name);
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let _ = Command::new("chmod").arg("600").arg(&path).status();
        };
        write("server.crt", cert_pem);
        write("server.key", key_pem);
        let conf = data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).unwrap_or_default();
        text.push_str("\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
        std::fs::write(&conf, text).unwrap_or_else(|e| panic!("{}: {e}", conf.display()));
        self.restart();
    }

    /// Runs one SQL statement on database `db` with `psql` and returns its unaligned output.
    pub fn sql(&self, db: &str, query: &str) -> String {
        let port = self.port.to_string();
        let out = self.run(
            "psql",
            &["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-d", db, "-At", "-c", query],
        );
        check(&out, "psql");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Stops the server at once (as a crash would) and starts it again on the same port.
    pub fn restart(&mut self) {
        self.stop();
        self.start_server();
    }

    /// Stops the server (`-m immediate`: no checkpoint, as a crash).
    pub fn stop(&self) {
        let data = self.data();
        let _ = self.run("pg_ctl", &["-D", path_str(&data), "-m", "immediate", "-w", "stop"]);
    }

    /// Starts the server (after [`PgCluster::stop`]).
    pub fn start_server(&mut self) {
        let data = self.data();
        let sock = self.dir.join("sock");
        let _ = std::fs::create_dir_all(&sock);
        if self.as_postgres {
            self.chown();
        }
        let opts = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=on -c max_connections=200",
            self.port,
            sock.display()
        );
        let log = self.dir.join("server.log");
        let out = self.run(
            "pg_ctl",
            &["-D", path_str(&data), "-l", path_str(&log), "-o", &opts, "-w", "-t", "60", "start"],
        );
        if !out.status.success() {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("pg_ctl start failed: {}\n{log}", String::from_utf8_lossy(&out.stderr));
        }
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(t.elapsed() < Duration::from_secs(30), "PostgreSQL did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn chown(&self) {
        let _ = Command::new("chown").args(["-R", "postgres:postgres"]).arg(&self.dir).status();
    }

    /// Runs a PostgreSQL program (as `postgres` when the tests run as root).
    fn run(&self, program: &str, args: &[&str]) -> Output {
        let exe = self.bin.join(program);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        cmd.args(args).current_dir(&self.dir);
        cmd.output().unwrap_or_else(|e| panic!("{}: {e}", exe.display()))
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap_or_else(|| panic!("non-UTF-8 path {}", p.display()))
}

fn check(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
