//! `dwp context`: the per-task context manifest.
//!
//! - `dwp context --plan DIR manifest --task T [--sections a,b] [--out FILE] [--md]`,
//!   `freshness --task T --summary FILE`, `accounting [--bundle P ...]`, `self-test`: upstream
//!   `context_manifest.py` (printed, never written into the plan; exit 0, 1 `ERROR:` or a stale
//!   summary, 2 usage).
//! - `dwp context --plan DIR --task T [--check]` writes our own `context/<T>.json` (the manifest
//!   `dwp resume` reads); `--check` reports whether it is fresh against the journal.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit;
use canonical_json::Value;
use clap::{Args, Subcommand};
use dwp_ledger::{self as plan, LedgerError, Plan};

const USAGE: &str = "usage: dwp context --plan DIR {manifest --task T [--sections a,b] [--out \
    FILE] [--md] | freshness --task T --summary FILE | accounting [--bundle P ...] | self-test} \
    | dwp context --plan DIR --task T [--check]";

#[derive(Debug, Args)]
pub(crate) struct ContextArgs {
    /// The plan folder
    #[arg(long, global = true)]
    plan: Option<PathBuf>,
    /// The task (our own `context/<T>.json` form)
    #[arg(long)]
    task: Option<String>,
    /// Only check the existing `context/<T>.json` freshness
    #[arg(long)]
    check: bool,
    #[command(subcommand)]
    command: Option<ContextCommand>,
}

#[derive(Debug, Subcommand)]
enum ContextCommand {
    /// The task's context manifest as upstream derives it (JSON, or Markdown with --md)
    Manifest {
        #[arg(long)]
        task: Option<String>,
        /// Comma-separated sections to keep (the mandatory ones can never be left out)
        #[arg(long)]
        sections: Option<String>,
        /// Also write the printed body to this file
        #[arg(long)]
        out: Option<PathBuf>,
        /// Markdown instead of JSON
        #[arg(long)]
        md: bool,
    },
    /// Compare a stored summary's inputs_fingerprint with the current one (exit 1 when stale)
    Freshness {
        #[arg(long)]
        task: Option<String>,
        /// A JSON file carrying `inputs_fingerprint`
        #[arg(long)]
        summary: Option<PathBuf>,
    },
    /// Instruction bytes, provider tokens, cost and wall-clock time, each from its own source
    Accounting {
        /// A bundle file whose size counts as instruction bytes (repeatable)
        #[arg(long = "bundle")]
        bundle: Vec<String>,
    },
    /// Probe the manifest rules on a scratch plan (prints `self-test: OK (N probes)`)
    #[command(name = "self-test")]
    SelfTest,
    /// Anything else: the usage on stdout, exit 2 (as upstream, once the plan folder resolves)
    #[command(external_subcommand)]
    Unknown(
        #[expect(dead_code, reason = "clap collects the words; the usage ignores them")]
        Vec<String>,
    ),
}

fn pretty(doc: &Value) -> Result<String, dwp_ledger::context::Error> {
    canonical_json::to_python(doc, canonical_json::PyFormat::PRETTY)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| LedgerError::Failed(e.to_string()).into())
}

