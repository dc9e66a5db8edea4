//! Household context facets and what each recipient may receive (RFC-0001, the `household`
//! profile; the `disclosure_policy` vectors).
//!
//! A home knows a great deal about the people in it. Facts stay in the home as *facets*
//! (`cw.facet.*`); what leaves is decided per facet by its `travel` class and per recipient by
//! its role:
//!
//! - `never`: the fact never leaves (withheld, `never_travels`);
//! - `derived`: only [`Constraint`]s derived from it leave, and only the constraint types the
//!   recipient's role may receive (withheld `not_allowed_for_role` when none is);
//! - `consented`: the fact itself may be disclosed, but only under a live [`ConsentGrant`] for
//!   that role covering the facet or its family (withheld `no_consent` otherwise).
//!
//! Unknown facets are withheld (`unknown_facet`), never guessed. Raw facet values never appear
//! in a [`Derivation`]: it names facets, it does not carry them.
//!
//! The facet registry ([`Facets::builtin`], `vocab/facets.json` 0.1.0) and the role table
//! ([`Roles::builtin`], `profiles/household/recipient-roles.json` 0.1.0) are compiled in; both
//! can be loaded from the standard's files instead ([`Facets::from_value`],
//! [`Roles::from_value`]).

use canonical_json::{Map, Value};

/// Whether a raw fact may leave the home.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Travel {
    /// Never.
    Never,
    /// Only as derived constraints.
    Derived,
    /// As a selective disclosure after consent.
    Consented,
}

impl Travel {
    fn parse(text: &str) -> Option<Travel> {
        match text {
            "never" => Some(Travel::Never),
            "derived" => Some(Travel::Derived),
            "consented" => Some(Travel::Consented),
            _ => None,
        }
    }
}

/// One facet of the registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facet {
    /// `cw.facet.…`.
    pub id: String,
    /// The family consents name (`self`, `household.health`, …).
    pub family: String,
    /// Whether it may leave.
    pub travel: Travel,
    /// The constraint types it may produce, in the registry's order.
    pub derives_to: Vec<String>,
}

/// Why a registry or role file cannot be loaded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TableError(String);

/// The facet registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facets {
    entries: Vec<Facet>,
}

/// `(id, family, travel, derivesTo)` of `vocab/facets.json` 0.1.0.
type Row = (&'static str, &'static str, Travel, &'static [&'static str]);

