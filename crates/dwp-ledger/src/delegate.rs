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

use crate::command::{GateCommand, RunResult, run_command};
use crate::error::LedgerError;
use crate::files::read_json_named;
use crate::git::git;
use crate::values::{actor, obj, s};
use crate::writer::Writer;

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
    /// `<key>/addon.json` descriptors (see [`default_addons_dir`]).
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
            addons_dir: default_addons_dir(repo_root),
            repo_config: repo_root.join(".dwp").join("config.json"),
            home_config: std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".dwp").join("config.json")),
            repo_root: repo_root.to_path_buf(),
        }
    }
}

/// Where addon descriptors are read from. Upstream reads `<pack>/addons` beside its
/// `shared/` helpers; an installed `dwp` has no pack, so: `DWP_ADDONS_DIR` when set, else
/// `<dir of the dwp executable>/../addons` when that folder exists (a binary installed inside
/// a pack layout, e.g. `<pack>/bin/dwp`, reads the pack's addons exactly like upstream), else
/// `<repo>/.dwp/addons`.
fn default_addons_dir(repo_root: &Path) -> PathBuf {
    if let Some(dir) = std::env::var_os("DWP_ADDONS_DIR") {
        return PathBuf::from(dir);
    }
    let beside_exe = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().and_then(Path::parent).map(|p| p.join("addons")))
        .filter(|p| p.is_dir());
    beside_exe.unwrap_or_else(|| repo_root.join(".dwp").join("addons"))
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
    } else if let Some(pattern) = spec.strip_prefix("regex:") {
        // Python `re.search(pattern, stdout).group(1)`: the first group of the first match.
        let re = regex::Regex::new(pattern).ok()?;
        Value::String(re.captures(stdout)?.get(1)?.as_str().to_owned())
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
    /// Declared host abilities (`--caps`).
    pub caps: BTreeMap<String, bool>,
    /// Where addon descriptors and registries live (effective abilities are computed only
    /// once the `via` and `transport` checks pass, as upstream does).
    pub env: AbilityEnv,
    /// The event actor (`--actor-kind`, `--actor-identity`).
    pub actor: Value,
    /// The clock (for a generated id).
    pub now: SystemTime,
}

/// The note prefix of a read-only launch (followed by the tree fingerprint).
pub const READ_ONLY_MARK: &str = "read-only tree ";

/// `sha256(HEAD + "\n" + porcelain status)[:32]`, or `none` outside a git work tree.
fn tree_fingerprint(root: &Path) -> String {
    let (head, ok1) = git(&["rev-parse", "HEAD"], root);
    let (status, ok2) = git(&["status", "--porcelain=v1", "-uall"], root);
    if !(ok1 && ok2) {
        return "none".to_owned();
    }
    let d = canonical_json::digest::sha256_hex(format!("{head}\n{status}").as_bytes());
    d[..32].to_owned()
}

/// Python's `%r` of an optional JSON value (`None` when absent or null).
fn repr_opt(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "None".to_owned(),
        Some(Value::String(t)) => repr_str(t),
        Some(other) => dwp::py::str_opt(Some(other)),
    }
}

/// Upstream's descriptor lookup: `(descriptor, first error)`.
fn load_descriptor(env: &AbilityEnv, via: Option<&Value>) -> std::result::Result<Value, String> {
    let Some(key) = via.and_then(Value::as_str).filter(|k| dwp::py::is_addon_id(k)) else {
        return Err("not an addon key".to_owned());
    };
    let path = env.addons_dir.join(key).join("addon.json");
    let bytes = std::fs::read(&path).map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => {
                format!(
                    "[Errno 2] No such file or directory: {}",
                    repr_str(&path.to_string_lossy())
                )
            }
            _ => e.to_string(),
        };
        format!("{} unreadable ({why})", path.display())
    })?;
    let doc = canonical_json::parse(&bytes)
        .map_err(|e| format!("{} unreadable ({e})", path.display()))?;
    let Some(m) = doc.as_object() else {
        return Err("descriptor is not an object".to_owned());
    };
    // The first errors of upstream's closed descriptor check (the deeper `product` and
    // `detect` shape checks are left to `effective_abilities`).
    let allowed = [
        "schema",
        "key",
        "product",
        "detect",
        "provides_abilities",
        "requires_grants",
        "transport",
    ];
    if let Some(extra) = m.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("unknown field {}", repr_str(extra)));
    }
    let required = ["schema", "key", "detect", "provides_abilities", "requires_grants"];
    if let Some(missing) = required.iter().find(|k| !m.contains_key(**k)) {
        return Err(format!("missing {}", repr_str(missing)));
    }
    const SCHEMA: &str = "https://deepworkplan.com/schema/addon-descriptor/v1.json";
    if doc.get("schema").and_then(Value::as_str) != Some(SCHEMA) {
        return Err(format!("schema is not {SCHEMA}"));
    }
    if !doc.get("key").and_then(Value::as_str).is_some_and(dwp::py::is_addon_id) {
        return Err("key is not a kebab-case name".to_owned());
    }
    if doc.get("key").and_then(Value::as_str) != Some(key) {
        return Err(format!(
            "key {} does not equal its directory {}",
            repr_opt(doc.get("key")),
            repr_str(key)
        ));
    }
    Ok(doc)
}

