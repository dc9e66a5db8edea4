//! The recipes and devices a hub knows: the built-in ones plus any loaded from files
//! (a samples `bundle.json`, folders of recipe / capabilities JSON files, one device file).
//!
//! Every loaded document is parsed strictly and validated with the Core document types; a
//! malformed file is refused with a [`CatalogError`] naming it. Documents are kept byte-for-byte
//! as loaded (no migration), so the recipe hash a client computes from `/v1/tools/recipes/{id}`
//! is the hash the hub checks.
//!
//! **Safety limits.** Every device enforces the built-in default pack
//! ([`cookwala::limits::default_pack`]), narrowed — never widened — by the SafetyLimits that
//! come with it:
//!
//! - a samples bundle's top-level `safetyLimits` (a SafetyLimits document) applies to every
//!   device loaded from that bundle;
//! - a Capabilities document may carry its own pack as the extension `x-safetyLimits` (a
//!   SafetyLimits document at the top level; the Core `safety.policyPacks` only names packs, so
//!   it cannot carry limits).
//!
//! Both are validated as SafetyLimits (a malformed one refuses the file). Their limits are
//! added to the default pack with [`cookwala::limits::narrow`], which only adds: each check
//! then takes the stricter bound, and a looser limit under a default id changes nothing
//! because the default one stays. A limit that repeats a default limit (same id, same effect:
//! everything but `message` and `source`) is dropped, so a bundle that ships the default pack
//! itself narrows nothing. The pack a device serves at `/v1/safety-limits` is
//! [`effective_limits`] of [`Catalog::device_limits`], and the simulator is given the same
//! narrowing pack (`SimConfig::extra_limits`), so it enforces exactly what is served. The
//! served pack keeps the default's `id` and `version` (the simulator's log names the pack the
//! same way); its `limits` list is the longer one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use canonical_json::Value;

/// A file that could not be loaded, and why.
#[derive(Debug, thiserror::Error)]
#[error("{}: {why}", file.display())]
pub struct CatalogError {
    /// The file (or folder) at fault.
    pub file: PathBuf,
    /// What is wrong with it.
    pub why: String,
}

fn fail(file: &Path, why: impl Into<String>) -> CatalogError {
    CatalogError { file: file.to_owned(), why: why.into() }
}

#[derive(Clone, Debug)]
struct Entry {
    doc: Value,
    source: String,
    /// For a recipe: the name `/v1/tools/recipes` lists it under (a bundle key or file stem,
    /// as the upstream hub names recipes; the id for built-in ones).
    name: String,
    /// For a device: the pack narrowing the default one (`None`: nothing narrows it).
    limits: Option<Value>,
}

/// The pack a device enforces: the executor's `pack` narrowed by `extra` (what the simulator
/// computes from the same `extra_limits`).
pub fn effective_limits(pack: &Value, extra: Option<&Value>) -> Value {
    match extra {
        Some(e) => cookwala::limits::narrow(pack, e),
        None => pack.clone(),
    }
}

/// A limit without its prose: two limits with the same effect compare equal.
fn effect(limit: &Value) -> Value {
    let mut l = limit.clone();
    if let Some(m) = l.as_object_mut() {
        m.remove("message");
        m.remove("source");
    }
    l
}

/// The pack narrowing the default one for a device with these packs: their limits, without
/// those that repeat a default limit or an earlier one; `None` when no limit is left.
fn narrowing(base: &Value, packs: &[&Value]) -> Option<Value> {
    let mut seen: Vec<Value> = base
        .get("limits")
        .and_then(Value::as_array)
        .unwrap_or_default()
        .iter()
        .map(effect)
        .collect();
    let mut kept = Vec::new();
    for limit in packs.iter().flat_map(|p| p.get("limits").and_then(Value::as_array)).flatten() {
        let e = effect(limit);
        if !seen.iter().any(|s| s.loose_eq(&e)) {
            seen.push(e);
            kept.push(limit.clone());
        }
    }
    let first = packs.first()?;
    if kept.is_empty() {
        return None;
    }
    let mut pack = (*first).clone();
    if let Some(m) = pack.as_object_mut() {
        m.insert("limits".into(), Value::Array(kept));
    }
    Some(pack)
}

