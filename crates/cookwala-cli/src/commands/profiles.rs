//! The profile commands: `sms`, `constraints`, `certify`, `registry` and `signal`.
//!
//! Each reads its input, calls the matching `cookwala` profile module and prints either a line
//! per result or, with `--json`, the profile's wire shape. A refusal (an unreadable message, a
//! certification that does not hold, a name or version a registry refuses, a signal that breaks
//! the policy) returns `Ok(false)`: exit 1 without an error message.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use canonical_json::{Map, Value};
use cookwala::certification;
use cookwala::household::{self, ConsentGrant, Facets, Roles};
use cookwala::humanitarian::{self, RulePack, Severity};
use cookwala::time::{Instant, parse_timestamp};
use cookwala::{registry, signal, sms};

use crate::clock::now_rfc3339;
use crate::commands::keys::load_keys;
use crate::input::{display, read_json};
use crate::output::compact;

// ---- sms

/// `cookwala sms parse TEXT…|-`: one message from the words given, or one message per
/// non-empty line of standard input. Exit 1 when any message cannot be read.
pub fn sms_parse(words: &[String], json: bool) -> Result<bool> {
    let messages: Vec<String> = if words.len() == 1 && words[0] == "-" {
        let mut text = String::new();
        std::io::stdin()
            .lock()
            .take(crate::input::MAX_INPUT_BYTES as u64)
            .read_to_string(&mut text)
            .context("cannot read stdin")?;
        text.lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect()
    } else {
        vec![words.join(" ")]
    };
    if messages.is_empty() {
        bail!("no message on standard input");
    }
    let mut all_ok = true;
    for message in &messages {
        let parsed = sms::parse(message);
        let findings = parsed.as_ref().map(sms::storage_findings).unwrap_or_default();
        all_ok &= parsed.is_ok();
        if json {
            let mut value = sms::result_value(&parsed);
            if parsed.is_ok()
                && let Some(map) = value.as_object_mut()
            {
                let list = findings.iter().map(|f| Value::from(*f)).collect();
                map.insert("findings".into(), Value::Array(list));
            }
            println!("{}", compact(&value)?);
            continue;
        }
        match &parsed {
            Ok(cmd) => {
                println!("{}", describe(&cmd.to_value()));
                for finding in findings {
                    println!("  finding: {finding}");
                }
            }
            Err(e) => println!("error: {} ({}): {message:?}", e.code(), e.help()),
        }
    }
    Ok(all_ok)
}

/// `COMMAND key=value …` for a parsed message (lists joined by commas, objects flattened).
fn describe(value: &Value) -> String {
    let Some(map) = value.as_object() else { return String::new() };
    let mut out = map.get("command").and_then(Value::as_str).unwrap_or("?").to_owned();
    for (key, v) in map {
        if key == "ok" || key == "command" {
            continue;
        }
        out.push(' ');
        out.push_str(key);
        out.push('=');
        out.push_str(&plain(v));
    }
    out
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(plain).collect::<Vec<_>>().join(","),
        Value::Object(m) => {
            m.iter().map(|(k, x)| format!("{k}:{}", plain(x))).collect::<Vec<_>>().join(",")
        }
        Value::Number(n) => {
            let x = n.to_f64();
            if x.fract() == 0.0 && x.abs() < 1e15 { format!("{x:.0}") } else { x.to_string() }
        }
        other => compact(other).unwrap_or_default(),
    }
}

// ---- constraints

/// A list argument: a JSON file (or `-`) or, when no such file exists, comma-separated ids.
fn list_arg(arg: &str) -> Result<Value> {
    let path = Path::new(arg);
    if arg == "-" || path.is_file() {
        return read_json(path);
    }
    if arg.trim_start().starts_with('[') {
        return canonical_json::parse(arg.as_bytes()).context("the argument is not valid JSON");
    }
    Ok(Value::Array(
        arg.split(',').map(str::trim).filter(|s| !s.is_empty()).map(Value::from).collect(),
    ))
}