impl Writer {
    fn refuse_delegation(&mut self, task: &str, reason: String) -> DelegateError {
        let payload = obj([
            ("subject", s(&format!("delegate {task}"))),
            ("stage", s("dispatch")),
            ("reason", s(&reason)),
        ]);
        // The helper identity follows the plan's generation, as for every other helper
        // record (upstream `ledger.py` bd935a09, F-24: `dwp-ledger/7.0` on a v7 plan).
        let helper = actor("helper", self.plan.generation.ledger_identity());
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
            Ok((payload, note)) => Ok(self.append_raw(
                "delegation",
                payload,
                req.actor.clone(),
                note.as_deref(),
                None,
                None,
            )?),
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
            return Err(format!(
                "this plan is {} - only v7 plans record delegation (v6 plans keep their lifecycle)",
                match self.plan.generation {
                    Generation::V6 => "v6",
                    Generation::V7 => "v7",
                }
            ));
        }
        let granted = contract
            .pointer("/permissions/granted")
            .and_then(Value::as_array)
            .is_some_and(|g| g.iter().any(|c| c.as_str() == Some("agent_delegation")));
        if !granted {
            return Err("the contract does not grant agent_delegation".to_owned());
        }
        let Some(task) = projection::find_task(contract, task_id) else {
            return Err("unknown task".to_owned());
        };
        if projection::task_start_seq_of(&self.events, task_id).is_none() {
            return Err("the task has not started - start it before delegating".to_owned());
        }
        if projection::task_complete(contract, &self.events, task_id) {
            return Err("the task is already complete".to_owned());
        }
        let spec = &req.spec;
        let read_only = matches!(spec.get("worktree"), Some(Value::Null));
        let parallel_safe = task.get("parallel_safe").is_some_and(|v| dwp::py::truthy(Some(v)));
        let root = self.plan.repo_root();
        if !parallel_safe && !read_only {
            return Err("the task is not marked parallel_safe by create and the delegate is not read-only (worktree null)".to_owned());
        }
        if !parallel_safe && read_only && tree_fingerprint(&root) == "none" {
            return Err("a read-only delegate on a task not marked parallel_safe needs a git work tree so its read-only claim can be verified".to_owned());
        }
        let via = spec.get("via");
        let transport = spec.get("transport");
        let descriptor = load_descriptor(&req.env, via)
            .map_err(|e| format!("via {} is not a valid in-pack addon ({e})", repr_opt(via)))?;
        let via = via.and_then(Value::as_str).unwrap_or("");
        let carried = descriptor.get("transport");
        if carried != transport {
            return Err(format!(
                "addon {via} carries transport {}, not {}",
                repr_opt(carried),
                repr_opt(transport)
            ));
        }
        let effective = effective_abilities(&req.caps, &req.env);
        let subagents = effective.sources.get("subagents").cloned().unwrap_or_default();
        if !subagents.iter().any(|src| src == &format!("addon:{via}")) {
            return Err(format!(
                "addon {via} is not enabled and detected with a compatible interface (effective subagents sources: {})",
                if subagents.is_empty() { "none".to_owned() } else { subagents.join(", ") }
            ));
        }
        let id = match spec.get("delegation_id").filter(|v| dwp::py::truthy(Some(v))) {
            Some(id) => dwp::py::str_opt(Some(id)),
            None => {
                let ts = crate::files::timestamp(req.now).replace(['-', ':'], "");
                let ts = ts.trim_end_matches('Z');
                let ts = ts.split('.').next().unwrap_or(ts);
                let salt = canonical_json::digest::sha256_hex(
                    format!("{task_id}{ts}{}", self.last_seq()).as_bytes(),
                );
                format!("d{ts}{}", &salt[..6])
            }
        };
        if projection::delegations(&self.events, None).contains_key(&id) {
            return Err(format!("delegation_id {id} already recorded"));
        }
        let mut payload = Map::new();
        for key in ["transport", "via", "kind", "profile", "target", "worktree", "prompt_digest"] {
            if let Some(v) = spec.get(key) {
                payload.insert(key.to_owned(), v.clone());
            }
        }
        payload.insert("task".to_owned(), s(task_id));
        payload.insert("delegation_id".to_owned(), s(&id));
        payload.insert("state".to_owned(), s("launched"));
        let mut note = spec
            .get("note")
            .filter(|v| dwp::py::truthy(Some(v)))
            .map(|v| dwp::py::str_opt(Some(v)));
        if read_only {
            let full = format!(
                "{READ_ONLY_MARK}{}{}",
                tree_fingerprint(&root),
                note.map(|n| format!(" | {n}")).unwrap_or_default()
            );
            note = Some(full.chars().take(500).collect());
        }
        Ok((payload, note))
    }

    /// `delegate collect|cancel`: a terminal state for a launched delegation. `state` is
    /// `None` for cancel; for collect it is the requested state (checked after the
    /// delegation itself, as upstream does).
    ///
    /// # Errors
    /// A recorded refusal, journal and I/O failures.
    pub fn delegate_finish(
        &mut self,
        task_id: &str,
        spec: &Map,
        cancel: bool,
        actor: Value,
    ) -> Result<Value> {
        let did = spec.get("delegation_id");
        let key = did.map_or_else(String::new, |v| dwp::py::str_opt(Some(v)));
        let prior = did
            .and_then(|_| {
                projection::delegations(&self.events, None).get(&key).map(|e| (*e).clone())
            })
            .filter(|p| p.get("task").and_then(Value::as_str) == Some(task_id));
        let Some(prior) = prior else {
            return Err(self.refuse_delegation(
                task_id,
                format!("no launched delegation {} for this task", repr_opt(did)),
            ));
        };
        let current = prior.get("state").and_then(Value::as_str).unwrap_or("");
        if current != "launched" {
            return Err(self.refuse_delegation(
                task_id,
                format!("delegation {key} is already {}", dwp::py::str_opt(prior.get("state"))),
            ));
        }
        let mut body = Map::new();
        for k in
            ["task", "delegation_id", "transport", "via", "kind", "profile", "target", "worktree"]
        {
            if let Some(v) = prior.get(k) {
                body.insert(k.to_owned(), v.clone());
            }
        }
        let mark = prior.get("note").and_then(Value::as_str).unwrap_or("");
        let launched_fp = mark
            .strip_prefix(READ_ONLY_MARK)
            .map(|rest| rest.split(' ').next().unwrap_or("").to_owned());
        let root = self.plan.repo_root();
        let changed = launched_fp.is_some_and(|fp| fp != tree_fingerprint(&root));
        if cancel {
            if changed {
                body.insert("state".to_owned(), s("failed"));
                self.append_raw(
                    "delegation",
                    body,
                    actor,
                    Some("read-only delegate: the working tree changed between launch and cancel"),
                    None,
                    None,
                )?;
                return Err(self.refuse_delegation(
                    task_id,
                    format!("delegation {key} was launched read-only but the working tree changed — recorded failed, not cancelled"),
                ));
            }
            body.insert("state".to_owned(), s("cancelled"));
        } else {
            let state = spec.get("state").and_then(Value::as_str).unwrap_or("");
            if !["completed", "failed"].contains(&state) {
                return Err(DelegateError::Ledger(LedgerError::Failed(
                    "collect needs state completed|failed".to_owned(),
                )));
            }
            body.insert("state".to_owned(), s(state));
            if changed {
                body.insert("state".to_owned(), s("failed"));
                self.append_raw(
                    "delegation",
                    body,
                    actor,
                    Some("read-only delegate: the working tree changed between launch and collect"),
                    None,
                    None,
                )?;
                return Err(self.refuse_delegation(
                    task_id,
                    format!("delegation {key} was launched read-only but the working tree changed — recorded failed; run the task here or mark it parallel_safe"),
                ));
            }
            match spec.get("result_path") {
                None | Some(Value::Null) => {}
                Some(v) => {
                    let rp = v.as_str().unwrap_or("");
                    if rp.is_empty() || rp.starts_with('/') || rp.split('/').any(|p| p == "..") {
                        return Err(DelegateError::Ledger(LedgerError::Failed(
                            "result_path must be a relative path inside the plan or repository"
                                .to_owned(),
                        )));
                    }
                    body.insert("result_path".to_owned(), s(rp));
                    for base in [self.plan.dir.clone(), root.clone()] {
                        let full = base.join(rp);
                        let (Ok(real), Ok(real_base)) = (full.canonicalize(), base.canonicalize())
                        else {
                            continue;
                        };
                        if full.is_file() && real.starts_with(&real_base) {
                            let bytes = std::fs::read(&real)
                                .map_err(|e| crate::error::io_fail(&real, e))?;
                            body.insert(
                                "result_digest".to_owned(),
                                s(&canonical_json::digest::sha256_prefixed(&bytes)),
                            );
                            break;
                        }
                    }
                }
            }
        }
        let note = spec
            .get("note")
            .filter(|v| dwp::py::truthy(Some(v)))
            .map(|v| dwp::py::str_opt(Some(v)));
        Ok(self.append_raw("delegation", body, actor, note.as_deref(), None, None)?)
    }
}

/// The `actor` used by delegation refusals (for callers that need it).
pub fn delegation_actor(generation: Generation) -> Value {
    actor("helper", generation.ledger_identity())
}
