//! `cookwala keygen`, `sign` and `verify`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use canonical_json::{Map, Value};
use clap::ValueEnum;
use cookwala::keys::{KeySet, SigningAlg, SigningKey};
use cookwala::signature::{self, SignedKind};

use crate::clock::now_rfc3339;
use crate::input::read_json;
use crate::output::{compact, create_private, emit, pretty};

/// Signature algorithms on the command line.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum AlgArg {
    /// Ed25519 (the default, and the only one the upstream reference verifies)
    #[value(name = "EdDSA")]
    EdDsa,
    /// ECDSA P-256 with SHA-256 (r||s signatures, SEC1 public keys)
    #[value(name = "ES256")]
    Es256,
}

impl From<AlgArg> for SigningAlg {
    fn from(alg: AlgArg) -> SigningAlg {
        match alg {
            AlgArg::EdDsa => SigningAlg::EdDsa,
            AlgArg::Es256 => SigningAlg::Es256,
        }
    }
}

/// What a signature covers: documents, mission-log events or checkpoints.
#[derive(Clone, Copy, Debug, Default, ValueEnum)]
pub enum KindArg {
    /// A document (header `kind` = the document's own `kind`, when it has one)
    #[default]
    Document,
    /// A mission-log event (header `kind` = "Event"; `proposedBy` excluded from the hash)
    Event,
    /// A checkpoint (header `kind` = "Checkpoint"; `witnesses` excluded from the hash)
    Checkpoint,
}

impl From<KindArg> for SignedKind {
    fn from(kind: KindArg) -> SignedKind {
        match kind {
            KindArg::Document => SignedKind::Document,
            KindArg::Event => SignedKind::Event,
            KindArg::Checkpoint => SignedKind::Checkpoint,
        }
    }
}

/// A file-name-safe form of a key id (`did:web:x#k1` → `did_web_x_k1`).
pub fn file_stem(kid: &str) -> String {
    let stem: String = kid
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' })
        .collect();
    let stem = stem.trim_matches('.').to_owned();
    if stem.is_empty() { "key".to_owned() } else { stem }
}

/// Generate a signing key: <KID>.key.json (private, 0600) and <KID>.pub.json (KeyRecord set)
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Signature algorithm
    #[arg(long, value_enum, default_value = "EdDSA")]
    pub alg: AlgArg,
    /// Key id, e.g. did:web:example.org#key-1
    #[arg(long)]
    pub kid: String,
    /// Folder for the two files (created if missing; existing keys are never overwritten)
    #[arg(long)]
    pub out: PathBuf,
    /// Start of the key's validity (RFC 3339; default: now)
    #[arg(long)]
    pub valid_from: Option<String>,
    /// Print a JSON summary
    #[arg(long)]
    pub json: bool,
}

