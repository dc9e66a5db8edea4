//! The project's own example recipes and simulated devices, compiled in.
//!
//! The files live in `crates/cookwala/data/` so every tool (the CLI's `validate` and `dry-run`,
//! the hub) reads the same bytes. They are authored by this project; only facts such as op ids
//! and °C bands come from the standard. Each recipe names the device it targets
//! ([`Example::device`]) and whether it needs a person present ([`Example::human_present`]).

use canonical_json::Value;

/// One built-in recipe with the device it is meant for.
#[derive(Clone, Copy, Debug)]
pub struct Example {
    /// The recipe id (also its file stem).
    pub id: &'static str,
    /// The id of the built-in device it targets.
    pub device: &'static str,
    /// True when the dry run needs a person present (hot oil, open pan, blade).
    pub human_present: bool,
    /// The recipe text.
    pub json: &'static str,
}

/// The id of the default device (the hob robot).
pub const DEFAULT_DEVICE: &str = "sim-hob-robot";

macro_rules! data {
    ($path:literal) => {
        include_str!(concat!("../../cookwala/data/", $path))
    };
}

/// Every built-in recipe.
pub const RECIPES: &[Example] = &[
    Example {
        id: "red-lentil-soup",
        device: "sim-hob-robot",
        human_present: false,
        json: data!("recipes/red-lentil-soup.cookwala.json"),
    },
    Example {
        id: "vegetable-stock",
        device: "sim-hob-robot",
        human_present: false,
        json: data!("recipes/vegetable-stock.cookwala.json"),
    },
    Example {
        id: "chickpea-fritters",
        device: "sim-hob-robot",
        human_present: true,
        json: data!("recipes/chickpea-fritters.cookwala.json"),
    },
    Example {
        id: "garlic-greens",
        device: "sim-hob-robot",
        human_present: true,
        json: data!("recipes/garlic-greens.cookwala.json"),
    },
    Example {
        id: "oat-honey-loaf",
        device: "sim-oven",
        human_present: false,
        json: data!("recipes/oat-honey-loaf.cookwala.json"),
    },
    Example {
        id: "roast-chicken-thighs",
        device: "sim-oven",
        human_present: false,
        json: data!("recipes/roast-chicken-thighs.cookwala.json"),
    },
    Example {
        id: "cucumber-herb-salad",
        device: "sim-counter-arm",
        human_present: true,
        json: data!("recipes/cucumber-herb-salad.cookwala.json"),
    },
];

/// Every built-in device: (id, capabilities text).
pub const DEVICES: &[(&str, &str)] = &[
    ("sim-hob-robot", data!("devices/sim-hob-robot.json")),
    ("sim-oven", data!("devices/sim-oven.json")),
    ("sim-counter-arm", data!("devices/sim-counter-arm.json")),
];

/// The built-in recipe `id`, parsed.
pub fn recipe(id: &str) -> Option<Value> {
    let example = RECIPES.iter().find(|e| e.id == id)?;
    canonical_json::parse(example.json.as_bytes()).ok()
}

/// The built-in example `id`.
pub fn example(id: &str) -> Option<&'static Example> {
    RECIPES.iter().find(|e| e.id == id)
}

/// The built-in device `id`, parsed.
pub fn device(id: &str) -> Option<Value> {
    let (_, text) = DEVICES.iter().find(|(d, _)| *d == id)?;
    canonical_json::parse(text.as_bytes()).ok()
}