const FACETS: [Row; 139] = [
    ("self.identity", "self", Travel::Consented, &[]),
    ("self.firmware", "self", Travel::Consented, &[]),
    ("self.extensions", "self", Travel::Consented, &[]),
    ("self.licenses", "self", Travel::Consented, &[]),
    ("self.subscriptions", "self", Travel::Consented, &[]),
    ("self.warranty", "self", Travel::Consented, &[]),
    ("self.insurance", "self", Travel::Consented, &[]),
    ("self.recalls", "self", Travel::Consented, &["device_fault_summary"]),
    ("self.battery", "self", Travel::Derived, &["robot_runtime_minutes"]),
    ("self.health", "self", Travel::Derived, &["device_fault_summary"]),
    ("self.maintenance", "self", Travel::Consented, &[]),
    ("self.sensor_quality", "self", Travel::Derived, &["caution_level", "presence_required"]),
    ("self.hygiene", "self", Travel::Never, &[]),
    ("self.account_standing", "self", Travel::Never, &[]),
    ("self.capability_limits", "self", Travel::Derived, &["equipment_available", "caution_level"]),
    ("mandate.allowed_tasks", "mandate", Travel::Derived, &["serving_form"]),
    ("mandate.allowed_zones", "mandate", Travel::Derived, &["no_movement_zone"]),
    ("mandate.hard_nos", "mandate", Travel::Derived, &["avoid_ingredient", "caution_level"]),
    ("mandate.may_ask_owner", "mandate", Travel::Never, &[]),
    ("mandate.caution_level", "mandate", Travel::Derived, &["caution_level"]),
    ("mandate.authority", "mandate", Travel::Never, &[]),
    ("mandate.maker_guidance", "mandate", Travel::Never, &[]),
    ("mandate.emergency_powers", "mandate", Travel::Never, &[]),
    ("mandate.time_windows", "mandate", Travel::Derived, &["quiet_hours", "serve_window"]),
    ("household.people.composition", "household.people", Travel::Derived, &["portion_count"]),
    (
        "household.people.children",
        "household.people",
        Travel::Derived,
        &["child_safe_zones", "presence_required"],
    ),
    (
        "household.people.older_adults",
        "household.people",
        Travel::Derived,
        &["texture_level", "serving_form"],
    ),
    (
        "household.people.disability",
        "household.people",
        Travel::Derived,
        &["serving_form", "texture_level"],
    ),
    (
        "household.people.schedule",
        "household.people",
        Travel::Derived,
        &["no_movement_zone", "serve_window"],
    ),
    ("household.people.workers", "household.people", Travel::Derived, &["no_movement_zone"]),
    ("household.people.guests", "household.people", Travel::Derived, &["portion_count"]),
    ("household.people.pet_handlers", "household.people", Travel::Never, &[]),
    ("household.pets.animals", "household.pets", Travel::Derived, &["pet_safe_storage"]),
    ("household.pets.behaviour", "household.pets", Travel::Never, &[]),
    ("household.pets.toxic_foods_rule", "household.pets", Travel::Derived, &["pet_safe_storage"]),
    (
        "household.culture.religious_practice",
        "household.culture",
        Travel::Derived,
        &["diet_rule", "serve_window"],
    ),
    (
        "household.culture.prayer_windows",
        "household.culture",
        Travel::Derived,
        &["serve_window", "quiet_hours"],
    ),
    ("household.culture.fasting", "household.culture", Travel::Derived, &["serve_window"]),
    ("household.culture.eating_style", "household.culture", Travel::Derived, &["serving_form"]),
    ("household.culture.rituals", "household.culture", Travel::Never, &[]),
    ("household.culture.modesty_norms", "household.culture", Travel::Never, &[]),
    ("household.culture.language", "household.culture", Travel::Derived, &["serving_form"]),
    (
        "household.culture.offensive_items",
        "household.culture",
        Travel::Derived,
        &["avoid_ingredient"],
    ),
    ("household.culture.openness", "household.culture", Travel::Derived, &["cuisine_preference"]),
    ("household.tastes.cuisines", "household.tastes", Travel::Derived, &["cuisine_preference"]),
    ("household.tastes.spice", "household.tastes", Travel::Derived, &["spice_level"]),
    ("household.tastes.dislikes", "household.tastes", Travel::Derived, &["avoid_ingredient"]),
    ("household.tastes.presentation", "household.tastes", Travel::Derived, &["serving_form"]),
    ("household.tastes.temperature", "household.tastes", Travel::Derived, &["serving_form"]),
    ("household.tastes.timing", "household.tastes", Travel::Derived, &["serve_window"]),
    ("household.tastes.reheat_habits", "household.tastes", Travel::Never, &[]),
    ("household.tastes.drinks", "household.tastes", Travel::Never, &[]),
    ("household.tastes.extras", "household.tastes", Travel::Derived, &["serving_form"]),
    ("household.tastes.snacks", "household.tastes", Travel::Never, &[]),
    ("household.tastes.portions", "household.tastes", Travel::Derived, &["portion_count"]),
    (
        "household.health.allergies",
        "household.health",
        Travel::Derived,
        &["allergen_block", "labeling_required"],
    ),
    ("household.health.intolerances", "household.health", Travel::Derived, &["avoid_ingredient"]),
    ("household.health.diets", "household.health", Travel::Derived, &["diet_rule"]),
    ("household.health.conditions", "household.health", Travel::Never, &[]),
    (
        "household.health.medications",
        "household.health",
        Travel::Derived,
        &["avoid_ingredient", "serve_window"],
    ),
    ("household.health.swallowing", "household.health", Travel::Derived, &["texture_level"]),
    (
        "household.health.pregnancy",
        "household.health",
        Travel::Derived,
        &["avoid_ingredient", "diet_rule"],
    ),
    ("household.health.clinician_targets", "household.health", Travel::Never, &[]),
    ("household.behavior.waste", "household.behavior", Travel::Derived, &["portion_count"]),
    ("household.behavior.finish_signals", "household.behavior", Travel::Never, &[]),
    ("household.behavior.pace", "household.behavior", Travel::Never, &[]),
    ("household.behavior.dishes_return", "household.behavior", Travel::Never, &[]),
    ("household.behavior.disruption", "household.behavior", Travel::Never, &[]),
    ("household.behavior.feedback", "household.behavior", Travel::Never, &[]),
    ("household.behavior.owner_cooks", "household.behavior", Travel::Derived, &["serve_window"]),
    ("household.economics.budget_posture", "household.economics", Travel::Derived, &["budget_cap"]),
    ("household.economics.budget_period", "household.economics", Travel::Derived, &["budget_cap"]),
    ("household.economics.discounts", "household.economics", Travel::Never, &[]),
    ("space.layout", "space", Travel::Never, &[]),
    ("space.tool_positions", "space", Travel::Never, &[]),
    ("space.appliances", "space", Travel::Derived, &["heat_sources", "equipment_available"]),
    ("space.fridge_contents", "space", Travel::Derived, &["equipment_available"]),
    ("space.fridge_notes", "space", Travel::Derived, &["device_fault_summary"]),
    ("space.leftover_space", "space", Travel::Never, &[]),
    ("space.distances", "space", Travel::Never, &[]),
    ("space.seating", "space", Travel::Derived, &["serving_form"]),
    ("space.garden", "space", Travel::Derived, &["equipment_available"]),
    ("space.access_points", "space", Travel::Derived, &["access_point"]),
    ("space.child_locks", "space", Travel::Derived, &["child_safe_zones"]),
    (
        "space.environment.ventilation",
        "space.environment",
        Travel::Derived,
        &["equipment_available"],
    ),
    ("space.environment.climate", "space.environment", Travel::Never, &[]),
    ("space.environment.floor_level", "space.environment", Travel::Never, &[]),
    ("space.environment.foot_traffic", "space.environment", Travel::Derived, &["no_movement_zone"]),
    (
        "space.environment.lighting",
        "space.environment",
        Travel::Derived,
        &["caution_level", "presence_required"],
    ),
    ("space.environment.construction", "space.environment", Travel::Derived, &["no_movement_zone"]),
    ("space.environment.power", "space.environment", Travel::Derived, &["heat_sources"]),
    ("space.environment.connectivity", "space.environment", Travel::Never, &[]),
    ("space.environment.noise_limits", "space.environment", Travel::Derived, &["quiet_hours"]),
    ("space.environment.fire_safety", "space.environment", Travel::Never, &[]),
    ("space.environment.water", "space.environment", Travel::Never, &[]),
    ("devices.other_robots", "devices", Travel::Derived, &["equipment_available"]),
    ("devices.cleaning_robots", "devices", Travel::Derived, &["no_movement_zone"]),
    (
        "devices.smart_appliances",
        "devices",
        Travel::Derived,
        &["equipment_available", "heat_sources"],
    ),
    ("devices.status", "devices", Travel::Derived, &["device_fault_summary"]),
    ("devices.issues", "devices", Travel::Derived, &["device_fault_summary"]),
    ("devices.recalls", "devices", Travel::Derived, &["device_fault_summary"]),
    ("devices.alarm_history", "devices", Travel::Never, &[]),
    ("devices.ownership", "devices", Travel::Never, &[]),
    ("devices.interference", "devices", Travel::Derived, &["no_movement_zone"]),
    ("resources.power_quota", "resources", Travel::Derived, &["heat_sources"]),
    ("resources.gas_quota", "resources", Travel::Derived, &["heat_sources"]),
    ("resources.water_limits", "resources", Travel::Never, &[]),
    ("resources.tariffs", "resources", Travel::Derived, &["heat_sources", "serve_window"]),
    ("resources.backup_power", "resources", Travel::Derived, &["heat_sources"]),
    ("resources.outages", "resources", Travel::Derived, &["heat_sources"]),
    (
        "resources.cooking_time_rules",
        "resources",
        Travel::Derived,
        &["quiet_hours", "serve_window"],
    ),
    (
        "resources.kitchen_sharing",
        "resources",
        Travel::Derived,
        &["no_movement_zone", "serve_window"],
    ),
    ("commerce.shopping_mode", "commerce", Travel::Never, &[]),
    ("commerce.ordering_method", "commerce", Travel::Never, &[]),
    ("commerce.cadence", "commerce", Travel::Never, &[]),
    ("commerce.preferred_providers", "commerce", Travel::Never, &[]),
    ("commerce.exclusions", "commerce", Travel::Derived, &["avoid_ingredient"]),
    ("commerce.bundled_services", "commerce", Travel::Never, &[]),
    ("commerce.delivery_subscriptions", "commerce", Travel::Never, &[]),
    ("commerce.payment_authority", "commerce", Travel::Derived, &["budget_cap"]),
    ("commerce.receiving_rules", "commerce", Travel::Derived, &["delivery_window", "access_point"]),
    ("commerce.packaging", "commerce", Travel::Derived, &["packaging_preference"]),
    ("service.purpose", "service", Travel::Derived, &["serving_form", "portion_count"]),
    ("service.diners", "service", Travel::Derived, &["portion_count"]),
    ("service.serving_mode", "service", Travel::Derived, &["serving_form"]),
    ("service.reminders", "service", Travel::Never, &[]),
    ("service.table_setting", "service", Travel::Derived, &["serving_form"]),
    ("service.containers", "service", Travel::Derived, &["serving_form", "packaging_preference"]),
    ("service.labeling", "service", Travel::Derived, &["labeling_required"]),
    ("service.delivery_temperature", "service", Travel::Derived, &["serving_form"]),
    ("history.incidents", "history", Travel::Never, &[]),
    ("history.conflicts", "history", Travel::Never, &[]),
    ("history.escalations", "history", Travel::Consented, &[]),
    ("history.overrides", "history", Travel::Consented, &[]),
    ("history.give_ups", "history", Travel::Never, &[]),
    ("history.task_stats", "history", Travel::Consented, &[]),
    ("history.near_misses", "history", Travel::Never, &[]),
    ("history.recall_handling", "history", Travel::Consented, &[]),
    ("history.lessons", "history", Travel::Never, &[]),
];

