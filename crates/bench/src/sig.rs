//! Ed25519: the document-verify path vs a bare `verify_strict` over the same header bytes.
//!
//! The fixture is signed here with the RFC-0012 (Core 0.2.1) header scheme, independently of the
//! `cookwala` crate: hash the document without `hash`/`signature`, JCS the header
//! `{"alg","hash","kid","kind"?,"signedAt"}`, sign it, store base64url-unpadded `sig`.
//!
//! Three measurements:
//! - `ed25519-dalek verify_strict`: the floor, over pre-built header bytes and a decoded key;
//! - `bench-local full path`: what a document verifier has to do (document hash, header JCS,
//!   base64url decoding of signature and key, key decompression, `verify_strict`), written here;
//! - `cookwala verify document`: `cookwala::verify_signature` (feature `cookwala`), see
//!   [`cookwala_verifier`].

use std::hint::black_box;

use anyhow::{Context, bail};
use base64ct::{Base64UrlUnpadded, Encoding};
use canonical_json::digest::document_hash;
use canonical_json::{Map, Value, to_jcs};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};

use crate::harness::{Config, Work, measure_interleaved, record};

/// RFC 8032 test 1 secret seed (a public test key: never use it for anything real).
const RFC8032_TEST1_SEED: [u8; 32] = [
    0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c, 0xc4,
    0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60,
];
const KID: &str = "did:web:bench.example#k1";
const SIGNED_AT: &str = "2026-10-04T10:00:00Z";

/// A signed document plus everything the bare verify needs, prepared once.
#[derive(Debug)]
pub struct SignedFixture {
    /// The signed document (with `hash` and `signature`).
    pub document: Value,
    /// The KeyRecord (`kid`, `alg`, `publicKey`, `validFrom`) that verifies it.
    pub key_record: Value,
    /// JCS bytes of the signing header.
    pub header_jcs: Vec<u8>,
    /// The signature over `header_jcs`.
    pub signature: Signature,
    /// The decoded public key.
    pub verifying_key: VerifyingKey,
    /// JCS bytes covered by the document hash (for the MB/s column).
    pub body_len: usize,
}

/// The signing header of RFC-0012 for a document with hash `hash`.
fn header(alg: &str, hash: &str, kid: &str, kind: Option<&str>, signed_at: &str) -> Value {
    let mut map = Map::new();
    map.insert("alg".into(), Value::from(alg));
    map.insert("hash".into(), Value::from(hash));
    map.insert("kid".into(), Value::from(kid));
    if let Some(kind) = kind.filter(|k| !k.is_empty()) {
        map.insert("kind".into(), Value::from(kind));
    }
    map.insert("signedAt".into(), Value::from(signed_at));
    Value::Object(map)
}

/// Signs `document` (its `hash` and `signature` are replaced) with the RFC 8032 test-1 key.
///
/// # Errors
/// Non-object documents and documents JCS cannot write.
pub fn make_signed_fixture(document: &Value) -> anyhow::Result<SignedFixture> {
    let Some(map) = document.as_object() else { bail!("the document to sign is not an object") };
    let mut map = map.clone();
    map.remove("hash");
    map.remove("signature");
    let body = Value::Object(map);
    let body_len = to_jcs(&body)?.len();
    let hash = document_hash(&body)?;
    let kind = body.get("kind").and_then(Value::as_str);
    let header_jcs = to_jcs(&header("EdDSA", &hash, KID, kind, SIGNED_AT))?;
    let signing_key = SigningKey::from_bytes(&RFC8032_TEST1_SEED);
    let signature = signing_key.sign(&header_jcs);
    let verifying_key = signing_key.verifying_key();

    let mut signed = match body {
        Value::Object(map) => map,
        _ => bail!("unreachable: body is an object"),
    };
    signed.insert("hash".into(), Value::from(hash));
    let sig_obj: Value = [
        ("alg", Value::from("EdDSA")),
        ("kid", Value::from(KID)),
        ("signedAt", Value::from(SIGNED_AT)),
        ("sig", Value::from(Base64UrlUnpadded::encode_string(&signature.to_bytes()))),
    ]
    .into_iter()
    .collect();
    signed.insert("signature".into(), sig_obj);
    let key_record: Value = [
        ("kid", Value::from(KID)),
        ("alg", Value::from("EdDSA")),
        ("publicKey", Value::from(Base64UrlUnpadded::encode_string(verifying_key.as_bytes()))),
        ("validFrom", Value::from("2026-01-01T00:00:00Z")),
    ]
    .into_iter()
    .collect();
    Ok(SignedFixture {
        document: Value::Object(signed),
        key_record,
        header_jcs,
        signature,
        verifying_key,
        body_len,
    })
}

/// The floor: `verify_strict` over pre-built header bytes.
pub fn verify_bare(fixture: &SignedFixture) -> bool {
    fixture.verifying_key.verify_strict(&fixture.header_jcs, &fixture.signature).is_ok()
}

