//! The hub's own signing key and its publication at `/.well-known/cookwala.json`.
//!
//! The key lives in the data directory as `hub-key.json`: a `cookwala keygen` key file
//! (`{kid, alg, privateKey, publicKey}`) plus the `validFrom` of its KeyRecord, so the same file
//! also works with `cookwala sign --key`. [`HubKey::load_or_create`] reads it, or writes a new
//! one (mode 0600) from a key the caller generated — randomness stays at the binary's edge.
//!
//! The well-known document is `{name, core, keys: [KeyRecord]}`: the hub's own record first, then
//! the trusted keys it was given. `cookwala::keys::KeySet::from_value` (and so
//! `cookwala verify --keys FILE`) reads it as it is.

use std::io::Write;
use std::path::{Path, PathBuf};

use canonical_json::Value;
use cookwala::keys::{KeyRecord, SigningKey, UNBOUNDED_VALID_FROM};

/// The file name of the hub key in the data directory.
pub const HUB_KEY_FILE: &str = "hub-key.json";

/// The hub's signing key with the key id and validity start it is published under.
#[derive(Clone, Debug)]
pub struct HubKey {
    kid: String,
    key: SigningKey,
    valid_from: String,
}

/// A hub key file that cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {why}", file.display())]
pub struct HubKeyError {
    /// The key file.
    pub file: PathBuf,
    /// What went wrong.
    pub why: String,
}

impl HubKey {
    /// A key published as `kid` from `valid_from` on; `None` when the kid is empty or
    /// `valid_from` is not a timestamp.
    pub fn new(kid: &str, key: SigningKey, valid_from: &str) -> Option<HubKey> {
        (!kid.trim().is_empty() && cookwala::time::is_timestamp(valid_from)).then(|| HubKey {
            kid: kid.to_owned(),
            key,
            valid_from: valid_from.to_owned(),
        })
    }

    /// A key whose kid is derived from its public key (`cookwala-hub:<16 hex>#hub-key`), valid
    /// from `now`.
    pub fn derived(key: SigningKey, now: cookwala::time::Instant) -> HubKey {
        let digest = canonical_json::digest::sha256_hex(&key.public_key_bytes());
        let kid = format!("cookwala-hub:{}#hub-key", digest.get(..16).unwrap_or(&digest));
        HubKey { kid, key, valid_from: now.to_rfc3339() }
    }

    /// The key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The private key.
    pub fn signing_key(&self) -> &SigningKey {
        &self.key
    }

    /// The start of the key's validity.
    pub fn valid_from(&self) -> &str {
        &self.valid_from
    }

    /// The public KeyRecord (`actor` = the kid's part before `#`).
    pub fn record(&self) -> KeyRecord {
        let mut record = self.key.key_record(&self.kid, &self.valid_from);
        record.actor = self.kid.split('#').next().map(str::to_owned);
        record
    }

    /// The key file: `cookwala keygen`'s `{kid, alg, privateKey, publicKey}` plus `validFrom`.
    pub fn to_file_value(&self) -> Value {
        let mut doc = self.key.to_key_file(&self.kid);
        if let Some(m) = doc.as_object_mut() {
            m.insert("validFrom".into(), self.valid_from.as_str().into());
        }
        doc
    }

    /// Reads a key file (a `cookwala keygen` key file; `validFrom` optional); the error says
    /// what is wrong with it.
    fn from_file_value(doc: &Value) -> Result<HubKey, String> {
        let (kid, key) = SigningKey::from_key_file(doc).map_err(|e| e.to_string())?;
        let valid_from = match doc.get("validFrom") {
            None | Some(Value::Null) => UNBOUNDED_VALID_FROM,
            Some(v) => v.as_str().ok_or("validFrom must be a string")?,
        };
        HubKey::new(&kid, key, valid_from).ok_or_else(|| {
            format!("kid must not be empty and validFrom ({valid_from}) must be a timestamp")
        })
    }

    /// Reads the key file at `path`, or creates it (mode 0600 on unix) with `fresh()` and a kid
    /// derived from the public key. Returns the key and whether it was created.
    ///
    /// # Errors
    /// The file cannot be read, is not a key file, or cannot be written.
    pub fn load_or_create(
        path: &Path,
        fresh: impl FnOnce() -> SigningKey,
    ) -> Result<(HubKey, bool), HubKeyError> {
        let fail = |why: String| HubKeyError { file: path.to_owned(), why };
        match std::fs::read(path) {
            Ok(bytes) => {
                warn_if_readable_by_others(path);
                let doc = canonical_json::parse(&bytes)
                    .map_err(|e| fail(format!("not valid JSON: {e}")))?;
                let key = HubKey::from_file_value(&doc)
                    .map_err(|why| fail(format!("not a hub key file: {why}")))?;
                Ok((key, false))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let now =
                    cookwala::time::Instant::from_unix(crate::clock::unix_ms().div_euclid(1000), 0)
                        .ok_or_else(|| fail("the clock is out of range".to_owned()))?;
                let key = HubKey::derived(fresh(), now);
                let text = canonical_json::to_jcs(&key.to_file_value())
                    .map_err(|e| fail(format!("cannot write the key: {e}")))?;
                let mut options = std::fs::OpenOptions::new();
                options.write(true).create_new(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                let mut file =
                    options.open(path).map_err(|e| fail(format!("cannot create: {e}")))?;
                file.write_all(&text)
                    .and_then(|()| file.write_all(b"\n"))
                    .and_then(|()| file.sync_all())
                    .map_err(|e| fail(format!("cannot write: {e}")))?;
                Ok((key, true))
            }
            Err(e) => Err(fail(format!("cannot read: {e}"))),
        }
    }
}

#[cfg(unix)]
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        crate::clock::note(format_args!(
            "cookwala-hub: warning: {} holds a private key but is readable by others (chmod 600 it)",
            path.display()
        ));
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_path: &Path) {}
