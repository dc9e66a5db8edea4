//! `dwp resume --plan DIR --authority WHO`: recovery in the fixed order inspect → validate →
//! project → render (human edits win, recorded under WHO), then every criterion whose
//! evidence was recorded under a different fingerprint is listed to run again.
//!
//! Exit codes: 0 resumed, 1 `ERROR:`/`FAIL` (invalid records: nothing projected), 2 usage or
//! `COLLISION:`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use crate::exit;
use canonical_json::Value;
use clap::Args;
use dwp::validate;
use dwp_ledger::views::{Reconcile, RenderRequest, ViewsError, render};
use dwp_ledger::{self as plan, LedgerError, Plan, Writer};

#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// The plan folder
    #[arg(long)]
    plan: Option<PathBuf>,
    /// The authority recorded for any view reconciliation
    #[arg(long)]
    authority: Option<String>,
}

fn run_again(writer: &Writer) -> Vec<String> {
    let mut out = Vec::new();
    let contract = &writer.plan.contract;
    for task in contract.get("tasks").and_then(Value::as_array).unwrap_or(&[]) {
        let Some(tid) = task.get("id").and_then(Value::as_str) else { continue };
        if dwp::projection::task_status(contract, &writer.events, tid) != "in_progress" {
            continue;
        }
        for state in
            dwp::projection::criterion_states(contract, &writer.events, tid).unwrap_or_default()
        {
            let Some(via) = state.get("via_seq").and_then(Value::as_i64) else { continue };
            let crit = state.get("criterion").and_then(Value::as_str).unwrap_or("");
            let Some(event) = writer.events.iter().find(|e| dwp::projection::seq_of(e) == via)
            else {
                continue;
            };
            if event.get("trust").and_then(Value::as_str) != Some("observed") {
                continue;
            }
            let command = event.get("command").cloned().unwrap_or(Value::Null);
            let fresh = writer
                .fingerprint(tid, &command, None)
                .ok()
                .and_then(|fp| writer.evidence_lookup(&fp, tid, Some(crit)))
                .is_some_and(|rec| rec.get("seq").and_then(Value::as_i64) == Some(via));
            if !fresh {
                out.push(format!(
                    "RE-RUN: {tid} {crit} (evidence seq {via} was recorded under another fingerprint - invalidated, never reused)"
                ));
            }
        }
    }
    out
}

pub(crate) fn run(args: ResumeArgs) -> ExitCode {
    let (Some(plan_arg), Some(authority)) = (args.plan, args.authority) else {
        outln!("usage: dwp resume --plan DIR --authority WHO");
        return ExitCode::from(exit::USAGE);
    };
    let result = (|| -> Result<ExitCode, ViewsError> {
        let dir = plan::find_plan_dir(&plan_arg)?;
        let loaded = Plan::load(&dir)?;
        // 1. inspect (opening the writer repairs a torn tail and records the repair)
        let torn = plan::read_journal(&loaded.journal_path())?.torn;
        let mut writer = Writer::open(loaded, false, SystemTime::now())?;
        outln!(
            "inspect: {} event(s){}",
            writer.events.len(),
            torn.map(|(at, _)| format!(", torn tail at byte {at} repaired and recorded"))
                .unwrap_or_default()
        );
        // 2. validate
        let mut errors = validate::contract_errors(&writer.plan.contract, None);
        errors.extend(validate::journal_errors(&writer.events, Some(&writer.plan.contract)));
        if !errors.is_empty() {
            for e in &errors {
                outln!("FAIL {e}");
            }
            writer.close()?;
            return Err(LedgerError::Failed(
                "resume stopped at validate: the records are invalid - nothing was projected"
                    .to_owned(),
            )
            .into());
        }
        outln!("validate: OK");
        // 3. project
        writer.project()?;
        outln!("project: state.json written");
        // 4. render (a human edit wins; the reconciliation is recorded under the authority)
        let written = render(
            &mut writer,
            &RenderRequest {
                names: dwp::views::DEFAULT_VIEWS.iter().map(|v| (*v).to_owned()).collect(),
                out_dir: None,
                reconcile: Some(Reconcile::HumanWins),
                authority: Some(authority.clone()),
            },
        )?;
        outln!(
            "render: {}",
            if written.is_empty() { "no view changed".to_owned() } else { written.join(", ") }
        );
        let again = run_again(&writer);
        for line in &again {
            outln!("{line}");
        }
        let plan_name = dwp::py::str_opt(writer.plan.contract.get("plan"));
        writer.close()?;
        outln!("OK: resumed {plan_name} ({} criterion(s) to run again)", again.len());
        Ok(ExitCode::SUCCESS)
    })();
    match result {
        Ok(code) => code,
        Err(ViewsError::Ledger(e)) => {
            eprintln!("{}: {e}", e.prefix());
            ExitCode::from(exit::ledger_edge(&e))
        }
        Err(e) => {
            eprintln!("ERROR: {e}");
            ExitCode::from(exit::FAILED)
        }
    }
}
