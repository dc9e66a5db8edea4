//! Validation against the standard's JSON Schemas (draft 2020-12, offline): `validate --schemas`.
//!
//! Every `*.schema.json` under the folder is registered under its `$id`; a document of kind K is
//! validated against the schema location for K (the recipe and capabilities roots, or the
//! `$defs` entry in common / core / mission). `date-time` is checked with the reference's
//! timestamp rule (as the reference's `format_checker` does); `uri` needs a scheme.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use canonical_json::Value;

use crate::input::read_json;

/// Where a kind's schema is, relative to the schema base of its `$id`s.
fn location(kind: &str) -> String {
    match kind {
        "Recipe" => "recipe.schema.json".into(),
        "Capabilities" => "capabilities.schema.json".into(),
        "KeyRecord" | "AgentMandate" | "Disclosure" => format!("common.schema.json#/$defs/{kind}"),
        "MissionEvent" | "Checkpoint" => format!("mission.schema.json#/$defs/{kind}"),
        other => format!("core.schema.json#/$defs/{other}"),
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
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

fn to_serde(v: &Value) -> Result<serde_json::Value> {
    let bytes = canonical_json::to_python_compact(v).context("cannot serialise")?;
    serde_json::from_slice(&bytes).context("cannot convert the document for the schema validator")
}

/// Validates `doc` as `kind` against the schemas in `dir`; returns `(pointer, message)` errors.
///
/// # Errors
/// When the folder holds no usable schemas or the kind's schema cannot be built.
pub fn validate(dir: &Path, kind: &str, doc: &Value) -> Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let mut schemas = Vec::new();
    let mut base = None;
    for path in &files {
        let schema = read_json(path)?;
        let id = schema
            .get("$id")
            .and_then(Value::as_str)
            .with_context(|| format!("{} has no $id", path.display()))?
            .to_owned();
        if base.is_none()
            && let Some((prefix, _)) = id.rsplit_once('/')
        {
            base = Some(format!("{prefix}/"));
        }
        schemas.push((id, to_serde(&schema)?));
    }
    let base = base.with_context(|| format!("no *.schema.json in {}", dir.display()))?;
    // References to schema files the folder does not hold (the standard's folder refers to a
    // session.schema.json it does not ship) get permissive stubs, so validation stays offline.
    let mut missing: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        std::collections::BTreeMap::new();
    for (_, schema) in &schemas {
        refs(schema, &mut |r| {
            let (doc, frag) = r.split_once('#').unwrap_or((r, ""));
            if doc.is_empty() || doc.contains("://") {
                return;
            }
            let full = format!("{base}{doc}");
            if schemas.iter().any(|(id, _)| *id == full) {
                return;
            }
            let entry = missing.entry(full).or_default();
            if let Some(name) = frag.strip_prefix("/$defs/") {
                entry.insert(name.to_owned());
            }
        });
    }
    for (id, defs) in &missing {
        eprintln!("note: {id} is not in {}; references to it accept anything", dir.display());
        let defs: serde_json::Map<String, serde_json::Value> =
            defs.iter().map(|d| (d.clone(), serde_json::json!({}))).collect();
        schemas.push((id.clone(), serde_json::json!({ "$id": id, "$defs": defs })));
    }
    let mut registry = jsonschema::Registry::new();
    for (id, schema) in &schemas {
        registry = registry.add(id.as_str(), schema).map_err(|e| anyhow!("schema {id}: {e}"))?;
    }
    let registry = registry.prepare().map_err(|e| anyhow!("schema registry: {e}"))?;
    let root = serde_json::json!({ "$ref": format!("{base}{}", location(kind)) });
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .with_registry(&registry)
        .should_validate_formats(true)
        .with_format("date-time", |s: &str| cookwala::time::parse_timestamp(s).is_ok())
        .with_format("uri", |s: &str| {
            s.split_once(':').is_some_and(|(scheme, _)| {
                !scheme.is_empty()
                    && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
            }) && !s.chars().any(char::is_whitespace)
        })
        .build(&root)
        .map_err(|e| anyhow!("cannot build the {kind} schema: {e}"))?;
    let instance = to_serde(doc)?;
    Ok(validator
        .iter_errors(&instance)
        .map(|e| (e.instance_path().to_string(), e.to_string()))
        .collect())
}

fn refs(v: &serde_json::Value, f: &mut impl FnMut(&str)) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(serde_json::Value::String(r)) = m.get("$ref") {
                f(r);
            }
            m.values().for_each(|x| refs(x, f));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| refs(x, f)),
        _ => {}
    }
}
