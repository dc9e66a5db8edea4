//! A minimal HTTP/1.1 keep-alive load generator over `tokio::net::TcpStream`.
//!
//! `connections` tasks each hold one keep-alive connection and run *iterations* back to back
//! (no pipelining) until the deadline or the iteration budget is reached. An iteration is one or
//! more requests sent in order on the same connection; only the first one is timed (the others,
//! such as the `stop` that frees the device after an accepted start, are counted but not timed).
//! Every reply goes through a check that labels it (`ok`, `accepted`, `refused`, ...) or
//! rejects it; rejected replies and I/O failures are errors, never panics.
//!
//! The client understands what the servers measured here send: `Content-Length` bodies and
//! `Transfer-Encoding: chunked`. It runs on whatever runtime calls it; the bench uses a
//! current-thread runtime, so the generator takes one core at most (like `wrk -t1`).

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One HTTP response.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl Reply {
    /// The first header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A `GET path` request with an optional bearer token.
pub fn get(path: &str, token: Option<&str>) -> Vec<u8> {
    let mut req = format!("GET {path} HTTP/1.1\r\nhost: bench\r\n");
    if let Some(t) = token {
        req.push_str(&format!("authorization: Bearer {t}\r\n"));
    }
    req.push_str("\r\n");
    req.into_bytes()
}

/// A `POST path` request with a Cookwala JSON body, a bearer token and an `Idempotency-Key`.
pub fn post(path: &str, token: Option<&str>, key: Option<&str>, body: &str) -> Vec<u8> {
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nhost: bench\r\ncontent-type: application/vnd.cookwala+json\r\n\
         content-length: {}\r\n",
        body.len()
    );
    if let Some(t) = token {
        req.push_str(&format!("authorization: Bearer {t}\r\n"));
    }
    if let Some(k) = key {
        req.push_str(&format!("idempotency-key: {k}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    req.into_bytes()
}

/// One keep-alive client connection.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    scratch: Box<[u8]>,
}

fn bad(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

impl Conn {
    /// Connects (with `TCP_NODELAY`, as wrk does).
    ///
    /// # Errors
    /// The connection fails.
    pub async fn connect(addr: SocketAddr) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn { stream, buf: Vec::with_capacity(16 * 1024), scratch: vec![0; 16 * 1024].into() })
    }

    /// Sends one request (the complete bytes) and reads its response.
    ///
    /// # Errors
    /// I/O failure, the server closed the connection, or the response is not HTTP/1.1 we
    /// understand.
    pub async fn send(&mut self, request: &[u8]) -> io::Result<Reply> {
        self.stream.write_all(request).await?;
        self.read_reply().await
    }

    async fn fill(&mut self) -> io::Result<()> {
        let n = self.stream.read(&mut self.scratch).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "server closed the connection",
            ));
        }
        self.buf.extend_from_slice(self.scratch.get(..n).unwrap_or_default());
        Ok(())
    }

    async fn read_reply(&mut self) -> io::Result<Reply> {
        let head_end = loop {
            if let Some(at) = find(&self.buf, b"\r\n\r\n") {
                break at;
            }
            if self.buf.len() > 64 * 1024 {
                return Err(bad("response head over 64 KiB"));
            }
            self.fill().await?;
        };
        let head = std::str::from_utf8(self.buf.get(..head_end).unwrap_or_default())
            .map_err(|_| bad("response head is not UTF-8"))?;
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status = status_line
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse::<u16>().ok())
            .ok_or_else(|| bad(format!("bad status line {status_line:?}")))?;
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        let chunked =
            header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
        let length = header("content-length")
            .map(|v| v.parse::<usize>().map_err(|_| bad(format!("content-length {v:?}"))))
            .transpose()?;
        self.buf.drain(..head_end + 4);
        let body = match (chunked, length) {
            (true, _) => self.read_chunked().await?,
            (false, Some(n)) => {
                while self.buf.len() < n {
                    self.fill().await?;
                }
                self.buf.drain(..n).collect()
            }
            (false, None) => return Err(bad("response without content-length or chunking")),
        };
        Ok(Reply { status, headers, body })
    }

    async fn read_chunked(&mut self) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(at) = find(&self.buf, b"\r\n") {
                    break at;
                }
                self.fill().await?;
            };
            let line = std::str::from_utf8(self.buf.get(..line_end).unwrap_or_default())
                .map_err(|_| bad("chunk size is not UTF-8"))?;
            let size_text = line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| bad(format!("chunk size {size_text:?}")))?;
            self.buf.drain(..line_end + 2);
            while self.buf.len() < size + 2 {
                self.fill().await?;
            }
            body.extend(self.buf.drain(..size));
            self.buf.drain(..2);
            if size == 0 {
                return Ok(body);
            }
        }
    }
}

/// How much load to apply.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Concurrent keep-alive connections.
    pub connections: usize,
    /// Stop starting iterations after this long.
    pub duration: Duration,
    /// Stop after this many iterations in all (`None`: only the duration counts).
    pub max_iterations: Option<u64>,
}