/// Recipes by id and devices by id, each with aliases (a bundle key, a file stem, an actor id).
#[derive(Clone, Debug)]
pub struct Catalog {
    /// The executor's SafetyLimits pack (the built-in default, or `serve --limits`).
    pack: Value,
    recipes: BTreeMap<String, Entry>,
    recipe_alias: BTreeMap<String, String>,
    devices: BTreeMap<String, Entry>,
    device_alias: BTreeMap<String, String>,
}

impl Default for Catalog {
    fn default() -> Catalog {
        Catalog::builtin()
    }
}

impl Catalog {
    /// The built-in recipes and devices only.
    pub fn builtin() -> Catalog {
        let mut c = Catalog::empty();
        for e in cookwala_sim::builtin::RECIPES {
            if let Some(doc) = cookwala_sim::builtin::recipe(e.id) {
                let (source, name) = ("built-in".to_owned(), e.id.to_owned());
                c.recipes.insert(e.id.to_owned(), Entry { doc, source, name, limits: None });
            }
        }
        for (id, _) in cookwala_sim::builtin::DEVICES {
            if let Some(doc) = cookwala_sim::builtin::device(id) {
                c.alias_actor(id, &doc);
                let own: Vec<&Value> = doc.get("x-safetyLimits").into_iter().collect();
                let limits = narrowing(&c.pack, &own);
                let (source, name) = ("built-in".to_owned(), (*id).to_owned());
                c.devices.insert((*id).to_owned(), Entry { doc, source, name, limits });
            }
        }
        c
    }

    /// No recipes and no devices (`serve --no-builtin`), with the built-in default pack.
    pub fn empty() -> Catalog {
        Catalog {
            pack: cookwala::limits::default_pack(),
            recipes: BTreeMap::new(),
            recipe_alias: BTreeMap::new(),
            devices: BTreeMap::new(),
            device_alias: BTreeMap::new(),
        }
    }

    /// Replaces the executor's SafetyLimits pack (the device maker's, `serve --limits`). Every
    /// device enforces it, narrowed by its own packs: nothing else can widen it. Set it before
    /// loading files, so narrowing packs are compared with the pack they narrow.
    ///
    /// # Errors
    /// The document is not a valid SafetyLimits pack.
    pub fn set_pack(&mut self, file: &Path, pack: Value) -> Result<(), CatalogError> {
        check(file, &pack, "SafetyLimits")?;
        self.pack = pack;
        Ok(())
    }

    /// The executor's SafetyLimits pack, before any device narrows it.
    pub fn pack(&self) -> &Value {
        &self.pack
    }