/// Facet ids from `[{facet, value?}]` or `["cw.facet…"]`.
fn facet_ids(list: &Value) -> Result<Vec<String>> {
    let items = list.as_array().context("--facets must be a list of facets")?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            item.as_str()
                .or_else(|| item.get("facet").and_then(Value::as_str))
                .map(str::to_owned)
                .with_context(|| format!("facet {i} is neither an id nor {{\"facet\": id}}"))
        })
        .collect()
}

/// Consent grants from a JSON list.
pub fn consent_grants(list: &Value) -> Result<Vec<ConsentGrant>> {
    let items = list.as_array().context("--consents must be a JSON list of ConsentGrants")?;
    items
        .iter()
        .enumerate()
        .map(|(i, g)| ConsentGrant::from_value(g).with_context(|| format!("consent {i}")))
        .collect()
}

/// `cookwala constraints --facets F --role R [--consents C]`.
pub fn constraints(facets: &str, role: &str, consents: Option<&str>, json: bool) -> Result<bool> {
    let roles = Roles::builtin();
    if !roles.names().any(|r| r == role) {
        bail!(
            "unknown recipient role {role:?} (roles: {})",
            roles.names().collect::<Vec<_>>().join(", ")
        );
    }
    let ids = facet_ids(&list_arg(facets)?)?;
    let grants = match consents {
        None => Vec::new(),
        Some(c) => consent_grants(&list_arg(c)?)?,
    };
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let derivation = household::derive(&Facets::builtin(), &roles, &refs, role, &grants);
    if json {
        println!("{}", compact(&derivation.to_value())?);
        return Ok(true);
    }
    for c in &derivation.constraints {
        println!("constraint {} (from {})", c.kind, c.derived_from.join(", "));
    }
    for f in &derivation.disclosed {
        println!("disclosed {f}");
    }
    for (f, why) in &derivation.withheld {
        println!("withheld {f}: {}", why.code());
    }
    Ok(true)
}

// ---- certifications

fn instant(now: Option<&str>) -> Result<Instant> {
    let text = now.map_or_else(now_rfc3339, str::to_owned);
    parse_timestamp(&text)
        .map_err(|_| anyhow::anyhow!("--now {text:?} is not an RFC 3339 timestamp"))
}

/// `cookwala certify verify CERT --keys K [--now T] [--subject-hash H]`.
pub fn certify_verify(
    cert: &Path,
    keys: &[PathBuf],
    now: Option<&str>,
    subject_hash: Option<&str>,
    json: bool,
) -> Result<bool> {
    let keys = load_keys(keys)?;
    let doc = read_json(cert)?;
    let reason = certification::verify(&doc, &keys, instant(now)?, subject_hash);
    if json {
        let mut m = Map::new();
        m.insert("ok".into(), reason.is_ok().into());
        m.insert("reason".into(), reason.as_str().into());
        for field in ["id", "scheme"] {
            if let Some(v) = doc.get(field) {
                m.insert(field.into(), v.clone());
            }
        }
        if let Some(a) = doc.get("authority").and_then(|a| a.get("id")) {
            m.insert("authority".into(), a.clone());
        }
        println!("{}", compact(&Value::Object(m))?);
    } else {
        println!("{}", reason.as_str());
    }
    Ok(reason.is_ok())
}

/// `cookwala certify pick CERT… --keys K`: the certifications that hold now, newest per
/// authority and scheme. Exit 1 when none holds.
pub fn certify_pick(
    certs: &[PathBuf],
    keys: &[PathBuf],
    now: Option<&str>,
    subject_hash: Option<&str>,
    json: bool,
) -> Result<bool> {
    let keys = load_keys(keys)?;
    let mut docs = Vec::new();
    for path in certs {
        let doc = read_json(path)?;
        match doc {
            Value::Array(items) => docs.extend(items),
            other => docs.push(other),
        }
    }
    let set = certification::current(&docs, &keys, instant(now)?, subject_hash);
    if json {
        println!("{}", compact(&set.to_value())?);
    } else {
        for id in &set.current {
            println!("current {id}");
        }
        for (id, why) in &set.rejected {
            println!("rejected {id}: {}", why.as_str());
        }
    }
    Ok(!set.current.is_empty())
}

