use canonical_json::Value;
use cookwala::keys::{KeyRecord, KeySet, SigningAlg, SigningKey};
use cookwala::signature::{Reason, SignedKind, attach, signing_input, verify_signature};
use rand::SeedableRng;

use crate::json;

pub fn rng() -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(7)
}

const KID: &str = "did:web:hub.example#k1";
const FROM: &str = "2026-01-01T00:00:00Z";
const AT: &str = "2026-03-01T12:00:00Z";

fn doc() -> Value {
    json(
        r#"{"kind":"Recall","id":"rc-1","issuedAt":"2026-03-01T12:00:00Z","n":[1,2.5],"x-a":{"b":"c"}}"#,
    )
}

fn setup(alg: SigningAlg) -> (SigningKey, KeySet, Value) {
    let key = SigningKey::generate(alg, &mut rng());
    let keys = KeySet::from_records(vec![key.key_record(KID, FROM)]);
    let signed = attach(&doc(), &key, KID, AT, SignedKind::Document).unwrap();
    (key, keys, signed)
}

fn reason(doc: &Value, keys: &KeySet) -> Reason {
    verify_signature(doc, keys, SignedKind::Document).reason
}

fn with_record(keys: &KeySet, edit: impl FnOnce(&mut KeyRecord)) -> KeySet {
    let mut record = keys.records()[0].clone();
    edit(&mut record);
    KeySet::from_records(vec![record])
}

fn set(doc: &Value, pointer: &[&str], value: Value) -> Value {
    let mut out = doc.clone();
    let mut target = &mut out;
    for key in &pointer[..pointer.len() - 1] {
        target = target.as_object_mut().unwrap().get_mut(*key).unwrap();
    }
    target.as_object_mut().unwrap().insert(pointer[pointer.len() - 1].into(), value);
    out
}

#[test]
fn round_trips_both_algs() {
    for alg in [SigningAlg::EdDsa, SigningAlg::Es256] {
        let (key, keys, signed) = setup(alg);
        assert_eq!(reason(&signed, &keys), Reason::Ok, "{alg:?}");
        let sig = signed.get("signature").unwrap();
        assert_eq!(sig.get("alg").unwrap().as_str(), Some(alg.as_str()));
        let raw = cookwala::b64::decode(sig.get("sig").unwrap().as_str().unwrap()).unwrap();
        assert_eq!(raw.len(), 64);
        let public = cookwala::b64::decode(&key.public_key()).unwrap();
        assert_eq!(public.len(), if alg == SigningAlg::EdDsa { 32 } else { 65 });
    }
}

#[test]
fn es256_accepts_compressed_keys_and_high_s() {
    use p256::elliptic_curve::sec1::ToSec1Point;
    let (key, keys, signed) = setup(SigningAlg::Es256);
    let SigningKey::Es256(sk) = &key else { unreachable!() };
    let compressed = sk.verifying_key().as_affine().to_sec1_point(true);
    let keys_c =
        with_record(&keys, |r| r.public_key = cookwala::b64::encode(compressed.as_bytes()));
    assert_eq!(reason(&signed, &keys_c), Reason::Ok);

    // Flip s to n - s: the same signature in high-S form still verifies.
    let sig_text = signed.pointer("/signature/sig").unwrap().as_str().unwrap();
    let sig =
        p256::ecdsa::Signature::from_slice(&cookwala::b64::decode(sig_text).unwrap()).unwrap();
    let (r, s) = sig.split_scalars();
    let high = p256::ecdsa::Signature::from_scalars(r, -s).unwrap();
    let flipped =
        set(&signed, &["signature", "sig"], cookwala::b64::encode(&high.to_bytes()).into());
    assert_ne!(flipped, signed);
    assert_eq!(reason(&flipped, &keys), Reason::Ok);
}

