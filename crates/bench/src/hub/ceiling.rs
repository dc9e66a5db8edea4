//! The two ceilings the hub is compared with: a bare axum server that returns the hub's own
//! response bytes, and SQLite's durable-commit rate on the hub's disk.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rusqlite::{Connection, params};

/// One canned response: the body and, for a status, its `ETag`.
#[derive(Clone, Debug)]
pub struct Canned {
    /// The response body, byte for byte as the hub sent it.
    pub body: Bytes,
    /// The `ETag` header the hub sent, if any.
    pub etag: Option<String>,
}

/// What the bare server answers: the hub's capabilities bytes and status bytes by id.
#[derive(Clone, Debug)]
pub struct BareBodies {
    /// `GET /v1/capabilities`.
    pub capabilities: Canned,
    /// `GET /v1/executions/{id}`, by id.
    pub statuses: BTreeMap<String, Canned>,
}

impl BareBodies {
    /// The JSON file `cw-bench bare-serve --bodies` reads.
    pub fn to_json(&self) -> serde_json::Value {
        let canned = |c: &Canned| serde_json::json!({"body": String::from_utf8_lossy(&c.body), "etag": c.etag});
        let statuses: serde_json::Map<String, serde_json::Value> =
            self.statuses.iter().map(|(id, c)| (id.clone(), canned(c))).collect();
        serde_json::json!({"capabilities": canned(&self.capabilities), "statuses": statuses})
    }

    /// Reads what [`BareBodies::to_json`] wrote.
    ///
    /// # Errors
    /// A field is missing.
    pub fn from_json(v: &serde_json::Value) -> anyhow::Result<BareBodies> {
        let canned = |v: &serde_json::Value| -> anyhow::Result<Canned> {
            Ok(Canned {
                body: Bytes::from(v["body"].as_str().context("body")?.to_owned()),
                etag: v["etag"].as_str().map(str::to_owned),
            })
        };
        let mut statuses = BTreeMap::new();
        for (id, c) in v["statuses"].as_object().context("statuses")? {
            statuses.insert(id.clone(), canned(c)?);
        }
        Ok(BareBodies { capabilities: canned(&v["capabilities"])?, statuses })
    }
}

const COOKWALA_JSON: &str = "application/vnd.cookwala+json";

fn canned_response(c: &Canned) -> Response {
    let mut res = (StatusCode::OK, c.body.clone()).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(COOKWALA_JSON));
    if let Some(etag) = c.etag.as_deref().and_then(|e| HeaderValue::from_str(e).ok()) {
        h.insert(header::ETAG, etag);
    }
    res
}

/// The bare router: the same paths and bytes as the hub, no auth, no lock, no storage.
pub fn bare_app(bodies: BareBodies) -> Router {
    Router::new()
        .route(
            "/v1/capabilities",
            get(|State(b): State<std::sync::Arc<BareBodies>>| async move {
                canned_response(&b.capabilities)
            }),
        )
        .route(
            "/v1/executions/{id}",
            get(|State(b): State<std::sync::Arc<BareBodies>>, UrlPath(id): UrlPath<String>| async move {
                match b.statuses.get(&id) {
                    Some(c) => canned_response(c),
                    None => StatusCode::NOT_FOUND.into_response(),
                }
            }),
        )
        .with_state(std::sync::Arc::new(bodies))
}

/// What the commit loop measured.
#[derive(Clone, Debug)]
pub struct Commits {
    /// Rows inserted per transaction.
    pub rows_per_commit: usize,
    /// Payload bytes per row.
    pub row_bytes: usize,
    /// Transactions committed.
    pub commits: u64,
    /// Wall time of the loop.
    pub elapsed: Duration,
    /// Latency of each commit (BEGIN..COMMIT), microseconds, sorted.
    pub latencies_us: Vec<u64>,
    /// CPU seconds the process used meanwhile (filled in by the caller; 0 if unknown).
    pub cpu_s: f64,
    /// When it was measured (a label for the report; empty if not given).
    pub when: &'static str,
}

impl Commits {
    /// Commits per second.
    pub fn commits_per_sec(&self) -> f64 {
        self.commits as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Rows per second.
    pub fn rows_per_sec(&self) -> f64 {
        self.commits_per_sec() * self.rows_per_commit as f64
    }

    /// CPU microseconds per commit (from [`Commits::cpu_s`]).
    pub fn cpu_us_per_commit(&self) -> f64 {
        if self.commits == 0 { f64::NAN } else { self.cpu_s * 1e6 / self.commits as f64 }
    }

    /// The `q`-quantile of the commit latency, milliseconds.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        quantile_ms(&self.latencies_us, q)
    }
}

/// The `q`-quantile (nearest rank) of sorted microsecond samples, in milliseconds.
pub fn quantile_ms(sorted_us: &[u64], q: f64) -> f64 {
    let n = sorted_us.len();
    if n == 0 {
        return f64::NAN;
    }
    let rank = (q.clamp(0.0, 1.0) * n as f64).ceil() as usize;
    sorted_us.get(rank.saturating_sub(1).min(n - 1)).map_or(f64::NAN, |&us| us as f64 / 1000.0)
}

/// SQLite's durable-commit rate in `dir` with the hub's settings (WAL, `synchronous = FULL`):
/// a loop of transactions of `rows_per_commit` single-row INSERTs of `row_bytes` of text, for
/// `duration` or `max_commits`, whichever comes first. Uses a fresh `dir/ceiling-<rows>.sqlite3`
/// (`dir` is created; an existing file is replaced).
///
/// # Errors
/// SQLite fails.
pub fn sqlite_commits(
    dir: &Path,
    rows_per_commit: usize,
    row_bytes: usize,
    duration: Duration,
    max_commits: Option<u64>,
) -> anyhow::Result<Commits> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("ceiling-{rows_per_commit}.sqlite3"));
    for stale in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{stale}", path.display()));
    }
    let mut conn =
        Connection::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    conn.execute_batch(
        "PRAGMA synchronous = FULL;
         CREATE TABLE IF NOT EXISTS rows (id TEXT PRIMARY KEY, body TEXT NOT NULL,
            created_ms INTEGER NOT NULL);",
    )?;
    let payload = "x".repeat(row_bytes);
    let rows_per_commit = rows_per_commit.max(1);
    let mut latencies_us = Vec::new();
    let mut next = 0u64;
    let started = Instant::now();
    while started.elapsed() < duration
        && max_commits.is_none_or(|m| latencies_us.len() < m as usize)
    {
        let t0 = Instant::now();
        let tx = conn.transaction()?;
        {
            let mut stmt =
                tx.prepare_cached("INSERT INTO rows (id, body, created_ms) VALUES (?1, ?2, ?3)")?;
            for _ in 0..rows_per_commit {
                stmt.execute(params![format!("row-{next:012}"), payload, 0i64])?;
                next += 1;
            }
        }
        tx.commit()?;
        latencies_us.push(u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX));
    }
    let elapsed = started.elapsed();
    latencies_us.sort_unstable();
    Ok(Commits {
        rows_per_commit,
        row_bytes,
        commits: latencies_us.len() as u64,
        elapsed,
        latencies_us,
        cpu_s: 0.0,
        when: "",
    })
}