    /// The names `/v1/tools/recipes` lists, sorted: the bundle key or file stem each recipe
    /// was loaded under (the upstream hub's names), else its id.
    pub fn recipe_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.recipes.values().map(|e| e.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The id of the device loaded from `file` (the same file, however it is named), if any.
    pub fn device_from_file(&self, file: &Path) -> Option<&str> {
        let wanted = std::fs::canonicalize(file).ok()?;
        self.devices.iter().find_map(|(id, e)| {
            let same = std::fs::canonicalize(&e.source).ok().is_some_and(|p| p == wanted);
            same.then_some(id.as_str())
        })
    }

    /// The recipe with this id, alias or global reference (`cw:authority:id`).
    pub fn recipe(&self, key: &str) -> Option<&Value> {
        let id = self.recipe_id(key)?;
        self.recipes.get(id).map(|e| &e.doc)
    }

    /// The canonical id of a recipe key (id, alias or global reference).
    pub fn recipe_id(&self, key: &str) -> Option<&str> {
        for k in [key, cookwala::precheck::ref_id(key)] {
            if let Some((id, _)) = self.recipes.get_key_value(k) {
                return Some(id);
            }
            if let Some(id) = self.recipe_alias.get(k) {
                return Some(id);
            }
        }
        None
    }

    /// The device with this id or alias.
    pub fn device(&self, key: &str) -> Option<&Value> {
        let id = self.device_id(key)?;
        self.devices.get(id).map(|e| &e.doc)
    }

    /// The SafetyLimits narrowing the default pack on the device with this id or alias (its
    /// bundle's pack and its own `x-safetyLimits`, see the module docs); `None` when the device
    /// enforces the default pack as it is (or is unknown).
    pub fn device_limits(&self, key: &str) -> Option<&Value> {
        let id = self.device_id(key)?;
        self.devices.get(id).and_then(|e| e.limits.as_ref())
    }

    /// The SafetyLimits the device with this id or alias enforces (the default pack narrowed
    /// by [`Catalog::device_limits`]).
    pub fn safety_limits(&self, key: &str) -> Option<Value> {
        self.device_id(key)?;
        Some(effective_limits(&self.pack, self.device_limits(key)))
    }

    /// The canonical id of a device key (id or alias).
    pub fn device_id(&self, key: &str) -> Option<&str> {
        if let Some((id, _)) = self.devices.get_key_value(key) {
            return Some(id);
        }
        self.device_alias.get(key).map(String::as_str)
    }

    /// Recipe ids, sorted.
    pub fn recipe_ids(&self) -> impl Iterator<Item = &str> {
        self.recipes.keys().map(String::as_str)
    }

    /// Device ids, sorted.
    pub fn device_ids(&self) -> impl Iterator<Item = &str> {
        self.devices.keys().map(String::as_str)
    }

    fn alias_actor(&mut self, id: &str, doc: &Value) {
        if let Some(actor) = doc.pointer("/actor/id").and_then(Value::as_str)
            && actor != id
            && !self.devices.contains_key(actor)
        {
            self.device_alias.entry(actor.to_owned()).or_insert_with(|| id.to_owned());
        }
    }

    /// Adds a Recipe document read from `file` (its `id` is the key; `alias`, e.g. a bundle
    /// key or file stem, also finds it). Returns the id.
    ///
    /// # Errors
    /// The document is not a valid Recipe, or its id is already taken.
    pub fn add_recipe(
        &mut self,
        file: &Path,
        doc: Value,
        alias: Option<&str>,
    ) -> Result<String, CatalogError> {
        check(file, &doc, "Recipe")?;
        let id = doc
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| fail(file, "the recipe has no id"))?
            .to_owned();
        if let Some(prev) = self.recipes.get(&id) {
            return Err(fail(file, format!("recipe {id} is already defined ({})", prev.source)));
        }
        if let Some(a) = alias.filter(|a| *a != id && !self.recipes.contains_key(*a)) {
            self.recipe_alias.entry(a.to_owned()).or_insert_with(|| id.clone());
        }
        let source = file.display().to_string();
        let name = alias.unwrap_or(&id).to_owned();
        self.recipes.insert(id.clone(), Entry { doc, source, name, limits: None });
        Ok(id)
    }

    /// Adds a Capabilities document read from `file` under `id` (its `actor.id` is an alias).
    /// Its `x-safetyLimits`, if any, narrows the limits it enforces.
    ///
    /// # Errors
    /// The document is not valid Capabilities, its `x-safetyLimits` is not valid SafetyLimits,
    /// or the id is already taken.
    pub fn add_device(&mut self, file: &Path, id: &str, doc: Value) -> Result<(), CatalogError> {
        self.insert_device(file, id, doc, None)
    }

    fn insert_device(
        &mut self,
        file: &Path,
        id: &str,
        doc: Value,
        bundle_limits: Option<&Value>,
    ) -> Result<(), CatalogError> {
        check(file, &doc, "Capabilities")?;
        if id.is_empty() {
            return Err(fail(file, "the device has no id"));
        }
        if let Some(prev) = self.devices.get(id) {
            return Err(fail(file, format!("device {id} is already defined ({})", prev.source)));
        }
        let own = doc.get("x-safetyLimits");
        if let Some(pack) = own {
            check(file, pack, "SafetyLimits")
                .map_err(|e| fail(file, format!("x-safetyLimits: {}", e.why)))?;
        }
        let packs: Vec<&Value> = bundle_limits.into_iter().chain(own).collect();
        let limits = narrowing(&self.pack, &packs);
        self.alias_actor(id, &doc);
        let source = file.display().to_string();
        let name = id.to_owned();
        self.devices.insert(id.to_owned(), Entry { doc, source, name, limits });
        Ok(())
    }

