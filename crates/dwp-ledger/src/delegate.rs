//! v7 delegation (`ledger delegate launch|observe|collect|cancel`) and the effective abilities
//! it depends on: host `--caps` united with enabled, detected, compatible addons.
//!
//! Every refusal is recorded as a `refusal` event (stage `dispatch`) before it is reported.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use canonical_json::{Map, Value};
use dwp::projection;
use dwp::py::repr_str;
use dwp::validate::Generation;

use crate::{
    GateCommand, LedgerError, RunResult, Writer, actor, git, obj, read_json_named, run_command, s,
    safe_relative,
};

/// Detection commands are bounded.
pub const DETECT_TIMEOUT_S: f64 = 10.0;

/// Why a delegate command stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum DelegateError {
    /// `REFUSED: delegation refused: …` (recorded; exit 5).
    Refused(String),
    /// Any other failure.
    Ledger(LedgerError),
}

impl fmt::Display for DelegateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DelegateError::Refused(m) => write!(f, "delegation refused: {m}"),
            DelegateError::Ledger(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for DelegateError {}

impl From<LedgerError> for DelegateError {
    fn from(e: LedgerError) -> DelegateError {
        DelegateError::Ledger(e)
    }
}

type Result<T> = std::result::Result<T, DelegateError>;

/// Where addon descriptors and the registries live.
#[derive(Clone, Debug)]
pub struct AbilityEnv {
    /// `<key>/addon.json` descriptors (`DWP_ADDONS_DIR`, else `<repo>/.dwp/addons`).
    pub addons_dir: PathBuf,
    /// `<repo>/.dwp/config.json`.
    pub repo_config: PathBuf,
    /// `~/.dwp/config.json`, when a home is known.
    pub home_config: Option<PathBuf>,
    /// The repository root (detection `paths` are relative to it).
    pub repo_root: PathBuf,
}

impl AbilityEnv {
    /// The default locations for a plan's repository.
    pub fn for_repo(repo_root: &Path) -> AbilityEnv {
        AbilityEnv {
            addons_dir: std::env::var_os("DWP_ADDONS_DIR")
                .map_or_else(|| repo_root.join(".dwp").join("addons"), PathBuf::from),
            repo_config: repo_root.join(".dwp").join("config.json"),
            home_config: std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".dwp").join("config.json")),
            repo_root: repo_root.to_path_buf(),
        }
    }
}

/// Effective abilities: `{abilities, sources, addons, warnings, persisted: false}`.
#[derive(Clone, Debug, Default)]
pub struct Effective {
    /// Ability → sources (`host`, `addon:<key>`).
    pub sources: BTreeMap<String, Vec<String>>,
    /// Addon key → descriptor (for compatible addons).
    pub descriptors: BTreeMap<String, Value>,
    /// One line per addon that contributes nothing.
    pub warnings: Vec<String>,
}

fn enabled_addons(env: &AbilityEnv) -> Vec<String> {
    let mut enabled: BTreeMap<String, bool> = BTreeMap::new();
    for path in env.home_config.iter().chain(std::iter::once(&env.repo_config)) {
        let Ok(doc) = read_json_named(path) else { continue };
        for (key, entry) in doc.get("addons").and_then(Value::as_object).into_iter().flatten() {
            if let Some(on) = entry.get("enabled").and_then(Value::as_bool) {
                enabled.insert(key.clone(), on);
            }
        }
    }
    enabled.into_iter().filter(|(_, on)| *on).map(|(k, _)| k).collect()
}

fn interface_of(spec: &str, stdout: &str) -> Option<i64> {
    let value = if let Some(field) = spec.strip_prefix("json:") {
        canonical_json::parse(stdout.trim().as_bytes()).ok()?.get(field).cloned()?
    } else if let Some(rest) = spec.strip_prefix("file-json:") {
        let (path, field) = rest.rsplit_once('#')?;
        let path = match path.strip_prefix("~/") {
            Some(p) => PathBuf::from(std::env::var_os("HOME")?).join(p),
            None => PathBuf::from(path),
        };
        read_json_named(&path).ok()?.get(field).cloned()?
    } else {
        return None;
    };
    match value {
        Value::Bool(_) => None,
        Value::String(t) => t.trim().parse().ok(),
        v => v.as_i64(),
    }
}