// ---- registry

fn verdict_line(json: bool, ok_key: &str, ok: bool, reason: &str) -> Result<()> {
    if json {
        let mut m = Map::new();
        m.insert(ok_key.into(), ok.into());
        m.insert("reason".into(), reason.into());
        println!("{}", compact(&Value::Object(m))?);
    } else {
        println!("{reason}");
    }
    Ok(())
}

/// `cookwala registry name NAME`.
pub fn registry_name(name: &str, json: bool) -> Result<bool> {
    let result = registry::check_name(name);
    let reason = result.map_or_else(registry::NameProblem::code, |()| "ok");
    verdict_line(json, "valid", result.is_ok(), reason)?;
    Ok(result.is_ok())
}

/// `cookwala registry version VERSION`.
pub fn registry_version(version: &str, json: bool) -> Result<bool> {
    let result = registry::check_version(version);
    let reason = result.map_or_else(registry::VersionProblem::code, |()| "ok");
    verdict_line(json, "exact", result.is_ok(), reason)?;
    Ok(result.is_ok())
}

/// `cookwala registry compare A B`: `A < B`, `A = B` or `A > B`, and whether a consumer pinned
/// to A can take B. Exit 1 when either is not an exact version.
pub fn registry_compare(a: &str, b: &str, json: bool) -> Result<bool> {
    let parsed = registry::Version::parse(a).and_then(|va| Ok((va, registry::Version::parse(b)?)));
    let (va, vb) = match parsed {
        Ok(pair) => pair,
        Err(problem) => {
            let which = if registry::check_version(a).is_err() { a } else { b };
            if json {
                let mut m = Map::new();
                m.insert("version".into(), which.into());
                m.insert("reason".into(), problem.code().into());
                println!("{}", compact(&Value::Object(m))?);
            } else {
                println!("{which}: {}", problem.code());
            }
            return Ok(false);
        }
    };
    let order = va.cmp(&vb);
    let compatible = registry::compatible(&va, &vb);
    if json {
        let mut m = Map::new();
        m.insert("order".into(), Value::from(order as i64));
        m.insert("compatible".into(), compatible.into());
        println!("{}", compact(&Value::Object(m))?);
    } else {
        let sign = match order {
            std::cmp::Ordering::Less => "<",
            std::cmp::Ordering::Equal => "=",
            std::cmp::Ordering::Greater => ">",
        };
        let compat = if compatible { "compatible" } else { "not compatible" };
        println!("{a} {sign} {b} ({compat} for a consumer pinned to {a})");
    }
    Ok(true)
}

// ---- signal

/// `cookwala signal check FILE|-`: `ok` or the reasons, one per line. Exit 1 when refused.
pub fn signal_check(file: &Path, json: bool) -> Result<bool> {
    let doc = read_json(file)?;
    if doc.as_object().is_none() {
        bail!("{} is not a signal object", display(file));
    }
    let reasons = signal::check(&doc, signal::Policy::default());
    if json {
        let mut m = Map::new();
        m.insert("ok".into(), reasons.is_empty().into());
        m.insert(
            "reasons".into(),
            Value::Array(reasons.iter().map(|r| Value::from(r.code())).collect()),
        );
        println!("{}", compact(&Value::Object(m))?);
    } else if reasons.is_empty() {
        println!("ok");
    } else {
        for r in &reasons {
            println!("{}", r.code());
        }
    }
    Ok(reasons.is_empty())
}

// ---- humanitarian