/// A full document verification written here (no key-validity dates, no reason codes): what any
/// document-verify path must at least do.
///
/// # Errors
/// Malformed signature objects or keys.
pub fn verify_local_full_path(document: &Value, key_record: &Value) -> anyhow::Result<bool> {
    let sig = document.get("signature").context("unsigned")?;
    let field = |v: &Value, k: &str| -> anyhow::Result<String> {
        Ok(v.get(k).and_then(Value::as_str).with_context(|| format!("no {k}"))?.to_owned())
    };
    let (alg, kid, signed_at) = (field(sig, "alg")?, field(sig, "kid")?, field(sig, "signedAt")?);
    if field(key_record, "kid")? != kid || field(key_record, "alg")? != alg {
        return Ok(false);
    }
    let sig_bytes: [u8; 64] = Base64UrlUnpadded::decode_vec(&field(sig, "sig")?)
        .map_err(|e| anyhow::anyhow!("sig: {e}"))?
        .try_into()
        .map_err(|_| anyhow::anyhow!("sig is not 64 bytes"))?;
    let key_bytes: [u8; 32] = Base64UrlUnpadded::decode_vec(&field(key_record, "publicKey")?)
        .map_err(|e| anyhow::anyhow!("publicKey: {e}"))?
        .try_into()
        .map_err(|_| anyhow::anyhow!("publicKey is not 32 bytes"))?;
    let key = VerifyingKey::from_bytes(&key_bytes)?;
    let hash = document_hash(document)?;
    let kind = document.get("kind").and_then(Value::as_str);
    let header_jcs = to_jcs(&header(&alg, &hash, &kid, kind, &signed_at))?;
    Ok(key.verify_strict(&header_jcs, &Signature::from_bytes(&sig_bytes)).is_ok())
}

/// A verifier for the `cookwala` crate's document-verify path, or `None` when the bench was
/// built without the `cookwala` feature (`cargo build --release -p bench --features cookwala`;
/// `BENCH_FEATURES=cookwala bench/run.sh`).
///
/// The crate's own signing function must produce the same signature as the fixture (Ed25519 is
/// deterministic), which cross-checks both implementations before anything is timed.
///
/// # Errors
/// When the key record is refused or the two signatures differ.
#[cfg(feature = "cookwala")]
pub fn cookwala_verifier(fixture: &SignedFixture) -> anyhow::Result<Option<DocVerifier>> {
    use cookwala::{KeyRecord, KeySet, SignedKind, SigningAlg, SigningKey};

    let record = KeyRecord::from_value(&fixture.key_record)
        .map_err(|e| anyhow::anyhow!("cookwala refuses the key record: {e}"))?;
    let keys = KeySet::from_records(vec![record]);
    let key = SigningKey::from_private_bytes(SigningAlg::EdDsa, &RFC8032_TEST1_SEED)
        .map_err(|e| anyhow::anyhow!("cookwala signing key: {e}"))?;
    let theirs = cookwala::sign(&fixture.document, &key, KID, SIGNED_AT, SignedKind::Document)
        .map_err(|e| anyhow::anyhow!("cookwala::sign: {e}"))?;
    let ours = fixture.document.get("signature");
    if Some(&theirs) != ours {
        bail!("cookwala::sign gives {theirs:?}, the bench fixture has {ours:?}");
    }
    Ok(Some(Box::new(move |doc: &Value| {
        cookwala::verify_signature(doc, &keys, SignedKind::Document).is_ok()
    })))
}

/// Without the `cookwala` feature there is nothing to measure.
///
/// # Errors
/// Never.
#[cfg(not(feature = "cookwala"))]
pub fn cookwala_verifier(fixture: &SignedFixture) -> anyhow::Result<Option<DocVerifier>> {
    let _ = fixture;
    Ok(None)
}

/// A prepared document verifier (keys loaded once, outside the timed loop).
pub type DocVerifier = Box<dyn Fn(&Value) -> bool>;

/// Runs the signature measurements on `document` (named `name` in the output).
///
/// # Errors
/// When the fixture cannot be built or does not verify on some path.
pub fn measure_all(
    name: &str,
    document: &Value,
    config: Config,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let fixture = make_signed_fixture(document)?;
    if !verify_bare(&fixture) {
        bail!("the fixture does not verify with bare verify_strict");
    }
    if !verify_local_full_path(&fixture.document, &fixture.key_record)? {
        bail!("the fixture does not verify on the bench-local full path");
    }
    let work = |implementation, op| Work {
        set: name,
        implementation,
        op,
        docs: 1,
        bytes: fixture.body_len,
    };
    // The three paths are timed in turn within every run (`measure_interleaved`): their ratio,
    // the figure that matters, then does not depend on when each one happened to run.
    let verifier = cookwala_verifier(&fixture)?;
    if let Some(verify) = &verifier
        && !verify(&fixture.document)
    {
        bail!("the cookwala verify path rejects the fixture");
    }
    let failed_cell = std::cell::Cell::new(false);
    let mut bare = || failed_cell.set(failed_cell.get() | !verify_bare(black_box(&fixture)));
    let mut local = || {
        let ok = matches!(
            verify_local_full_path(black_box(&fixture.document), &fixture.key_record),
            Ok(true)
        );
        failed_cell.set(failed_cell.get() | !ok);
    };
    let mut crate_path = || {
        if let Some(verify) = &verifier {
            failed_cell.set(failed_cell.get() | !verify(black_box(&fixture.document)));
        }
    };
    let mut closures: Vec<&mut dyn FnMut()> = vec![&mut bare, &mut local];
    if verifier.is_some() {
        closures.push(&mut crate_path);
    } else {
        eprintln!(
            "cw-bench: built without the cookwala feature: cookwala verify path not measured"
        );
    }
    let measured = measure_interleaved(config, &mut closures);
    let failed = failed_cell.get();
    let labels = [
        ("ed25519-dalek", "verify_strict(header)"),
        ("bench-local", "verify document"),
        ("cookwala", "verify document"),
    ];
    let mut out = Vec::new();
    for ((implementation, op), (sample, vs_bare)) in labels.into_iter().zip(&measured) {
        let mut rec = record(&work(implementation, op), sample);
        if let Some(map) = rec.as_object_mut() {
            map.insert("vs_bare_same_run".into(), serde_json::json!(vs_bare));
        }
        out.push(rec);
    }
    if failed {
        bail!("a verification failed during the timed loop");
    }
    Ok(out)
}
