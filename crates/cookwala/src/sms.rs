//! The humanitarian SMS grammar (RFC-0003, the `humanitarian` profile).
//!
//! Food donors, kitchens and distribution points without smartphones report offers, claims,
//! handovers, distributions and menus by SMS. [`parse`] turns one message into an [`SmsCommand`]
//! or an [`SmsError`] with the profile's error code; [`SmsCommand::to_value`] gives the wire shape
//! the profile's vectors compare (`{ok: true, command, …}`), [`error_value`] the refusal shape
//! (`{ok: false, error}`). [`storage_findings`] lists the gateway checks a parsed offer or
//! handover fails (hot food below 60 °C, a chilled-class item declared ambient, …).
//!
//! The grammar, one command per message, case-insensitive, tokens separated by white space:
//!
//! ```text
//! OFFER <kg>KG <item words> <A|C|F|H> [T<temp>[C] | <temp>C] [UB<ddmm> | BB<ddmm>] [HV<ddmm>]
//! FARM  …same as OFFER…                     (an offer with origin farm)
//! CLAIM <offer> ALL | <kg>[KG]
//! HAND  <offer> <kg accepted> [REJ <kg rejected> <REASON>] [T<temp>]
//! DIST  <meals> MEALS <people> PEOPLE <kg>KG
//! MENU  <distribution> KCAL<n> SODIUM<mg> FV<g> [PROTEIN<g>]
//! HELP | CANCEL <id>
//! ```
//!
//! Arabic-Indic (U+0660–0669) and Persian (U+06F0–06F9) digits are read as ASCII digits
//! everywhere. Item words that imply a food class (dairy, poultry, meat, fish, egg, cooked food,
//! cooked rice) are reported as `foodClasses`; the list is deliberately small, as in the profile.
//!
//! The module is pure: no clock (day-month marks are not checked against a date).

use canonical_json::{Finite, Map, Value};

/// Why a message could not be read (the profile's `error` codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SmsError {
    /// The message is empty or only white space.
    #[error("empty")]
    Empty,
    /// The first word is not a command.
    #[error("unknown_command")]
    UnknownCommand,
    /// The command's arguments do not follow its grammar.
    #[error("usage")]
    Usage,
    /// A UB/BB/HV date mark whose day or month is out of range.
    #[error("bad_date")]
    BadDate,
}

impl SmsError {
    /// The profile's error code.
    pub fn code(self) -> &'static str {
        match self {
            SmsError::Empty => "empty",
            SmsError::UnknownCommand => "unknown_command",
            SmsError::Usage => "usage",
            SmsError::BadDate => "bad_date",
        }
    }

    /// A short explanation with the command's grammar, for people typing messages.
    pub fn help(self) -> &'static str {
        match self {
            SmsError::Empty => "the message is empty; send HELP for the commands",
            SmsError::UnknownCommand => {
                "commands: OFFER, FARM, CLAIM, HAND, DIST, MENU, CANCEL, HELP"
            }
            SmsError::Usage => "the command's arguments do not follow its grammar",
            SmsError::BadDate => "a UB/BB/HV date needs a day 01-31 and a month 01-12 (ddmm)",
        }
    }
}

/// How an offered food is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// `A`: ambient.
    Ambient,
    /// `C`: chilled.
    Chilled,
    /// `F`: frozen.
    Frozen,
    /// `H`: hot held.
    HotHeld,
}

impl Storage {
    fn from_code(code: &str) -> Option<Storage> {
        match code {
            "A" => Some(Storage::Ambient),
            "C" => Some(Storage::Chilled),
            "F" => Some(Storage::Frozen),
            "H" => Some(Storage::HotHeld),
            _ => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Storage::Ambient => "ambient",
            Storage::Chilled => "chilled",
            Storage::Frozen => "frozen",
            Storage::HotHeld => "hot_held",
        }
    }
}

/// A day and month (`dd-mm` on the wire); the year is the reader's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DayMonth {
    /// 1–31.
    pub day: u8,
    /// 1–12.
    pub month: u8,
}

