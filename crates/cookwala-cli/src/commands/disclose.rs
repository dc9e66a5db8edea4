//! `cookwala disclose`: selective-disclosure digests.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use canonical_json::{Map, Value};
use cookwala::disclosure;

use crate::input::read_json;
use crate::output::{compact, emit};

/// A fresh 128-bit salt, base64url without padding (22 characters).
pub fn fresh_salt() -> String {
    let bytes: [u8; 16] = rand::random();
    cookwala::b64::encode(&bytes)
}

/// Creates a disclosed copy `{digest, salt, value}` of a JSON value.
pub fn make(value: &Value, salt: Option<String>, out: Option<&Path>) -> Result<()> {
    let salt = salt.unwrap_or_else(fresh_salt);
    let disclosed = disclosure::disclose(value, &salt).context("cannot create the disclosure")?;
    emit(&disclosed, out)
}

/// Reads the value to disclose from `--value JSON` or `--value-file FILE`.
pub fn value_from(inline: Option<&str>, file: Option<&Path>) -> Result<Value> {
    match (inline, file) {
        (Some(text), None) => canonical_json::parse(text.as_bytes()).context("--value is not JSON"),
        (None, Some(path)) => read_json(path),
        _ => bail!("give exactly one of --value JSON or --value-file FILE"),
    }
}

/// Checks a disclosed copy: prints `ok` or `mismatch`. Returns whether it verifies.
pub fn verify(path: &Path, json: bool) -> Result<bool> {
    let d = read_json(path)?;
    let ok = disclosure::verify(&d);
    let reason = if ok {
        "ok"
    } else if d.get("salt").is_none() || d.get("value").is_none() {
        "not_disclosed"
    } else {
        "digest_mismatch"
    };
    if json {
        let mut map = Map::new();
        map.insert("ok".into(), ok.into());
        map.insert("reason".into(), reason.into());
        println!("{}", compact(&Value::Object(map))?);
    } else {
        println!("{reason}");
    }
    Ok(ok)
}

/// Strips `salt` and `value`, leaving the `{digest}` that goes into a signed document.
pub fn redact(path: &Path, out: Option<&Path>) -> Result<()> {
    let d = read_json(path)?;
    let Some(redacted) = disclosure::redact(&d) else {
        bail!("{} is not a disclosure (no digest)", path.display());
    };
    emit(&redacted, out)
}

/// The `cookwala disclose` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum DiscloseCommand {
    /// Create {digest, salt, value} for a value (digest = sha256 of JCS([salt, value]))
    Make {
        /// The value as JSON text
        #[arg(long)]
        value: Option<String>,
        /// A file holding the value
        #[arg(long)]
        value_file: Option<PathBuf>,
        /// Salt (base64url, at least 22 characters; default: 128 random bits)
        #[arg(long)]
        salt: Option<String>,
        /// Write here instead of stdout
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Check a disclosed copy; prints ok, digest_mismatch or not_disclosed
    Verify {
        /// Print {"ok","reason"}
        #[arg(long)]
        json: bool,
        /// The disclosure file
        file: PathBuf,
    },
    /// Keep only {digest}: the form that goes into a signed document
    Redact {
        /// Write here instead of stdout
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// The disclosure file
        file: PathBuf,
    },
}

impl DiscloseCommand {
    /// Runs the subcommand; `Ok(false)` when a check failed.
    pub fn run(self) -> Result<bool> {
        match self {
            DiscloseCommand::Make { value, value_file, salt, out } => {
                let value = value_from(value.as_deref(), value_file.as_deref())?;
                make(&value, salt, out.as_deref()).map(|()| true)
            }
            DiscloseCommand::Verify { json, file } => verify(&file, json),
            DiscloseCommand::Redact { out, file } => redact(&file, out.as_deref()).map(|()| true),
        }
    }
}