/// Host abilities united with what enabled, detected and compatible addons provide.
pub fn effective_abilities(caps: &BTreeMap<String, bool>, env: &AbilityEnv) -> Effective {
    let mut eff = Effective::default();
    for (name, on) in caps {
        eff.sources.insert(name.clone(), if *on { vec!["host".to_owned()] } else { Vec::new() });
    }
    for key in enabled_addons(env) {
        if !dwp::py::is_addon_id(&key) {
            eff.warnings.push(format!("addon {key}: not an addon key"));
            continue;
        }
        let Ok(doc) = read_json_named(&env.addons_dir.join(&key).join("addon.json")) else {
            eff.warnings.push(format!("addon {key}: invalid descriptor (missing or unreadable)"));
            continue;
        };
        let Some(detect) = doc.get("detect") else {
            eff.warnings.push(format!("addon {key}: invalid descriptor (no detect)"));
            continue;
        };
        let (present, stdout, reason) = if let Some(cmd) =
            detect.get("command").and_then(Value::as_str)
        {
            let argv: Vec<String> = cmd.split_whitespace().map(str::to_owned).collect();
            match run_command(&GateCommand::Argv(argv.clone()), &env.repo_root, DETECT_TIMEOUT_S) {
                Ok(RunResult::Finished { code: 0, stdout, .. }) => (true, stdout, String::new()),
                Ok(RunResult::Finished { code, .. }) => {
                    (false, String::new(), format!("detect exited {code}"))
                }
                Ok(RunResult::TimedOut { .. }) => {
                    (false, String::new(), format!("detect timed out after {DETECT_TIMEOUT_S}s"))
                }
                Ok(RunResult::NotFound) | Err(_) => (
                    false,
                    String::new(),
                    format!("{} not installed", argv.first().map_or("", String::as_str)),
                ),
            }
        } else {
            let paths: Vec<&str> = detect
                .get("paths")
                .and_then(Value::as_array)
                .unwrap_or(&[])
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let found = paths.iter().any(|p| match p.strip_prefix("~/") {
                Some(rest) => {
                    std::env::var_os("HOME").is_some_and(|h| PathBuf::from(h).join(rest).is_file())
                }
                None => env.repo_root.join(p).is_file(),
            });
            (found, String::new(), format!("none of {} present", paths.join(", ")))
        };
        let provides: Vec<String> = doc
            .get("provides_abilities")
            .and_then(Value::as_array)
            .unwrap_or(&[])
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        if !present {
            eff.warnings.push(format!("addon {key}: enabled but contributes nothing — {reason}"));
            continue;
        }
        if let Some(pinned) = doc.pointer("/product/interface").and_then(Value::as_i64) {
            let found = detect
                .get("interface_from")
                .and_then(Value::as_str)
                .and_then(|spec| interface_of(spec, &stdout));
            match found {
                None => {
                    eff.warnings.push(format!(
                        "addon {key}: enabled but contributes nothing — interface unreadable; treated as not available"
                    ));
                    continue;
                }
                Some(f) if f != pinned => {
                    eff.warnings.push(format!(
                        "addon {key}: enabled but contributes nothing — unknown interface major {f} (pinned {pinned}); treated as not available"
                    ));
                    continue;
                }
                Some(_) => {}
            }
        }
        for name in provides {
            match eff.sources.get_mut(&name) {
                Some(list) => list.push(format!("addon:{key}")),
                None => eff
                    .warnings
                    .push(format!("addon {key}: unknown ability {} refused", repr_str(&name))),
            }
        }
        eff.descriptors.insert(key, doc);
    }
    eff
}

/// A launch request (`--json OBJ`).
#[derive(Clone, Debug)]
pub struct LaunchRequest {
    /// The task.
    pub task: String,
    /// The request object.
    pub spec: Map,
    /// Effective abilities at launch time.
    pub effective: Effective,
    /// The clock (for a generated id).
    pub now: SystemTime,
}

fn tree_fingerprint(root: &Path) -> Option<String> {
    let (head, ok) = git(&["rev-parse", "HEAD"], root);
    if !ok {
        return None;
    }
    let (status, _) = git(&["status", "--porcelain"], root);
    let d = canonical_json::digest::sha256_hex(format!("{head}\n{status}").as_bytes());
    Some(d[..32].to_owned())
}

