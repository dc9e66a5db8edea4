//! Deterministic generated recipe-like documents (no `rand`: a fixed xorshift stream).
//!
//! The documents exercise what makes canonicalisation work: many objects to sort, keys whose
//! UTF-16 order differs from their code point order (`ｱ` U+FF71 vs `😀` U+1F600), non-ASCII
//! text, escapes and control characters, integers and floats across magnitudes.
//!
//! Floats avoid two ranges where the upstream Python reference (`cookwala_samples.jcs` 0.3.0)
//! is known to differ from RFC 8785, so that every implementation hashes identical bytes:
//! `1e-6 <= |x| < 1e-4` (Python `repr` switches to exponent form earlier than ECMAScript) and
//! integral values `2^53 <= |x| < 1e21` (the reference prints `str(int(x))`, the exact binary
//! value, where ECMAScript pads the shortest digits with zeros).

use std::fs;
use std::path::Path;

use anyhow::Context;
use serde_json::{Map, Value, json};

/// A small deterministic PRNG (xorshift64*).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A stream from `seed` (zero is remapped).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0; slightly biased, irrelevant here).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % (n.max(1) as u64)) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// One element of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

const WORDS: &[&str] = &[
    "tomato",
    "cucumber",
    "onion",
    "parsley",
    "lemon",
    "olive oil",
    "salt",
    "cumin",
    "garlic",
    "simmer",
    "stir",
    "until",
    "golden",
    "fold",
    "gently",
    "rest",
    "chop",
    "finely",
    "season",
];
const TEXTS: &[&str] = &[
    "سلطة بلدي",
    "طماطم مقطعة",
    "トマトを切る",
    "ｱｲｳｴｵ half-width",
    "crème brûlée à la française",
    "🍅🥒🧅 emoji",
    "tab\tnewline\nquote\"backslash\\slash/",
    "control \u{1}\u{1f} and \u{7f} and \u{2028}\u{2029}",
    "Ελληνικά κείμενο",
    "𝄞 musical and 𠀀 astral",
];
const UNITS: &[&str] = &["g", "kg", "ml", "l", "tsp", "tbsp", "piece"];
const OPS: &[&str] = &["cw.op.chop", "cw.op.stir", "cw.op.heat", "cw.op.rest", "cw.op.season"];

fn sentence(rng: &mut Rng, words: usize) -> String {
    let mut s = String::new();
    for i in 0..words {
        if i > 0 {
            s.push(' ');
        }
        if rng.below(8) == 0 {
            s.push_str(rng.pick(TEXTS));
        } else {
            s.push_str(rng.pick(WORDS));
        }
    }
    s
}

/// A float in a range where the Python reference and RFC 8785 agree (see the module docs).
pub fn float(rng: &mut Rng) -> f64 {
    const EXPONENTS: &[i32] = &[-9, -8, -7, -3, -2, -1, 0, 0, 0, 1, 1, 2, 3, 5, 22, 25];
    let mantissa = 1.0 + rng.unit() * 9.0;
    let x = mantissa * 10f64.powi(rng.pick(EXPONENTS));
    let x = if rng.below(10) == 0 { x.round() } else { x };
    if rng.below(4) == 0 { -x } else { x }
}

fn integer(rng: &mut Rng) -> i64 {
    match rng.below(4) {
        0 => (rng.next_u64() % (1 << 53)) as i64 - (1 << 52),
        1 => -(rng.below(1000) as i64),
        _ => rng.below(100_000) as i64,
    }
}

fn node(rng: &mut Rng, idx: usize) -> Value {
    let mut params = Map::new();
    params.insert("tempC".into(), json!(float(rng)));
    params.insert("durationS".into(), json!(integer(rng)));
    params.insert("speed".into(), json!(rng.below(10)));
    params.insert("ratio".into(), json!(float(rng)));
    json!({
        "id": format!("n{idx}"),
        "op": rng.pick(OPS),
        "inputs": [format!("n{}", idx.saturating_sub(1)), format!("ing{}", rng.below(20))],
        "params": params,
        "until": {"any": [{"probe": "core", "gte": float(rng)}, {"timeS": integer(rng)}]},
        "text": {"en": sentence(rng, 12), "ar": rng.pick(TEXTS), "x-ｱ": sentence(rng, 3), "x-😀": sentence(rng, 2)},
        "onTimeout": "ask_human",
        "optional": rng.below(2) == 0,
        "note": null,
    })
}

/// One recipe-like document with `nodes` steps (about 500 bytes of JCS per step).
pub fn document(seed: u64, nodes: usize) -> Value {
    let mut rng = Rng::new(seed);
    let ingredients: Vec<Value> = (0..nodes / 4 + 3)
        .map(|i| {
            json!({
                "ref": format!("ing{i}"),
                "ingredientId": format!("cw.ing.{}", rng.pick(WORDS).replace(' ', "_")),
                "qty": {"value": float(&mut rng), "unit": rng.pick(UNITS), "tolerance": 0.01 + rng.unit() / 2.0},
                "display": {"en": sentence(&mut rng, 3), "ar": rng.pick(TEXTS)},
            })
        })
        .collect();
    let steps: Vec<Value> = (0..nodes).map(|i| node(&mut rng, i)).collect();
    let mut doc = json!({
        "$schema": "https://cookwala.ai/v1/schemas/recipe.schema.json",
        "cookwala": "0.2.0",
        "id": format!("gen-recipe-{seed:04}"),
        "revision": seed,
        "updated": "2026-10-04",
        "dish": {
            "names": {"en": sentence(&mut rng, 4), "ar": rng.pick(TEXTS), "ja": "トマトサラダ", "é": "salade", "ｱ": "half", "😀": "emoji"},
            "tags": ["salad", "raw", "generated"],
        },
        "ingredients": ingredients,
        "nodes": steps,
        "meta": {"numbers": (0..16).map(|_| json!(float(&mut rng))).collect::<Vec<_>>(), "empty": {}, "emptyList": []},
        "license": "CC0-1.0",
    });
    if seed.is_multiple_of(2)
        && let Some(map) = doc.as_object_mut()
    {
        // A stale hash field: the document hash must leave it out.
        map.insert("hash".into(), json!(format!("sha256:{}", "0".repeat(64))));
    }
    doc
}

/// Writes `count` generated documents of growing size into `dir` as pretty JSON.
///
/// # Errors
/// I/O errors.
pub fn write_set(
    dir: &Path,
    count: usize,
    base_nodes: usize,
    step_nodes: usize,
) -> anyhow::Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for i in 0..count {
        let doc = document(i as u64, base_nodes + step_nodes * i);
        let bytes = serde_json::to_vec_pretty(&doc)?;
        let path = dir.join(format!("gen-{i:04}.json"));
        fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
