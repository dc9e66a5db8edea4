//! `views render` on disk: re-projection when stale, byte-stable view files, human-edit
//! detection by recorded digest, reconciliation, and the `view_render` provenance event.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use canonical_json::Value;
use dwp::views::{self as rules};

use crate::error::{LedgerError, io_fail};
use crate::files::{hash_file, read_json_named};
use crate::values::{actor, obj, s};
use crate::writer::Writer;

/// Why a render stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum ViewsError {
    /// A human-edited view would be overwritten silently (exit 5).
    Divergence(String),
    /// Any other failure (exit 1, or the ledger's own code).
    Ledger(LedgerError),
}

impl fmt::Display for ViewsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ViewsError::Divergence(m) => f.write_str(m),
            ViewsError::Ledger(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ViewsError {}

impl From<LedgerError> for ViewsError {
    fn from(e: LedgerError) -> ViewsError {
        ViewsError::Ledger(e)
    }
}

/// How a divergence is settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reconcile {
    /// Keep the human edit; write `<name>.generated.md` beside it.
    HumanWins,
    /// Save `<name>.human.md`; write the generated view.
    GeneratedWins,
}

impl Reconcile {
    /// The CLI spelling.
    pub fn label(self) -> &'static str {
        match self {
            Reconcile::HumanWins => "human-wins",
            Reconcile::GeneratedWins => "generated-wins",
        }
    }
}

/// A render request.
#[derive(Clone, Debug)]
pub struct RenderRequest {
    /// View names (validated by the caller against [`rules::VIEWS`]).
    pub names: Vec<String>,
    /// Output directory (default `<plan>/views`).
    pub out_dir: Option<PathBuf>,
    /// Reconciliation mode.
    pub reconcile: Option<Reconcile>,
    /// The recorded authority of a reconciliation.
    pub authority: Option<String>,
}

fn write(path: &Path, text: &str) -> Result<(), LedgerError> {
    journal::atomic_replace(path, text.as_bytes()).map_err(|e| io_fail(path, e))
}

/// Loads `state.json`, re-projecting first when a state event outgrew it; returns the
/// snapshot and the sha256 of its file bytes.
fn current_snapshot(writer: &Writer) -> Result<(Value, String), LedgerError> {
    let path = writer.plan.dir.join("state.json");
    if path.is_file() {
        let state = read_json_named(&path)?;
        if !rules::snapshot_stale(&state, &writer.events)
            && let Some(d) = hash_file(&path)
        {
            return Ok((state, d));
        }
    }
    let state = writer.project()?;
    let digest = hash_file(&path).ok_or_else(|| {
        crate::error::fail("projection produced no snapshot to anchor a view marker to")
    })?;
    Ok((state, digest))
}

/// Renders views; returns the written names (`name` or `name (reconciled: MODE)`).
///
/// # Errors
/// [`ViewsError::Divergence`] for a human-edited view without a reconcile mode; a missing
/// authority; I/O and journal failures.
pub fn render(writer: &mut Writer, req: &RenderRequest) -> Result<Vec<String>, ViewsError> {
    let (snapshot, digest) = current_snapshot(writer)?;
    let rendered_at = snapshot.get("updated_at").and_then(Value::as_str).unwrap_or("").to_owned();
    let out_dir = req.out_dir.clone().unwrap_or_else(|| writer.plan.dir.join("views"));
    crate::files::refuse_symlink(&out_dir)?;
    fs::create_dir_all(&out_dir).map_err(|e| io_fail(&out_dir, e))?;
    let mut written: Vec<String> = Vec::new();
    let mut digests = canonical_json::Map::new();
    for name in &req.names {
        let Some(body) = rules::render_view(name, &writer.events, &snapshot) else {
            return Err(
                crate::error::fail(format!("unknown view {}", dwp::py::repr_str(name))).into()
            );
        };
        let marker = rules::marker(name, &writer.plan.contract_id, &digest, &rendered_at);
        let content = rules::view_file(&marker, &body);
        let target = out_dir.join(format!("{name}.md"));
        crate::files::refuse_symlink(&target)?;
        let existing = if target.is_file() {
            Some(fs::read(&target).map_err(|e| io_fail(&target, e))?)
        } else {
            None
        };
        if existing.as_deref() == Some(content.as_bytes()) {
            continue;
        }
        digests.insert(name.clone(), s(&canonical_json::digest::sha256_hex(content.as_bytes())));
        // The digest rule (DWP.md §11.2; upstream `views.py` since its N3 revision): an
        // existing file that differs from the render is a human edit unless its bytes are
        // exactly what the last render of this view recorded. A stale but untouched view is the
        // output of an earlier snapshot, so refreshing it loses nothing; the marker alone
        // proves nothing either way.
        let diverged = existing.as_ref().is_some_and(|bytes| {
            rules::recorded_digest(&writer.events, name)
                != Some(canonical_json::digest::sha256_hex(bytes).as_str())
        });
        if !diverged {
            write(&target, &content)?;
            written.push(name.clone());
            continue;
        }
        let Some(mode) = req.reconcile else {
            return Err(ViewsError::Divergence(format!(
                "{} was human-edited after its last render; refusing to overwrite silently — \
                 pass --reconcile human-wins or generated-wins (with --authority)",
                target.display()
            )));
        };
        let Some(authority) = req.authority.as_deref().filter(|a| !a.trim().is_empty()) else {
            return Err(crate::error::fail(
                "reconciliation requires --authority (recorded content, D2-4)",
            )
            .into());
        };
        let human = existing.unwrap_or_default();
        let outcome = match mode {
            Reconcile::HumanWins => {
                write(&out_dir.join(format!("{name}.generated.md")), &content)?;
                "human edit kept; generated output beside it"
            }
            Reconcile::GeneratedWins => {
                let saved = out_dir.join(format!("{name}.human.md"));
                journal::atomic_replace(&saved, &human).map_err(|e| io_fail(&saved, e))?;
                write(&target, &content)?;
                "generated view written; human edit preserved"
            }
        };
        // Once per unchanged state (upstream `_record_reconciliation`): skipped only when the
        // latest reconciliation is this same editor, authority and outcome.
        let editor = format!("human edit of views/{name}.md");
        let latest = writer
            .events
            .iter()
            .rev()
            .find(|e| e.get("type").and_then(Value::as_str) == Some("reconciliation"));
        let recorded = latest.is_some_and(|e| {
            e.get("editor").and_then(Value::as_str) == Some(editor.as_str())
                && e.get("authority").and_then(Value::as_str) == Some(authority)
                && e.get("note").and_then(Value::as_str) == Some(outcome)
        });
        if !recorded {
            let payload = obj([
                ("trigger", s("generated-view divergence")),
                ("editor", s(&editor)),
                ("authority", s(authority)),
            ]);
            let who = actor("human", authority);
            writer.append_raw("reconciliation", payload, who, Some(outcome), None, None)?;
        }
        written.push(format!("{name} (reconciled: {})", mode.label()));
    }
    if !written.is_empty() {
        let view: Vec<&str> =
            written.iter().map(|w| w.split(' ').next().unwrap_or(w.as_str())).collect();
        let mut recorded = canonical_json::Map::new();
        for v in &view {
            if let Some(d) = digests.get(*v) {
                recorded.insert((*v).to_owned(), d.clone());
            }
        }
        let payload = obj([
            ("view", s(&view.join("+"))),
            ("snapshot_digest", s(&digest)),
            ("digests", Value::Object(recorded)),
        ]);
        let helper = writer.helper();
        writer.append_raw("view_render", payload, helper, None, None, None)?;
    }
    Ok(written)
}