impl DayMonth {
    fn text(self) -> String {
        format!("{:02}-{:02}", self.day, self.month)
    }
}

/// A date printed on the food.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateMark {
    /// `UB`: use by.
    UseBy(DayMonth),
    /// `BB`: best before.
    BestBefore(DayMonth),
}

/// An `OFFER` (or `FARM`) message.
#[derive(Clone, Debug, PartialEq)]
pub struct Offer {
    /// Kilograms offered.
    pub kg: f64,
    /// The item words, lower case.
    pub item: String,
    /// How it is kept.
    pub storage: Storage,
    /// True for `FARM` (origin farm).
    pub farm: bool,
    /// Temperature reported, °C.
    pub temp_c: Option<f64>,
    /// Use-by or best-before mark (the last one given).
    pub date_mark: Option<DateMark>,
    /// Harvest day (`HV`).
    pub harvested: Option<DayMonth>,
    /// Food classes implied by the item words.
    pub food_classes: Vec<&'static str>,
}

/// What a `CLAIM` takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ClaimAmount {
    /// `ALL`.
    All,
    /// Kilograms.
    Kg(f64),
}

/// Rejected food at a handover.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejection {
    /// Kilograms rejected.
    pub kg: f64,
    /// The reason code as sent (upper case).
    pub code: String,
}

impl Rejection {
    /// The profile's reason for the code; unknown codes are `other`.
    pub fn reason(&self) -> &'static str {
        reason_for_code(&self.code)
    }
}

/// The reason a handover reason code stands for (`other` when unknown).
pub fn reason_for_code(code: &str) -> &'static str {
    match code {
        "TEMP" => "temp_out_of_range",
        "DATE" => "past_use_by",
        "PACK" => "packaging_damaged",
        "ALLERG" => "allergen_unlabelled",
        "QTY" => "quantity_mismatch",
        "PEST" => "pests_or_contamination",
        "SPACE" => "no_capacity",
        "TRANSPORT" => "no_transport",
        "LATE" => "arrived_late",
        _ => "other",
    }
}

/// A per-meal nutrient of a `MENU` message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nutrient {
    /// `KCAL`.
    EnergyKcal,
    /// `SODIUM` (mg).
    SodiumMg,
    /// `FV`: fruit and vegetables (g).
    FruitVegG,
    /// `PROTEIN` (g).
    ProteinG,
}

impl Nutrient {
    fn from_prefix(token: &str) -> Option<(Nutrient, &str)> {
        [
            ("KCAL", Nutrient::EnergyKcal),
            ("SODIUM", Nutrient::SodiumMg),
            ("FV", Nutrient::FruitVegG),
            ("PROTEIN", Nutrient::ProteinG),
        ]
        .into_iter()
        .find_map(|(prefix, n)| token.strip_prefix(prefix).map(|rest| (n, rest)))
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Nutrient::EnergyKcal => "energyKcal",
            Nutrient::SodiumMg => "sodiumMg",
            Nutrient::FruitVegG => "fruitVegG",
            Nutrient::ProteinG => "proteinG",
        }
    }
}

/// One parsed message.
#[derive(Clone, Debug, PartialEq)]
pub enum SmsCommand {
    /// `OFFER` / `FARM`.
    Offer(Offer),
    /// `CLAIM <offer> ALL | <kg>`.
    Claim {
        /// The offer's code.
        offer: String,
        /// How much.
        amount: ClaimAmount,
    },
    /// `HAND <offer> <kg> [REJ <kg> <REASON>] [T<temp>]`.
    Hand {
        /// The offer's code.
        offer: String,
        /// Kilograms accepted.
        kg_accepted: f64,
        /// Rejected part.
        rejected: Option<Rejection>,
        /// Temperature measured at handover, °C (the last one given).
        temp_c: Option<f64>,
    },
    /// `DIST <meals> MEALS <people> PEOPLE <kg>KG`.
    Dist {
        /// Meals served.
        meals: u64,
        /// People served.
        people: u64,
        /// Kilograms of food used.
        kg: f64,
    },
    /// `MENU <distribution> KCAL… SODIUM… FV… [PROTEIN…]`.
    Menu {
        /// The distribution's code.
        distribution: String,
        /// Per-meal values, in message order (a repeated nutrient keeps the last value).
        per_meal: Vec<(Nutrient, f64)>,
    },
    /// `HELP`.
    Help,
    /// `CANCEL <id>`.
    Cancel {
        /// The offer or claim to cancel.
        id: String,
    },
}