/// `cookwala humanitarian check FILE… [--pack FILE]…`: each document against the merged rule
/// packs (default: the built-in `who-codex-basic`). Exit 1 when any finding blocks.
pub fn humanitarian_check(files: &[PathBuf], packs: &[PathBuf], json: bool) -> Result<bool> {
    let packs: Vec<RulePack> = if packs.is_empty() {
        vec![RulePack::who_codex_basic()]
    } else {
        packs
            .iter()
            .map(|p| {
                RulePack::from_value(&read_json(p)?)
                    .with_context(|| format!("{} is not a rule pack", display(p)))
            })
            .collect::<Result<_>>()?
    };
    let pack = RulePack::merge(&packs);
    let mut blocked = false;
    for file in files {
        let doc = read_json(file)?;
        let findings = humanitarian::check(&doc, &pack)
            .with_context(|| format!("{} cannot be checked", display(file)))?;
        blocked |= findings.iter().any(|f| f.severity == Severity::Block);
        if json {
            let mut m = Map::new();
            m.insert("file".into(), display(file).into());
            m.insert("id".into(), doc.get("id").cloned().unwrap_or(Value::Null));
            m.insert("kind".into(), doc.get("kind").cloned().unwrap_or(Value::Null));
            m.insert(
                "findings".into(),
                Value::Array(findings.iter().map(humanitarian::Finding::to_value).collect()),
            );
            println!("{}", compact(&Value::Object(m))?);
            continue;
        }
        let blocks = findings.iter().filter(|f| f.severity == Severity::Block).count();
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("document");
        println!("{}: {kind}, {blocks} block, {} warn", display(file), findings.len() - blocks);
        for f in &findings {
            println!("  {} {}: {}", f.severity.as_str().to_uppercase(), f.rule, f.detail);
        }
    }
    Ok(!blocked)
}

/// What a recipient role may receive from household facets (RFC-0001)
///
/// Prints the derived constraints (with the facets they come from), the facets disclosed
/// under consent and the facets withheld with their reason (never_travels, no_consent,
/// not_allowed_for_role, unknown_facet). Raw facet values are never printed.
#[derive(Debug, clap::Args)]
pub struct ConstraintsArgs {
    /// Facets: a JSON file (or -) of [{"facet": id, ...}] or ids, or comma-separated ids
    #[arg(long)]
    pub facets: String,
    /// Recipient role: grocer, delivery, planner, device_maker, program, dataset, insurer,
    /// other_robot
    #[arg(long)]
    pub role: String,
    /// ConsentGrants: a JSON file (or -) of [{"recipientRole", "scope": {"facets"|"families"}}]
    #[arg(long)]
    pub consents: Option<String>,
    /// Print {"constraints","disclosed","withheld"}
    #[arg(long)]
    pub json: bool,
}

/// The `cookwala sms` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SmsCommand {
    /// Parse one message (the words given) or, with -, every line of standard input
    ///
    /// Prints `COMMAND key=value ...` and any gateway findings (safety.* findings block an
    /// offer), or `error: CODE` (empty, unknown_command, usage, bad_date) with exit 1.
    Parse {
        /// The message, or - for one message per line of standard input
        #[arg(required = true, num_args = 1.., allow_hyphen_values = true)]
        text: Vec<String>,
        /// Print the profile's shape {"ok","command",...,"findings"} (one line per message)
        #[arg(long)]
        json: bool,
    },
}

impl SmsCommand {
    /// Runs the subcommand; `Ok(false)` when a message does not parse.
    pub fn run(self) -> Result<bool> {
        match self {
            SmsCommand::Parse { text, json } => sms_parse(&text, json),
        }
    }
}

/// The `cookwala certify` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum CertifyCommand {
    /// Verify one Certification: prints ok or the reason (exit 1 unless ok)
    ///
    /// Reasons: not_a_certification, the signature reasons (unsigned, unknown_key,
    /// bad_signature, key_revoked, ...), subject_mismatch, revoked, suspended, not_yet_valid,
    /// expired, invalid_timestamp.
    Verify {
        /// The authority's key set files (repeatable)
        #[arg(long, required = true)]
        keys: Vec<PathBuf>,
        /// The instant to judge validity at (RFC 3339; default: now)
        #[arg(long)]
        now: Option<String>,
        /// The hash of the recipe revision you hold (sha256:...); another subject is refused
        #[arg(long)]
        subject_hash: Option<String>,
        /// Print {"ok","reason","id","scheme","authority"}
        #[arg(long)]
        json: bool,
        /// The Certification
        cert: PathBuf,
    },
    /// The certifications of a set that hold: newest per authority and scheme (exit 1 if none)
    Pick {
        /// The authorities' key set files (repeatable)
        #[arg(long, required = true)]
        keys: Vec<PathBuf>,
        /// The instant to judge validity at (RFC 3339; default: now)
        #[arg(long)]
        now: Option<String>,
        /// The hash of the recipe revision you hold
        #[arg(long)]
        subject_hash: Option<String>,
        /// Print {"current":[ids],"rejected":{id: reason}}
        #[arg(long)]
        json: bool,
        /// Certification files (each a document or a JSON list of documents)
        #[arg(required = true)]
        certs: Vec<PathBuf>,
    },
}

