//! `cw-bench`: prints one JSON object per measurement (see `bench/run.sh`).
//!
//! ```text
//! cw-bench gen DIR [--count N] [--base-nodes N] [--step-nodes N]
//! cw-bench hashes NAME=PATH...
//! cw-bench parse [--smoke] [--runs N] [--run-secs S] NAME=PATH...   (*.json, *.ndjson lines)
//! cw-bench run [--smoke] [--runs N] [--run-secs S] [--sig-doc FILE] NAME=PATH...
//! cw-bench dryrun [--smoke] [--runs N] [--run-secs S] BUNDLE.json   (needs --features cookwala)
//! cw-bench hub --hub-bin PATH [--work DIR] [--json FILE] [--conns N] [--secs S]
//!              [--warmup-secs S] [--ceiling-secs S] [--batch-rows N] [--row-bytes N]
//!              [--executions N] [--sim-runs N]                     (see bench/hub.sh)
//! cw-bench bare-serve BODIES.json                                  (started by `hub`)
//! cw-bench fleet-load --addrs A,B [--conns N] [--secs S]          (see bench/fleet.sh)
//! ```
//!
//! `hub` prints a table on stdout (and the raw records as JSON lines to `--json FILE`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use bench::corpus::DocSet;
use bench::harness::Config;
use bench::{docgen, sig};

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("cw-bench: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Vec<String>) -> anyhow::Result<()> {
    let Some((command, rest)) = args.split_first() else {
        bail!("usage: cw-bench gen|hashes|run ...")
    };
    let mut positional = Vec::new();
    let mut options = std::collections::BTreeMap::new();
    let mut flags = Vec::new();
    let mut it = rest.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--smoke" => flags.push(arg.clone()),
            opt if opt.starts_with("--") => {
                let value = it.next().with_context(|| format!("{opt} needs a value"))?;
                options.insert(opt.to_owned(), value.clone());
            }
            _ => positional.push(arg.clone()),
        }
    }
    let num = |name: &str, default: usize| -> anyhow::Result<usize> {
        options.get(name).map_or(Ok(default), |v| v.parse().with_context(|| format!("{name} {v}")))
    };
    match command.as_str() {
        "gen" => {
            let [dir] = positional.as_slice() else { bail!("usage: cw-bench gen DIR") };
            docgen::write_set(
                Path::new(dir),
                num("--count", 32)?,
                num("--base-nodes", 40)?,
                num("--step-nodes", 20)?,
            )
        }
        "hashes" => {
            for set in load_sets(&positional)? {
                for line in set.hash_lines()? {
                    println!("{}\t{}", set.name, line);
                }
            }
            Ok(())
        }
        "run" => {
            let mut config =
                if flags.iter().any(|f| f == "--smoke") { Config::SMOKE } else { Config::DEFAULT };
            config.runs = num("--runs", config.runs)?;
            if let Some(secs) = options.get("--run-secs") {
                config.run_secs = secs.parse().with_context(|| format!("--run-secs {secs}"))?;
            }
            let sets = load_sets(&positional)?;
            for set in &sets {
                eprintln!(
                    "cw-bench: set {} ({} docs, {} input bytes, {} JCS bytes)",
                    set.name,
                    set.docs.len(),
                    set.raw_bytes(),
                    set.jcs_bytes()
                );
                for record in set.measure_all(config)? {
                    println!("{record}");
                }
            }
            let (sig_name, sig_doc) = match options.get("--sig-doc") {
                Some(path) => {
                    let bytes = std::fs::read(path).with_context(|| format!("reading {path}"))?;
                    let name = Path::new(path)
                        .file_name()
                        .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned());
                    (
                        name,
                        canonical_json::parse(&bytes).with_context(|| format!("parsing {path}"))?,
                    )
                }
                None => {
                    let doc = serde_json::to_vec(&docgen::document(1, 20))?;
                    ("generated-recipe".to_owned(), canonical_json::parse(&doc)?)
                }
            };
            eprintln!("cw-bench: signature measurements on {sig_name}");
            for record in sig::measure_all(&sig_name, &sig_doc, config)? {
                println!("{record}");
            }
            Ok(())
        }
        "parse" => {
            let mut config =
                if flags.iter().any(|f| f == "--smoke") { Config::SMOKE } else { Config::DEFAULT };
            config.runs = num("--runs", config.runs)?;
            if let Some(secs) = options.get("--run-secs") {
                config.run_secs = secs.parse().with_context(|| format!("--run-secs {secs}"))?;
            }
            for spec in &positional {
                let Some((name, path)) = spec.split_once('=') else {
                    bail!("parse sets are NAME=PATH, got {spec:?}")
                };
                let set = bench::parsing::ParseSet::load(name, Path::new(path))?;
                eprintln!(
                    "cw-bench: parse set {} ({} inputs, {} bytes)",
                    set.name,
                    set.inputs.len(),
                    set.bytes()
                );
                for record in set.measure_all(config)? {
                    println!("{record}");
                }
            }
            Ok(())
        }
        "dryrun" => {
            let [bundle] = positional.as_slice() else { bail!("usage: cw-bench dryrun BUNDLE") };
            let mut config =
                if flags.iter().any(|f| f == "--smoke") { Config::SMOKE } else { Config::DEFAULT };
            config.runs = num("--runs", config.runs)?;
            if let Some(secs) = options.get("--run-secs") {
                config.run_secs = secs.parse().with_context(|| format!("--run-secs {secs}"))?;
            }
            dryrun(Path::new(bundle), config)
        }
        "hub" => hub(&options),
        "fleet-load" => fleet_load(&options),
        "bare-serve" => {
            let [bodies] = positional.as_slice() else {
                bail!("usage: cw-bench bare-serve BODIES.json")
            };
            bare_serve(Path::new(bodies))
        }
        other => {
            bail!(
                "unknown command {other:?}: expected gen, hashes, run, dryrun, hub, fleet-load or bare-serve"
            )
        }
    }
}