impl SmsCommand {
    /// The command word of the wire shape (`FARM` reads as `OFFER`).
    pub fn name(&self) -> &'static str {
        match self {
            SmsCommand::Offer(_) => "OFFER",
            SmsCommand::Claim { .. } => "CLAIM",
            SmsCommand::Hand { .. } => "HAND",
            SmsCommand::Dist { .. } => "DIST",
            SmsCommand::Menu { .. } => "MENU",
            SmsCommand::Help => "HELP",
            SmsCommand::Cancel { .. } => "CANCEL",
        }
    }

    /// The profile's wire shape: `{ok: true, command, …}`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("ok".into(), true.into());
        m.insert("command".into(), self.name().into());
        match self {
            SmsCommand::Offer(o) => {
                m.insert("kg".into(), num(o.kg));
                m.insert("item".into(), o.item.as_str().into());
                m.insert("storage".into(), o.storage.as_str().into());
                if o.farm {
                    m.insert("origin".into(), "farm".into());
                }
                if let Some(t) = o.temp_c {
                    m.insert("tempC".into(), num(t));
                }
                if let Some(mark) = o.date_mark {
                    let (kind, dm) = match mark {
                        DateMark::UseBy(dm) => ("use_by", dm),
                        DateMark::BestBefore(dm) => ("best_before", dm),
                    };
                    let mut d = Map::new();
                    d.insert("kind".into(), kind.into());
                    d.insert("dayMonth".into(), dm.text().into());
                    m.insert("dateMark".into(), Value::Object(d));
                }
                if let Some(hv) = o.harvested {
                    m.insert("harvested".into(), hv.text().into());
                }
                if !o.food_classes.is_empty() {
                    let classes = o.food_classes.iter().map(|c| Value::from(*c)).collect();
                    m.insert("foodClasses".into(), Value::Array(classes));
                }
            }
            SmsCommand::Claim { offer, amount } => {
                m.insert("offer".into(), offer.as_str().into());
                match amount {
                    ClaimAmount::All => m.insert("all".into(), true.into()),
                    ClaimAmount::Kg(kg) => m.insert("kg".into(), num(*kg)),
                };
            }
            SmsCommand::Hand { offer, kg_accepted, rejected, temp_c } => {
                m.insert("offer".into(), offer.as_str().into());
                m.insert("kgAccepted".into(), num(*kg_accepted));
                if let Some(r) = rejected {
                    m.insert("kgRejected".into(), num(r.kg));
                    m.insert("reason".into(), r.reason().into());
                    m.insert("reasonCode".into(), r.code.as_str().into());
                }
                if let Some(t) = temp_c {
                    m.insert("tempC".into(), num(*t));
                }
            }
            SmsCommand::Dist { meals, people, kg } => {
                m.insert("meals".into(), Value::from(*meals));
                m.insert("people".into(), Value::from(*people));
                m.insert("kg".into(), num(*kg));
            }
            SmsCommand::Menu { distribution, per_meal } => {
                m.insert("distribution".into(), distribution.as_str().into());
                let per: Map =
                    per_meal.iter().map(|(n, v)| (n.as_str().to_owned(), num(*v))).collect();
                m.insert("perMeal".into(), Value::Object(per));
            }
            SmsCommand::Help => {}
            SmsCommand::Cancel { id } => {
                m.insert("id".into(), id.as_str().into());
            }
        }
        Value::Object(m)
    }
}

