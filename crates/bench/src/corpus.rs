//! Document sets and the hashing measurements over them.

use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use canonical_json::digest::{document_hash, sha256_prefixed, without_top_level};
use canonical_json::{Value, parse, to_jcs};

use crate::harness::{Config, Work, measure, record};

/// Top-level keys the Cookwala document hash leaves out.
const EXCLUDED: &[&str] = &["hash", "signature"];

/// One document, read and prepared before any timing.
#[derive(Debug)]
pub struct Doc {
    /// Path relative to the set's root, `/`-separated (the key the hash cross-check uses).
    pub rel_path: String,
    /// The file's bytes.
    pub raw: Vec<u8>,
    /// `canonical_json::parse` of `raw`.
    pub value: Value,
    /// `serde_json` parse of `raw` without top-level `hash`/`signature`: the same content the
    /// document hash covers.
    pub serde_body: serde_json::Value,
    /// Length of the JCS bytes the document hash covers.
    pub jcs_len: usize,
}

/// A named set of documents.
#[derive(Debug)]
pub struct DocSet {
    /// Name used in the output.
    pub name: String,
    /// Documents, sorted by relative path.
    pub docs: Vec<Doc>,
}

impl DocSet {
    /// Reads every `*.json` file under `root` (recursively; `root` may also be a single file).
    ///
    /// # Errors
    /// Unreadable files, documents our parser or serde_json rejects, or documents JCS cannot
    /// write (such documents cannot be compared across implementations).
    pub fn load(name: &str, root: &Path) -> anyhow::Result<DocSet> {
        let mut files = Vec::new();
        collect_json_files(root, &mut files)?;
        files.sort();
        if files.is_empty() {
            bail!("no .json files under {}", root.display());
        }
        let mut docs = Vec::with_capacity(files.len());
        for path in files {
            let raw = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            let value =
                parse(&raw).with_context(|| format!("canonical_json::parse {}", path.display()))?;
            let mut serde_body: serde_json::Value = serde_json::from_slice(&raw)
                .with_context(|| format!("serde_json parse {}", path.display()))?;
            if let Some(map) = serde_body.as_object_mut() {
                for key in EXCLUDED {
                    map.remove(*key);
                }
            }
            let jcs_len = to_jcs(&without_top_level(&value, EXCLUDED))
                .with_context(|| format!("JCS of {}", path.display()))?
                .len();
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let rel_path = if rel.as_os_str().is_empty() {
                path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            } else {
                rel.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/")
            };
            docs.push(Doc { rel_path, raw, value, serde_body, jcs_len });
        }
        Ok(DocSet { name: name.to_owned(), docs })
    }

    /// Total JCS bytes hashed per pass over the set.
    pub fn jcs_bytes(&self) -> usize {
        self.docs.iter().map(|d| d.jcs_len).sum()
    }

    /// Total input (file) bytes.
    pub fn raw_bytes(&self) -> usize {
        self.docs.iter().map(|d| d.raw.len()).sum()
    }

    /// `rel_path<TAB>document_hash` per document, for the cross-check against Python.
    ///
    /// # Errors
    /// When a document cannot be hashed.
    pub fn hash_lines(&self) -> anyhow::Result<Vec<String>> {
        self.docs
            .iter()
            .map(|d| {
                let hash = document_hash(&d.value)
                    .with_context(|| format!("document_hash of {}", d.rel_path))?;
                Ok(format!("{}\t{}", d.rel_path, hash))
            })
            .collect()
    }

    /// Runs every hashing measurement over this set; one JSON record per measurement.
    ///
    /// # Errors
    /// When a document stops hashing (it cannot: `load` checked them).
    pub fn measure_all(&self, config: Config) -> anyhow::Result<Vec<serde_json::Value>> {
        let docs = self.docs.len();
        let bytes = self.jcs_bytes();
        let work = |implementation, op| Work { set: &self.name, implementation, op, docs, bytes };
        let mut out = Vec::new();
        let mut failed = false;

        // Ours: parse once outside the loop, hash (JCS + SHA-256 + hex) inside.
        let sample = measure(config, || {
            for d in &self.docs {
                failed |= black_box(document_hash(black_box(&d.value))).is_err();
            }
        });
        out.push(record(&work("ours", "hash"), &sample));

        // Ours: parse + hash from bytes.
        let sample = measure(config, || {
            for d in &self.docs {
                failed |= match parse(black_box(&d.raw)) {
                    Ok(value) => black_box(document_hash(&value)).is_err(),
                    Err(_) => true,
                };
            }
        });
        out.push(record(&work("ours", "parse+hash"), &sample));

        // Ours: the JCS writer alone, on the already-stripped body (breakdown, no hashing).
        let bodies: Vec<Value> =
            self.docs.iter().map(|d| without_top_level(&d.value, EXCLUDED)).collect();
        let sample = measure(config, || {
            for body in &bodies {
                failed |= black_box(to_jcs(black_box(body))).is_err();
            }
        });
        out.push(record(&work("ours", "to_jcs"), &sample));

        // serde_json: the serialiser ceiling, then with the same SHA-256 + hex step.
        let sample = measure(config, || {
            for d in &self.docs {
                failed |= black_box(serde_json::to_vec(black_box(&d.serde_body))).is_err();
            }
        });
        out.push(record(&work("serde_json", "to_vec"), &sample));

        let sample = measure(config, || {
            for d in &self.docs {
                match serde_json::to_vec(black_box(&d.serde_body)) {
                    Ok(bytes) => {
                        black_box(sha256_prefixed(&bytes));
                    }
                    Err(_) => failed = true,
                }
            }
        });
        out.push(record(&work("serde_json", "to_vec+sha256"), &sample));

        // serde_json from bytes: parse, drop hash/signature, serialise, hash.
        let sample = measure(config, || {
            for d in &self.docs {
                match serde_json::from_slice::<serde_json::Value>(black_box(&d.raw)) {
                    Ok(mut v) => {
                        if let Some(map) = v.as_object_mut() {
                            for key in EXCLUDED {
                                map.remove(*key);
                            }
                        }
                        match serde_json::to_vec(&v) {
                            Ok(bytes) => {
                                black_box(sha256_prefixed(&bytes));
                            }
                            Err(_) => failed = true,
                        }
                    }
                    Err(_) => failed = true,
                }
            }
        });
        out.push(record(&work("serde_json", "parse+to_vec+sha256"), &sample));

        if failed {
            bail!("a document failed to hash during the {} measurements", self.name);
        }
        Ok(out)
    }
}

fn collect_json_files(path: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let meta = fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if meta.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    for entry in fs::read_dir(path).with_context(|| format!("listing {}", path.display()))? {
        let entry_path = entry?.path();
        if entry_path.is_dir() {
            collect_json_files(&entry_path, out)?;
        } else if entry_path.extension().is_some_and(|e| e == "json") {
            out.push(entry_path);
        }
    }
    Ok(())
}
