//! Parser throughput: `canonical_json::parse` against `serde_json::from_slice` into
//! `serde_json::Value`, on the same bytes.
//!
//! A *parse set* is a file or a directory: every `*.json` file is one input, and every non-empty
//! line of a `*.ndjson` file (a DWP journal, a dry-run batch) is one input. MB/s here is over the
//! input bytes, not the JCS bytes of the hashing measurements.

use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::harness::{Config, Work, measure, record};

/// The inputs of one parse set, read before any timing.
#[derive(Debug)]
pub struct ParseSet {
    /// Name used in the output.
    pub name: String,
    /// One entry per document or journal line.
    pub inputs: Vec<Vec<u8>>,
}

impl ParseSet {
    /// Reads every input under `root`.
    ///
    /// # Errors
    /// Unreadable files, an empty set, or an input either parser refuses (the two parsers must
    /// do the same work).
    pub fn load(name: &str, root: &Path) -> anyhow::Result<ParseSet> {
        let mut files = Vec::new();
        collect(root, &mut files)?;
        files.sort();
        let mut inputs = Vec::new();
        for path in files {
            let bytes = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            if path.extension().is_some_and(|e| e == "ndjson") {
                inputs.extend(
                    bytes
                        .split(|&b| b == b'\n')
                        .filter(|l| l.iter().any(|b| !b.is_ascii_whitespace()))
                        .map(<[u8]>::to_vec),
                );
            } else {
                inputs.push(bytes);
            }
        }
        if inputs.is_empty() {
            bail!("no inputs under {}", root.display());
        }
        for (i, input) in inputs.iter().enumerate() {
            canonical_json::parse(input)
                .with_context(|| format!("{name}: input {i}: canonical_json::parse"))?;
            serde_json::from_slice::<serde_json::Value>(input)
                .with_context(|| format!("{name}: input {i}: serde_json::from_slice"))?;
        }
        Ok(ParseSet { name: name.to_owned(), inputs })
    }

    /// Total input bytes per pass.
    pub fn bytes(&self) -> usize {
        self.inputs.iter().map(Vec::len).sum()
    }

    /// Times both parsers over the set; one record each (`op` = `parse`).
    ///
    /// # Errors
    /// When an input stops parsing (it cannot: `load` checked them).
    pub fn measure_all(&self, config: Config) -> anyhow::Result<Vec<serde_json::Value>> {
        let work = |implementation| Work {
            set: &self.name,
            implementation,
            op: "parse",
            docs: self.inputs.len(),
            bytes: self.bytes(),
        };
        let mut failed = false;
        let ours = measure(config, || {
            for input in &self.inputs {
                failed |= black_box(canonical_json::parse(black_box(input))).is_err();
            }
        });
        let theirs = measure(config, || {
            for input in &self.inputs {
                failed |= black_box(serde_json::from_slice::<serde_json::Value>(black_box(input)))
                    .is_err();
            }
        });
        if failed {
            bail!("an input of {} failed to parse during the timed loop", self.name);
        }
        Ok(vec![record(&work("ours"), &ours), record(&work("serde_json"), &theirs)])
    }
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let meta = fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if meta.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    for entry in fs::read_dir(path).with_context(|| format!("listing {}", path.display()))? {
        let entry_path = entry?.path();
        if entry_path.is_dir() {
            collect(&entry_path, out)?;
        } else if entry_path.extension().is_some_and(|e| e == "json" || e == "ndjson") {
            out.push(entry_path);
        }
    }
    Ok(())
}
