//! Registry names and versions (RFC-0002, the `registry` profile).
//!
//! A registry name is `<reverse-dns namespace>/<name>`: lower case, 3–200 characters, exactly
//! one slash, a namespace of at least two dot-separated labels (`org.fifi-cooking`), and a name
//! that starts with a letter or digit and holds at most 100 of `[a-z0-9._-]`. A version that a
//! registry entry pins must be an exact semantic version: ranges (`^1.4`, `>=1.0.0`, `1.x`) and
//! tags (`latest`, `*`) are refused with their own reasons, so a catalog always says which bytes
//! it serves. [`compare_versions`] orders exact versions by semver precedence and
//! [`compatible`] says whether a consumer pinned to one version can take another.

use std::cmp::Ordering;

/// Why a registry name is refused (the profile's reason codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameProblem {
    /// Shorter than 3 or longer than 200 characters.
    #[error("length")]
    Length,
    /// Has upper-case letters.
    #[error("not_lower_case")]
    NotLowerCase,
    /// Zero or several slashes.
    #[error("one_slash_required")]
    OneSlashRequired,
    /// Any other deviation from `<namespace>/<name>`.
    #[error("bad_format")]
    BadFormat,
}

impl NameProblem {
    /// The profile's reason code.
    pub fn code(self) -> &'static str {
        match self {
            NameProblem::Length => "length",
            NameProblem::NotLowerCase => "not_lower_case",
            NameProblem::OneSlashRequired => "one_slash_required",
            NameProblem::BadFormat => "bad_format",
        }
    }
}

/// Why a version is not an exact version (the profile's reason codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VersionProblem {
    /// `latest` or `*`.
    #[error("tag_not_allowed")]
    TagNotAllowed,
    /// A range operator or wildcard (`^ ~ < > = x *`), or a trailing dot.
    #[error("range_not_allowed")]
    RangeNotAllowed,
    /// Not `MAJOR.MINOR.PATCH[-PRERELEASE]`.
    #[error("not_semver")]
    NotSemver,
}

impl VersionProblem {
    /// The profile's reason code.
    pub fn code(self) -> &'static str {
        match self {
            VersionProblem::TagNotAllowed => "tag_not_allowed",
            VersionProblem::RangeNotAllowed => "range_not_allowed",
            VersionProblem::NotSemver => "not_semver",
        }
    }
}

/// Checks a registry name.
///
/// # Errors
/// The first [`NameProblem`], in the order length, case, slash count, format.
pub fn check_name(name: &str) -> Result<(), NameProblem> {
    let chars = name.chars().count();
    if !(3..=200).contains(&chars) {
        return Err(NameProblem::Length);
    }
    if name.to_lowercase() != name {
        return Err(NameProblem::NotLowerCase);
    }
    if name.matches('/').count() != 1 {
        return Err(NameProblem::OneSlashRequired);
    }
    let (namespace, local) = name.split_once('/').ok_or(NameProblem::OneSlashRequired)?;
    if namespace_ok(namespace) && local_ok(local) { Ok(()) } else { Err(NameProblem::BadFormat) }
}

/// `[a-z0-9]+(\.[a-z0-9-]+)+`.
fn namespace_ok(namespace: &str) -> bool {
    let mut labels = namespace.split('.');
    let first_ok = labels.next().is_some_and(|l| {
        !l.is_empty() && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    });
    let rest: Vec<&str> = labels.collect();
    first_ok
        && !rest.is_empty()
        && rest.iter().all(|l| {
            !l.is_empty()
                && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

/// `[a-z0-9][a-z0-9._-]{0,99}`.
fn local_ok(local: &str) -> bool {
    let bytes = local.as_bytes();
    let Some((first, rest)) = bytes.split_first() else { return false };
    (first.is_ascii_lowercase() || first.is_ascii_digit())
        && rest.len() <= 99
        && rest.iter().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        })
}

/// An exact semantic version `MAJOR.MINOR.PATCH[-PRERELEASE]` (build metadata is not allowed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    /// Major.
    pub major: u64,
    /// Minor.
    pub minor: u64,
    /// Patch.
    pub patch: u64,
    /// Pre-release identifiers (empty for a release).
    pub pre: Vec<String>,
}

