//! Rule-pack checks of humanitarian documents (RFC-0003, the `humanitarian` profile).
//!
//! Kitchens and food banks record offers, handovers and distributions; a [`RulePack`] says what
//! a program refuses (`block`) or flags (`warn`). [`check`] applies a pack to one document:
//!
//! - every document with `items[]` (offers, handovers carrying their offer's items): item
//!   temperature rules against `readings[]` (`method: not_measured` readings are ignored),
//!   time out of temperature control for cooked food, use-by / best-before marks against the
//!   document's time (`at`, else `window.from`), and undeclared allergens (`"unknown"`);
//! - a `Distribution`: nutrient rules on `menu.perPersonDay` / `menu.perMeal`, absolute or as a
//!   share of energy (fat and sugars at 9 and 4 kcal per gram).
//!
//! Findings come out rule by rule, items in document order, each with the rule id, its
//! severity and a short detail. [`RulePack::who_codex_basic`] is the profile's default pack
//! (the `who-codex-basic` 0.1.0 thresholds, without its prose); [`RulePack::from_value`]
//! reads any pack file. Time comes from the document: nothing here reads a clock.

use canonical_json::{Map, Value};

use crate::time::parse_timestamp;

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The food must not go out.
    Block,
    /// Someone should look.
    Warn,
}

impl Severity {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Block => "block",
            Severity::Warn => "warn",
        }
    }
}

/// One rule of a pack.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// `safety.chilled_max`, `nutrition.sodium_per_day`, …
    pub id: String,
    /// `temperature`, `time`, `date_mark`, `allergen`, `nutrient` or `energy_share`.
    pub kind: String,
    /// `item_any`, `item_<storage>`, `item_cooked`, `menu_per_person_day`, `menu_per_meal`.
    pub applies: String,
    /// Lower bound, if any.
    pub min: Option<f64>,
    /// Upper bound, if any.
    pub max: Option<f64>,
    /// The nutrient a menu rule reads (`sodiumMg`, `fatG`, …).
    pub nutrient: Option<String>,
    /// The unit of the bounds (`pct_energy` makes a menu rule an energy share).
    pub unit: Option<String>,
    /// The date mark a `date_mark` rule reads (`use_by`, `best_before`).
    pub date_kind: Option<String>,
    /// Block or warn.
    pub severity: Severity,
}

/// A rule pack.
#[derive(Clone, Debug, PartialEq)]
pub struct RulePack {
    /// The pack id.
    pub id: String,
    /// Its rules, in order.
    pub rules: Vec<Rule>,
}

/// Why a pack or a document cannot be checked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CheckError(pub String);

fn err(message: impl Into<String>) -> CheckError {
    CheckError(message.into())
}

/// `(id, kind, applies, min, max, nutrient, unit, dateKind, block)` of `who-codex-basic` 0.1.0.
type RuleRow = (
    &'static str,
    &'static str,
    &'static str,
    Option<f64>,
    Option<f64>,
    Option<&'static str>,
    &'static str,
    Option<&'static str>,
    bool,
);

const WHO_CODEX_BASIC: [RuleRow; 16] = [
    (
        "nutrition.sodium_per_day",
        "nutrient",
        "menu_per_person_day",
        None,
        Some(2000.0),
        Some("sodiumMg"),
        "mg",
        None,
        false,
    ),
    (
        "nutrition.free_sugars",
        "energy_share",
        "menu_per_person_day",
        None,
        Some(10.0),
        Some("freeSugarsG"),
        "pct_energy",
        None,
        false,
    ),
    (
        "nutrition.total_fat",
        "energy_share",
        "menu_per_person_day",
        None,
        Some(30.0),
        Some("fatG"),
        "pct_energy",
        None,
        false,
    ),
    (
        "nutrition.saturated_fat",
        "energy_share",
        "menu_per_person_day",
        None,
        Some(10.0),
        Some("saturatedFatG"),
        "pct_energy",
        None,
        false,
    ),
    (
        "nutrition.trans_fat",
        "energy_share",
        "menu_per_person_day",
        None,
        Some(1.0),
        Some("transFatG"),
        "pct_energy",
        None,
        false,
    ),
    (
        "nutrition.fruit_veg",
        "nutrient",
        "menu_per_person_day",
        Some(400.0),
        None,
        Some("fruitVegG"),
        "g",
        None,
        false,
    ),
    (
        "nutrition.sodium_per_meal",
        "nutrient",
        "menu_per_meal",
        None,
        Some(800.0),
        Some("sodiumMg"),
        "mg",
        None,
        false,
    ),
    (
        "ration.energy",
        "nutrient",
        "menu_per_person_day",
        Some(2100.0),
        None,
        Some("energyKcal"),
        "kcal",
        None,
        false,
    ),
    (
        "ration.protein",
        "energy_share",
        "menu_per_person_day",
        Some(10.0),
        None,
        Some("proteinG"),
        "pct_energy",
        None,
        false,
    ),
    (
        "safety.chilled_max",
        "temperature",
        "item_chilled",
        None,
        Some(5.0),
        None,
        "degC",
        None,
        true,
    ),
    (
        "safety.hot_hold_min",
        "temperature",
        "item_hot_held",
        Some(60.0),
        None,
        None,
        "degC",
        None,
        true,
    ),
    (
        "safety.frozen_max",
        "temperature",
        "item_frozen",
        None,
        Some(-18.0),
        None,
        "degC",
        None,
        false,
    ),
    ("safety.cooked_room_time", "time", "item_cooked", None, Some(2.0), None, "hours", None, true),
    ("safety.use_by", "date_mark", "item_any", None, Some(0.0), None, "days", Some("use_by"), true),
    (
        "safety.best_before",
        "date_mark",
        "item_any",
        None,
        Some(0.0),
        None,
        "days",
        Some("best_before"),
        false,
    ),
    ("safety.allergen_unlabelled", "allergen", "item_any", None, None, None, "", None, true),
];

