//! The OpenAPI description the hub serves at `/openapi.yaml`, and the bundler that makes it
//! self-contained.
//!
//! The hub's own description (`openapi.json`, JSON being YAML too) points at the published
//! Cookwala JSON Schemas by absolute URL (`https://cookwala.ai/v1/schemas/<file>#/$defs/<name>`).
//! Offline tools (a test runner on a machine without network, a code generator) need those
//! schemas inline, so [`bundle`] copies every schema the description can reach into
//! `components/schemas` and rewrites each reference to a local pointer:
//!
//! ```text
//! <file>.schema.json#/$defs/<name>  ->  #/components/schemas/<file>.<name>
//! <file>.schema.json                ->  #/components/schemas/<file>
//! ```
//!
//! A reference to a schema file that is not available becomes `{}` (anything goes) and is
//! reported, so a missing file weakens the description visibly instead of breaking it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use canonical_json::{Map, Value};

/// The hub's own description of the API it serves.
pub const OWN_SPEC: &str = include_str!("openapi.json");

/// Where the published schemas live; references under it are bundled.
pub const SCHEMA_BASE: &str = "https://cookwala.ai/v1/schemas/";

/// Why a description could not be bundled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// The description or a schema file is not valid JSON.
    #[error("{0}: {1}")]
    Json(String, canonical_json::ParseError),
    /// A schema folder could not be read.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    /// A reference points inside a schema at something that is not there.
    #[error("{0}: no such definition")]
    Dangling(String),
}

/// A bundled description and the schema files it referenced but could not find.
#[derive(Clone, Debug)]
pub struct Bundled {
    /// The self-contained description.
    pub spec: Value,
    /// Schema files referenced but not available (their references accept anything).
    pub missing: Vec<String>,
}

/// Reads every `*.json` file of `dir` as a schema, keyed by file name.
///
/// # Errors
/// The folder or a file cannot be read, or a file is not JSON.
pub fn load_schemas(dir: &Path) -> Result<BTreeMap<String, Value>, BundleError> {
    let io = |e| BundleError::Io(dir.display().to_string(), e);
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            continue;
        };
        if !name.ends_with(".json") || !path.is_file() {
            continue;
        }
        let bytes =
            std::fs::read(&path).map_err(|e| BundleError::Io(path.display().to_string(), e))?;
        let doc = canonical_json::parse(&bytes)
            .map_err(|e| BundleError::Json(path.display().to_string(), e))?;
        out.insert(name, doc);
    }
    Ok(out)
}

/// Inlines every published schema `spec` references, taken from `schemas` (keyed by file
/// name, e.g. `core.schema.json`).
///
/// # Errors
/// A reference names a definition its schema file does not have.
pub fn bundle(spec: &Value, schemas: &BTreeMap<String, Value>) -> Result<Bundled, BundleError> {
    let mut b = Bundler {
        schemas,
        bundled: BTreeMap::new(),
        pending: Vec::new(),
        missing: BTreeSet::new(),
    };
    let mut out = b.rewrite(spec, None);
    while let Some((name, file, pointer)) = b.pending.pop() {
        let node = b
            .resolve(&file, &pointer)
            .ok_or_else(|| BundleError::Dangling(format!("{file}#{pointer}")))?;
        let rewritten = b.rewrite(node, Some(&file));
        b.bundled.insert(name, Some(rewritten));
    }
    if let Some(root) = out.as_object_mut() {
        let components =
            root.entry("components".to_owned()).or_insert_with(|| Value::Object(Map::new()));
        if let Some(components) = components.as_object_mut() {
            let target =
                components.entry("schemas".to_owned()).or_insert_with(|| Value::Object(Map::new()));
            if let Some(target) = target.as_object_mut() {
                for (name, schema) in b.bundled {
                    target.insert(name, schema.unwrap_or(Value::Object(Map::new())));
                }
            }
        }
    }
    Ok(Bundled { spec: out, missing: b.missing.into_iter().collect() })
}

struct Bundler<'a> {
    schemas: &'a BTreeMap<String, Value>,
    /// Component name → schema (`None` while it waits in `pending`).
    bundled: BTreeMap<String, Option<Value>>,
    pending: Vec<(String, String, String)>,
    missing: BTreeSet<String>,
}

impl<'a> Bundler<'a> {
    fn resolve(&self, file: &str, pointer: &str) -> Option<&'a Value> {
        let schemas: &'a BTreeMap<String, Value> = self.schemas;
        let doc = schemas.get(file)?;
        if pointer.is_empty() { Some(doc) } else { doc.pointer(pointer) }
    }

    /// Rewrites `node`, found in schema file `file` (`None`: the description itself).
    fn rewrite(&mut self, node: &Value, file: Option<&str>) -> Value {
        match node {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref")
                    && let Some(local) = self.local_ref(r, file)
                {
                    if local.is_null() {
                        return Value::Object(Map::new());
                    }
                    let mut out = Map::new();
                    for (k, v) in m {
                        if k == "$ref" {
                            out.insert(k.clone(), local.clone());
                        } else {
                            out.insert(k.clone(), self.rewrite(v, file));
                        }
                    }
                    return Value::Object(out);
                }
                let mut out = Map::new();
                for (k, v) in m {
                    // Inside a schema file, its identity and definitions table go away: each
                    // definition becomes a component of its own.
                    if file.is_some() && matches!(k.as_str(), "$id" | "$schema" | "$defs") {
                        continue;
                    }
                    out.insert(k.clone(), self.rewrite(v, file));
                }
                Value::Object(out)
            }
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.rewrite(v, file)).collect())
            }
            other => other.clone(),
        }
    }

    /// The local pointer for reference `r` (`Value::Null` when its file is missing), or `None`
    /// when `r` is not a schema reference this bundler handles.
    fn local_ref(&mut self, r: &str, file: Option<&str>) -> Option<Value> {
        let (target_file, pointer) = if let Some(rest) = r.strip_prefix(SCHEMA_BASE) {
            let (f, p) = rest.split_once('#').unwrap_or((rest, ""));
            (f.to_owned(), p.to_owned())
        } else if let Some(current) = file {
            let (f, p) = r.split_once('#').unwrap_or((r, ""));
            (if f.is_empty() { current.to_owned() } else { f.to_owned() }, p.to_owned())
        } else {
            return None;
        };
        if !self.schemas.contains_key(&target_file) {
            self.missing.insert(target_file);
            return Some(Value::Null);
        }
        let name = component_name(&target_file, &pointer);
        if !self.bundled.contains_key(&name) {
            self.bundled.insert(name.clone(), None);
            self.pending.push((name.clone(), target_file, pointer));
        }
        Some(Value::String(format!("#/components/schemas/{name}")))
    }
}

fn component_name(file: &str, pointer: &str) -> String {
    let stem =
        file.strip_suffix(".schema.json").or_else(|| file.strip_suffix(".json")).unwrap_or(file);
    let mut parts: Vec<&str> = pointer.split('/').filter(|p| !p.is_empty()).collect();
    if parts.first() == Some(&"$defs") {
        parts.remove(0);
    }
    let mut name = stem.to_owned();
    for p in parts {
        name.push('.');
        name.push_str(&p.replace("~1", "_").replace("~0", "_"));
    }
    name
}