impl Writer {
    fn refuse_delegation(&mut self, task: &str, reason: String) -> DelegateError {
        let payload = obj([
            ("subject", s(&format!("delegate {task}"))),
            ("stage", s("dispatch")),
            ("reason", s(&reason.chars().take(2000).collect::<String>())),
        ]);
        let helper = self.helper();
        match self.append_raw("refusal", payload, helper, None, None, None) {
            Ok(_) => DelegateError::Refused(reason),
            Err(e) => DelegateError::Ledger(e),
        }
    }

    /// `delegate launch`: the gate of V7 delegation, then a `launched` delegation event.
    ///
    /// # Errors
    /// A recorded refusal, journal and I/O failures.
    pub fn delegate_launch(&mut self, req: &LaunchRequest) -> Result<Value> {
        let task_id = req.task.as_str();
        match self.launch_check(req) {
            Ok(payload) => {
                let (payload, note) = payload;
                let helper = self.helper();
                Ok(self.append_raw("delegation", payload, helper, note.as_deref(), None, None)?)
            }
            Err(reason) => Err(self.refuse_delegation(task_id, reason)),
        }
    }

    fn launch_check(
        &self,
        req: &LaunchRequest,
    ) -> std::result::Result<(Map, Option<String>), String> {
        let contract = &self.plan.contract;
        let task_id = req.task.as_str();
        if self.plan.generation != Generation::V7 {
            return Err(
                "this plan is v6 - only v7 plans record delegation (V7_CONTRACT.md)".to_owned()
            );
        }
        let granted = contract
            .pointer("/permissions/granted")
            .and_then(Value::as_array)
            .is_some_and(|g| g.iter().any(|c| c.as_str() == Some("agent_delegation")));
        if !granted {
            return Err("the contract does not grant agent_delegation".to_owned());
        }
        let Some(task) = projection::find_task(contract, task_id) else {
            return Err(format!("task {} is not in the contract", repr_str(task_id)));
        };
        if projection::task_start_seq_of(&self.events, task_id).is_none() {
            return Err(format!(
                "{task_id} has no task_start - a delegation runs inside a started attempt"
            ));
        }
        if projection::task_complete(contract, &self.events, task_id) {
            return Err(format!("{task_id} is already complete"));
        }
        let spec = &req.spec;
        let worktree = spec.get("worktree").cloned().unwrap_or(Value::Null);
        let parallel_safe = task.get("parallel_safe").and_then(Value::as_bool) == Some(true);
        let mut note = None;
        if !parallel_safe {
            if !worktree.is_null() {
                return Err(format!(
                    "{task_id} is not parallel_safe - only a read-only delegate (worktree null) may run beside it"
                ));
            }
            match tree_fingerprint(&self.plan.repo_root()) {
                Some(fp) => note = Some(format!("read-only tree {fp}")),
                None => {
                    return Err(
                        "a read-only delegate on an unmarked task needs a git work tree to prove it stayed read-only"
                            .to_owned(),
                    );
                }
            }
        }
        let via = spec.get("via").and_then(Value::as_str).unwrap_or("");
        let transport = spec.get("transport").and_then(Value::as_str).unwrap_or("headless");
        let Some(descriptor) = req.effective.descriptors.get(via).or(None) else {
            let sources = req.effective.sources.get("subagents").filter(|v| !v.is_empty());
            return Err(format!(
                "addon {via} is not enabled and detected with a compatible interface (effective subagents sources: {})",
                sources.map_or_else(|| "none".to_owned(), |v| v.join(", "))
            ));
        };
        let carried = descriptor.get("transport").and_then(Value::as_str).unwrap_or("");
        if carried != transport {
            return Err(format!(
                "addon {via} carries transport {}, not {}",
                repr_str(carried),
                repr_str(transport)
            ));
        }
        let subagents = req.effective.sources.get("subagents").cloned().unwrap_or_default();
        if !subagents.iter().any(|src| src == &format!("addon:{via}")) {
            return Err(format!(
                "addon {via} is not enabled and detected with a compatible interface (effective subagents sources: {})",
                if subagents.is_empty() { "none".to_owned() } else { subagents.join(", ") }
            ));
        }
        let id = match spec.get("delegation_id").and_then(Value::as_str) {
            Some(id) => id.to_owned(),
            None => {
                let ts = crate::timestamp(req.now).replace(['-', ':'], "");
                let ts = ts.trim_end_matches('Z');
                let salt = canonical_json::digest::sha256_hex(
                    format!("{task_id}{ts}{}", self.last_seq()).as_bytes(),
                );
                format!("d{ts}{}", &salt[..6])
            }
        };
        if projection::delegations(&self.events, None).contains_key(&id) {
            return Err(format!("delegation id {id} is already used"));
        }
        let prompt_digest = match (
            spec.get("prompt_digest").and_then(Value::as_str),
            spec.get("prompt").and_then(Value::as_str),
        ) {
            (Some(d), _) => d.to_owned(),
            (None, Some(p)) => canonical_json::digest::sha256_prefixed(p.as_bytes()),
            (None, None) => {
                return Err("a launch records its prompt by digest: pass prompt or prompt_digest"
                    .to_owned());
            }
        };
        let mut payload = obj([
            ("task", s(task_id)),
            ("delegation_id", s(&id)),
            ("transport", s(transport)),
            ("via", s(via)),
            ("worktree", worktree),
            ("prompt_digest", s(&prompt_digest)),
            ("state", s("launched")),
        ]);
        for key in ["kind", "profile", "target"] {
            if let Some(v) = spec.get(key) {
                payload.insert(key.to_owned(), v.clone());
            }
        }
        Ok((payload, note))
    }