impl RulePack {
    /// The profile's default pack (`who-codex-basic` 0.1.0).
    pub fn who_codex_basic() -> RulePack {
        let rules = WHO_CODEX_BASIC
            .iter()
            .map(|(id, kind, applies, min, max, nutrient, unit, date_kind, block)| Rule {
                id: (*id).to_owned(),
                kind: (*kind).to_owned(),
                applies: (*applies).to_owned(),
                min: *min,
                max: *max,
                nutrient: nutrient.map(str::to_owned),
                unit: (!unit.is_empty()).then(|| (*unit).to_owned()),
                date_kind: date_kind.map(str::to_owned),
                severity: if *block { Severity::Block } else { Severity::Warn },
            })
            .collect();
        RulePack { id: "who-codex-basic".into(), rules }
    }

    /// The built-in pack with this id.
    pub fn builtin(id: &str) -> Option<RulePack> {
        (id == "who-codex-basic").then(RulePack::who_codex_basic)
    }

    /// Reads a RulePack document (`{id, rules: [{id, kind, applies, check, severity}]}`).
    ///
    /// # Errors
    /// [`CheckError`] naming the first malformed rule.
    pub fn from_value(value: &Value) -> Result<RulePack, CheckError> {
        let id = value.get("id").and_then(Value::as_str).unwrap_or("").to_owned();
        let items = value
            .get("rules")
            .and_then(Value::as_array)
            .ok_or_else(|| err("rules must be an array"))?;
        let mut rules = Vec::new();
        for (i, r) in items.iter().enumerate() {
            let text = |f: &str| {
                r.get(f)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| err(format!("rules/{i}/{f} must be a string")))
            };
            let check = r.get("check").cloned().unwrap_or(Value::Object(Map::new()));
            let bound = |f: &str| match check.get(f) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v
                    .as_f64()
                    .filter(|x| x.is_finite())
                    .map(Some)
                    .ok_or_else(|| err(format!("rules/{i}/check/{f} must be a number"))),
            };
            let opt = |f: &str| check.get(f).and_then(Value::as_str).map(str::to_owned);
            let severity = match text("severity")?.as_str() {
                "block" => Severity::Block,
                "warn" => Severity::Warn,
                other => {
                    return Err(err(format!("rules/{i}/severity {other:?} is not block or warn")));
                }
            };
            rules.push(Rule {
                id: text("id")?,
                kind: text("kind")?,
                applies: text("applies")?,
                min: bound("min")?,
                max: bound("max")?,
                nutrient: opt("nutrient"),
                unit: opt("unit"),
                date_kind: opt("dateKind"),
                severity,
            });
        }
        Ok(RulePack { id, rules })
    }

    /// One pack holding the rules of every pack in order; a later rule with the same id
    /// replaces the earlier one in place.
    pub fn merge(packs: &[RulePack]) -> RulePack {
        let mut rules: Vec<Rule> = Vec::new();
        for rule in packs.iter().flat_map(|p| &p.rules) {
            match rules.iter_mut().find(|r| r.id == rule.id) {
                Some(existing) => *existing = rule.clone(),
                None => rules.push(rule.clone()),
            }
        }
        let id = packs.iter().map(|p| p.id.as_str()).collect::<Vec<_>>().join("+");
        RulePack { id, rules }
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// The rule id.
    pub rule: String,
    /// Its severity.
    pub severity: Severity,
    /// What was found (`line 2: 7.5 °C`).
    pub detail: String,
}

