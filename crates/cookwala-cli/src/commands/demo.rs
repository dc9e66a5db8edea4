//! `cookwala demo`: the main job on built-in data.
//!
//! Walks through what the standard's integrity layer gives a recipe publisher and a hub: a
//! content hash, a signature that survives key rotation and catches tampering, a selective
//! disclosure, and a witnessed mission log; then what an executor does: refuse before heat,
//! cook inside every envelope (with a plot of every reading), and cut heat on a local safety
//! limit. Every artifact goes to a folder so each step can be repeated by hand with the other
//! subcommands.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use canonical_json::{Value, digest};
use cookwala::keys::{KeySet, SigningAlg, SigningKey, UNBOUNDED_VALID_FROM};
use cookwala::mission::{self, EventDraft, Sequencer, SequencerConfig};
use cookwala::signature::{self, SignedKind};

use cookwala_sim::{Fault, FaultKind, SimConfig, Simulation, builtin};

use crate::clock::{now_rfc3339, unix_now};
use crate::output::{create_private, emit, pretty};

/// Our demonstration recipe, compiled in.
pub const DEMO_RECIPE: &str =
    include_str!("../../../cookwala/data/recipes/red-lentil-soup.cookwala.json");

struct Step<'a> {
    n: usize,
    out: &'a Path,
}

impl Step<'_> {
    fn say(&mut self, title: &str, detail: &str) {
        self.n += 1;
        println!("{:>2}. {title}", self.n);
        for line in detail.lines() {
            println!("      {line}");
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.out.join(name)
    }
}

