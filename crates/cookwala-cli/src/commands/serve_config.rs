//! `cookwala serve --config FILE` and `--print-config`: the hub's flags from a TOML file.
//!
//! Why flags, not a second schema: every key of the file is the long name of a `serve` flag
//! (`addr`, `speed`, `no-auth`, `webhook` …), so the file cannot drift from `--help` and the
//! flags' own checks (types, ranges, conflicts) apply to the file's values too. The file's
//! keys become arguments placed *before* the command line's, and a flag given on the command
//! line skips the file's key, so flags override the file. An unknown key, a table, or a list
//! for a flag that takes one value is an error naming the key and the file; a wrong type is
//! clap's error naming the flag. `token` is refused in a file: tokens belong in the tokens
//! file or `COOKWALA_HUB_TOKEN`, never in a configuration others may read.
//!
//! `--print-config` prints the effective configuration (the file merged with the flags, and
//! every default) as TOML a `--config` accepts, with secrets redacted (`token`, and the
//! password and query of URL values), and exits.

use std::ffi::OsString;
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use clap::parser::ValueSource;
use clap::{ArgAction, Args, FromArgMatches};

use super::serve::ServeArgs;

/// A configuration error (exit 2, like a usage error).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.trim_end())
    }
}

impl std::error::Error for UsageError {}

/// Keys a file may not set: what only makes sense on the command line, and secrets.
const NOT_IN_FILE: &[(&str, &str)] = &[
    ("config", "a configuration file cannot name another"),
    ("print-config", "give it on the command line"),
    (
        "token",
        "a token is never read from a configuration file: use the tokens file (`tokens = \
         \"PATH\"`) or the COOKWALA_HUB_TOKEN environment variable",
    ),
    (
        "device-token",
        "a token is never read from a configuration file: use `device-token-file = \"PATH\"` \
         or the COOKWALA_DEVICE_TOKEN environment variable",
    ),
];

/// Flags whose values are redacted by `--print-config`.
const SECRET: &[&str] = &["token", "device-token"];

fn command() -> clap::Command {
    ServeArgs::augment_args(clap::Command::new("serve"))
}

/// The effective arguments for `args` (as parsed from the command line): `args` itself
/// without `--config`; otherwise the file merged under the command line's flags. `None`
/// when `--print-config` printed the configuration.
///
/// # Errors
/// The file cannot be read or parsed, names an unknown key or a value of the wrong shape, or
/// the merged arguments do not parse ([`UsageError`]).
pub fn resolve(args: ServeArgs) -> Result<Option<ServeArgs>> {
    if args.config.is_none() && !args.print_config {
        pairs(&args)?;
        return Ok(Some(args));
    }
    // The `serve` subcommand's own arguments, as given.
    let argv: Vec<OsString> = std::env::args_os().collect();
    let at = argv.iter().position(|a| a == "serve").map_or(argv.len(), |p| p + 1);
    let cli: Vec<OsString> = argv.get(at..).unwrap_or_default().to_vec();
    let given = command()
        .try_get_matches_from(std::iter::once(OsString::from("serve")).chain(cli.iter().cloned()))
        .map_err(|e| UsageError(e.to_string()))?;
    let mut merged = vec![OsString::from("serve")];
    if let Some(file) = &args.config {
        merged.extend(file_arguments(file, &given)?);
    }
    merged.extend(cli);
    let matches = command().try_get_matches_from(merged).map_err(|e| {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or_default();
        let why = first.strip_prefix("error: ").unwrap_or(first);
        UsageError(format!("{why} (in the configuration file or on the command line)"))
    })?;
    let mut resolved = ServeArgs::from_arg_matches(&matches).map_err(|e| anyhow!("{e}"))?;
    pairs(&resolved)?;
    if args.print_config {
        print!("{}", effective(&matches));
        return Ok(None);
    }
    resolved.config = None;
    Ok(Some(resolved))
}

/// The flags that only make sense together, checked on the merged arguments (clap's
/// `requires` would check the command line alone, before the file completes it).
fn pairs(args: &ServeArgs) -> Result<(), UsageError> {
    let fail = |why: &str| {
        Err(UsageError(format!("{why} (in the configuration file or on the command line)")))
    };
    match (&args.mqtt, &args.kitchen) {
        (Some(_), None) => return fail("--mqtt needs --kitchen"),
        (None, Some(_)) => return fail("--kitchen needs --mqtt"),
        _ => {}
    }
    if args.mqtt_password_file.is_some() && args.mqtt.is_none() {
        return fail("--mqtt-password-file needs --mqtt");
    }
    Ok(())
}

