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