#[test]
fn tampering_any_field_is_bad_signature() {
    for alg in [SigningAlg::EdDsa, SigningAlg::Es256] {
        let (_, keys, signed) = setup(alg);
        let cases: Vec<(&[&str], Value)> = vec![
            (&["id"], "rc-2".into()),
            (&["issuedAt"], "2026-03-01T12:00:01Z".into()),
            (&["kind"], "Other".into()),
            (&["n"], json("[1,2.6]")),
            (&["x-a"], json(r#"{"b":"d"}"#)),
            (&["extra"], true.into()),
            (&["signature", "signedAt"], "2026-03-01T12:00:01Z".into()),
        ];
        for (path, value) in cases {
            let tampered = set(&signed, path, value);
            assert_eq!(reason(&tampered, &keys), Reason::BadSignature, "{alg:?} {path:?}");
        }
        // Dropping the kind changes the header.
        let mut no_kind = signed.clone();
        no_kind.as_object_mut().unwrap().remove("kind");
        assert_eq!(reason(&no_kind, &keys), Reason::BadSignature);
        // A corrupted signature byte.
        let sig = signed.pointer("/signature/sig").unwrap().as_str().unwrap();
        let mut bytes = cookwala::b64::decode(sig).unwrap();
        bytes[10] ^= 1;
        let bad = set(&signed, &["signature", "sig"], cookwala::b64::encode(&bytes).into());
        assert_eq!(reason(&bad, &keys), Reason::BadSignature);
        // Nested hash / signature fields are covered, top-level hash is not.
        let with_hash = set(&signed, &["hash"], "sha256:00".into());
        assert_eq!(reason(&with_hash, &keys), Reason::Ok);
    }
}

#[test]
fn every_reason_is_reachable() {
    let (_, keys, signed) = setup(SigningAlg::EdDsa);
    let r = |d: &Value, k: &KeySet| reason(d, k);
    let mut unsigned = signed.clone();
    unsigned.as_object_mut().unwrap().remove("signature");
    assert_eq!(r(&unsigned, &keys), Reason::Unsigned);
    assert_eq!(r(&set(&signed, &["signature"], json("{}")), &keys), Reason::Unsigned);
    assert_eq!(r(&set(&signed, &["signature"], "x".into()), &keys), Reason::Unsigned);
    assert_eq!(
        r(&set(&signed, &["signature", "signedAt"], "".into()), &keys),
        Reason::UnsignedTime
    );
    assert_eq!(r(&set(&signed, &["signature", "kid"], "other".into()), &keys), Reason::UnknownKey);
    assert_eq!(r(&set(&signed, &["signature", "alg"], "ES256".into()), &keys), Reason::AlgMismatch);
    let rs = with_record(&keys, |k| k.alg = cookwala::Alg::Other("RS256".into()));
    let doc_rs = set(&signed, &["signature", "alg"], "RS256".into());
    assert_eq!(r(&doc_rs, &rs), Reason::AlgNotSupportedByReference);
    assert_eq!(
        r(&set(&signed, &["signature", "signedAt"], "yesterday".into()), &keys),
        Reason::InvalidTimestamp
    );
    assert_eq!(
        r(&set(&signed, &["signature", "signedAt"], 5i64.into()), &keys),
        Reason::InvalidTimestamp
    );
    let later = with_record(&keys, |k| k.valid_from = Some("2026-03-01T12:00:01Z".into()));
    assert_eq!(r(&signed, &later), Reason::KeyNotValidAtSigningTime);
    let expired = with_record(&keys, |k| k.valid_to = Some("2026-03-01T11:59:59Z".into()));
    assert_eq!(r(&signed, &expired), Reason::KeyNotValidAtSigningTime);
    let revoked = with_record(&keys, |k| k.revoked_at = Some(AT.into()));
    assert_eq!(r(&signed, &revoked), Reason::KeyRevoked);
    let bad_date = with_record(&keys, |k| k.valid_from = Some("soon".into()));
    assert_eq!(r(&signed, &bad_date), Reason::InvalidTimestamp);
    let bad_rev = with_record(&keys, |k| k.revoked_at = Some("soon".into()));
    assert_eq!(r(&signed, &bad_rev), Reason::InvalidTimestamp);
    let other_key =
        SigningKey::generate(SigningAlg::EdDsa, &mut rand::rngs::StdRng::seed_from_u64(9));
    let rebound = with_record(&keys, |k| k.public_key = other_key.public_key());
    assert_eq!(r(&signed, &rebound), Reason::BadSignature);
    assert_eq!(r(&signed, &keys), Reason::Ok);
}

#[test]
fn comparison_edges() {
    let (_, keys, signed) = setup(SigningAlg::EdDsa);
    // Valid exactly at validTo, and at validFrom; revoked exactly at revokedAt.
    let at_to = with_record(&keys, |k| k.valid_to = Some("2026-03-01T13:00:00+01:00".into()));
    assert_eq!(reason(&signed, &at_to), Reason::Ok);
    let at_from = with_record(&keys, |k| k.valid_from = Some(AT.into()));
    assert_eq!(reason(&signed, &at_from), Reason::Ok);
    let rev = with_record(&keys, |k| k.revoked_at = Some("2026-03-01T12:00:00.000001Z".into()));
    assert_eq!(reason(&signed, &rev), Reason::Ok);
    // The first matching kid wins, even if a later one would verify.
    let mut both = with_record(&keys, |k| k.revoked_at = Some(FROM.into()));
    both.push(keys.records()[0].clone());
    assert_eq!(reason(&signed, &both), Reason::KeyRevoked);
}

#[test]
fn header_kind_only_when_truthy() {
    let with = signing_input("sha256:ab", "k", "EdDSA", AT, Some(&"Event".into())).unwrap();
    assert_eq!(
        String::from_utf8(with).unwrap(),
        r#"{"alg":"EdDSA","hash":"sha256:ab","kid":"k","kind":"Event","signedAt":"2026-03-01T12:00:00Z"}"#
    );
    let empty = signing_input("sha256:ab", "k", "EdDSA", AT, Some(&"".into())).unwrap();
    let none = signing_input("sha256:ab", "k", "EdDSA", AT, None).unwrap();
    assert_eq!(empty, none);
    // A document whose kind is empty signs without kind and still verifies.
    let key = SigningKey::generate(SigningAlg::EdDsa, &mut rng());
    let keys = KeySet::from_records(vec![key.key_record(KID, FROM)]);
    let d = json(r#"{"kind":"","id":"x"}"#);
    let signed = attach(&d, &key, KID, AT, SignedKind::Document).unwrap();
    assert_eq!(reason(&signed, &keys), Reason::Ok);
    // Signing as Event and verifying as Document fails (kind is under the signature).
    let as_event = attach(&d, &key, KID, AT, SignedKind::Event).unwrap();
    assert_eq!(reason(&as_event, &keys), Reason::BadSignature);
    assert!(verify_signature(&as_event, &keys, SignedKind::Event).is_ok());
}

#[test]
fn signing_refuses_bad_times() {
    let key = SigningKey::generate(SigningAlg::EdDsa, &mut rng());
    assert!(attach(&doc(), &key, KID, "2026-03-01", SignedKind::Document).is_err());
}

#[test]
fn an_unknown_revocation_reason_keeps_the_set_and_the_revocation() {
    let (_, keys, signed) = setup(SigningAlg::EdDsa);
    let mut record = keys.records()[0].to_value();
    let Some(map) = record.as_object_mut() else { panic!("a record is an object") };
    map.insert("revokedAt".into(), "2026-03-01T12:00:01Z".into());
    map.insert("revocationReason".into(), "key_compromise".into());
    let loaded = KeySet::from_value(&Value::Array(vec![record]));
    let Ok(loaded) = loaded else {
        panic!("an informative field must not void the set: {loaded:?}")
    };
    // Signed before revokedAt: still good; the unknown reason is a warning.
    assert_eq!(reason(&signed, &loaded), Reason::Ok);
    assert_eq!(loaded.warnings().len(), 1);
    assert!(loaded.warnings()[0].contains("key_compromise"));
    // Signed at or after revokedAt: revoked, whatever the reason says.
    let revoked = with_record(&loaded, |k| k.revoked_at = Some(AT.into()));
    assert_eq!(reason(&signed, &revoked), Reason::KeyRevoked);
}

#[test]
fn a_record_without_valid_from_gives_invalid_timestamp() {
    let (_, keys, signed) = setup(SigningAlg::EdDsa);
    let mut record = keys.records()[0].to_value();
    let Some(map) = record.as_object_mut() else { panic!("a record is an object") };
    map.remove("validFrom");
    let loaded = KeySet::from_value(&Value::Array(vec![record]));
    let Ok(loaded) = loaded else { panic!("loads: {loaded:?}") };
    assert_eq!(reason(&signed, &loaded), Reason::InvalidTimestamp);
    // A document signed with another kid is not affected by the record.
    assert_eq!(
        reason(&set(&signed, &["signature", "kid"], "other".into()), &loaded),
        Reason::UnknownKey
    );
}

/// The key set keeps Ed25519 keys decoded; changing the set changes what it verifies with, and
/// a clone or a key that does not decode behaves as the records say.
#[test]
fn decoded_keys_follow_the_records() {
    let (key, keys, signed) = setup(SigningAlg::EdDsa);
    let good = keys.records()[0].clone();
    let other = with_record(&keys, |r| r.kid = "did:web:other#k".into());
    let mut growing = other.clone();
    assert_eq!(reason(&signed, &growing), Reason::UnknownKey);
    growing.push(good.clone());
    assert_eq!(reason(&signed, &growing), Reason::Ok);
    assert_eq!(reason(&signed, &growing.clone()), Reason::Ok);
    // A first record with the same kid and a broken key wins, as `find` says.
    let broken = with_record(&keys, |r| r.public_key = "AAAA".into());
    let mut shadowed = broken.clone();
    shadowed.push(good.clone());
    assert_eq!(reason(&signed, &shadowed), Reason::BadSignature);
    let mut extended = other;
    extended.extend(KeySet::from_records(vec![good]));
    assert_eq!(reason(&signed, &extended), Reason::Ok);
    // Another key under the same kid: the signature does not verify.
    let stranger =
        SigningKey::generate(SigningAlg::EdDsa, &mut rand::rngs::StdRng::seed_from_u64(8));
    let wrong = with_record(&keys, |r| r.public_key = stranger.public_key());
    assert_eq!(reason(&signed, &wrong), Reason::BadSignature);
    let _ = key;
}