fn upstream(plan_arg: Option<PathBuf>, command: ContextCommand) -> ExitCode {
    use dwp_ledger::context::{self as ctx, Error};
    if matches!(command, ContextCommand::SelfTest) {
        return crate::selftest::run(crate::selftest::Group::Context);
    }
    let Some(plan_arg) = plan_arg else {
        outln!("{USAGE}");
        return ExitCode::from(exit::USAGE);
    };
    let result = (|| -> Result<ExitCode, Error> {
        let dir = plan::find_plan_dir(&plan_arg)?;
        match command {
            ContextCommand::Manifest { task, sections, out, md } => {
                let Some(task) = task else {
                    outln!("manifest requires --task");
                    return Ok(ExitCode::from(exit::USAGE));
                };
                let sections: Option<Vec<String>> =
                    sections.map(|s| s.split(',').map(|x| x.trim().to_owned()).collect());
                let loaded = Plan::load(&dir)?;
                let doc = ctx::manifest(&loaded, &task, sections.as_deref())?;
                let body = if md {
                    dwp::context_manifest::render_markdown(&doc)
                } else {
                    format!("{}\n", pretty(&doc)?)
                };
                if let Some(out) = out {
                    let fail = |e: std::io::Error| {
                        Error::Ledger(LedgerError::Failed(format!("{}: {e}", out.display())))
                    };
                    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
                        std::fs::create_dir_all(parent).map_err(fail)?;
                    }
                    std::fs::write(&out, &body).map_err(fail)?;
                }
                outln!("{body}");
                Ok(ExitCode::SUCCESS)
            }
            ContextCommand::Freshness { task, summary } => {
                let (Some(task), Some(summary)) = (task, summary) else {
                    outln!("freshness requires --task and --summary");
                    return Ok(ExitCode::from(exit::USAGE));
                };
                let doc = plan::read_json_named(&summary)?;
                let loaded = Plan::load(&dir)?;
                let verdict = ctx::freshness(&loaded, &task, &doc)?;
                outln!("{}", pretty(&verdict)?);
                let fresh = verdict.get("verdict").and_then(Value::as_str) == Some("fresh");
                Ok(if fresh { ExitCode::SUCCESS } else { ExitCode::from(exit::FAILED) })
            }
            ContextCommand::Accounting { bundle } => {
                let loaded = Plan::load(&dir)?;
                outln!("{}", pretty(&ctx::accounting(&loaded, &bundle)?)?);
                Ok(ExitCode::SUCCESS)
            }
            ContextCommand::SelfTest => Ok(crate::selftest::run(crate::selftest::Group::Context)),
            ContextCommand::Unknown(_) => {
                outln!("{USAGE}");
                Ok(ExitCode::from(exit::USAGE))
            }
        }
    })();
    result.unwrap_or_else(|e| {
        eprintln!("ERROR: {e}");
        ExitCode::from(exit::FAILED)
    })
}

pub(crate) fn run(args: ContextArgs) -> ExitCode {
    if let Some(command) = args.command {
        return upstream(args.plan, command);
    }
    let (Some(plan_arg), Some(task)) = (args.plan, args.task) else {
        outln!("{USAGE}");
        return ExitCode::from(exit::USAGE);
    };
    let result = (|| -> Result<(ExitCode, String), LedgerError> {
        let dir = plan::find_plan_dir(&plan_arg)?;
        let loaded = Plan::load(&dir)?;
        let events = plan::records::load_events(&loaded)?;
        let sha = plan::records::journal_sha256(&loaded);
        if !dwp_ledger::safe_relative(&task) || task.contains('/') {
            return Err(LedgerError::Failed(format!(
                "task {} is not in the contract",
                dwp::py::repr_str(&task)
            )));
        }
        let path = dir.join("context").join(format!("{task}.json"));
        let last = events.iter().map(dwp::projection::seq_of).max().unwrap_or(0);
        if args.check {
            let existing = plan::read_json_named(&path)?;
            return Ok(if dwp::context::is_fresh(&existing, last, sha.as_deref()) {
                (ExitCode::SUCCESS, format!("OK: context/{task}.json is fresh (seq {last})"))
            } else {
                (
                    ExitCode::from(exit::FAILED),
                    format!(
                        "STALE: context/{task}.json was written at seq {} - the journal is at seq {last}; regenerate it",
                        dwp::py::str_opt(existing.pointer("/freshness/last_seq"))
                    ),
                )
            });
        }
        let Some(doc) = dwp::context::manifest(
            &loaded.contract,
            &loaded.contract_id,
            &events,
            &task,
            sha.as_deref(),
        ) else {
            return Err(LedgerError::Failed(format!(
                "task {} is not in the contract",
                dwp::py::repr_str(&task)
            )));
        };
        let ctx = dir.join("context");
        plan::refuse_symlink(&ctx)?;
        std::fs::create_dir_all(&ctx).map_err(|e| LedgerError::Failed(e.to_string()))?;
        plan::write_pretty(&path, &doc)?;
        let next = doc.pointer("/next_action/action").and_then(Value::as_str).unwrap_or("");
        let crit = doc
            .pointer("/next_action/criterion")
            .and_then(Value::as_str)
            .map(|c| format!(" {c}"))
            .unwrap_or_default();
        let dead = doc.get("dead_ends").and_then(Value::as_array).map_or(0, <[Value]>::len);
        Ok((
            ExitCode::SUCCESS,
            format!(
                "OK: context manifest context/{task}.json (next: {next}{crit}; {dead} dead end(s); seq {last})"
            ),
        ))
    })();
    match result {
        Ok((code, line)) => {
            outln!("{line}");
            code
        }
        Err(e) => {
            eprintln!("{}: {e}", e.prefix());
            ExitCode::from(exit::FAILED)
        }
    }
}
