//! Kitchen units, quantities and money (COOKWALA.md §5.2, §2.4).
//!
//! [`convert`] follows the reference: each unit maps to its base through the vocabulary
//! (`tsp` → 5 ml, `pinch` → 0.36 g, …); a unit without an entry is its own base; volume ↔ mass
//! needs a density in g/ml and otherwise fails with [`ConvertError::NeedsDensity`], never a guess.
//! [`quantity_problems`] checks a Quantity's tolerance rules; [`Money`] keeps amounts as decimal
//! strings with an ISO 4217 code, never floats.

use canonical_json::Value;

use crate::vocab::Vocabulary;

/// The wire `Unit` enum (common schema).
pub const UNITS: [&str; 21] = [
    "g", "kg", "mg", "ml", "l", "tsp", "tbsp", "cup", "pinch", "dash", "pcs", "degC", "W", "kW",
    "mm", "cm", "rpm", "Pa", "kPa", "pct", "s",
];

/// True for a `RatioUnit` (every unit except `degC`).
pub fn is_ratio_unit(unit: &str) -> bool {
    unit != "degC" && UNITS.contains(&unit)
}

/// Why a conversion cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// Volume ↔ mass without a density.
    #[error("needs_density")]
    NeedsDensity,
    /// Bases that no density relates (e.g. `pcs` → `g` with a density, `degC` → `ml`).
    #[error("cannot convert {from} to {to}")]
    Incompatible {
        /// Source unit.
        from: String,
        /// Target unit.
        to: String,
    },
    /// A value or density that is not a finite number (or a density ≤ 0).
    #[error("{0}")]
    BadNumber(String),
}

impl ConvertError {
    /// The reason code: `needs_density`, `incompatible_units` or `bad_number`.
    pub fn code(&self) -> &'static str {
        match self {
            ConvertError::NeedsDensity => "needs_density",
            ConvertError::Incompatible { .. } => "incompatible_units",
            ConvertError::BadNumber(_) => "bad_number",
        }
    }
}

fn base<'a>(vocab: &'a Vocabulary, unit: &'a str) -> (f64, &'a str) {
    match vocab.unit(unit) {
        Some(u) => (u.factor, u.to.as_str()),
        None => (1.0, unit),
    }
}

/// Converts `value` in `unit` to `to`, with an optional density in g/ml.
///
/// # Errors
/// [`ConvertError::NeedsDensity`] for volume ↔ mass without density (and, as in the reference,
/// for any pair of different bases without density); [`ConvertError::Incompatible`] for
/// different bases a density cannot relate; [`ConvertError::BadNumber`] for non-finite input.
pub fn convert(
    vocab: &Vocabulary,
    value: f64,
    unit: &str,
    to: &str,
    density_g_per_ml: Option<f64>,
) -> Result<f64, ConvertError> {
    if !value.is_finite() {
        return Err(ConvertError::BadNumber("value is not a finite number".into()));
    }
    let (f, b) = base(vocab, unit);
    let (tf, tb) = base(vocab, to);
    let v = value * f;
    let out = if b == tb {
        v / tf
    } else {
        let Some(density) = density_g_per_ml else { return Err(ConvertError::NeedsDensity) };
        if !(density.is_finite() && density > 0.0) {
            return Err(ConvertError::BadNumber("density must be a finite number above 0".into()));
        }
        match (b, tb) {
            ("ml", "g") => v * density / tf,
            ("g", "ml") => v / density / tf,
            _ => return Err(ConvertError::Incompatible { from: unit.into(), to: to.into() }),
        }
    };
    if out.is_finite() {
        Ok(out)
    } else {
        Err(ConvertError::BadNumber("the result overflows".into()))
    }
}

/// Rounds to 6 decimals as the reference does (Python's `round(x, 6)`): on the exact binary
/// value of `x`, ties to even. `5e-07` is a little below 0.0000005, so it rounds to `0.0`;
/// scaling by 10^6 first (`(x * 1e6).round()`) would round the product 0.5 away from zero.
/// Non-finite values are returned unchanged; `-0.0` becomes `0.0`.
pub fn round6(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    // `{:.6}` formats the exact binary value, rounding ties to even; reading it back gives the
    // nearest double to that decimal, as Python does.
    let r = format!("{x:.6}").parse::<f64>().unwrap_or(x);
    if r == 0.0 { 0.0 } else { r }
}