impl Finding {
    /// `{rule, severity, detail}`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("rule".into(), self.rule.as_str().into());
        m.insert("severity".into(), self.severity.as_str().into());
        m.insert("detail".into(), self.detail.as_str().into());
        Value::Object(m)
    }
}

/// A number as Python's `str()` prints it (`7.0` → `7.0`, `7` → `7`).
fn shown(v: &Value) -> String {
    match v.as_i64() {
        Some(i) if v.as_number().is_some_and(|n| matches!(n, canonical_json::Number::Int(_))) => {
            i.to_string()
        }
        _ => v.as_f64().map_or_else(String::new, |x| format!("{x:?}")),
    }
}

/// A number shown the way `%g` does for the values menus hold.
fn general(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 { format!("{x:.0}") } else { format!("{x}") }
}

fn number(v: &Value, at: &str) -> Result<f64, CheckError> {
    v.as_f64().filter(|x| x.is_finite()).ok_or_else(|| err(format!("{at} must be a number")))
}

fn outside(rule: &Rule, v: f64) -> bool {
    rule.max.is_some_and(|m| v > m) || rule.min.is_some_and(|m| v < m)
}

/// Applies `pack` to one document.
///
/// # Errors
/// [`CheckError`] for a document the rules cannot read (a reading that is not a number, a
/// document with items but no readable `at` / `window.from`, an unreadable `cookedAt` or date).
pub fn check(doc: &Value, pack: &RulePack) -> Result<Vec<Finding>, CheckError> {
    let mut out = item_findings(doc, pack)?;
    if doc.get("kind").and_then(Value::as_str) == Some("Distribution") {
        out.extend(menu_findings(doc, pack)?);
    }
    Ok(out)
}