/// Builds the requests of one iteration (given the connection index).
pub type MakeFn = Arc<dyn Fn(usize) -> Vec<Vec<u8>> + Send + Sync>;

/// Labels a reply (`Ok(label)`) or rejects it (`Err(why)`), given its index in the iteration.
pub type CheckFn = Arc<dyn Fn(usize, &Reply) -> Result<&'static str, String> + Send + Sync>;

/// What a load run measured.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Completed iterations (every request answered and accepted by the check).
    pub iterations: u64,
    /// Requests answered, timed or not.
    pub requests: u64,
    /// Rejected replies plus I/O failures.
    pub errors: u64,
    /// The first error, for the report.
    pub first_error: Option<String>,
    /// Replies by check label (every request, timed or not).
    pub labels: BTreeMap<&'static str, u64>,
    /// Wall time from the first connect to the last reply.
    pub elapsed: Duration,
    /// Latency of the timed (first) request of every completed iteration, microseconds,
    /// sorted.
    pub latencies_us: Vec<u64>,
}

impl Outcome {
    /// Completed iterations per second.
    pub fn per_sec(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 { self.iterations as f64 / secs } else { 0.0 }
    }

    /// The `q`-quantile (0..=1) of the timed latencies, milliseconds (nearest rank).
    pub fn quantile_ms(&self, q: f64) -> f64 {
        super::ceiling::quantile_ms(&self.latencies_us, q)
    }

    fn merge(&mut self, other: Outcome) {
        self.iterations += other.iterations;
        self.requests += other.requests;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        for (label, n) in other.labels {
            *self.labels.entry(label).or_default() += n;
        }
        self.latencies_us.extend(other.latencies_us);
    }
}

/// Consecutive I/O failures after which a connection task gives up.
const MAX_RECONNECTS: u64 = 10;

/// Runs `plan` against `addr`.
///
/// # Errors
/// A connection task failed to run at all (a join error); request failures are counted in
/// [`Outcome::errors`] instead.
pub async fn run(
    addr: SocketAddr,
    plan: Plan,
    make: MakeFn,
    check: CheckFn,
) -> io::Result<Outcome> {
    let started = Instant::now();
    let deadline = started + plan.duration;
    let budget = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for conn_idx in 0..plan.connections.max(1) {
        let (make, check, budget) = (make.clone(), check.clone(), budget.clone());
        tasks.push(tokio::spawn(async move {
            connection(addr, conn_idx, deadline, plan.max_iterations, &budget, &*make, &*check)
                .await
        }));
    }
    let mut total = Outcome::default();
    for task in tasks {
        total.merge(task.await.map_err(io::Error::other)?);
    }
    total.elapsed = started.elapsed();
    total.latencies_us.sort_unstable();
    Ok(total)
}

async fn connection(
    addr: SocketAddr,
    conn_idx: usize,
    deadline: Instant,
    max_iterations: Option<u64>,
    budget: &AtomicU64,
    make: &(dyn Fn(usize) -> Vec<Vec<u8>> + Send + Sync),
    check: &(dyn Fn(usize, &Reply) -> Result<&'static str, String> + Send + Sync),
) -> Outcome {
    let mut out = Outcome::default();
    let mut conn: Option<Conn> = None;
    let mut failures = 0u64;
    let fail = |out: &mut Outcome, why: String| {
        out.errors += 1;
        out.first_error.get_or_insert(why);
    };
    'iterations: while Instant::now() < deadline {
        if let Some(max) = max_iterations
            && budget.fetch_add(1, Ordering::Relaxed) >= max
        {
            break;
        }
        let requests = make(conn_idx);
        let mut timed = None;
        for (idx, request) in requests.iter().enumerate() {
            if conn.is_none() {
                match Conn::connect(addr).await {
                    Ok(c) => conn = Some(c),
                    Err(e) => {
                        fail(&mut out, format!("connect {addr}: {e}"));
                        failures += 1;
                        if failures >= MAX_RECONNECTS {
                            break 'iterations;
                        }
                        continue 'iterations;
                    }
                }
            }
            let Some(c) = conn.as_mut() else { continue 'iterations };
            let t0 = Instant::now();
            let reply = match c.send(request).await {
                Ok(r) => r,
                Err(e) => {
                    fail(&mut out, format!("request: {e}"));
                    conn = None;
                    failures += 1;
                    if failures >= MAX_RECONNECTS {
                        break 'iterations;
                    }
                    continue 'iterations;
                }
            };
            if idx == 0 {
                timed = Some(t0.elapsed());
            }
            out.requests += 1;
            failures = 0;
            if reply.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close")) {
                conn = None;
            }
            match check(idx, &reply) {
                Ok(label) => *out.labels.entry(label).or_default() += 1,
                Err(why) => {
                    fail(&mut out, why);
                    continue 'iterations;
                }
            }
        }
        out.iterations += 1;
        if let Some(t) = timed {
            out.latencies_us.push(u64::try_from(t.as_micros()).unwrap_or(u64::MAX));
        }
    }
    out
}