/// `(role, constraint types)` of `profiles/household/recipient-roles.json` 0.1.0.
const ROLES: [(&str, &[&str]); 8] = [
    (
        "grocer",
        &[
            "delivery_window",
            "access_point",
            "allergen_block",
            "budget_cap",
            "labeling_required",
            "packaging_preference",
        ],
    ),
    ("delivery", &["delivery_window", "access_point", "packaging_preference"]),
    (
        "planner",
        &[
            "allergen_block",
            "diet_rule",
            "avoid_ingredient",
            "serve_window",
            "budget_cap",
            "heat_sources",
            "equipment_available",
            "texture_level",
            "portion_count",
            "presence_required",
            "caution_level",
            "robot_runtime_minutes",
            "serving_form",
            "cuisine_preference",
            "spice_level",
            "quiet_hours",
            "no_movement_zone",
            "pet_safe_storage",
            "child_safe_zones",
        ],
    ),
    ("device_maker", &["robot_runtime_minutes", "device_fault_summary"]),
    ("program", &[]),
    ("dataset", &[]),
    ("insurer", &["device_fault_summary"]),
    (
        "other_robot",
        &[
            "no_movement_zone",
            "quiet_hours",
            "child_safe_zones",
            "pet_safe_storage",
            "equipment_available",
        ],
    ),
];