    /// Loads the recipes and devices of an upstream samples `bundle.json`
    /// (`{"recipes": {key: Recipe}, "devices": {key: Capabilities}, "safetyLimits"?:
    /// SafetyLimits, …}`); devices are keyed by their bundle key, and the bundle's
    /// `safetyLimits`, when present, narrows the limits of each of its devices (see the module
    /// docs). Returns (recipe ids, device ids).
    ///
    /// # Errors
    /// The file cannot be read, is not JSON, lacks `recipes`/`devices` objects, or holds an
    /// invalid or duplicate document (or invalid `safetyLimits`).
    pub fn load_bundle(&mut self, file: &Path) -> Result<(Vec<String>, Vec<String>), CatalogError> {
        let doc = read_json(file)?;
        let section = |name: &str| {
            doc.get(name)
                .and_then(Value::as_object)
                .ok_or_else(|| fail(file, format!("not a samples bundle: no \"{name}\" object")))
        };
        let recipes = section("recipes")?;
        let devices = section("devices")?;
        let limits = doc.get("safetyLimits");
        if let Some(pack) = limits {
            check(file, pack, "SafetyLimits")
                .map_err(|e| fail(file, format!("safetyLimits: {}", e.why)))?;
        }
        let mut r_ids = Vec::new();
        for (key, r) in recipes {
            let id = self
                .add_recipe(file, r.clone(), Some(key))
                .map_err(|e| fail(file, format!("recipes.{key}: {}", e.why)))?;
            r_ids.push(id);
        }
        let mut d_ids = Vec::new();
        for (key, d) in devices {
            self.insert_device(file, key, d.clone(), limits)
                .map_err(|e| fail(file, format!("devices.{key}: {}", e.why)))?;
            d_ids.push(key.clone());
        }
        Ok((r_ids, d_ids))
    }

    /// Loads every `*.json` file in `dir` as a Recipe (the file stem, without `.json` and
    /// `.cookwala`, is an alias). Returns the ids.
    ///
    /// # Errors
    /// The folder cannot be read, or a file is malformed.
    pub fn load_recipe_dir(&mut self, dir: &Path) -> Result<Vec<String>, CatalogError> {
        let mut ids = Vec::new();
        for file in json_files(dir)? {
            let doc = read_json(&file)?;
            let stem = stem(&file);
            ids.push(self.add_recipe(&file, doc, stem.as_deref())?);
        }
        Ok(ids)
    }

    /// Loads every `*.json` file in `dir` as Capabilities, keyed by file stem. Returns the ids.
    ///
    /// # Errors
    /// The folder cannot be read, or a file is malformed.
    pub fn load_device_dir(&mut self, dir: &Path) -> Result<Vec<String>, CatalogError> {
        let mut ids = Vec::new();
        for file in json_files(dir)? {
            ids.push(self.load_device_file(&file)?);
        }
        Ok(ids)
    }

    /// Loads one Capabilities file, keyed by its file stem. Returns the id.
    ///
    /// # Errors
    /// The file cannot be read or is malformed, or the id is taken.
    pub fn load_device_file(&mut self, file: &Path) -> Result<String, CatalogError> {
        let doc = read_json(file)?;
        let id = stem(file).ok_or_else(|| fail(file, "cannot take a device id from the name"))?;
        self.add_device(file, &id, doc)?;
        Ok(id)
    }
}

fn check(file: &Path, doc: &Value, kind: &str) -> Result<(), CatalogError> {
    if doc.as_object().is_none() {
        return Err(fail(file, format!("not a {kind} document (not a JSON object)")));
    }
    let report =
        cookwala::documents::validate(doc, Some(kind), cookwala::vocab::Vocabulary::builtin());
    if report.is_valid() {
        return Ok(());
    }
    let issues: Vec<String> = report
        .errors
        .iter()
        .take(5)
        .map(|i| format!("{} {}", if i.pointer.is_empty() { "/" } else { &i.pointer }, i.message))
        .collect();
    Err(fail(file, format!("not a valid {kind}: {}", issues.join("; "))))
}

fn read_json(file: &Path) -> Result<Value, CatalogError> {
    let bytes = std::fs::read(file).map_err(|e| fail(file, format!("cannot read: {e}")))?;
    canonical_json::parse(&bytes).map_err(|e| fail(file, format!("not valid JSON: {e}")))
}

fn json_files(dir: &Path) -> Result<Vec<PathBuf>, CatalogError> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| fail(dir, format!("cannot read the folder: {e}")))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| fail(dir, format!("cannot read the folder: {e}")))?.path();
        if path.is_file() && path.extension().is_some_and(|x| x == "json") {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(fail(dir, "no .json files in this folder"));
    }
    Ok(files)
}

/// The file name without `.json` and a `.cookwala` / `.capabilities` suffix.
fn stem(file: &Path) -> Option<String> {
    let name = file.file_name()?.to_str()?;
    let name = name.strip_suffix(".json").unwrap_or(name);
    let name = name
        .strip_suffix(".cookwala")
        .or_else(|| name.strip_suffix(".capabilities"))
        .unwrap_or(name);
    (!name.is_empty()).then(|| name.to_owned())
}