/// The arguments the file's keys stand for, skipping the flags `given` on the command line.
fn file_arguments(file: &Path, given: &clap::ArgMatches) -> Result<Vec<OsString>> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("reading the configuration {}", file.display()))?;
    let table: toml::Table =
        text.parse().map_err(|e| UsageError(format!("{}: not TOML: {e}", file.display())))?;
    let cmd = command();
    let mut out = Vec::new();
    for (key, value) in &table {
        let bad = |why: &str| UsageError(format!("{}: key `{key}`: {why}", file.display()));
        if let Some((_, why)) = NOT_IN_FILE.iter().find(|(k, _)| k == key) {
            return Err(bad(why).into());
        }
        let Some(arg) = cmd.get_arguments().find(|a| a.get_long() == Some(key.as_str())) else {
            return Err(bad("unknown (the keys are the long names of `cookwala serve --help`'s \
                            flags)")
            .into());
        };
        if given.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine) {
            continue;
        }
        let flag = format!("--{key}");
        match (arg.get_action(), value) {
            (ArgAction::SetTrue, toml::Value::Boolean(on)) => {
                if *on {
                    out.push(OsString::from(&flag));
                }
            }
            (ArgAction::SetTrue, _) => return Err(bad("expected true or false").into()),
            (ArgAction::Append, toml::Value::Array(items)) => {
                for item in items {
                    out.push(OsString::from(format!(
                        "{flag}={}",
                        scalar(item)
                            .ok_or_else(|| { bad("expected a list of strings or numbers") })?
                    )));
                }
            }
            (_, toml::Value::Array(_)) => return Err(bad("takes one value, not a list").into()),
            (_, v) => {
                let v = scalar(v).ok_or_else(|| bad("expected a string or a number"))?;
                out.push(OsString::from(format!("{flag}={v}")));
            }
        }
    }
    Ok(out)
}

/// A string, integer or float as its argument text.
fn scalar(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        _ => None,
    }
}

/// The effective configuration as TOML: every flag with a value (given or default).
fn effective(matches: &clap::ArgMatches) -> String {
    let mut table = toml::Table::new();
    for arg in command().get_arguments() {
        let (Some(key), id) = (arg.get_long(), arg.get_id().as_str()) else { continue };
        if NOT_IN_FILE.iter().any(|(k, _)| *k == key) || matches!(key, "help" | "version") {
            continue;
        }
        let value = match arg.get_action() {
            ArgAction::SetTrue => toml::Value::Boolean(matches.get_flag(id)),
            action => {
                let Some(raw) = matches.get_raw(id) else { continue };
                let items: Vec<toml::Value> =
                    raw.map(|v| typed(&redact(key, &v.to_string_lossy()))).collect();
                match (action, items.len()) {
                    (ArgAction::Append, _) => toml::Value::Array(items),
                    (_, 1) => items.into_iter().next().unwrap_or(toml::Value::Boolean(false)),
                    _ => toml::Value::Array(items),
                }
            }
        };
        table.insert(key.to_owned(), value);
    }
    let mut out =
        String::from("# cookwala serve: the effective configuration (secrets redacted)\n");
    out.push_str(&table.to_string());
    out
}

/// An argument's text as a TOML value: a number when it reads as one and prints back the same
/// (so `kitchen = "007"` stays a string: read back as 7 it would name another kitchen), else
/// a string.
fn typed(text: &str) -> toml::Value {
    if let Ok(i) = text.parse::<i64>()
        && i.to_string() == text
    {
        return toml::Value::Integer(i);
    }
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() && text.contains('.') && f.to_string() == text => {
            toml::Value::Float(f)
        }
        _ => toml::Value::String(text.to_owned()),
    }
}

/// `text` with what may be secret replaced: the whole value of a secret flag; a URL's
/// password and query.
fn redact(key: &str, text: &str) -> String {
    const HIDDEN: &str = "<redacted>";
    if SECRET.contains(&key) {
        return HIDDEN.to_owned();
    }
    cookwala_hub::privacy::redact_url_with(text, HIDDEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_password_and_query_and_tokens_their_value() {
        assert_eq!(
            redact("store", "postgres://hub:s3cret@db:5432/cook?sslmode=require"),
            "postgres://hub:<redacted>@db:5432/cook?<redacted>"
        );
        assert_eq!(redact("mqtt", "mqtt://broker:1883"), "mqtt://broker:1883");
        assert_eq!(redact("token", "abc"), "<redacted>");
        assert_eq!(redact("data", "/var/lib/cookwala"), "/var/lib/cookwala");
    }

    #[test]
    fn values_keep_their_types() {
        assert_eq!(typed("60"), toml::Value::Integer(60));
        assert_eq!(typed("2.5"), toml::Value::Float(2.5));
        assert_eq!(typed("127.0.0.1:7878"), toml::Value::String("127.0.0.1:7878".into()));
        // Text that would read back as another value stays text.
        assert_eq!(typed("007"), toml::Value::String("007".into()));
        assert_eq!(typed("1.50"), toml::Value::String("1.50".into()));
        assert_eq!(typed("+5"), toml::Value::String("+5".into()));
    }

    #[test]
    fn a_password_with_a_slash_or_a_query_without_a_path_is_redacted() {
        assert_eq!(redact("mqtt", "mqtt://hub:ab/cd@broker"), "mqtt://hub:<redacted>@broker");
        assert_eq!(redact("webhook", "https://h?token=x"), "https://h?<redacted>");
    }
}