impl Version {
    /// Parses an exact version with the profile's reasons.
    ///
    /// # Errors
    /// The [`VersionProblem`]: tags first, then range syntax, then the semver grammar.
    pub fn parse(text: &str) -> Result<Version, VersionProblem> {
        if matches!(text, "latest" | "*") {
            return Err(VersionProblem::TagNotAllowed);
        }
        if text.contains(['^', '~', '<', '>', '=', 'x', '*']) || text.ends_with('.') {
            return Err(VersionProblem::RangeNotAllowed);
        }
        let (core, pre) = match text.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (text, None),
        };
        let parts: Vec<&str> = core.split('.').collect();
        let [major, minor, patch] = parts.as_slice() else {
            return Err(VersionProblem::NotSemver);
        };
        let number = |p: &str| {
            let ok = !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit())
                && (p == "0" || !p.starts_with('0'));
            if ok { p.parse::<u64>().ok() } else { None }
        };
        let pre = match pre {
            None => Vec::new(),
            Some(pre) => {
                let ok = !pre.is_empty()
                    && pre.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
                if !ok {
                    return Err(VersionProblem::NotSemver);
                }
                pre.split('.').map(str::to_owned).collect()
            }
        };
        match (number(major), number(minor), number(patch)) {
            (Some(major), Some(minor), Some(patch)) => Ok(Version { major, minor, patch, pre }),
            _ => Err(VersionProblem::NotSemver),
        }
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Version {
    /// Semver precedence: numbers, then a pre-release sorts before its release, identifiers
    /// compared numerically when both are numeric, numeric before alphanumeric, shorter first.
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => compare_pre(&self.pre, &other.pre),
            })
    }
}

fn compare_pre(a: &[String], b: &[String]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let order = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(m), Ok(n)) if x.bytes().all(|c| c.is_ascii_digit()) => m.cmp(&n),
            (Ok(_), Err(_)) => Ordering::Less,
            (Err(_), Ok(_)) => Ordering::Greater,
            _ => x.cmp(y),
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// Checks that `version` is exact.
///
/// # Errors
/// The [`VersionProblem`].
pub fn check_version(version: &str) -> Result<(), VersionProblem> {
    Version::parse(version).map(|_| ())
}

/// Orders two exact versions by semver precedence.
///
/// # Errors
/// The [`VersionProblem`] of the first version that is not exact.
pub fn compare_versions(a: &str, b: &str) -> Result<Ordering, VersionProblem> {
    Ok(Version::parse(a)?.cmp(&Version::parse(b)?))
}

/// True when a consumer built against `pinned` can take `candidate`: same major version (same
/// minor while the major is 0), not older, and no pre-release unless it is the pinned one's.
pub fn compatible(pinned: &Version, candidate: &Version) -> bool {
    let same_line = if pinned.major == 0 {
        candidate.major == 0 && candidate.minor == pinned.minor
    } else {
        candidate.major == pinned.major
    };
    let pre_ok = candidate.pre.is_empty()
        || (candidate.major, candidate.minor, candidate.patch)
            == (pinned.major, pinned.minor, pinned.patch);
    same_line && candidate >= pinned && pre_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        match Version::parse(text) {
            Ok(v) => v,
            Err(e) => panic!("{text}: {e}"),
        }
    }

    #[test]
    fn precedence_follows_semver() {
        let order = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.10.0",
        ];
        for pair in order.windows(2) {
            assert!(v(pair[0]) < v(pair[1]), "{} < {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn leading_zeros_are_not_semver() {
        assert_eq!(check_version("01.0.0"), Err(VersionProblem::NotSemver));
        assert_eq!(check_version("1.0.0+build"), Err(VersionProblem::NotSemver));
    }

    #[test]
    fn compatibility_keeps_the_major_line() {
        assert!(compatible(&v("1.4.2"), &v("1.5.0")));
        assert!(!compatible(&v("1.4.2"), &v("2.0.0")));
        assert!(!compatible(&v("1.4.2"), &v("1.4.1")));
        assert!(!compatible(&v("0.2.0"), &v("0.3.0")));
        assert!(!compatible(&v("1.4.2"), &v("1.5.0-rc.1")));
    }
}
