//! `dwp resources --plan DIR report|routing|abilities|capabilities|exhaust|recover|settle|hold`
//! (upstream `resources.py`). Exit codes: 0 ok, 1 `ERROR:` (and `hold` while held), 2 usage.
//!
//! Abilities are the host's `--caps` united with what enabled, detected and compatible
//! addons provide (`--host-only` ignores addons).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use crate::exit;
use canonical_json::{Map, Value};
use clap::{Args, Subcommand};
use dwp::resources::{self as res, RESOURCES_IDENTITY};
use dwp_ledger::{self as plan, AppendRequest, LedgerError, Plan, Writer};

const USAGE: &str = "usage: dwp resources --plan DIR {report [--caps JSON] | routing [--caps JSON] \
    | abilities [--caps JSON] [--host-only] | capabilities [--caps JSON] | exhaust --limit ID \
    [--detail D] | recover --limit ID [--detail D] | settle --key K --disposition \
    released|committed [--detail D] | hold}";

#[derive(Debug, Args)]
pub(crate) struct ResourcesArgs {
    /// The plan folder
    #[arg(long, global = true)]
    plan: Option<PathBuf>,
    /// Declared host abilities (JSON object; unstated = false)
    #[arg(long, global = true, default_value = "{}")]
    caps: String,
    /// Optional detail text for LIMIT/RESERVATION observations
    #[arg(long, global = true, default_value = "")]
    detail: String,
    /// Ignore enabled addons (host abilities only)
    #[arg(long = "host-only", global = true)]
    host_only: bool,
    #[command(subcommand)]
    command: ResourcesCommand,
}

#[derive(Debug, Subcommand)]
enum ResourcesCommand {
    /// Per-limit modes, ceilings, spent and pending (JSON)
    Report,
    /// Model-switching and parallel-dispatch posture (JSON)
    Routing,
    /// Effective abilities (JSON; host declaration only)
    Abilities,
    /// The declared host abilities merged onto the all-false floor (needs no plan)
    Capabilities,
    /// Record `LIMIT: exhausted <id>` (asserted)
    Exhaust {
        #[arg(long = "limit")]
        limit: Option<String>,
    },
    /// Record `LIMIT: recovered <id>` (asserted)
    Recover {
        #[arg(long = "limit")]
        limit: Option<String>,
    },
    /// Settle a reservation exactly once
    Settle {
        #[arg(long)]
        key: Option<String>,
        #[arg(long)]
        disposition: Option<String>,
    },
    /// Exit 1 while an enforced limit is exhausted
    Hold,
    /// Probe the envelope commands on a scratch plan (prints `self-test: OK (N probes)`)
    #[command(name = "self-test")]
    SelfTest,
}

fn obj_compatible() -> Value {
    let mut m = Map::new();
    m.insert("compatible".to_owned(), true.into());
    Value::Object(m)
}

fn err(e: impl std::fmt::Display) -> LedgerError {
    LedgerError::Failed(e.to_string())
}

fn pretty(doc: &Value) -> Result<String, LedgerError> {
    canonical_json::to_python(doc, canonical_json::PyFormat::PRETTY)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(err)
}

fn record(dir: &std::path::Path, statement: String) -> Result<Value, LedgerError> {
    let mut writer = Writer::open(Plan::load(dir)?, false, SystemTime::now())?;
    let mut payload = Map::new();
    payload.insert("statement".to_owned(), statement.into());
    payload.insert("trust".to_owned(), "asserted".into());
    let event = writer.append(AppendRequest {
        etype: "observation".to_owned(),
        payload,
        actor: plan::actor("helper", RESOURCES_IDENTITY),
        note: None,
        idempotent: true,
        trust: None,
        evidence_path: None,
    })?;
    writer.close()?;
    Ok(event)
}