/// Problems with a Quantity object against the common schema's rules, as
/// `(json pointer, message)`; empty when valid.
///
/// Rules: `value` a number and `unit` a known Unit (both required); `tolerance` relative 0–1
/// and only with a RatioUnit (never on °C); `toleranceAbs` ≥ 0; not both; `densityGPerMl` > 0.
pub fn quantity_problems(q: &Value, at: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut push = |p: &str, m: &str| out.push((format!("{at}{p}"), m.to_owned()));
    let Some(map) = q.as_object() else {
        push("", "a quantity is an object");
        return out;
    };
    match map.get("value") {
        Some(Value::Number(n)) if n.to_f64() >= 0.0 => {}
        Some(_) => push("/value", "not a number ≥ 0"),
        None => push("/value", "required"),
    }
    let unit = map.get("unit").and_then(Value::as_str);
    match map.get("unit") {
        Some(Value::String(u)) if UNITS.contains(&u.as_str()) => {}
        Some(_) => push("/unit", "not a known unit"),
        None => push("/unit", "required"),
    }
    if let Some(tol) = map.get("tolerance") {
        match tol.as_f64() {
            Some(t) if (0.0..=1.0).contains(&t) && matches!(tol, Value::Number(_)) => {}
            _ => push("/tolerance", "relative tolerance must be a number from 0 to 1"),
        }
        if unit.is_some_and(|u| !is_ratio_unit(u)) {
            push(
                "/tolerance",
                "relative tolerance is allowed only on ratio units; use toleranceAbs",
            );
        }
        if map.contains_key("toleranceAbs") {
            push("/toleranceAbs", "tolerance and toleranceAbs together are forbidden");
        }
    }
    if let Some(tol) = map.get("toleranceAbs")
        && !matches!(tol, Value::Number(n) if n.to_f64() >= 0.0)
    {
        push("/toleranceAbs", "must be a number ≥ 0");
    }
    if let Some(d) = map.get("densityGPerMl")
        && !matches!(d, Value::Number(n) if n.to_f64() > 0.0)
    {
        push("/densityGPerMl", "must be a number > 0");
    }
    if let Some(p) = map.get("pieces")
        && !matches!(p, Value::Number(n) if n.to_f64() >= 0.0)
    {
        push("/pieces", "must be a number ≥ 0");
    }
    let nested =
        map.get("massPerPiece").map(|m| quantity_problems(m, &format!("{at}/massPerPiece")));
    for key in map.keys().filter(|k| k.as_str() != "massPerPiece") {
        if !matches!(
            key.as_str(),
            "value" | "unit" | "tolerance" | "toleranceAbs" | "densityGPerMl" | "pieces"
        ) && !key.starts_with("x-")
        {
            push(&format!("/{key}"), "unknown field");
        }
    }
    out.extend(nested.unwrap_or_default());
    out
}

/// Money: a decimal string amount (`^-?[0-9]{1,15}(\.[0-9]{1,6})?$`) and an ISO 4217 code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Money {
    amount: String,
    currency: String,
}

/// Money that does not follow the rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MoneyError {
    /// The amount is not a decimal string of the allowed shape.
    #[error("amount {0:?} is not a decimal string like \"12.50\"")]
    Amount(String),
    /// The currency is not three capital letters.
    #[error("currency {0:?} is not an ISO 4217 code")]
    Currency(String),
}

impl Money {
    /// Checks and wraps an amount and a currency.
    ///
    /// # Errors
    /// [`MoneyError`] for a malformed amount or currency.
    pub fn new(amount: &str, currency: &str) -> Result<Money, MoneyError> {
        if !valid_amount(amount) {
            return Err(MoneyError::Amount(amount.to_owned()));
        }
        if !(currency.len() == 3 && currency.bytes().all(|b| b.is_ascii_uppercase())) {
            return Err(MoneyError::Currency(currency.to_owned()));
        }
        Ok(Money { amount: amount.to_owned(), currency: currency.to_owned() })
    }

    /// The decimal amount text.
    pub fn amount(&self) -> &str {
        &self.amount
    }

    /// The currency code.
    pub fn currency(&self) -> &str {
        &self.currency
    }

    /// Exact amount in millionths (the schema allows at most 6 decimals and 15 integer digits).
    pub fn micros(&self) -> i128 {
        let (neg, digits) = match self.amount.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, self.amount.as_str()),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        let mut n: i128 = 0;
        for b in int.bytes().chain(frac.bytes()).chain(std::iter::repeat_n(b'0', 6 - frac.len())) {
            n = n * 10 + i128::from(b - b'0');
        }
        if neg { -n } else { n }
    }
}

/// The schema's money amount pattern.
pub fn valid_amount(amount: &str) -> bool {
    let digits = amount.strip_prefix('-').unwrap_or(amount);
    let (int, frac) = match digits.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (digits, None),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    (1..=15).contains(&int.len())
        && all_digits(int)
        && frac.is_none_or(|f| (1..=6).contains(&f.len()) && all_digits(f))
}

/// Turns a 0.1-style float amount into the 0.2 decimal string (shortest round-trip digits,
/// rounded to 6 decimals). `None` when the number cannot be a money amount.
pub fn amount_from_float(x: f64) -> Option<String> {
    if !x.is_finite() {
        return None;
    }
    let text = format!("{:.6}", x);
    let text = text.trim_end_matches('0').trim_end_matches('.').to_owned();
    let text = if text == "-0" { "0".to_owned() } else { text };
    valid_amount(&text).then_some(text)
}