    /// `delegate collect|cancel`: a terminal state for a launched delegation.
    ///
    /// # Errors
    /// A recorded refusal, journal and I/O failures.
    pub fn delegate_finish(
        &mut self,
        task_id: &str,
        delegation_id: &str,
        state: &str,
        result_path: Option<&str>,
    ) -> Result<Value> {
        let latest =
            projection::delegations(&self.events, None).get(delegation_id).map(|e| (*e).clone());
        let Some(latest) = latest else {
            return Err(
                self.refuse_delegation(task_id, format!("unknown delegation {delegation_id}"))
            );
        };
        if latest.get("task").and_then(Value::as_str) != Some(task_id) {
            return Err(self.refuse_delegation(
                task_id,
                format!("delegation {delegation_id} belongs to another task"),
            ));
        }
        let current = latest.get("state").and_then(Value::as_str).unwrap_or("");
        if current != "launched" {
            return Err(self.refuse_delegation(
                task_id,
                format!("delegation {delegation_id} is already {current}"),
            ));
        }
        let mut state = state.to_owned();
        let mut payload = obj([
            ("task", s(task_id)),
            ("delegation_id", s(delegation_id)),
            ("transport", latest.get("transport").cloned().unwrap_or(Value::Null)),
            ("via", latest.get("via").cloned().unwrap_or(Value::Null)),
            ("worktree", latest.get("worktree").cloned().unwrap_or(Value::Null)),
        ]);
        let mut note = None;
        // A read-only delegate must leave the tree as it found it.
        let launch_note = self
            .events
            .iter()
            .filter(|e| e.get("type").and_then(Value::as_str) == Some("delegation"))
            .filter(|e| e.get("delegation_id").and_then(Value::as_str) == Some(delegation_id))
            .find_map(|e| {
                e.get("note")
                    .and_then(Value::as_str)
                    .and_then(|n| n.strip_prefix("read-only tree "))
                    .map(str::to_owned)
            });
        if let Some(before) = launch_note
            && tree_fingerprint(&self.plan.repo_root()).as_deref() != Some(before.as_str())
        {
            state = "failed".to_owned();
            note = Some("the read-only delegate changed the work tree".to_owned());
        }
        if let Some(rp) = result_path.filter(|_| state != "cancelled") {
            let inside = safe_relative(rp) && !rp.split('/').any(|p| p == "..");
            let file = [self.plan.dir.join(rp), self.plan.repo_root().join(rp)]
                .into_iter()
                .find(|p| p.is_file());
            let Some(file) = file.filter(|_| inside) else {
                return Err(self.refuse_delegation(
                    task_id,
                    format!(
                        "result_path {} does not resolve inside the plan or the repository",
                        repr_str(rp)
                    ),
                ));
            };
            let bytes = std::fs::read(&file).map_err(|e| crate::io_fail(&file, e))?;
            payload.insert("result_path".to_owned(), s(rp));
            payload.insert(
                "result_digest".to_owned(),
                s(&canonical_json::digest::sha256_prefixed(&bytes)),
            );
        }
        payload.insert("state".to_owned(), s(&state));
        let helper = self.helper();
        Ok(self.append_raw("delegation", payload, helper, note.as_deref(), None, None)?)
    }
}

/// The `actor` used by delegation events (for callers that need it).
pub fn delegation_actor(generation: Generation) -> Value {
    actor("helper", generation.ledger_identity())
}