fn item_findings(doc: &Value, pack: &RulePack) -> Result<Vec<Finding>, CheckError> {
    let items = doc.get("items").and_then(Value::as_array).unwrap_or_default();
    if items.is_empty() {
        return Ok(Vec::new());
    }
    let when_text = doc
        .get("at")
        .and_then(Value::as_str)
        .or_else(|| doc.get("window").and_then(|w| w.get("from")).and_then(Value::as_str))
        .ok_or_else(|| err("a document with items needs `at` or `window.from`"))?;
    let when = parse_timestamp(when_text)
        .map_err(|_| err(format!("at {when_text:?} is not a timestamp")))?;
    let today = when_text.get(..10).unwrap_or("");
    let line =
        |v: &Value| v.get("lineId").map(|l| l.as_str().map_or_else(|| shown(l), str::to_owned));
    let readings: Vec<(String, &Value)> = doc
        .get("readings")
        .and_then(Value::as_array)
        .unwrap_or_default()
        .iter()
        .filter(|r| r.get("method").and_then(Value::as_str) != Some("not_measured"))
        .filter_map(|r| line(r).map(|l| (l, r)))
        .collect();
    let mut out = Vec::new();
    for rule in &pack.rules {
        for item in items {
            let id = line(item).unwrap_or_default();
            let storage = item.get("storage").and_then(Value::as_str).unwrap_or("");
            let cooked = item.get("cooked").is_some_and(crate::signature::truthy);
            let applies = rule.applies == "item_any"
                || rule.applies.strip_prefix("item_") == Some(storage)
                || (rule.applies == "item_cooked" && cooked);
            if !applies {
                continue;
            }
            let finding =
                |detail: String| Finding { rule: rule.id.clone(), severity: rule.severity, detail };
            match rule.kind.as_str() {
                "temperature" => {
                    // The last reading of a line counts, as a later measurement replaces an earlier one.
                    if let Some((_, r)) = readings.iter().rev().find(|(l, _)| *l == id) {
                        let t = r
                            .get("tempC")
                            .ok_or_else(|| err(format!("reading of line {id} has no tempC")))?;
                        if outside(rule, number(t, &format!("reading of line {id}: tempC"))?) {
                            out.push(finding(format!("line {id}: {} °C", shown(t))));
                        }
                    }
                }
                "time" => {
                    let controlled = matches!(storage, "hot_held" | "chilled" | "frozen");
                    if let (Some(at), false) =
                        (item.get("cookedAt").and_then(Value::as_str), controlled)
                    {
                        let cooked_at = parse_timestamp(at).map_err(|_| {
                            err(format!("line {id}: cookedAt {at:?} is not a timestamp"))
                        })?;
                        let seconds = (when.unix_seconds() - cooked_at.unix_seconds()) as f64
                            + (f64::from(when.subsec_nanos())
                                - f64::from(cooked_at.subsec_nanos()))
                                / 1e9;
                        let hours = seconds / 3600.0;
                        if rule.max.is_some_and(|m| hours > m) {
                            out.push(finding(format!(
                                "line {id}: {hours:.1} h since cooking without temperature control"
                            )));
                        }
                    }
                }
                "date_mark" => {
                    let mark = item.get("dateMark");
                    let kind = mark.and_then(|m| m.get("kind")).and_then(Value::as_str);
                    if kind.is_some() && kind == rule.date_kind.as_deref() {
                        let date =
                            mark.and_then(|m| m.get("date")).and_then(Value::as_str).unwrap_or("");
                        if !is_date(date) {
                            return Err(err(format!(
                                "line {id}: dateMark.date {date:?} is not a date"
                            )));
                        }
                        if date < today {
                            out.push(finding(format!("line {id}: {} {date}", kind.unwrap_or(""))));
                        }
                    }
                }
                "allergen" => {
                    let unknown = item
                        .get("allergens")
                        .and_then(Value::as_array)
                        .is_some_and(|a| a.iter().any(|x| x.as_str() == Some("unknown")));
                    if unknown {
                        out.push(finding(format!("line {id}: allergens not declared")));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

/// `YYYY-MM-DD` (so string order is date order).
fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter().enumerate().all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

fn kcal_per_gram(nutrient: &str) -> Option<f64> {
    match nutrient {
        "fatG" | "saturatedFatG" | "transFatG" => Some(9.0),
        "proteinG" | "freeSugarsG" => Some(4.0),
        _ => None,
    }
}

fn menu_findings(doc: &Value, pack: &RulePack) -> Result<Vec<Finding>, CheckError> {
    let mut out = Vec::new();
    let Some(menu) = doc.get("menu") else { return Ok(out) };
    for rule in &pack.rules {
        let scope = match rule.applies.as_str() {
            "menu_per_person_day" => "perPersonDay",
            "menu_per_meal" => "perMeal",
            _ => continue,
        };
        let (Some(values), Some(name)) = (menu.get(scope), rule.nutrient.as_deref()) else {
            continue;
        };
        let Some(raw) = values.get(name) else { continue };
        let x = number(raw, &format!("menu.{scope}.{name}"))?;
        let (v, text) = if rule.unit.as_deref() == Some("pct_energy") {
            let energy = match values.get("energyKcal") {
                None | Some(Value::Null) => continue,
                Some(e) => number(e, &format!("menu.{scope}.energyKcal"))?,
            };
            let Some(factor) = kcal_per_gram(name) else {
                return Err(err(format!("rule {}: no energy factor for {name}", rule.id)));
            };
            if energy == 0.0 {
                continue;
            }
            let v = x * factor / energy * 100.0;
            (v, format!("{v:.1} % of energy"))
        } else {
            (x, format!("{} {}", general(x), rule.unit.as_deref().unwrap_or("")))
        };
        if outside(rule, v) {
            out.push(Finding {
                rule: rule.id.clone(),
                severity: rule.severity,
                detail: format!("{scope}: {text}"),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        match canonical_json::parse(text.as_bytes()) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    fn rules(doc: &str) -> Vec<String> {
        match check(&json(doc), &RulePack::who_codex_basic()) {
            Ok(f) => f.into_iter().map(|f| f.rule).collect(),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn offers_are_checked_item_by_item() {
        let offer = r#"{"kind":"Offer","at":"2026-11-05T10:00:00+02:00",
            "items":[{"lineId":"1","storage":"chilled","dateMark":{"kind":"use_by","date":"2026-11-04"}},
                     {"lineId":"2","storage":"ambient","cooked":true,"cookedAt":"2026-11-05T07:00:00+02:00","allergens":["unknown"]}],
            "readings":[{"lineId":"1","tempC":7.5},{"lineId":"2","tempC":30,"method":"not_measured"}]}"#;
        assert_eq!(
            rules(offer),
            [
                "safety.chilled_max",
                "safety.cooked_room_time",
                "safety.use_by",
                "safety.allergen_unlabelled"
            ]
        );
    }

    #[test]
    fn menus_are_checked_as_amounts_and_energy_shares() {
        let dist = r#"{"kind":"Distribution","menu":{"perPersonDay":{"energyKcal":2000,"fatG":80,"proteinG":60,"sodiumMg":2500,"fruitVegG":450},
            "perMeal":{"sodiumMg":700}}}"#;
        // Fat 36 % of energy, sodium 2.5 g, energy below 2,100 kcal; protein 12 % is fine.
        assert_eq!(
            rules(dist),
            ["nutrition.sodium_per_day", "nutrition.total_fat", "ration.energy"]
        );
    }

    #[test]
    fn a_document_with_items_needs_a_time() {
        let e = check(
            &json(r#"{"items":[{"lineId":"1","storage":"chilled"}]}"#),
            &RulePack::who_codex_basic(),
        );
        assert!(e.is_err());
    }
}