/// The refusal shape `{ok: false, error}`.
pub fn error_value(error: SmsError) -> Value {
    let mut m = Map::new();
    m.insert("ok".into(), false.into());
    m.insert("error".into(), error.code().into());
    Value::Object(m)
}

/// The wire shape of a parse result (either form).
pub fn result_value(result: &Result<SmsCommand, SmsError>) -> Value {
    match result {
        Ok(cmd) => cmd.to_value(),
        Err(e) => error_value(*e),
    }
}

fn num(x: f64) -> Value {
    Finite::new(x).map_or(Value::Null, Value::from)
}

/// Arabic-Indic and Persian digits to ASCII.
fn normalise_digits(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\u{0660}'..='\u{0669}' => char::from(b'0' + (c as u32 - 0x0660) as u8),
            '\u{06F0}'..='\u{06F9}' => char::from(b'0' + (c as u32 - 0x06F0) as u8),
            other => other,
        })
        .collect()
}

/// `\d+(\.\d+)?` (ASCII digits) as a number.
fn decimal(text: &str) -> Option<f64> {
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (text, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || frac.is_some_and(|f| !digits(f)) {
        return None;
    }
    text.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// `-?\d+(\.\d+)?`.
fn signed_decimal(text: &str) -> Option<f64> {
    match text.strip_prefix('-') {
        Some(rest) => decimal(rest).map(|x| -x),
        None => decimal(text),
    }
}

/// `<n>KG`.
fn kg_token(token: &str) -> Option<f64> {
    token.strip_suffix("KG").and_then(decimal)
}

/// `T<n>`, `T<n>C` or `<n>C`: a temperature needs a T prefix or a C suffix, so a plain number
/// stays a quantity.
fn temp_token(token: &str) -> Option<f64> {
    if let Some(rest) = token.strip_prefix('T') {
        let body = rest.strip_suffix('C').unwrap_or(rest);
        if let Some(t) = signed_decimal(body) {
            return Some(t);
        }
    }
    token.strip_suffix('C').and_then(signed_decimal)
}

enum Mark {
    Date(DateMark),
    Harvested(DayMonth),
}

/// `UB|BB|HV` + `ddmm`: `Ok(None)` when the token is no date mark.
fn date_token(token: &str) -> Result<Option<Mark>, SmsError> {
    let Some(prefix) = token.get(..2) else { return Ok(None) };
    let rest = &token[2..];
    if !matches!(prefix, "UB" | "BB" | "HV")
        || rest.len() != 4
        || !rest.bytes().all(|b| b.is_ascii_digit())
    {
        return Ok(None);
    }
    let day: u8 = rest[..2].parse().map_err(|_| SmsError::BadDate)?;
    let month: u8 = rest[2..].parse().map_err(|_| SmsError::BadDate)?;
    if !(1..=31).contains(&day) || !(1..=12).contains(&month) {
        return Err(SmsError::BadDate);
    }
    let dm = DayMonth { day, month };
    Ok(Some(match prefix {
        "UB" => Mark::Date(DateMark::UseBy(dm)),
        "BB" => Mark::Date(DateMark::BestBefore(dm)),
        _ => Mark::Harvested(dm),
    }))
}

/// Item words that imply a food class, in the order classes are reported.
const CLASS_WORDS: [(&[&str], &str); 7] = [
    (&["YOGURT", "YOGHURT", "MILK", "CHEESE", "LABNEH", "CREAM", "BUTTER", "ZABADI"], "dairy"),
    (&["CHICKEN", "POULTRY", "TURKEY"], "poultry"),
    (&["MEAT", "BEEF", "LAMB", "KOFTA", "MINCE", "LIVER"], "meat"),
    (&["FISH", "SHRIMP", "PRAWN", "TUNA", "SARDINE"], "fish"),
    (&["EGG", "EGGS"], "egg"),
    (&["COOKED", "HOT", "MEALS", "MEAL", "TRAYS", "SOUP", "STEW", "KOSHARI"], "cooked_food"),
    (&["RICE"], "cooked_rice"),
];

/// Classes that must be kept cold or hot, never ambient.
const TEMPERATURE_CONTROLLED: [&str; 7] =
    ["dairy", "poultry", "meat", "fish", "egg", "cooked_food", "cooked_rice"];

/// Food classes implied by an item's words. Rice alone is dry rice: `cooked_rice` is reported
/// only together with a cooked-food word.
pub fn food_classes(item: &str) -> Vec<&'static str> {
    let upper = item.to_uppercase();
    let words: Vec<&str> = upper.split_whitespace().collect();
    let mut out: Vec<&'static str> = CLASS_WORDS
        .iter()
        .filter(|(keys, _)| keys.iter().any(|k| words.contains(k)))
        .map(|(_, class)| *class)
        .collect();
    if !out.contains(&"cooked_food") {
        out.retain(|c| *c != "cooked_rice");
    }
    out
}

/// Parses one message.
///
/// # Errors
/// The profile's [`SmsError`] for a message that cannot be read.
pub fn parse(text: &str) -> Result<SmsCommand, SmsError> {
    let text = normalise_digits(text).to_uppercase();
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let Some((&command, args)) = tokens.split_first() else { return Err(SmsError::Empty) };
    match command {
        "HELP" => Ok(SmsCommand::Help),
        "CANCEL" => match args {
            [id] => Ok(SmsCommand::Cancel { id: (*id).to_owned() }),
            _ => Err(SmsError::Usage),
        },
        "OFFER" | "FARM" => parse_offer(args, command == "FARM").map(SmsCommand::Offer),
        "CLAIM" => parse_claim(args),
        "HAND" => parse_hand(args),
        "DIST" => parse_dist(args),
        "MENU" => parse_menu(args),
        _ => Err(SmsError::UnknownCommand),
    }
}

fn parse_offer(args: &[&str], farm: bool) -> Result<Offer, SmsError> {
    let [first, rest @ ..] = args else { return Err(SmsError::Usage) };
    let kg = kg_token(first).ok_or(SmsError::Usage)?;
    if rest.len() < 2 {
        return Err(SmsError::Usage);
    }
    let (mut storage, mut temp_c, mut date_mark, mut harvested) = (None, None, None, None);
    let mut words = Vec::new();
    for token in rest {
        if storage.is_none()
            && let Some(s) = Storage::from_code(token)
        {
            storage = Some(s);
            continue;
        }
        if temp_c.is_none()
            && let Some(t) = temp_token(token)
        {
            temp_c = Some(t);
            continue;
        }
        match date_token(token)? {
            Some(Mark::Date(mark)) => date_mark = Some(mark),
            Some(Mark::Harvested(dm)) => harvested = Some(dm),
            None => words.push(token.to_lowercase()),
        }
    }
    let storage = storage.ok_or(SmsError::Usage)?;
    if words.is_empty() {
        return Err(SmsError::Usage);
    }
    let item = words.join(" ");
    let food_classes = food_classes(&item);
    Ok(Offer { kg, item, storage, farm, temp_c, date_mark, harvested, food_classes })
}

fn parse_claim(args: &[&str]) -> Result<SmsCommand, SmsError> {
    let [offer, amount] = args else { return Err(SmsError::Usage) };
    let amount = if *amount == "ALL" {
        ClaimAmount::All
    } else if amount.ends_with("KG") {
        ClaimAmount::Kg(kg_token(amount).ok_or(SmsError::Usage)?)
    } else {
        ClaimAmount::Kg(decimal(amount).ok_or(SmsError::Usage)?)
    };
    Ok(SmsCommand::Claim { offer: (*offer).to_owned(), amount })
}

fn parse_hand(args: &[&str]) -> Result<SmsCommand, SmsError> {
    let [offer, accepted, rest @ ..] = args else { return Err(SmsError::Usage) };
    let kg_accepted = decimal(accepted).ok_or(SmsError::Usage)?;
    let (rejected, rest) = match rest {
        ["REJ", kg, code, tail @ ..] => {
            let kg = decimal(kg).ok_or(SmsError::Usage)?;
            (Some(Rejection { kg, code: (*code).to_owned() }), tail)
        }
        ["REJ", ..] => return Err(SmsError::Usage),
        other => (None, other),
    };
    let temp_c = rest.iter().filter_map(|t| temp_token(t)).next_back();
    Ok(SmsCommand::Hand { offer: (*offer).to_owned(), kg_accepted, rejected, temp_c })
}

fn parse_dist(args: &[&str]) -> Result<SmsCommand, SmsError> {
    let [meals, "MEALS", people, "PEOPLE", kg] = args else { return Err(SmsError::Usage) };
    let count = |t: &str| {
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse::<u64>().ok())?
    };
    Ok(SmsCommand::Dist {
        meals: count(meals).ok_or(SmsError::Usage)?,
        people: count(people).ok_or(SmsError::Usage)?,
        kg: kg_token(kg).ok_or(SmsError::Usage)?,
    })
}

