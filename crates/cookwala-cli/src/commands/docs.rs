//! `cookwala migrate` and `cookwala logs export`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use canonical_json::{Map, Value};
use cookwala::logs::{self, Dataset};
use cookwala::migrate::{self, Unknown};
use cookwala::time::parse_timestamp;

use crate::input::{display, read_json};
use crate::output::{compact, emit};

/// `cookwala migrate FILE`: writes the 0.2 document and lists the changes on stderr.
pub fn migrate(
    file: &Path,
    kind: Option<&str>,
    report_unknown: bool,
    out: Option<&Path>,
    json: bool,
) -> Result<bool> {
    let doc = read_json(file)?;
    let mode = if report_unknown { Unknown::Report } else { Unknown::Rename };
    let (migrated, changes) = migrate::migrate(&doc, kind, mode);
    if json {
        let mut m = Map::new();
        m.insert("document".into(), migrated.clone());
        let list = changes
            .iter()
            .map(|c| {
                let mut x = Map::new();
                x.insert("pointer".into(), c.pointer.as_str().into());
                x.insert("change".into(), c.what.as_str().into());
                Value::Object(x)
            })
            .collect();
        m.insert("changes".into(), Value::Array(list));
        if let Some(path) = out {
            emit(&migrated, Some(path))?;
        }
        println!("{}", compact(&Value::Object(m))?);
    } else {
        emit(&migrated, out)?;
        if changes.is_empty() {
            eprintln!("{}: nothing to change", display(file));
        }
        for c in &changes {
            eprintln!("{}: {}", if c.pointer.is_empty() { "/" } else { &c.pointer }, c.what);
        }
    }
    Ok(true)
}

/// `cookwala logs export`.
pub fn export(
    consent: &str,
    since: Option<&str>,
    inputs: &[PathBuf],
    out: &Path,
    json: bool,
) -> Result<bool> {
    let Some(dataset) = Dataset::parse(consent) else {
        bail!("--consent must be research_only or open")
    };
    let since = match since {
        Some(text) => {
            Some(parse_timestamp(text).map_err(|e| anyhow::anyhow!("--since {text:?}: {e}"))?)
        }
        None => None,
    };
    let mut logs = Vec::new();
    for path in inputs {
        let doc = read_json(path)?;
        let label = display(path);
        match doc {
            Value::Array(items) => {
                for (i, item) in items.into_iter().enumerate() {
                    logs.push((format!("{label}#{i}"), item));
                }
            }
            other => logs.push((label, other)),
        }
    }
    let result = logs::export(&logs, dataset, since);
    let mut text = String::new();
    for log in &result.released {
        text.push_str(&compact(log)?);
        text.push('\n');
    }
    journal::atomic_replace(out, text.as_bytes())
        .with_context(|| format!("cannot write {}", out.display()))?;
    if json {
        let mut m = Map::new();
        m.insert("released".into(), Value::from(result.released.len()));
        let left = result
            .left_out
            .iter()
            .map(|(l, r)| {
                let mut x = Map::new();
                x.insert("log".into(), l.as_str().into());
                x.insert("reason".into(), r.as_str().into());
                Value::Object(x)
            })
            .collect();
        m.insert("leftOut".into(), Value::Array(left));
        println!("{}", compact(&Value::Object(m))?);
    } else {
        println!(
            "released {} log(s) to {}; left out {}",
            result.released.len(),
            out.display(),
            result.left_out.len()
        );
        for (label, reason) in &result.left_out {
            println!("  left out {label}: {reason}");
        }
    }
    Ok(true)
}

/// Migrate a 0.1 document to 0.2 and list every change
///
/// °F → °C, relative temperature tolerances → toleranceAbs, money → decimal strings,
/// unknown fields → x-<name>, version → 0.2.0; a stale hash/signature is removed.
/// The document goes to stdout (or --out), the changes to stderr.
#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    /// Document kind (default: detected)
    #[arg(long)]
    pub kind: Option<String>,
    /// Leave unknown fields in place and only report them
    #[arg(long)]
    pub report_unknown: bool,
    /// Write the migrated document here
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Print {"document","changes":[{"pointer","change"}]}
    #[arg(long)]
    pub json: bool,
    /// The 0.1 document
    pub file: PathBuf,
}

/// The `cookwala logs` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum LogsCommand {
    /// Build a dataset from execution logs: only consented, personal-data-free logs, scrubbed
    ///
    /// Writes one log per line (NDJSON) to --out and says which logs were left out and why.
    /// `open` datasets get every time coarsened to the day.
    Export {
        /// The dataset: research_only or open
        #[arg(long)]
        consent: String,
        /// Only logs started at or after this instant (RFC 3339)
        #[arg(long)]
        since: Option<String>,
        /// Output NDJSON file
        #[arg(long)]
        out: PathBuf,
        /// Print {"released","leftOut":[{"log","reason"}]}
        #[arg(long)]
        json: bool,
        /// ExecutionLog files (a file may hold an array of logs)
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
    },
}

impl LogsCommand {
    /// Runs the subcommand; `Ok(false)` when nothing could be released.
    pub fn run(self) -> Result<bool> {
        match self {
            LogsCommand::Export { consent, since, out, json, inputs } => {
                export(&consent, since.as_deref(), &inputs, &out, json)
            }
        }
    }
}