/// Walk through hashing, signing, disclosure and a witnessed log on built-in data
///
/// Every artifact is written to --out (default: a new folder under the temp dir) so each
/// step can be repeated with the other subcommands.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Folder for the artifacts
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Runs the demonstration, writing artifacts to `out` (default: a new folder under the
/// system temp dir). Returns an error if any expected verdict does not come out.
pub fn run(out: Option<PathBuf>) -> Result<()> {
    let out = match out {
        Some(dir) => dir,
        None => std::env::temp_dir().join(format!(
            "cookwala-demo-{}-{}",
            std::process::id(),
            unix_now()
        )),
    };
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut step = Step { n: 0, out: &out };
    println!(
        "cookwala demo: signed recipes, witnessed logs and safe cooking (artifacts in {})\n",
        out.display()
    );

    let recipe = canonical_json::parse(DEMO_RECIPE.as_bytes()).context("built-in recipe")?;
    let hash = digest::document_hash(&recipe)?;
    emit(&recipe, Some(&step.file("recipe.json")))?;
    step.say(
        "Hash the built-in recipe (RFC 8785 canonical JSON + SHA-256)",
        &format!(
            "red-lentil-soup rev 1 -> {hash}\ncheck: cookwala hash {}",
            step.file("recipe.json").display()
        ),
    );

    let now = now_rfc3339();
    let publisher = SigningKey::generate(SigningAlg::EdDsa, &mut rand::rng());
    let witness = SigningKey::generate(SigningAlg::Es256, &mut rand::rng());
    let (pub_kid, wit_kid) = ("did:web:publisher.example#k1", "did:web:witness.example#w1");
    create_private(&step.file("publisher.key.json"), &pretty(&publisher.to_key_file(pub_kid))?)?;
    create_private(&step.file("witness.key.json"), &pretty(&witness.to_key_file(wit_kid))?)?;
    let keys = KeySet::from_records(vec![
        publisher.key_record(pub_kid, UNBOUNDED_VALID_FROM),
        witness.key_record(wit_kid, UNBOUNDED_VALID_FROM),
    ]);
    emit(&keys.to_value(), Some(&step.file("keys.json")))?;
    step.say(
        "Generate a publisher key (Ed25519) and a witness key (ES256)",
        &format!("{pub_kid}  {}\n{wit_kid}  {}", publisher.public_key(), witness.public_key()),
    );

    let signed = signature::attach(&recipe, &publisher, pub_kid, &now, SignedKind::Document)?;
    emit(&signed, Some(&step.file("recipe.signed.json")))?;
    let verdict = signature::verify_signature(&signed, &keys, SignedKind::Document);
    expect("signed recipe", verdict.reason.as_str(), "ok")?;
    step.say(
        "Sign the recipe (Core 0.2.1 signing header) and verify it",
        &format!(
            "verify -> {}\ncheck: cookwala verify --keys {} {}",
            verdict.reason.as_str(),
            step.file("keys.json").display(),
            step.file("recipe.signed.json").display()
        ),
    );

    let mut tampered = signed.clone();
    if let Some(Value::Object(y)) = tampered.as_object_mut().and_then(|m| m.get_mut("yield")) {
        y.insert("servings".into(), Value::from(40i64));
    }
    emit(&tampered, Some(&step.file("recipe.tampered.json")))?;
    let verdict = signature::verify_signature(&tampered, &keys, SignedKind::Document);
    expect("tampered recipe", verdict.reason.as_str(), "bad_signature")?;
    step.say(
        "Change the servings after signing",
        &format!("verify -> {}", verdict.reason.as_str()),
    );

    let mut revoked_record = publisher.key_record(pub_kid, UNBOUNDED_VALID_FROM);
    revoked_record.revoked_at = Some("2000-01-01T00:00:00Z".into());
    revoked_record.revocation_reason = Some("compromised".into());
    let revoked = KeySet::from_records(vec![revoked_record]);
    let verdict = signature::verify_signature(&signed, &revoked, SignedKind::Document);
    expect("revoked key", verdict.reason.as_str(), "key_revoked")?;
    step.say(
        "Verify against a key record revoked before the signing time",
        &format!("verify -> {} (validity is judged at signedAt, not now)", verdict.reason.as_str()),
    );

    let diet = canonical_json::parse(br#"{"diet":"low_sodium","diner":"diner-2"}"#)?;
    let salt = super::disclose::fresh_salt();
    let disclosed = cookwala::disclosure::disclose(&diet, &salt)?;
    emit(&disclosed, Some(&step.file("diet.disclosure.json")))?;
    let digest_only = cookwala::disclosure::redact(&disclosed).unwrap_or(Value::Null);
    let d = digest_only.get("digest").and_then(Value::as_str).unwrap_or("");
    expect("disclosure", &cookwala::disclosure::verify(&disclosed).to_string(), "true")?;
    step.say(
        "Disclose a diner's diet selectively (salted digest in the signed record)",
        &format!("digest {d}\nthe salt and value travel only to parties allowed to see them"),
    );

    let log_path = step.file("mission.ndjson");
    let (journal, _) =
        journal::Journal::open(&log_path, &journal::OpenOptions::new().create(true))?;
    let config = SequencerConfig {
        mission: "demo-dinner".into(),
        actor: "hub.kitchen".into(),
        kid: pub_kid.into(),
    };
    let journal = crate::commands::log::JournalStore(journal);
    let mut sequencer = Sequencer::open(config, publisher.clone(), journal, &keys)?;
    let mut created = EventDraft::new(&now, "hub.kitchen", "created");
    created.payload = Some(canonical_json::parse(br#"{"recipe":"red-lentil-soup","servings":4}"#)?);
    sequencer.append(created)?;
    let mut open = EventDraft::new(&now, "hub.kitchen", "state_changed");
    open.transition = Some(("draft".into(), "open".into()));
    sequencer.append(open)?;
    sequencer.append(EventDraft::new(&now, "robot.hob-1", "progress"))?;
    let cp = sequencer.checkpoint(&now)?;
    let cp = mission::cosign(&cp, &witness, wit_kid, "witness.example", &now)?;
    emit(&cp, Some(&step.file("checkpoint.json")))?;
    let events = sequencer.events().to_vec();
    drop(sequencer);
    let head =
        mission::verify_chain(&events, Some(&keys)).map_err(|e| anyhow::anyhow!(e.reason()))?;
    let cp_reason = mission::verify_checkpoint(&events, &cp, &keys).reason();
    expect("checkpoint", &cp_reason, "ok")?;
    step.say(
        "Sequence a mission log, checkpoint it and have an independent witness cosign",
        &format!(
            "{} events, head {head}\ncheckpoint -> {cp_reason}\ncheck: cookwala log verify --log {} --keys {} --checkpoint {}",
            events.len(),
            log_path.display(),
            step.file("keys.json").display(),
            step.file("checkpoint.json").display()
        ),
    );

    let mut rewritten = events.clone();
    if let Some(map) = rewritten.get_mut(1).and_then(Value::as_object_mut) {
        map.insert("actor".into(), "somebody.else".into());
    }
    let reason = match mission::verify_chain(&rewritten, Some(&keys)) {
        Ok(_) => "ok".to_owned(),
        Err(e) => e.reason(),
    };
    expect("rewritten log", &reason, "hash_mismatch_at_1")?;
    step.say("Rewrite event 1 after the fact", &format!("verify -> {reason}"));

    cooking(&mut step)?;

    println!("\nall {} checks came out as the standard requires", step.n);
    Ok(())
}

/// Runs `recipe` on `device` (built-in ids) in the simulator to its end, as fast as it goes.
fn simulate(
    recipe: &str,
    device: &str,
    human: bool,
    fault: Option<FaultKind>,
) -> Result<Simulation> {
    let recipe = builtin::recipe(recipe).with_context(|| format!("built-in recipe {recipe}"))?;
    let device = builtin::device(device).with_context(|| format!("built-in device {device}"))?;
    let mut config = SimConfig::new(recipe, device);
    config.human_present = human;
    config.faults = fault.map(|kind| Fault { kind, node: None }).into_iter().collect();
    config.start_unix_ms = i64::try_from(unix_now()).unwrap_or(0).saturating_mul(1000);
    config.execution_id = "demo-cook".to_owned();
    config.request_id = "demo-cook-request".to_owned();
    let mut sim = Simulation::new(config).context("cannot simulate")?;
    while !sim.is_final() {
        sim.advance(60_000);
        if sim.state().as_str() == "needs_human" {
            // The person in the kitchen confirms, as they would at the hob.
            sim.confirm_human().map_err(|e| anyhow::anyhow!("{e}"))?;
        }
    }
    Ok(sim)
}

/// The executor's part: refusal before heat, a run kept inside its envelopes with a plot of
/// every reading, and a local safety limit that no request can raise.
fn cooking(step: &mut Step<'_>) -> Result<()> {
    let unattended = simulate("chickpea-fritters", "sim-hob-robot", false, None)?;
    let refusal = unattended.refusal().map(|r| r.reason.as_str()).unwrap_or("none");
    expect("unattended deep fry", refusal, "needs_human_present")?;
    let (fritters, hob) = (step.file("fritters.json"), step.file("hob-robot.json"));
    emit(&builtin::recipe("chickpea-fritters").context("built-in recipe")?, Some(&fritters))?;
    emit(&builtin::device("sim-hob-robot").context("built-in device")?, Some(&hob))?;
    step.say(
        "Dry-run deep-frying chickpea fritters on the hob robot with nobody in the kitchen",
        &format!(
            "refused before anything heats up -> {refusal}\ncheck: cookwala dry-run --recipe {} --device {}",
            fritters.display(),
            hob.display()
        ),
    );

    let soup = simulate("red-lentil-soup", "sim-hob-robot", false, None)?;
    let log = soup.log().context("the soup's log")?;
    let outcome = log.get("outcome").and_then(Value::as_str).unwrap_or("none").to_owned();
    expect("soup", &outcome, "served")?;
    let steps = log.get("steps").and_then(Value::as_array).unwrap_or_default();
    let all_ok = steps.iter().all(|s| s.get("envelopeOk").and_then(Value::as_bool) == Some(true));
    expect("soup envelopes", if all_ok { "ok" } else { "outside" }, "ok")?;
    emit(&log, Some(&step.file("soup.log.json")))?;
    let plot = step.file("soup.svg");
    std::fs::write(
        &plot,
        crate::commands::cook::plot_svg(soup.trace(), "red-lentil-soup on sim-hob-robot"),
    )
    .with_context(|| format!("cannot write {}", plot.display()))?;
    step.say(
        "Cook the lentil soup on the simulated hob robot",
        &format!(
            "{} steps, every medium inside its envelope -> {outcome}; {} simulated minutes\nlog (no personal data) {}\nplot of every reading against its band {}",
            steps.len(),
            soup.now_ms() / 60_000,
            step.file("soup.log.json").display(),
            plot.display()
        ),
    );

    let hot = simulate("chickpea-fritters", "sim-hob-robot", true, Some(FaultKind::Overheat))?;
    let log = hot.log().context("the fritters' log")?;
    let outcome = log.get("outcome").and_then(Value::as_str).unwrap_or("none").to_owned();
    let fired = log
        .get("safetyEvents")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
        .and_then(|e| e.get("limit"))
        .and_then(Value::as_str)
        .unwrap_or("none")
        .to_owned();
    expect("overheat limit", &fired, "oil.max_temp")?;
    expect("overheat outcome", &outcome, "aborted_safe")?;
    step.say(
        "Let the fryer's heater run away (an injected fault) with a person present",
        &format!(
            "the local limit {fired} cuts the heat and stops safely -> {outcome}, heat {}\ncheck: cookwala cook chickpea-fritters --human-present --fault overheat",
            if hot.heat_on() { "on" } else { "off" }
        ),
    );
    Ok(())
}

fn expect(what: &str, got: &str, want: &str) -> Result<()> {
    if got != want {
        bail!("demo step {what}: expected {want}, got {got}");
    }
    Ok(())
}
