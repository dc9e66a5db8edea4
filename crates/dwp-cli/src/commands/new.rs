//! `dwp new SLUG [--plans-dir DIR]`: allocates `.dwp/plans/PLAN_NNN_slug/` (at least three
//! digits; numbers are never reused).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::exit;
use clap::Args;

#[derive(Debug, Args)]
pub(crate) struct NewArgs {
    /// The plan slug: 1-5 lowercase words joined by `_` (or `-`)
    slug: String,
    /// The plans directory (default: `.dwp/plans` at the git top level, else here)
    #[arg(long = "plans-dir")]
    plans_dir: Option<PathBuf>,
}

fn default_plans_dir() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let (top, ok) = dwp_ledger::git(&["rev-parse", "--show-toplevel"], &cwd);
    let root = if ok && !top.is_empty() { PathBuf::from(top) } else { cwd };
    root.join(".dwp").join("plans")
}

/// The highest `PLAN_NNN_` number in `dir` (0 when none).
fn highest(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let digits: String = name
                        .strip_prefix("PLAN_")?
                        .chars()
                        .take_while(char::is_ascii_digit)
                        .collect();
                    digits.parse::<u64>().ok()
                })
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

pub(crate) fn run(args: NewArgs) -> ExitCode {
    let slug: String = args
        .slug
        .trim()
        .chars()
        .map(|c| if c == '-' || c == ' ' { '_' } else { c.to_ascii_lowercase() })
        .collect();
    let dir = args.plans_dir.unwrap_or_else(default_plans_dir);
    let number = highest(&dir) + 1;
    let name = format!("PLAN_{number:03}_{slug}");
    let words: Vec<&str> = slug.split('_').collect();
    let slug_ok = (1..=5).contains(&words.len())
        && words.iter().all(|w| {
            !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
    if !slug_ok || !dwp::py::is_plan_id(&name) {
        eprintln!(
            "ERROR: slug {} does not make a plan id (1-5 lowercase words of a-z0-9 joined by _): \
             {name}",
            dwp::py::repr_str(&args.slug)
        );
        return ExitCode::from(exit::USAGE);
    }
    let path = dir.join(&name);
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::create_dir(&path)) {
        eprintln!("ERROR: {}: {e}", path.display());
        return ExitCode::from(exit::FAILED);
    }
    outln!("OK: allocated {}", path.display());
    ExitCode::SUCCESS
}