/// Generates a key pair: `<kid>.key.json` (private, mode 0600) and `<kid>.pub.json`
/// (a KeySet with the public KeyRecord, usable with `--keys`).
pub fn keygen(
    alg: AlgArg,
    kid: &str,
    out: &Path,
    valid_from: Option<String>,
    json: bool,
) -> Result<()> {
    if kid.trim().is_empty() {
        bail!("--kid must not be empty");
    }
    let valid_from = valid_from.unwrap_or_else(now_rfc3339);
    if !cookwala::time::is_timestamp(&valid_from) {
        bail!("--valid-from {valid_from:?} is not an RFC 3339 timestamp");
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let key = SigningKey::generate(alg.into(), &mut rand::rng());
    let stem = file_stem(kid);
    let private_path = out.join(format!("{stem}.key.json"));
    let public_path = out.join(format!("{stem}.pub.json"));
    create_private(&private_path, &pretty(&key.to_key_file(kid))?)?;
    let keyset = KeySet::from_records(vec![key.key_record(kid, &valid_from)]);
    emit(&keyset.to_value(), Some(&public_path))?;
    if json {
        let summary: Value = [
            ("kid", Value::from(kid)),
            ("alg", Value::from(key.alg().as_str())),
            ("publicKey", Value::from(key.public_key())),
            ("privateKeyFile", Value::from(private_path.display().to_string())),
            ("keysFile", Value::from(public_path.display().to_string())),
        ]
        .into_iter()
        .collect();
        println!("{}", compact(&summary)?);
    } else {
        println!("private key: {}", private_path.display());
        println!("public keys: {}", public_path.display());
        println!("{} {} {}", key.alg().as_str(), kid, key.public_key());
    }
    Ok(())
}

/// Loads a private key file written by `keygen`.
pub fn load_signing_key(path: &Path) -> Result<(String, SigningKey)> {
    let value = read_json(path)?;
    SigningKey::from_key_file(&value)
        .with_context(|| format!("{} is not a cookwala key file", path.display()))
}

/// Loads and merges key sets (KeyRecord lists, well-known documents, did:web documents,
/// capabilities documents).
pub fn load_keys(paths: &[PathBuf]) -> Result<KeySet> {
    let mut keys = KeySet::new();
    for path in paths {
        let value = read_json(path)?;
        let set = KeySet::from_value(&value)
            .with_context(|| format!("{} holds no usable key records", path.display()))?;
        for warning in set.warnings() {
            eprintln!("warning: {}: {warning}", path.display());
        }
        keys.extend(set);
    }
    Ok(keys)
}

/// Sign a document (Core 0.2.1 header) and write it with its signature
#[derive(Debug, clap::Args)]
pub struct SignArgs {
    /// Private key file from `cookwala keygen`
    #[arg(long)]
    pub key: PathBuf,
    /// Key id for the signature (default: the key file's kid)
    #[arg(long)]
    pub kid: Option<String>,
    /// Signing time, RFC 3339 (default: now); verifiers judge key validity at this time
    #[arg(long)]
    pub signed_at: Option<String>,
    /// What is signed
    #[arg(long, value_enum, default_value = "document")]
    pub kind: KindArg,
    /// Write here instead of stdout
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// The document to sign
    pub doc: PathBuf,
}

/// Signs a document and writes it with its `signature`.
pub fn sign(args: &SignArgs) -> Result<()> {
    let (file_kid, key) = load_signing_key(&args.key)?;
    let kid = args.kid.clone().unwrap_or(file_kid);
    let signed_at = args.signed_at.clone().unwrap_or_else(now_rfc3339);
    let doc = read_json(&args.doc)?;
    let signed = signature::attach(&doc, &key, &kid, &signed_at, args.kind.into())
        .with_context(|| format!("cannot sign {}", args.doc.display()))?;
    emit(&signed, args.out.as_deref())
}

/// Verify a signature; prints `ok` or the reason code (unknown_key, key_revoked, bad_signature, ...)
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Key set files: KeyRecord lists, /.well-known/cookwala.json, did:web documents or
    /// capabilities documents (repeatable; the first record with a matching kid is used)
    #[arg(long, required = true)]
    pub keys: Vec<PathBuf>,
    /// What was signed
    #[arg(long, value_enum, default_value = "document")]
    pub kind: KindArg,
    /// The document was relayed by another hub (RFC-0006): it must verify with its issuer's
    /// key, never a relay's; reports not_issuer_key when the key's actor is not the issuer
    #[arg(long, conflicts_with = "kind")]
    pub relayed: bool,
    /// Print {"ok","reason",...}
    #[arg(long)]
    pub json: bool,
    /// The signed document
    pub doc: PathBuf,
}

/// Verifies a document's signature; prints `ok` or the reason code. Returns whether it is ok.
/// With `relayed`, the federation rule applies too (RFC-0006): the signing key must be the
/// document issuer's (`not_issuer_key`).
pub fn verify(
    keys: &[PathBuf],
    doc: &Path,
    kind: KindArg,
    relayed: bool,
    json: bool,
) -> Result<bool> {
    let keys = load_keys(keys)?;
    let doc = read_json(doc)?;
    let (ok, reason) = if relayed {
        let r = cookwala::federation::verify_relayed(&doc, &keys);
        (r.is_ok(), r.as_str())
    } else {
        let verdict = signature::verify_signature(&doc, &keys, kind.into());
        (verdict.is_ok(), verdict.reason.as_str())
    };
    if json {
        let mut map = Map::new();
        map.insert("ok".into(), ok.into());
        map.insert("reason".into(), reason.into());
        if let Some(sig) = doc.get("signature") {
            for field in ["kid", "alg", "signedAt"] {
                if let Some(v) = sig.get(field) {
                    map.insert(field.into(), v.clone());
                }
            }
        }
        println!("{}", compact(&Value::Object(map))?);
    } else {
        println!("{reason}");
    }
    Ok(ok)
}