pub(crate) fn run(args: ResourcesArgs) -> ExitCode {
    if matches!(args.command, ResourcesCommand::SelfTest) {
        return crate::selftest::run(crate::selftest::Group::Resources);
    }
    let result = (|| -> Result<(ExitCode, String), LedgerError> {
        let declared = canonical_json::parse(args.caps.as_bytes())
            .map_err(|e| err(format!("--caps is not valid JSON: {e}")))?;
        let caps = res::host_capabilities(&declared).map_err(err)?;
        if matches!(args.command, ResourcesCommand::Capabilities) {
            return Ok((ExitCode::SUCCESS, pretty(&res::caps_value(&caps))?));
        }
        let Some(plan_arg) = &args.plan else {
            return Ok((ExitCode::from(exit::USAGE), USAGE.to_owned()));
        };
        let dir = plan::find_plan_dir(plan_arg)?;
        let loaded = Plan::load(&dir)?;
        let events = plan::records::load_events(&loaded)?;
        let contract = &loaded.contract;
        let effective = if args.host_only {
            let mut e = dwp_ledger::delegate::Effective::default();
            for (k, v) in &caps {
                e.sources.insert(k.clone(), if *v { vec!["host".to_owned()] } else { Vec::new() });
            }
            e
        } else {
            let env = dwp_ledger::delegate::AbilityEnv::for_repo(&loaded.repo_root());
            dwp_ledger::delegate::effective_abilities(&caps, &env)
        };
        for w in &effective.warnings {
            eprintln!("WARNING: {w}");
        }
        let caps: std::collections::BTreeMap<String, bool> =
            effective.sources.iter().map(|(k, v)| (k.clone(), !v.is_empty())).collect();
        let usage = || Ok((ExitCode::from(exit::USAGE), USAGE.to_owned()));
        match args.command {
            ResourcesCommand::Capabilities | ResourcesCommand::SelfTest => {
                Ok((ExitCode::SUCCESS, String::new()))
            }
            ResourcesCommand::Report => {
                Ok((ExitCode::SUCCESS, pretty(&res::envelope_report(contract, &events, &caps))?))
            }
            ResourcesCommand::Routing => {
                let mut posture = res::routing_posture(contract, &caps);
                let sources: Map = effective
                    .sources
                    .iter()
                    .filter(|(_, v)| !v.is_empty())
                    .map(|(k, v)| {
                        (k.clone(), Value::Array(v.iter().map(|x| x.as_str().into()).collect()))
                    })
                    .collect();
                if let Some(o) = posture.as_object_mut() {
                    o.insert("ability_sources".to_owned(), Value::Object(sources));
                }
                Ok((ExitCode::SUCCESS, pretty(&posture)?))
            }
            ResourcesCommand::Abilities => {
                let sources: Map = effective
                    .sources
                    .iter()
                    .map(|(k, v)| {
                        (k.clone(), Value::Array(v.iter().map(|x| x.as_str().into()).collect()))
                    })
                    .collect();
                let mut doc = Map::new();
                doc.insert("abilities".to_owned(), res::caps_value(&caps));
                doc.insert("sources".to_owned(), Value::Object(sources));
                doc.insert(
                    "addons".to_owned(),
                    Value::Object(
                        effective
                            .descriptors
                            .keys()
                            .map(|k| (k.clone(), obj_compatible()))
                            .collect(),
                    ),
                );
                doc.insert(
                    "warnings".to_owned(),
                    Value::Array(effective.warnings.iter().map(|w| w.as_str().into()).collect()),
                );
                doc.insert("persisted".to_owned(), false.into());
                Ok((ExitCode::SUCCESS, pretty(&Value::Object(doc))?))
            }
            ResourcesCommand::Hold => Ok(match res::dispatch_hold(contract, &events) {
                Some(h) => (
                    ExitCode::from(exit::FAILED),
                    format!(
                        "HOLD: limit {} (via seq {}) {}",
                        dwp::py::str_opt(h.get("limit_id")),
                        dwp::py::str_opt(h.get("via_seq")),
                        h.get("reason").and_then(Value::as_str).unwrap_or("")
                    ),
                ),
                None => (ExitCode::SUCCESS, "OK: no resource hold".to_owned()),
            }),
            ResourcesCommand::Exhaust { limit } | ResourcesCommand::Recover { limit }
                if limit.is_none() =>
            {
                usage()
            }
            ResourcesCommand::Exhaust { limit } => {
                let st = res::limit_statement(
                    contract,
                    limit.as_deref().unwrap_or(""),
                    false,
                    &args.detail,
                )
                .map_err(err)?;
                let e = record(&dir, st)?;
                Ok((
                    ExitCode::SUCCESS,
                    format!("OK: exhaustion recorded at seq {}", dwp::projection::seq_of(&e)),
                ))
            }
            ResourcesCommand::Recover { limit } => {
                let st = res::limit_statement(
                    contract,
                    limit.as_deref().unwrap_or(""),
                    true,
                    &args.detail,
                )
                .map_err(err)?;
                let e = record(&dir, st)?;
                Ok((
                    ExitCode::SUCCESS,
                    format!("OK: recovery recorded at seq {}", dwp::projection::seq_of(&e)),
                ))
            }
            ResourcesCommand::Settle { key, disposition } => {
                let (Some(key), Some(disposition)) = (key, disposition) else { return usage() };
                res::check_settlement(&events, &key, &disposition).map_err(err)?;
                let st = if args.detail.is_empty() {
                    format!("RESERVATION: {key}: {disposition}")
                } else {
                    format!("RESERVATION: {key}: {disposition}: {}", args.detail)
                };
                let e = record(&dir, st)?;
                Ok((
                    ExitCode::SUCCESS,
                    format!("OK: settlement recorded at seq {}", dwp::projection::seq_of(&e)),
                ))
            }
        }
    })();
    match result {
        Ok((code, text)) => {
            outln!("{text}");
            code
        }
        Err(e) => {
            eprintln!("ERROR: {e}");
            ExitCode::from(exit::FAILED)
        }
    }
}