impl Facets {
    /// The compiled-in registry.
    pub fn builtin() -> Facets {
        let entries = FACETS
            .iter()
            .map(|(id, family, travel, derives)| Facet {
                id: format!("cw.facet.{id}"),
                family: (*family).to_owned(),
                travel: *travel,
                derives_to: derives.iter().map(|d| (*d).to_owned()).collect(),
            })
            .collect();
        Facets { entries }
    }

    /// Reads the standard's `vocab/facets.json` (`{entries: [{id, family, travel, derivesTo?}]}`).
    ///
    /// # Errors
    /// [`TableError`] naming the first malformed entry.
    pub fn from_value(value: &Value) -> Result<Facets, TableError> {
        let items = value
            .get("entries")
            .and_then(Value::as_array)
            .ok_or_else(|| TableError("facets: `entries` must be an array".into()))?;
        let mut entries = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let text = |field: &str| {
                item.get(field).and_then(Value::as_str).ok_or_else(|| {
                    TableError(format!("facets: entries/{i}/{field} must be a string"))
                })
            };
            let travel = Travel::parse(text("travel")?).ok_or_else(|| {
                TableError(format!("facets: entries/{i}/travel is not never, derived or consented"))
            })?;
            let derives_to = match item.get("derivesTo") {
                None | Some(Value::Null) => Vec::new(),
                Some(v) => v
                    .as_array()
                    .and_then(|a| {
                        a.iter().map(|d| d.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>()
                    })
                    .ok_or_else(|| {
                        TableError(format!("facets: entries/{i}/derivesTo must be strings"))
                    })?,
            };
            entries.push(Facet {
                id: text("id")?.to_owned(),
                family: text("family")?.to_owned(),
                travel,
                derives_to,
            });
        }
        Ok(Facets { entries })
    }

