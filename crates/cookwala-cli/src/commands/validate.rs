//! `cookwala validate` and `cookwala schema export`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use canonical_json::{Map, Value};
use cookwala::documents::{self, KINDS};

use crate::commands::rules::vocabulary;
use crate::input::{display, read_json};
use crate::output::{compact, pretty};

fn issues(list: &[documents::Issue]) -> Value {
    Value::Array(
        list.iter()
            .map(|i| {
                let mut m = Map::new();
                m.insert("pointer".into(), i.pointer.as_str().into());
                m.insert("code".into(), i.code.into());
                m.insert("message".into(), i.message.as_str().into());
                Value::Object(m)
            })
            .collect(),
    )
}

/// Validates one document with our types. Returns whether it is valid.
pub fn validate(
    file: &Path,
    kind: Option<&str>,
    schemas: Option<&Path>,
    vocab_dir: Option<&Path>,
    json: bool,
) -> Result<bool> {
    if let Some(k) = kind
        && !KINDS.iter().any(|(n, _, _)| *n == k)
    {
        let names: Vec<&str> = KINDS.iter().map(|(n, _, _)| *n).collect();
        bail!("unknown kind {k:?} (kinds: {})", names.join(", "));
    }
    let vocab = vocabulary(vocab_dir)?;
    let doc = read_json(file)?;
    let report = documents::validate(&doc, kind, &vocab);
    let schema_errors = match schemas {
        Some(dir) if !report.kind.is_empty() => {
            Some(crate::commands::schemas::validate(dir, &report.kind, &doc)?)
        }
        _ => None,
    };
    let schema_ok = schema_errors.as_ref().is_none_or(Vec::is_empty);
    if json {
        let mut m = Map::new();
        m.insert("kind".into(), report.kind.as_str().into());
        m.insert("valid".into(), (report.is_valid() && schema_ok).into());
        m.insert("errors".into(), issues(&report.errors));
        m.insert("warnings".into(), issues(&report.warnings));
        if let Some(errors) = &schema_errors {
            let list = errors
                .iter()
                .map(|(p, msg)| {
                    let mut x = Map::new();
                    x.insert("pointer".into(), p.as_str().into());
                    x.insert("message".into(), msg.as_str().into());
                    Value::Object(x)
                })
                .collect();
            m.insert("schemaErrors".into(), Value::Array(list));
        }
        println!("{}", compact(&Value::Object(m))?);
    } else {
        for (p, msg) in schema_errors.iter().flatten() {
            println!("{}: {}: {msg} (schema)", display(file), pointer(p));
        }
        for w in &report.warnings {
            eprintln!("warning: {}: {} ({})", pointer(&w.pointer), w.message, w.code);
        }
        for e in &report.errors {
            println!("{}: {}: {} ({})", display(file), pointer(&e.pointer), e.message, e.code);
        }
        if report.is_valid() && schema_ok {
            let how = if schema_errors.is_some() { " (types and schemas)" } else { "" };
            println!("{}: valid {}{how}", display(file), report.kind);
        }
    }
    Ok(report.is_valid() && schema_ok)
}

fn pointer(p: &str) -> &str {
    if p.is_empty() { "/" } else { p }
}

/// Writes `<Kind>.schema.json` for every kind into `dir`.
pub fn export(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, _, _) in KINDS {
        let schema = documents::json_schema(name).context("schema generation")?;
        let path = dir.join(format!("{name}.schema.json"));
        journal::atomic_replace(&path, &pretty(&schema)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    println!("wrote {} schemas to {}", KINDS.len(), dir.display());
    Ok(())
}

/// Builds the offline SchemaBundle from every `*.schema.json` under `from` (recursively):
/// `{"kind":"SchemaBundle","version":"0.2.0","sha256":…,"schemas":{$id: schema}}`, where
/// `sha256` is the bare hex SHA-256 of Python's
/// `json.dumps(schemas, sort_keys=True, ensure_ascii=False, separators=(',', ':'))`.
pub fn bundle(from: &Path, out: &Path) -> Result<()> {
    let mut files = Vec::new();
    collect(from, &mut files)?;
    files.sort();
    let mut schemas = Map::new();
    for path in &files {
        let doc = read_json(path)?;
        let id = doc
            .get("$id")
            .and_then(Value::as_str)
            .with_context(|| format!("{} has no $id", path.display()))?
            .to_owned();
        schemas.insert(id, doc);
    }
    let schemas = Value::Object(schemas);
    let format = canonical_json::PyFormat { indent: None, keep_unicode: true };
    let bytes = canonical_json::to_python(&schemas, format).context("cannot serialise")?;
    let sha = canonical_json::digest::sha256_hex(&bytes);
    let mut m = Map::new();
    m.insert("kind".into(), "SchemaBundle".into());
    m.insert("version".into(), "0.2.0".into());
    m.insert("sha256".into(), sha.as_str().into());
    m.insert("schemas".into(), schemas);
    let mut text =
        canonical_json::to_python(&Value::Object(m), format).context("cannot serialise")?;
    text.push(b'\n');
    journal::atomic_replace(out, &text)
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!("{} schemas, sha256 {sha}", files.len());
    Ok(())
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry.with_context(|| format!("cannot list {}", dir.display()))?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".schema.json"))
        {
            out.push(path);
        }
    }
    Ok(())
}

/// Validate a document with cookwala's strict document types
///
/// Unknown fields are errors unless they start with x-; Core documents must be 0.2.x
/// (else unsupported_version). Each problem names its JSON pointer. Exit 1 when invalid.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Document kind (default: detected): Recipe, Capabilities, SafetyLimits, KeyRecord,
    /// AgentMandate, Recall, IncidentReport, ExecuteRequest, ExecutionStatus, StopRequest,
    /// ExecutionLog, Disclosure, MissionEvent, Checkpoint
    #[arg(long)]
    pub kind: Option<String>,
    /// Also validate against the JSON Schemas in this folder (draft 2020-12, offline; e.g.
    /// the standard's schemas/ folder)
    #[arg(long)]
    pub schemas: Option<PathBuf>,
    /// Load the standard's vocabulary (ops.json, units.json) from this folder instead of the
    /// built-in one
    #[arg(long = "vocab", value_name = "DIR")]
    pub vocab: Option<PathBuf>,
    /// Print {"kind","valid","errors":[{"pointer","code","message"}],"warnings":[...]}
    #[arg(long)]
    pub json: bool,
    /// The document
    pub file: PathBuf,
}

/// The `cookwala schema` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SchemaCommand {
    /// Write <Kind>.schema.json (draft 2020-12) generated from cookwala's document types
    Export {
        /// Output folder
        dir: PathBuf,
    },
    /// Build {"kind":"SchemaBundle","version","sha256","schemas"} from a schema folder
    Bundle {
        /// Folder searched recursively for *.schema.json
        #[arg(long)]
        from: PathBuf,
        /// Output file (the standard's tool calls it schemas-bundle.json)
        #[arg(long)]
        out: PathBuf,
    },
}

impl SchemaCommand {
    /// Runs the subcommand.
    pub fn run(self) -> Result<bool> {
        match self {
            SchemaCommand::Export { dir } => export(&dir).map(|()| true),
            SchemaCommand::Bundle { from, out } => bundle(&from, &out).map(|()| true),
        }
    }
}