impl CertifyCommand {
    /// Runs the subcommand; `Ok(false)` when no certification holds.
    pub fn run(self) -> Result<bool> {
        match self {
            CertifyCommand::Verify { keys, now, subject_hash, json, cert } => {
                certify_verify(&cert, &keys, now.as_deref(), subject_hash.as_deref(), json)
            }
            CertifyCommand::Pick { keys, now, subject_hash, json, certs } => {
                certify_pick(&certs, &keys, now.as_deref(), subject_hash.as_deref(), json)
            }
        }
    }
}

/// The `cookwala registry` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RegistryCommand {
    /// Check a registry name <reverse-dns namespace>/<name> (exit 1 when refused)
    Name {
        /// Print {"valid","reason"}
        #[arg(long)]
        json: bool,
        /// The name, e.g. org.example/recipes
        name: String,
    },
    /// Check that a version is exact semver (no ranges, no tags; exit 1 when refused)
    Version {
        /// Print {"exact","reason"}
        #[arg(long)]
        json: bool,
        /// The version, e.g. 1.4.2
        version: String,
    },
    /// Order two exact versions and say whether a consumer pinned to A can take B
    Compare {
        /// Print {"order": -1|0|1, "compatible"}
        #[arg(long)]
        json: bool,
        /// The pinned version
        a: String,
        /// The candidate version
        b: String,
    },
}

impl RegistryCommand {
    /// Runs the subcommand; `Ok(false)` when the name or version is refused.
    pub fn run(self) -> Result<bool> {
        match self {
            RegistryCommand::Name { json, name } => registry_name(&name, json),
            RegistryCommand::Version { json, version } => registry_version(&version, json),
            RegistryCommand::Compare { json, a, b } => registry_compare(&a, &b, json),
        }
    }
}

/// The `cookwala signal` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SignalCommand {
    /// Check a DemandSignal or SupplySignal against the policy (exit 1 when refused)
    ///
    /// Reasons: class_level_required, delay_too_short, must_be_open_to_all,
    /// prices_not_allowed, region_too_fine, too_few_sources, unknown_kind.
    Check {
        /// Print {"ok","reasons"}
        #[arg(long)]
        json: bool,
        /// The signal (JSON file or -)
        file: PathBuf,
    },
}

impl SignalCommand {
    /// Runs the subcommand; `Ok(false)` when the signal is refused.
    pub fn run(self) -> Result<bool> {
        match self {
            SignalCommand::Check { json, file } => signal_check(&file, json),
        }
    }
}

/// The `cookwala humanitarian` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum HumanitarianCommand {
    /// Check documents against rule packs: prints `FILE: KIND, N block, M warn` and each
    /// finding (exit 1 when a finding blocks)
    Check {
        /// A RulePack file (repeatable, merged in order; default: the built-in who-codex-basic)
        #[arg(long = "pack")]
        packs: Vec<PathBuf>,
        /// Print one {"file","id","kind","findings":[{"rule","severity","detail"}]} per file
        #[arg(long)]
        json: bool,
        /// Offer, Handover or Distribution documents
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

impl HumanitarianCommand {
    /// Runs the subcommand; `Ok(false)` when a finding blocks.
    pub fn run(self) -> Result<bool> {
        match self {
            HumanitarianCommand::Check { packs, json, files } => {
                humanitarian_check(&files, &packs, json)
            }
        }
    }
}