    /// The facet with this id.
    pub fn get(&self, id: &str) -> Option<&Facet> {
        self.entries.iter().find(|f| f.id == id)
    }

    /// Every facet, in registry order.
    pub fn entries(&self) -> &[Facet] {
        &self.entries
    }
}

/// Which constraint types each recipient role may receive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roles {
    roles: Vec<(String, Vec<String>)>,
}

impl Roles {
    /// The compiled-in table.
    pub fn builtin() -> Roles {
        Roles {
            roles: ROLES
                .iter()
                .map(|(role, types)| {
                    ((*role).to_owned(), types.iter().map(|t| (*t).to_owned()).collect())
                })
                .collect(),
        }
    }

    /// Reads the standard's `recipient-roles.json` (`{roles: {role: [types]}}`).
    ///
    /// # Errors
    /// [`TableError`] for another shape.
    pub fn from_value(value: &Value) -> Result<Roles, TableError> {
        let map = value
            .get("roles")
            .and_then(Value::as_object)
            .ok_or_else(|| TableError("roles: `roles` must be an object".into()))?;
        let mut roles = Vec::new();
        for (role, types) in map {
            let types = types
                .as_array()
                .and_then(|a| {
                    a.iter().map(|t| t.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>()
                })
                .ok_or_else(|| TableError(format!("roles: {role} must be an array of strings")))?;
            roles.push((role.clone(), types));
        }
        Ok(Roles { roles })
    }

    /// The types `role` may receive (none for an unknown role).
    pub fn allowed(&self, role: &str) -> &[String] {
        self.roles.iter().find(|(r, _)| r == role).map_or(&[], |(_, t)| t.as_slice())
    }

    /// The role names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.roles.iter().map(|(r, _)| r.as_str())
    }
}

/// A consent grant (`{id?, recipientRole, scope: {facets?, families?}, withdrawnAt?}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsentGrant {
    /// The role it is granted to.
    pub recipient_role: String,
    /// Facet ids it covers.
    pub facets: Vec<String>,
    /// Facet families it covers.
    pub families: Vec<String>,
    /// Set once the grant is withdrawn (it then covers nothing).
    pub withdrawn: bool,
}

impl ConsentGrant {
    /// Reads a grant; missing lists are empty.
    ///
    /// # Errors
    /// [`TableError`] when `recipientRole` is missing or a list is not strings.
    pub fn from_value(value: &Value) -> Result<ConsentGrant, TableError> {
        let role = value
            .get("recipientRole")
            .and_then(Value::as_str)
            .ok_or_else(|| TableError("consent: recipientRole must be a string".into()))?;
        let list = |field: &str| -> Result<Vec<String>, TableError> {
            match value.get("scope").and_then(|s| s.get(field)) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(v) => v
                    .as_array()
                    .and_then(|a| {
                        a.iter().map(|x| x.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>()
                    })
                    .ok_or_else(|| TableError(format!("consent: scope.{field} must be strings"))),
            }
        };
        let withdrawn = !matches!(value.get("withdrawnAt"), None | Some(Value::Null))
            && value.get("withdrawnAt").and_then(Value::as_str) != Some("");
        Ok(ConsentGrant {
            recipient_role: role.to_owned(),
            facets: list("facets")?,
            families: list("families")?,
            withdrawn,
        })
    }

    fn covers(&self, role: &str, facet: &Facet) -> bool {
        !self.withdrawn
            && self.recipient_role == role
            && (self.facets.contains(&facet.id) || self.families.contains(&facet.family))
    }
}

/// A constraint that may leave the home, with the facets it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraint {
    /// The constraint type (`allergen_block`, `budget_cap`, …).
    pub kind: String,
    /// Facet ids it is derived from, in input order.
    pub derived_from: Vec<String>,
}

/// Why a facet is withheld.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Withheld {
    /// Not in the registry.
    UnknownFacet,
    /// Travel `never`.
    NeverTravels,
    /// Travel `consented` without a live grant.
    NoConsent,
    /// None of its derived types is allowed for the role.
    NotAllowedForRole,
}

