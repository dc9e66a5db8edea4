//! Supply and demand signals (RFC-0007, the `supply` profile).
//!
//! Food banks publish what they will need (`DemandSignal`) and producers what they have
//! (`SupplySignal`) so that growers and kitchens can plan, without any signal becoming a way to
//! follow one household or set a price. [`check`] applies the profile's policy and returns every
//! reason a signal breaks it, sorted and without duplicates (empty means publishable):
//!
//! - a demand signal aggregates at least [`Policy::min_sources`] contributing sources and is
//!   published at least [`Policy::min_delay_days`] late, with `prices` absent or `none`;
//! - no signal carries a price (`price`, `prices`, `unitPrice`, `priceRange`);
//! - signals are about an ingredient class (`cw.ing.class.*` or an `x-` extension), never a
//!   product;
//! - a region finer than admin1 (`admin2`, `pcode`) needs [`Policy::fine_region_min_sources`];
//! - a supply signal is open to all buyers (`openToAll: true`).

use canonical_json::Value;

/// The policy's thresholds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Minimum contributing sources of a demand signal.
    pub min_sources: u64,
    /// Minimum delay, in days, before a demand signal is published.
    pub min_delay_days: u64,
    /// Minimum sources for a region finer than admin1.
    pub fine_region_min_sources: u64,
}

impl Default for Policy {
    /// The profile's values: 20 sources, 7 days, 100 sources for a fine region.
    fn default() -> Policy {
        Policy { min_sources: 20, min_delay_days: 7, fine_region_min_sources: 100 }
    }
}

/// One way a signal breaks the policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SignalReason {
    /// A supply signal not open to all buyers.
    MustBeOpenToAll,
    /// A product instead of an ingredient class.
    ClassLevelRequired,
    /// Published sooner than the minimum delay.
    DelayTooShort,
    /// A price field.
    PricesNotAllowed,
    /// A region finer than admin1 with too few sources.
    RegionTooFine,
    /// Too few contributing sources.
    TooFewSources,
    /// Neither `DemandSignal` nor `SupplySignal`.
    UnknownKind,
}

impl SignalReason {
    /// The profile's reason code.
    pub fn code(self) -> &'static str {
        match self {
            SignalReason::MustBeOpenToAll => "must_be_open_to_all",
            SignalReason::ClassLevelRequired => "class_level_required",
            SignalReason::DelayTooShort => "delay_too_short",
            SignalReason::PricesNotAllowed => "prices_not_allowed",
            SignalReason::RegionTooFine => "region_too_fine",
            SignalReason::TooFewSources => "too_few_sources",
            SignalReason::UnknownKind => "unknown_kind",
        }
    }
}

/// A number field, or 0 when absent or not a number (so a missing count fails closed).
fn count(signal: &Value, field: &str) -> f64 {
    signal.get(field).and_then(Value::as_f64).unwrap_or(0.0)
}

/// JSON truthiness of an optional field (present and not null, false, 0, "", [] or {}).
fn present(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(v) => v.as_f64().is_none_or(|x| x != 0.0),
    }
}

/// Every reason `signal` breaks `policy`, in the profile's (alphabetical) order, each once.
pub fn check(signal: &Value, policy: Policy) -> Vec<SignalReason> {
    let mut reasons = Vec::new();
    let kind = signal.get("kind").and_then(Value::as_str);
    let sources = count(signal, "contributingSources");
    match kind {
        Some("DemandSignal") => {
            if sources < policy.min_sources as f64 {
                reasons.push(SignalReason::TooFewSources);
            }
            if count(signal, "delayDays") < policy.min_delay_days as f64 {
                reasons.push(SignalReason::DelayTooShort);
            }
            // `prices` present with anything but "none" (null included) declares prices.
            if signal.get("prices").is_some_and(|p| p.as_str() != Some("none")) {
                reasons.push(SignalReason::PricesNotAllowed);
            }
        }
        Some("SupplySignal") => {
            if signal.get("openToAll").and_then(Value::as_bool) != Some(true) {
                reasons.push(SignalReason::MustBeOpenToAll);
            }
        }
        _ => reasons.push(SignalReason::UnknownKind),
    }
    let priced = ["price", "prices", "unitPrice", "priceRange"].iter().any(|field| {
        match signal.get(field) {
            None | Some(Value::Null) => false,
            Some(v) => v.as_str() != Some("none"),
        }
    });
    if priced {
        reasons.push(SignalReason::PricesNotAllowed);
    }
    let class = signal.get("ingredientClass").and_then(Value::as_str).unwrap_or("");
    if !class.starts_with("cw.ing.class.") && !class.starts_with("x-") {
        reasons.push(SignalReason::ClassLevelRequired);
    }
    let region = signal.get("region");
    let fine = region.is_some_and(|r| present(r.get("admin2")) || present(r.get("pcode")));
    if fine && sources < policy.fine_region_min_sources as f64 {
        reasons.push(SignalReason::RegionTooFine);
    }
    reasons.sort_by_key(|r| r.code());
    reasons.dedup();
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_sorted_and_unique() {
        let signal = canonical_json::parse(
            br#"{"kind":"DemandSignal","ingredientClass":"cw.ing.lentils","prices":"list","priceRange":{"low":"1"}}"#,
        );
        let Ok(signal) = signal else { panic!("valid json") };
        let codes: Vec<&str> = check(&signal, Policy::default()).iter().map(|r| r.code()).collect();
        assert_eq!(
            codes,
            ["class_level_required", "delay_too_short", "prices_not_allowed", "too_few_sources"]
        );
    }
}
