//! Git and the world a gate ran in: `git` itself, the tree state, touched-surface hashes and
//! the gate reuse fingerprint.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use canonical_json::{Map, Value};

use crate::error::{Result, fail};
use crate::files::{hash_file, normalize};
use crate::values::{obj, s};
use crate::writer::Writer;

/// Runs `git ARGS` in `cwd`: (trimmed stdout, success).
pub fn git(args: &[&str], cwd: &Path) -> (String, bool) {
    match Command::new("git").args(args).current_dir(cwd).stdin(Stdio::null()).output() {
        Ok(out) => (String::from_utf8_lossy(&out.stdout).trim().to_owned(), out.status.success()),
        Err(_) => (String::new(), false),
    }
}

fn tree_state(root: &Path) -> Value {
    let (head, ok) = git(&["rev-parse", "HEAD"], root);
    if !ok {
        return Value::Null;
    }
    let Ok(out) = Command::new("git")
        .args(["status", "--porcelain", "-z", "--untracked-files=all"])
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
    else {
        return Value::Null;
    };
    if !out.status.success() {
        return Value::Null;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let entries: Vec<&str> = text.split('\0').collect();
    let mut changed: Vec<(String, String, Option<String>)> = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let entry = entries[i];
        i += 1;
        if entry.len() < 4 {
            continue;
        }
        let (code, rel) = (&entry[..2], &entry[3..]);
        if code.starts_with(['R', 'C']) {
            i += 1;
        }
        let full = root.join(rel);
        let digest = if full.is_symlink() { None } else { hash_file(&full) };
        changed.push((code.to_owned(), rel.to_owned(), digest));
    }
    changed.sort();
    Value::Object(obj([
        ("head", s(&head)),
        (
            "changed",
            Value::Array(
                changed
                    .into_iter()
                    .map(|(c, r, d)| {
                        Value::Array(vec![s(&c), s(&r), d.map_or(Value::Null, |d| s(&d))])
                    })
                    .collect(),
            ),
        ),
    ]))
}

fn hash_surface(path: &Path) -> Option<String> {
    if path.is_file() {
        return hash_file(path);
    }
    if !path.is_dir() {
        return None;
    }
    let mut members: Vec<(String, String)> = Vec::new();
    fn walk(base: &Path, dir: &Path, members: &mut Vec<(String, String)>) {
        let Ok(rd) = fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let rel = path
                .strip_prefix(base)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_symlink() {
                let target = fs::read_link(&path)
                    .map(|t| t.to_string_lossy().into_owned())
                    .unwrap_or_default();
                members.push((rel, format!("link:{target}")));
            } else if ft.is_dir() {
                if [".git", "__pycache__", ".ledger.lock"].contains(&name.as_str()) {
                    continue;
                }
                walk(base, &path, members);
            } else if ft.is_file() {
                members.push((rel, hash_file(&path).unwrap_or_default()));
            }
        }
    }
    walk(path, path, &mut members);
    if members.is_empty() {
        return None;
    }
    let mut bytes = Vec::new();
    for (rel, value) in members {
        bytes.extend(rel.as_bytes());
        bytes.push(0);
        bytes.extend(value.as_bytes());
        bytes.push(b'\n');
    }
    Some(canonical_json::digest::sha256_hex(&bytes))
}

impl Writer {
    /// The reuse fingerprint of a gate (see DWP.md §6.3; ours names `dwp` as the toolchain, so
    /// it never matches a Python-computed one — §19.14).
    pub fn fingerprint(
        &self,
        task_id: &str,
        command: &Value,
        selection: Option<&str>,
    ) -> Result<String> {
        let task = self.task(task_id)?;
        let root = self.plan.repo_root();
        let root_real = root.canonicalize().unwrap_or_else(|_| root.clone());
        let mut files = Map::new();
        for rel in task
            .get("touched_surface")
            .and_then(Value::as_array)
            .unwrap_or(&[])
            .iter()
            .filter_map(Value::as_str)
        {
            let path =
                if Path::new(rel).is_absolute() { PathBuf::from(rel) } else { root.join(rel) };
            let literal: String = rel.split(['*', '?', '[']).next().unwrap_or(rel).to_owned();
            let literal_path = if Path::new(&literal).is_absolute() {
                PathBuf::from(&literal)
            } else {
                root.join(&literal)
            };
            let inside = normalize(&literal_path)
                .is_some_and(|p| p.canonicalize().unwrap_or(p).starts_with(&root_real));
            if !inside {
                files.insert(rel.to_owned(), s("outside-repository"));
                continue;
            }
            let glob = rel.contains(['*', '?', '[']);
            let target = if glob {
                literal_path.parent().map(Path::to_path_buf).unwrap_or(literal_path)
            } else {
                path
            };
            files.insert(rel.to_owned(), hash_surface(&target).map_or(Value::Null, |h| s(&h)));
        }
        let env_keys = [
            "PATH",
            "LANG",
            "LC_ALL",
            "PYTHONDONTWRITEBYTECODE",
            "TERM",
            "VIRTUAL_ENV",
            "PYTHONPATH",
        ];
        let mut env: Map = env_keys
            .iter()
            .map(|k| ((*k).to_owned(), s(&std::env::var(k).unwrap_or_default())))
            .collect();
        env.insert("interpreter".into(), s("dwp"));
        let payload = Value::Object(obj([
            ("command", command.clone()),
            (
                "cwd",
                s(&root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()),
            ),
            ("env", Value::Object(env)),
            (
                "toolchain",
                Value::Object(obj([
                    ("dwp", s(env!("CARGO_PKG_VERSION"))),
                    ("platform", s(std::env::consts::OS)),
                ])),
            ),
            ("selection", s(selection.unwrap_or(""))),
            ("files", Value::Object(files)),
            ("tree", tree_state(&root)),
        ]));
        let bytes = canonical_json::to_python_compact(&payload).map_err(|e| fail(e.to_string()))?;
        Ok(canonical_json::digest::sha256_hex(&bytes))
    }
}