impl Withheld {
    /// The profile's reason code.
    pub fn code(self) -> &'static str {
        match self {
            Withheld::UnknownFacet => "unknown_facet",
            Withheld::NeverTravels => "never_travels",
            Withheld::NoConsent => "no_consent",
            Withheld::NotAllowedForRole => "not_allowed_for_role",
        }
    }
}

/// What a recipient receives from a list of facets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Derivation {
    /// Derived constraints, one per type, in first-derivation order.
    pub constraints: Vec<Constraint>,
    /// Consented facets that may be disclosed.
    pub disclosed: Vec<String>,
    /// Facets that stay home, with the reason.
    pub withheld: Vec<(String, Withheld)>,
}

impl Derivation {
    /// The profile's wire shape `{constraints: [{type, derivedFrom}], disclosed, withheld: [{facet, reason}]}`.
    pub fn to_value(&self) -> Value {
        let constraints = self
            .constraints
            .iter()
            .map(|c| {
                let mut m = Map::new();
                m.insert("type".into(), c.kind.as_str().into());
                m.insert(
                    "derivedFrom".into(),
                    Value::Array(c.derived_from.iter().map(|f| f.as_str().into()).collect()),
                );
                Value::Object(m)
            })
            .collect();
        let withheld = self
            .withheld
            .iter()
            .map(|(facet, why)| {
                let mut m = Map::new();
                m.insert("facet".into(), facet.as_str().into());
                m.insert("reason".into(), why.code().into());
                Value::Object(m)
            })
            .collect();
        let mut m = Map::new();
        m.insert("constraints".into(), Value::Array(constraints));
        m.insert(
            "disclosed".into(),
            Value::Array(self.disclosed.iter().map(|f| f.as_str().into()).collect()),
        );
        m.insert("withheld".into(), Value::Array(withheld));
        Value::Object(m)
    }
}

/// What `role` may receive from `facet_ids` (in order) under `consents`.
pub fn derive(
    facets: &Facets,
    roles: &Roles,
    facet_ids: &[&str],
    role: &str,
    consents: &[ConsentGrant],
) -> Derivation {
    let allowed = roles.allowed(role);
    let mut out = Derivation::default();
    for id in facet_ids {
        let Some(facet) = facets.get(id) else {
            out.withheld.push(((*id).to_owned(), Withheld::UnknownFacet));
            continue;
        };
        match facet.travel {
            Travel::Never => out.withheld.push((facet.id.clone(), Withheld::NeverTravels)),
            Travel::Consented => {
                if consents.iter().any(|c| c.covers(role, facet)) {
                    out.disclosed.push(facet.id.clone());
                } else {
                    out.withheld.push((facet.id.clone(), Withheld::NoConsent));
                }
            }
            Travel::Derived => {
                let types: Vec<&String> =
                    facet.derives_to.iter().filter(|t| allowed.contains(t)).collect();
                if types.is_empty() {
                    out.withheld.push((facet.id.clone(), Withheld::NotAllowedForRole));
                    continue;
                }
                for kind in types {
                    match out.constraints.iter_mut().find(|c| &c.kind == kind) {
                        Some(c) if !c.derived_from.contains(&facet.id) => {
                            c.derived_from.push(facet.id.clone())
                        }
                        Some(_) => {}
                        None => out.constraints.push(Constraint {
                            kind: kind.clone(),
                            derived_from: vec![facet.id.clone()],
                        }),
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_constraint_per_type_lists_every_source() {
        let d = derive(
            &Facets::builtin(),
            &Roles::builtin(),
            &[
                "cw.facet.household.economics.budget_posture",
                "cw.facet.household.economics.budget_period",
            ],
            "grocer",
            &[],
        );
        assert_eq!(d.constraints.len(), 1);
        assert_eq!(d.constraints[0].derived_from.len(), 2);
    }

    #[test]
    fn a_grant_for_another_role_discloses_nothing() {
        let grant = ConsentGrant {
            recipient_role: "insurer".into(),
            facets: vec![],
            families: vec!["self".into()],
            withdrawn: false,
        };
        let d = derive(
            &Facets::builtin(),
            &Roles::builtin(),
            &["cw.facet.self.firmware"],
            "device_maker",
            &[grant],
        );
        assert_eq!(d.withheld, [("cw.facet.self.firmware".to_owned(), Withheld::NoConsent)]);
    }
}