fn parse_menu(args: &[&str]) -> Result<SmsCommand, SmsError> {
    let [distribution, values @ ..] = args else { return Err(SmsError::Usage) };
    if values.is_empty() {
        return Err(SmsError::Usage);
    }
    let mut per_meal: Vec<(Nutrient, f64)> = Vec::new();
    for token in values {
        let (nutrient, rest) = Nutrient::from_prefix(token).ok_or(SmsError::Usage)?;
        let value = decimal(rest).ok_or(SmsError::Usage)?;
        per_meal.retain(|(n, _)| *n != nutrient);
        per_meal.push((nutrient, value));
    }
    Ok(SmsCommand::Menu { distribution: (*distribution).to_owned(), per_meal })
}

/// Gateway checks on a parsed offer: the rule ids it fails (`safety.*` findings block the
/// offer). A chilled-class item declared ambient, hot food below 60 °C, chilled food above
/// 5 °C, frozen food above −18 °C. Other commands have no findings.
pub fn storage_findings(command: &SmsCommand) -> Vec<&'static str> {
    let mut out = Vec::new();
    if let SmsCommand::Offer(o) = command {
        if o.storage == Storage::Ambient
            && o.food_classes.iter().any(|c| TEMPERATURE_CONTROLLED.contains(c))
        {
            out.push("safety.storage_class_mismatch");
        }
        match (o.storage, o.temp_c) {
            (Storage::HotHeld, Some(t)) if t < 60.0 => out.push("safety.hot_hold_min"),
            (Storage::Chilled, Some(t)) if t > 5.0 => out.push("safety.chilled_max"),
            (Storage::Frozen, Some(t)) if t > -18.0 => out.push("safety.frozen_max"),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_and_case_are_normalised() {
        let cmd = parse("farm ١٢٠kg tomato a hv0411");
        assert!(matches!(cmd, Ok(SmsCommand::Offer(Offer { kg, farm: true, .. })) if kg == 120.0));
    }

    #[test]
    fn a_plain_number_is_never_a_temperature() {
        assert_eq!(temp_token("4"), None);
        assert_eq!(temp_token("4C"), Some(4.0));
        assert_eq!(temp_token("T-18"), Some(-18.0));
        assert_eq!(temp_token("C"), None);
    }

    #[test]
    fn rice_alone_is_not_cooked_rice() {
        assert!(food_classes("rice").is_empty());
        assert_eq!(food_classes("cooked rice trays"), ["cooked_food", "cooked_rice"]);
    }

    #[test]
    fn ambient_yogurt_is_a_block_finding() {
        let Ok(cmd) = parse("OFFER 36KG YOGURT A") else { panic!("parses") };
        assert_eq!(storage_findings(&cmd), ["safety.storage_class_mismatch"]);
    }
}