#[cfg(feature = "cookwala")]
fn dryrun(path: &Path, config: Config) -> anyhow::Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let bundle =
        canonical_json::parse(&bytes).with_context(|| format!("parsing {}", path.display()))?;
    for record in bench::dryrun::measure_all(&bundle, config)? {
        println!("{record}");
    }
    Ok(())
}

#[cfg(not(feature = "cookwala"))]
fn dryrun(path: &Path, config: Config) -> anyhow::Result<()> {
    let _ = (path, config);
    bail!("cw-bench was built without the cookwala feature: no dry-run measurements")
}

fn load_sets(specs: &[String]) -> anyhow::Result<Vec<DocSet>> {
    specs
        .iter()
        .map(|spec| {
            let Some((name, path)) = spec.split_once('=') else {
                bail!("document sets are NAME=PATH, got {spec:?}")
            };
            DocSet::load(name, &PathBuf::from(path))
        })
        .collect()
}

#[cfg(feature = "hub")]
fn hub(options: &std::collections::BTreeMap<String, String>) -> anyhow::Result<()> {
    use bench::hub::{Options, records, run, table};
    fn parse<T: std::str::FromStr>(
        options: &std::collections::BTreeMap<String, String>,
        name: &str,
        default: T,
    ) -> anyhow::Result<T>
    where
        T::Err: std::error::Error + Send + Sync + 'static,
    {
        options.get(name).map_or(Ok(default), |v| v.parse().with_context(|| format!("{name} {v}")))
    }
    let d = Options::default();
    let opts = Options {
        hub_bin: options.get("--hub-bin").map_or(d.hub_bin, PathBuf::from),
        work: options.get("--work").map_or(d.work, PathBuf::from),
        connections: parse(options, "--conns", d.connections)?,
        secs: parse(options, "--secs", d.secs)?,
        warmup_secs: parse(options, "--warmup-secs", d.warmup_secs)?,
        ceiling_secs: parse(options, "--ceiling-secs", d.ceiling_secs)?,
        batch_rows: parse(options, "--batch-rows", d.batch_rows)?,
        row_bytes: parse(options, "--row-bytes", d.row_bytes)?,
        rss_executions: parse(options, "--executions", d.rss_executions)?,
        sim_runs: parse(options, "--sim-runs", d.sim_runs)?,
    };
    let report = run(&opts)?;
    if let Some(path) = options.get("--json") {
        let mut text = String::new();
        for r in records(&report) {
            text.push_str(&r.to_string());
            text.push('\n');
        }
        std::fs::write(path, text).with_context(|| format!("writing {path}"))?;
    }
    print!("{}", table(&report));
    Ok(())
}

/// `cw-bench fleet-load --addrs A,B,C [--conns N] [--secs S] [--prefix P]`: one JSON line.
#[cfg(feature = "hub")]
fn fleet_load(options: &std::collections::BTreeMap<String, String>) -> anyhow::Result<()> {
    let addrs = options.get("--addrs").context("--addrs A,B,… is required")?;
    let addrs: Vec<std::net::SocketAddr> = addrs
        .split(',')
        .map(|a| a.parse().with_context(|| format!("--addrs: {a}")))
        .collect::<anyhow::Result<_>>()?;
    let conns: usize = options.get("--conns").map_or(Ok(8), |v| v.parse()).context("--conns")?;
    let secs: f64 = options.get("--secs").map_or(Ok(5.0), |v| v.parse()).context("--secs")?;
    let prefix = options.get("--prefix").map_or("fl", String::as_str);
    let (per_sec, outcomes) = bench::hub::fleet_load(&addrs, conns, secs, prefix)?;
    let p50: Vec<f64> = outcomes.iter().map(|o| o.quantile_ms(0.5)).collect();
    let p99: Vec<f64> = outcomes.iter().map(|o| o.quantile_ms(0.99)).collect();
    println!(
        "{}",
        serde_json::json!({"replicas": addrs.len(), "conns_per_replica": conns,
            "posts_per_sec": per_sec, "p50_ms": p50, "p99_ms": p99})
    );
    Ok(())
}

#[cfg(not(feature = "hub"))]
fn fleet_load(_: &std::collections::BTreeMap<String, String>) -> anyhow::Result<()> {
    bail!("cw-bench was built without the hub feature")
}

#[cfg(feature = "hub")]
fn bare_serve(bodies: &Path) -> anyhow::Result<()> {
    bench::hub::bare_serve(bodies)
}

#[cfg(not(feature = "hub"))]
fn hub(options: &std::collections::BTreeMap<String, String>) -> anyhow::Result<()> {
    let _ = options;
    bail!("cw-bench was built without the hub feature")
}

#[cfg(not(feature = "hub"))]
fn bare_serve(bodies: &Path) -> anyhow::Result<()> {
    let _ = bodies;
    bail!("cw-bench was built without the hub feature")
}
