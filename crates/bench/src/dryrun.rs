//! Dry-run throughput over the upstream sample bundle's 32 cases (4 recipes × 4 devices ×
//! humanPresent), and strict validation of a typical recipe. Every case is checked against the
//! bundle's expected result before anything is timed.

use anyhow::{Context, bail};
use canonical_json::Value;
use cookwala::dryrun::{Options, PreparedDevice, PreparedRecipe, dry_run, run_prepared};
use cookwala::time::parse_timestamp;
use cookwala::vocab::Vocabulary;

use crate::harness::{Config, Work, measure, record};

/// One prepared case: recipe, device, humanPresent.
struct Case<'a> {
    recipe: &'a Value,
    device: &'a Value,
    human: bool,
}

fn cases(bundle: &Value) -> anyhow::Result<Vec<Case<'_>>> {
    let expected = bundle
        .pointer("/expected/dryRuns")
        .and_then(Value::as_array)
        .context("expected.dryRuns")?;
    let now = parse_timestamp(bundle.get("now").and_then(Value::as_str).context("now")?)
        .map_err(|e| anyhow::anyhow!("bundle now: {e}"))?;
    let limits = bundle.get("safetyLimits").context("safetyLimits")?;
    let mut out = Vec::new();
    for case in expected {
        let s = |k: &str| case.get(k).and_then(Value::as_str).context("case field");
        let (rname, dname) = (s("recipe")?, s("device")?);
        let recipe = bundle.get("recipes").and_then(|r| r.get(rname)).context("recipe")?;
        let device = bundle.get("devices").and_then(|d| d.get(dname)).context("device")?;
        let human = case.get("humanPresent").and_then(Value::as_bool).context("humanPresent")?;
        let options =
            Options { human_present: human, allow_model: true, limits: Some(limits), now };
        let got = dry_run(Vocabulary::builtin(), recipe, device, options)?;
        let reason = got.refusal.as_ref().map(|r| r.reason.as_str());
        let plan: Vec<Value> = got
            .plan
            .iter()
            .map(|r| Value::Array(vec![r.node.into(), r.by.as_str().into(), r.verified_by.into()]))
            .collect();
        if got.state() != s("state")?
            || reason != case.get("reason").and_then(Value::as_str)
            || Some(&Value::Array(plan)) != case.get("plan")
        {
            bail!("dry run of {} on {} differs from the bundle", s("recipe")?, s("device")?);
        }
        out.push(Case { recipe, device, human });
    }
    Ok(out)
}

/// Measures dry-run throughput (one iteration = all 32 cases) and validation of one recipe.
///
/// # Errors
/// When the bundle is malformed or a result differs from the expected one.
pub fn measure_all(bundle: &Value, config: Config) -> anyhow::Result<Vec<serde_json::Value>> {
    let cases = cases(bundle)?;
    let now = parse_timestamp(bundle.get("now").and_then(Value::as_str).context("now")?)
        .map_err(|e| anyhow::anyhow!("bundle now: {e}"))?;
    let limits = bundle.get("safetyLimits").context("safetyLimits")?;
    let vocab = Vocabulary::builtin();
    let mut refused = 0usize;
    let sample = measure(config, || {
        for c in &cases {
            let options =
                Options { human_present: c.human, allow_model: true, limits: Some(limits), now };
            if let Ok(r) = dry_run(vocab, std::hint::black_box(c.recipe), c.device, options) {
                refused += usize::from(r.refusal.is_some());
            }
        }
    });
    std::hint::black_box(refused);
    let work = Work {
        set: "bundle-32",
        implementation: "ours",
        op: "dry-run",
        docs: cases.len(),
        bytes: 0,
    };
    let mut out = vec![record(&work, &sample)];

    // Catalog × fleet: each recipe and device prepared once (outside the timed loop), then every
    // case run on the prepared pair. Results are checked equal to the full dry run first.
    let mut recipes: Vec<(&Value, PreparedRecipe<'_>)> = Vec::new();
    let mut devices: Vec<(&Value, PreparedDevice<'_>)> = Vec::new();
    for c in &cases {
        if !recipes.iter().any(|(r, _)| std::ptr::eq(*r, c.recipe)) {
            recipes.push((c.recipe, PreparedRecipe::new(vocab, c.recipe, Some(limits))?));
        }
        if !devices.iter().any(|(d, _)| std::ptr::eq(*d, c.device)) {
            devices.push((c.device, PreparedDevice::new(vocab, c.device, now)));
        }
    }
    let mut pairs = Vec::new();
    for c in &cases {
        let r = recipes.iter().position(|(r, _)| std::ptr::eq(*r, c.recipe)).context("recipe")?;
        let d = devices.iter().position(|(d, _)| std::ptr::eq(*d, c.device)).context("device")?;
        let options =
            Options { human_present: c.human, allow_model: true, limits: Some(limits), now };
        let full = dry_run(vocab, c.recipe, c.device, options)?;
        if run_prepared(&recipes[r].1, &devices[d].1, c.human, true)? != full {
            bail!("the prepared dry run differs from the full one");
        }
        pairs.push((r, d, c.human));
    }
    let sample = measure(config, || {
        for &(r, d, human) in &pairs {
            if let Ok(res) = run_prepared(&recipes[r].1, &devices[d].1, human, true) {
                refused += usize::from(res.refusal.is_some());
            }
        }
    });
    std::hint::black_box(refused);
    let work = Work {
        set: "bundle-32",
        implementation: "ours",
        op: "dry-run prepared",
        docs: cases.len(),
        bytes: 0,
    };
    out.push(record(&work, &sample));

    let recipe = bundle.pointer("/recipes/salata-baladi").context("salata-baladi")?;
    if !cookwala::documents::validate(recipe, Some("Recipe"), vocab).is_valid() {
        bail!("salata-baladi does not validate");
    }
    let sample = measure(config, || {
        std::hint::black_box(cookwala::documents::validate(
            std::hint::black_box(recipe),
            Some("Recipe"),
            vocab,
        ));
    });
    let work =
        Work { set: "salata-baladi", implementation: "ours", op: "validate", docs: 1, bytes: 0 };
    out.push(record(&work, &sample));
    Ok(out)
}
