//! What a run prints: the raw JSON records and the table against the targets.

use super::*;

/// The raw records, one JSON object each.
pub fn records(report: &Report) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for s in &report.sims {
        out.push(json!({
            "kind": "sim", "recipe": s.recipe, "device": s.device, "final_state": s.final_state,
            "simulated_ms": s.simulated_ms, "cpu_ns": s.cpu_ns, "wall_ns": s.wall_ns,
            "runs": s.runs, "cpu_ms_per_sim_hour": s.cpu_ms_per_sim_hour(),
        }));
    }
    for c in &report.commits {
        out.push(json!({
            "kind": "sqlite", "when": c.when, "rows_per_commit": c.rows_per_commit, "row_bytes": c.row_bytes,
            "commits": c.commits, "secs": c.elapsed.as_secs_f64(),
            "commits_per_s": c.commits_per_sec(), "rows_per_s": c.rows_per_sec(),
            "p50_ms": c.quantile_ms(0.5), "p99_ms": c.quantile_ms(0.99), "cpu_s": c.cpu_s,
        }));
    }
    for s in &report.scenarios {
        out.push(s.record());
    }
    if let Some(r) = &report.rss {
        out.push(json!({
            "kind": "rss", "executions": r.executions, "store_secs": r.store_secs,
            "db_bytes": r.db_bytes, "idle_kib": [r.idle_kib.0, r.idle_kib.1],
            "after_reads_kib": [r.after_reads_kib.0, r.after_reads_kib.1],
            "after_posts_kib": [r.after_posts_kib.0, r.after_posts_kib.1],
        }));
        out.push(r.sweep.record());
        out.push(r.clocked.record());
    }
    out
}

fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".to_owned();
    }
    if x >= 100.0 {
        let whole = x.round() as u64;
        let digits = whole.to_string();
        let mut out = String::new();
        for (i, ch) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(ch);
        }
        out
    } else {
        format!("{x:.3}").trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

fn target_line(out: &mut String, label: &str, value: Option<f64>, ok: bool, shown: &str) {
    let status = match value {
        None => "n/a ",
        Some(_) if ok => "MET ",
        Some(_) => "MISS",
    };
    out.push_str(&format!("  [{status}] {label:<66} {shown:>14}\n"));
}

/// The human-readable table (the same layout as `bench/run.sh`).
pub fn table(report: &Report) -> String {
    let mut t = String::new();
    // The run with the most connections (the refused POST also runs with one).
    let find = |name: &str, server: &str| {
        report
            .scenarios
            .iter()
            .filter(|s| s.name == name && s.server == server)
            .max_by_key(|s| s.connections)
    };
    t.push_str(&format!(
        "\nHub load on loopback (hub = `cookwala serve`, bare = axum returning the hub's bytes;\n\
         one load-generator thread, keep-alive, {} connections unless shown; latency of the\n\
         timed request; CPU = cores busy (CPU s per s), srv us/req = server CPU per request)\n",
        report.connections
    ));
    t.push_str(&format!(
        "  {:<44} {:<6} {:>5} {:>10} {:>8} {:>8} {:>6} {:>7} {:>10} {:>7}\n",
        "scenario",
        "server",
        "conn",
        "req/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "srv CPU",
        "srv us/req",
        "gen CPU"
    ));
    let mut rows: Vec<&Scenario> = report.scenarios.iter().collect();
    if let Some(r) = &report.rss {
        rows.push(&r.sweep);
        rows.push(&r.clocked);
    }
    for s in rows {
        let o = &s.outcome;
        let secs = o.elapsed.as_secs_f64().max(1e-9);
        t.push_str(&format!(
            "  {:<44} {:<6} {:>5} {:>10} {:>8} {:>8} {:>6} {:>7.2} {:>10} {:>7.2}\n",
            s.name,
            s.server,
            s.connections,
            fmt_num(o.per_sec()),
            fmt_num(o.quantile_ms(0.5)),
            fmt_num(o.quantile_ms(0.99)),
            o.errors,
            s.server_cpu_s / secs,
            fmt_num(s.server_cpu_s * 1e6 / (o.requests.max(1) as f64)),
            s.gen_cpu_s / secs,
        ));
        let labels: Vec<String> = o
            .labels
            .iter()
            .filter(|(l, _)| **l != "ok")
            .map(|(l, n)| format!("{l} {:.0}/s", *n as f64 / secs))
            .collect();
        if !labels.is_empty() {
            t.push_str(&format!("      replies: {}\n", labels.join(", ")));
        }
        if let Some(e) = &o.first_error {
            t.push_str(&format!(
                "      first error: {}\n",
                e.chars().take(160).collect::<String>()
            ));
        }
    }

    t.push_str(&format!(
        "\nSQLite durable commits on the hub's disk (WAL, synchronous=FULL, one connection,\n\
         {}-byte rows)\n",
        report.commits.first().map_or(0, |c| c.row_bytes)
    ));
    t.push_str(&format!(
        "  {:<34} {:>10} {:>10} {:>8} {:>8} {:>14}\n",
        "rows per commit", "commits/s", "rows/s", "p50 ms", "p99 ms", "CPU us/commit"
    ));
    for c in &report.commits {
        t.push_str(&format!(
            "  {:<34} {:>10} {:>10} {:>8} {:>8} {:>14}\n",
            format!("{} ({})", c.rows_per_commit, c.when),
            fmt_num(c.commits_per_sec()),
            fmt_num(c.rows_per_sec()),
            fmt_num(c.quantile_ms(0.5)),
            fmt_num(c.quantile_ms(0.99)),
            fmt_num(c.cpu_us_per_commit()),
        ));
    }

    if let Some(r) = &report.rss {
        t.push_str(&format!(
            "\nHub RSS with {} completed executions stored ({:.1} MiB database; stored through\n\
             Storage::commit in {:.1} s = {} executions/s, one commit each)\n",
            r.executions,
            r.db_bytes as f64 / 1048576.0,
            r.store_secs,
            fmt_num(r.executions as f64 / r.store_secs.max(1e-9)),
        ));
        for (label, (rss, hwm)) in [
            ("idle after start", r.idle_kib),
            ("after reading every status and log", r.after_reads_kib),
            ("after the fast-clock POST run", r.after_posts_kib),
        ] {
            t.push_str(&format!(
                "  {label:<40} VmRSS {:>7.1} MiB   peak {:>7.1} MiB\n",
                rss as f64 / 1024.0,
                hwm as f64 / 1024.0
            ));
        }
    }

    t.push_str(&format!(
        "\nSimulation CPU, start to end (steps of {} s simulated; fastest of runs)\n",
        simcpu::STEP_MS / 1000
    ));
    t.push_str(&format!(
        "  {:<22} {:<16} {:<10} {:>9} {:>9} {:>14}\n",
        "recipe", "device", "final", "sim min", "CPU ms", "CPU ms/sim h"
    ));
    for s in &report.sims {
        t.push_str(&format!(
            "  {:<22} {:<16} {:<10} {:>9.1} {:>9.3} {:>14.3}\n",
            s.recipe,
            s.device,
            s.final_state,
            s.simulated_ms as f64 / 60_000.0,
            s.cpu_ns as f64 / 1e6,
            s.cpu_ms_per_sim_hour()
        ));
    }

    t.push_str("\nTargets (reported, never enforced)\n");
    for (name, short) in [
        ("GET /v1/capabilities", "GET capabilities"),
        ("GET /v1/executions/{id} (stored, final)", "GET status (stored)"),
        ("GET /v1/executions/{id} (live)", "GET status (live)"),
    ] {
        let ratio = match (find(name, "hub"), find(name, "bare")) {
            (Some(h), Some(b)) if h.outcome.per_sec() > 0.0 => {
                Some(b.outcome.per_sec() / h.outcome.per_sec())
            }
            _ => None,
        };
        let shown = ratio.map_or("n/a".to_owned(), |r| format!("bare/hub {r:.2}x"));
        target_line(
            &mut t,
            &format!("{short}: req/s within 2x of the bare handler"),
            ratio,
            ratio.is_some_and(|r| r <= 2.0),
            &shown,
        );
    }
    // The 1-row ceiling: the mean of the runs before and after the POSTs.
    let singles: Vec<f64> = report
        .commits
        .iter()
        .filter(|c| c.rows_per_commit == 1)
        .map(Commits::commits_per_sec)
        .collect();
    let single = (!singles.is_empty()).then(|| singles.iter().sum::<f64>() / singles.len() as f64);
    let batch = report.commits.iter().find(|c| c.rows_per_commit > 1);
    let batched = batch.map(Commits::rows_per_sec);
    for (name, short, commits_per) in [
        ("POST /v1/executions (refused busy)", "durable POST (refused busy, 1 commit)", 1.0),
        (
            "POST /v1/executions (accepted; + stop)",
            "durable POST (accepted + stop, 2 commits)",
            2.0,
        ),
    ] {
        let rate = find(name, "hub").map(|s| s.outcome.per_sec());
        let ratio = rate.zip(single).map(|(r, c)| r / c);
        let shown = ratio.map_or("n/a".to_owned(), |r| format!("{:.0}%", r * 100.0));
        target_line(
            &mut t,
            &format!("{short} >= 50% of 1-row commit ceiling"),
            ratio,
            ratio.is_some_and(|r| r >= 0.5),
            &shown,
        );
        let commit_ratio = rate.zip(single).map(|(r, c)| r * commits_per / c);
        if commits_per > 1.0 {
            let shown = commit_ratio.map_or("n/a".to_owned(), |r| format!("{:.0}%", r * 100.0));
            target_line(
                &mut t,
                "  (its commits/s vs the 1-row commit ceiling)",
                commit_ratio,
                commit_ratio.is_some_and(|r| r >= 0.5),
                &shown,
            );
        }
        let vs_batch = rate.zip(batched).map(|(r, c)| r / c);
        let shown = vs_batch.map_or("n/a".to_owned(), |r| format!("{:.1}%", r * 100.0));
        target_line(
            &mut t,
            &format!(
                "  (vs the {}-row group-commit ceiling, rows/s)",
                batch.map_or(0, |c| c.rows_per_commit)
            ),
            vs_batch,
            vs_batch.is_some_and(|r| r >= 0.5),
            &shown,
        );
    }
    if let Some(r) = &report.rss {
        let peak = r.after_reads_kib.0.max(r.after_reads_kib.1).max(r.after_posts_kib.1);
        let mib = peak as f64 / 1024.0;
        target_line(
            &mut t,
            &format!("hub RSS < 100 MiB with {} stored executions (peak)", r.executions),
            Some(mib),
            mib < 100.0,
            &format!("{mib:.1} MiB"),
        );
    }
    let worst = report
        .sims
        .iter()
        .map(simcpu::SimCost::cpu_ms_per_sim_hour)
        .fold(None, |acc: Option<f64>, x| Some(acc.map_or(x, |a| a.max(x))));
    target_line(
        &mut t,
        "60-minute recipe simulates in < 20 ms CPU (worst recipe, per sim hour)",
        worst,
        worst.is_some_and(|w| w < 20.0),
        &worst.map_or("n/a".to_owned(), |w| format!("{w:.2} ms")),
    );
    t
}
