//! Is this folder the deepworkplan skill? A pure decision over what was read from it.
//!
//! The signs, all required: `SKILL.md` opens with a front matter whose `name` is
//! `deepworkplan` and whose `version` is a dotted release number, and `shared/` holds the
//! records-layer helpers `ledger.py` and `contract_v6.py` (the v6/v7 generation `dwp`
//! follows). A folder that holds `skills/deepworkplan/` (a checkout of the skill's repository)
//! is pointed there rather than guessed at.

/// The helpers `dwp` takes over: file name in `shared/`, and the `dwp` subcommand it runs.
pub const COVERED: &[(&str, &str)] = &[
    ("ledger.py", "ledger"),
    ("contract_v6.py", "contract"),
    ("scheduler.py", "scheduler"),
    ("outcomes.py", "outcomes"),
    ("views.py", "views"),
    ("migrate_v6.py", "migrate"),
    ("context_manifest.py", "context"),
    ("resources.py", "resources"),
];

/// The helpers that must be present for a folder to count as the skill.
const REQUIRED: &[&str] = &["ledger.py", "contract_v6.py"];

/// One helper script in the skill's `shared/` folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Helper {
    /// Its file name in `shared/` (`ledger.py`).
    pub name: String,
    /// The `dwp` subcommand that replaces it, or `None` when `dwp` does not cover it (it keeps
    /// running its original).
    pub runs: Option<&'static str>,
}

/// What identifies a skill folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillInfo {
    /// The `version` of its `SKILL.md` front matter.
    pub version: String,
    /// Every helper script in `shared/` (`.py` and `.sh` files), in name order.
    pub helpers: Vec<Helper>,
}

/// Decides from the text of `SKILL.md` (if the file exists), the file names in `shared/`, and
/// whether the folder holds `skills/deepworkplan/`. `Err` carries the reason for the refusal.
///
/// # Errors
///
/// A missing or foreign `SKILL.md`, a missing version, or a `shared/` without the required
/// helpers.
pub fn identify(
    skill_md: Option<&str>,
    shared: &[String],
    holds_skill_folder: bool,
) -> Result<SkillInfo, String> {
    let Some(text) = skill_md else {
        if holds_skill_folder {
            return Err("it has no SKILL.md, but holds skills/deepworkplan/: \
                 give that folder as --skill-dir"
                .to_owned());
        }
        return Err("it has no SKILL.md".to_owned());
    };
    let front = front_matter(text).ok_or("SKILL.md has no front matter (--- … ---)")?;
    match field(&front, "name") {
        Some("deepworkplan") => {}
        Some(other) => return Err(format!("SKILL.md names the skill {:?}", clip(other))),
        None => return Err("SKILL.md names no skill (no `name:`)".to_owned()),
    }
    let version = match field(&front, "version") {
        Some(v) if is_release(v) => v.to_owned(),
        Some(v) => return Err(format!("SKILL.md's version {:?} is not a release number", clip(v))),
        None => return Err("SKILL.md has no version".to_owned()),
    };
    for required in REQUIRED {
        if !shared.iter().any(|name| name == required) {
            return Err(format!("shared/{required} is missing"));
        }
    }
    let mut helpers: Vec<Helper> = shared
        .iter()
        .filter(|name| name.ends_with(".py") || name.ends_with(".sh"))
        .map(|name| Helper {
            name: name.clone(),
            runs: COVERED.iter().find(|(file, _)| file == name).map(|(_, runs)| *runs),
        })
        .collect();
    helpers.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(SkillInfo { version, helpers })
}

/// The lines between an opening `---` line and the next `---` line.
fn front_matter(text: &str) -> Option<Vec<&str>> {
    let mut lines = text.lines();
    if lines.next()?.trim_end() != "---" {
        return None;
    }
    let mut front = Vec::new();
    for line in lines {
        if line.trim_end() == "---" {
            return Some(front);
        }
        front.push(line);
    }
    None
}

/// The value of a top-level `key: value` line, without surrounding quotes.
fn field<'a>(front: &[&'a str], key: &str) -> Option<&'a str> {
    front.iter().find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(':')?;
        let value = rest.trim();
        let unquoted = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        Some(unquoted)
    })
}

/// `2.10.0`: dot-separated decimal numbers, at most 64 characters.
fn is_release(version: &str) -> bool {
    version.len() <= 64
        && version.split('.').count() >= 2
        && version
            .split('.')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
}

/// A value quoted in a message, cut to a readable length.
fn clip(value: &str) -> String {
    value.chars().take(60).collect()
}
