use std::path::Path;

use crate::corpus::DocSet;
use crate::harness::Config;
use crate::{docgen, sig};

#[test]
fn smoke_one_tiny_iteration() {
    let dir = std::env::temp_dir().join(format!("cw-bench-smoke-{}", std::process::id()));
    docgen::write_set(&dir, 2, 1, 1).unwrap();
    let set = DocSet::load("smoke", Path::new(&dir)).unwrap();
    assert_eq!(set.docs.len(), 2);
    assert_eq!(set.hash_lines().unwrap().len(), 2);
    let records = set.measure_all(Config::SMOKE).unwrap();
    assert_eq!(records.len(), 6);
    assert!(records.iter().all(|r| r["docs_per_s"].as_f64().is_some_and(|x| x > 0.0)));

    let doc = &set.docs[0].value;
    let records = sig::measure_all("smoke", doc, Config::SMOKE).unwrap();
    assert!(records.len() >= 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Interleaved measurement: every closure is timed in each run, in turn, and the first one's
/// ratio to itself is exactly 1. The signature records carry the same-run ratio.
#[test]
fn interleaved_runs_time_every_closure_each_run() {
    let calls = std::cell::Cell::new([0u64; 2]);
    let mut a = || calls.set([calls.get()[0] + 1, calls.get()[1]]);
    let mut b = || calls.set([calls.get()[0], calls.get()[1] + 1]);
    let config = Config { run_secs: 0.001, runs: 3 };
    let measured = crate::harness::measure_interleaved(config, &mut [&mut a, &mut b]);
    assert_eq!(measured.len(), 2);
    assert_eq!(measured[0].1, 1.0);
    for (sample, ratio) in &measured {
        assert_eq!(sample.secs_per_iter.len(), 3);
        assert!(sample.secs_per_iter.windows(2).all(|w| w[0] <= w[1]), "sorted for the median");
        assert!(ratio.is_finite() && *ratio > 0.0);
    }
    let [ca, cb] = calls.get();
    assert!(ca >= 3 * measured[0].0.iters && cb >= 3 * measured[1].0.iters);

    let doc = canonical_json::parse(br#"{"a":1,"kind":"Recipe"}"#).unwrap();
    let records = sig::measure_all("tiny", &doc, Config::SMOKE).unwrap();
    assert_eq!(records[0]["vs_bare_same_run"].as_f64(), Some(1.0));
    assert!(records.iter().all(|r| r["vs_bare_same_run"].as_f64().is_some()));
}

#[cfg(feature = "hub")]
mod hub {
    use std::sync::Arc;
    use std::time::Duration;

    use cookwala_hub::storage::{SqliteStorage, Storage};
    use cookwala_hub::{Hub, HubConfig};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::hub::ceiling::{bare_app, quantile_ms, sqlite_commits};
    use crate::hub::load::{self, Conn, Plan};
    use crate::hub::{TOKEN, execute_request, expect_states, expect_status, make_get, make_start};

    fn plan(connections: usize, max: u64) -> Plan {
        Plan { connections, duration: Duration::from_secs(120), max_iterations: Some(max) }
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).map(|x| x * 1000).collect();
        assert_eq!(quantile_ms(&v, 0.5), 50.0);
        assert_eq!(quantile_ms(&v, 0.99), 99.0);
        assert_eq!(quantile_ms(&v, 1.0), 100.0);
        assert_eq!(quantile_ms(&[7000], 0.99), 7.0);
        assert!(quantile_ms(&[], 0.5).is_nan());
    }

    #[test]
    fn client_reads_content_length_and_chunked_replies_on_one_connection() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(async move {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = vec![0; 4096];
                let n = s.read(&mut buf).await.unwrap();
                assert!(buf[..n].starts_with(b"GET /a HTTP/1.1\r\n"));
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"3\"\r\n\r\nhello")
                    .await
                    .unwrap();
                let n = s.read(&mut buf).await.unwrap();
                assert!(buf[..n].starts_with(b"POST /b HTTP/1.1\r\n"));
                assert!(buf[..n].ends_with(b"\r\n\r\n{}"));
                // Split across writes, with a chunk extension.
                s.write_all(
                    b"HTTP/1.1 202 Accepted\r\ntransfer-encoding: chunked\r\n\r\n3;x=y\r\nabc",
                )
                .await
                .unwrap();
                s.write_all(b"\r\n2\r\nde\r\n0\r\n\r\n").await.unwrap();
            });
            let mut c = Conn::connect(addr).await.unwrap();
            let r = c.send(&load::get("/a", None)).await.unwrap();
            assert_eq!(
                (r.status, r.body.as_slice(), r.header("etag")),
                (200, &b"hello"[..], Some("\"3\""))
            );
            let r = c.send(&load::post("/b", Some("t"), Some("k1234567"), "{}")).await.unwrap();
            assert_eq!((r.status, r.body.as_slice()), (202, &b"abcde"[..]));
            server.await.unwrap();
        });
    }

    /// A real hub (SQLite file, TCP listener on port 0) under a tiny load: every request
    /// succeeds and the counts add up, in the replies and in storage.
    #[test]
    fn load_generator_drives_a_real_hub() {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let storage: Arc<dyn Storage> =
            Arc::new(SqliteStorage::open(&dir.path().join("hub.sqlite3")).unwrap());
        let config = HubConfig {
            speed: 0.0,
            tokens: cookwala_hub::auth::Tokens::owner(TOKEN),
            ..HubConfig::default()
        };
        let hub = rt.block_on(Hub::open(storage.clone(), config)).unwrap();
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let served = rt.spawn(cookwala_hub::serve(hub, listener, async move {
            let _ = rx.await;
        }));

        // GET capabilities: 50 iterations over 4 connections.
        let o = rt
            .block_on(load::run(
                addr,
                plan(4, 50),
                make_get("/v1/capabilities", None),
                expect_status(200),
            ))
            .unwrap();
        assert_eq!((o.iterations, o.requests, o.errors), (50, 50, 0), "{:?}", o.first_error);
        assert_eq!(o.latencies_us.len(), 50);
        assert!(o.quantile_ms(0.5) <= o.quantile_ms(0.99));

        // A wrong expectation is an error, not a success.
        let o = rt
            .block_on(load::run(
                addr,
                plan(2, 10),
                make_get("/v1/executions/nope", Some(TOKEN)),
                expect_status(200),
            ))
            .unwrap();
        assert_eq!((o.iterations, o.requests, o.errors), (0, 10, 10));
        assert!(o.first_error.unwrap().contains("HTTP 404"));

        // A live execution makes the device busy: 50 POSTs, each refused and stored.
        let key = "live-one-key";
        let live = load::post(
            "/v1/executions",
            Some(TOKEN),
            Some(key),
            &execute_request("live-one", key).unwrap(),
        );
        let r =
            rt.block_on(async { Conn::connect(addr).await.unwrap().send(&live).await.unwrap() });
        assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
        let o = rt
            .block_on(load::run(
                addr,
                plan(4, 50),
                make_start("busy", false).unwrap(),
                expect_states(vec![Some("refused")]),
            ))
            .unwrap();
        assert_eq!((o.iterations, o.requests, o.errors), (50, 50, 0), "{:?}", o.first_error);
        assert_eq!(o.labels.get("refused"), Some(&50));
        for i in 0..50 {
            let rec = storage.execution(&format!("busy-{i:08}")).unwrap().unwrap();
            assert_eq!(rec.state, "refused");
            // Idempotency keys are stored scoped to the principal that used them.
            let owner = cookwala_hub::auth::Tokens::owner(TOKEN);
            let key = owner.entries()[0].principal().scoped_key(&format!("busy-{i:08}-key"));
            assert!(storage.idempotency(&key).unwrap().is_some());
        }
        assert!(storage.execution("busy-00000050").unwrap().is_none());

        // Free the device; then 20 accepted starts, each followed by its stop.
        let stop =
            load::post("/v1/executions/live-one/stop", Some(TOKEN), Some("live-one-stop"), "{}");
        let r =
            rt.block_on(async { Conn::connect(addr).await.unwrap().send(&stop).await.unwrap() });
        assert_eq!(r.status, 202);
        let o = rt
            .block_on(load::run(
                addr,
                plan(1, 20),
                make_start("acc", true).unwrap(),
                expect_states(vec![Some("accepted"), Some("stopped")]),
            ))
            .unwrap();
        assert_eq!((o.iterations, o.requests, o.errors), (20, 40, 0), "{:?}", o.first_error);
        assert_eq!((o.labels.get("accepted"), o.labels.get("stopped")), (Some(&20), Some(&20)));
        assert_eq!(o.latencies_us.len(), 20);
        assert_eq!(storage.execution("acc-00000019").unwrap().unwrap().state, "stopped");
        assert!(storage.unfinished().unwrap().is_empty());

        // The bare server answers the same paths.
        let bodies = crate::hub::ceiling::BareBodies {
            capabilities: crate::hub::ceiling::Canned { body: "{}".into(), etag: None },
            statuses: [(
                "x1".to_owned(),
                crate::hub::ceiling::Canned {
                    body: "{\"seq\":1}".into(),
                    etag: Some("\"1\"".into()),
                },
            )]
            .into_iter()
            .collect(),
        };
        let round = crate::hub::ceiling::BareBodies::from_json(&bodies.to_json()).unwrap();
        let bare = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let bare_addr = bare.local_addr().unwrap();
        rt.spawn(async move { axum::serve(bare, bare_app(round)).await });
        let o = rt
            .block_on(load::run(
                bare_addr,
                plan(2, 30),
                make_get("/v1/executions/x1", None),
                expect_status(200),
            ))
            .unwrap();
        assert_eq!((o.iterations, o.errors), (30, 0));
        let r = rt.block_on(async {
            Conn::connect(bare_addr)
                .await
                .unwrap()
                .send(&load::get("/v1/executions/x1", None))
                .await
                .unwrap()
        });
        assert_eq!((r.body.as_slice(), r.header("etag")), (&b"{\"seq\":1}"[..], Some("\"1\"")));

        let _ = tx.send(());
        rt.block_on(served).unwrap().unwrap();
    }

    #[test]
    fn commit_ceiling_counts_commits_and_rows() {
        let dir = tempfile::tempdir().unwrap();
        let c = sqlite_commits(dir.path(), 4, 100, Duration::from_secs(60), Some(5)).unwrap();
        assert_eq!((c.commits, c.rows_per_commit, c.latencies_us.len()), (5, 4, 5));
        let conn = rusqlite::Connection::open(dir.path().join("ceiling-4.sqlite3")).unwrap();
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM rows", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 20);
        assert!(c.rows_per_sec() > 0.0);
    }

    #[test]
    fn one_recipe_simulates_to_the_end() {
        let example = cookwala_sim::builtin::example("red-lentil-soup").unwrap();
        let cost = crate::hub::simcpu::measure(example, 1).unwrap();
        assert_eq!(cost.final_state, "completed");
        assert!(cost.simulated_ms > 0 && cost.cpu_ms_per_sim_hour().is_finite());
    }
}
