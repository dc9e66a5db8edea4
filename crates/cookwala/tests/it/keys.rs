use cookwala::keys::{KeyError, KeySet, SigningAlg, SigningKey, UNBOUNDED_VALID_FROM};
use cookwala::signature::{Reason, SignedKind, attach, verify_signature};
use cookwala::{Alg, b64};

use crate::json;
use crate::signing::rng;

#[test]
fn records_array_and_x_fields() {
    let Some(path) =
        test_support::shared("standards/cookwala/conformance/keys/certification-test-keys.json")
    else {
        return;
    };
    let value = json(&test_support::read(&path));
    let set = KeySet::from_value(&value).unwrap();
    assert_eq!(set.len(), 2);
    let first = set.find("did:web:halal-authority.example#k1").unwrap();
    assert_eq!(first.alg, Alg::EdDsa);
    assert!(first.extensions.contains_key("x-note"));
    assert_eq!(set.to_value(), value);
}

#[test]
fn unknown_fields_are_refused() {
    let v = json(
        r#"[{"kid":"k","alg":"EdDSA","publicKey":"AA","validFrom":"2026-01-01T00:00:00Z","colour":"red"}]"#,
    );
    assert_eq!(KeySet::from_value(&v), Err(KeyError::UnknownField("colour".into())));
    let v = json(r#"[{"kid":"k","alg":"EdDSA","validFrom":"2026-01-01T00:00:00Z"}]"#);
    assert_eq!(KeySet::from_value(&v), Err(KeyError::Missing("publicKey")));
    assert_eq!(KeySet::from_value(&json("5")), Err(KeyError::NotAKeySet));
}

#[test]
fn well_known_with_records_and_discovery_jwks() {
    let ed = SigningKey::generate(SigningAlg::EdDsa, &mut rng());
    let text = format!(
        r#"{{"cookwala":"0.2.0","name":"c","versions":["v1"],"endpoints":{{}},"terms":"t",
        "keys":[{{"kid":"https://c.example#a","kty":"OKP","crv":"Ed25519","x":"{x}","expires":"2027-01-01T00:00:00Z"}},
                {{"kid":"https://c.example#b","alg":"EdDSA","publicKey":"{x}","validFrom":"2026-01-01T00:00:00Z"}}]}}"#,
        x = ed.public_key()
    );
    let set = KeySet::from_value(&json(&text)).unwrap();
    assert_eq!(set.len(), 2);
    let a = set.find("https://c.example#a").unwrap();
    assert_eq!(a.valid_from.as_deref(), Some(UNBOUNDED_VALID_FROM));
    assert_eq!(a.valid_to.as_deref(), Some("2027-01-01T00:00:00Z"));
    let doc = attach(
        &json(r#"{"id":"r"}"#),
        &ed,
        "https://c.example#a",
        "2026-05-01T00:00:00Z",
        SignedKind::Document,
    )
    .unwrap();
    assert!(verify_signature(&doc, &set, SignedKind::Document).is_ok());
    let late = attach(
        &json(r#"{"id":"r"}"#),
        &ed,
        "https://c.example#a",
        "2027-05-01T00:00:00Z",
        SignedKind::Document,
    )
    .unwrap();
    assert_eq!(
        verify_signature(&late, &set, SignedKind::Document).reason,
        Reason::KeyNotValidAtSigningTime
    );
}

fn base58(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    let mut digits: Vec<u8> = Vec::new();
    for &b in bytes {
        let mut carry = u32::from(b);
        for d in &mut digits {
            carry += u32::from(*d) << 8;
            *d = (carry % 58) as u8;
            carry /= 58;
        }
        while carry > 0 {
            digits.push((carry % 58) as u8);
            carry /= 58;
        }
    }
    let zeros = bytes.iter().take_while(|&&b| b == 0).count();
    std::iter::repeat_n('1', zeros)
        .chain(digits.iter().rev().map(|&d| ALPHABET[d as usize] as char))
        .collect()
}

#[test]
fn did_document_jwk_and_multibase() {
    let ed = SigningKey::generate(SigningAlg::EdDsa, &mut rng());
    let es = SigningKey::generate(SigningAlg::Es256, &mut rng());
    let point = es.public_key_bytes();
    let (x, y) = (b64::encode(&point[1..33]), b64::encode(&point[33..]));
    let mut mb = vec![0xed, 0x01];
    mb.extend(ed.public_key_bytes());
    let multibase = format!("z{}", base58(&mb));
    assert!(multibase.starts_with("z6Mk"));
    let text = format!(
        r##"{{"id":"did:web:org.example","verificationMethod":[
          {{"id":"#ed","type":"JsonWebKey2020","controller":"did:web:org.example","publicKeyJwk":{{"kty":"OKP","crv":"Ed25519","x":"{edx}"}}}},
          {{"id":"did:web:org.example#p256","type":"JsonWebKey2020","publicKeyJwk":{{"kty":"EC","crv":"P-256","x":"{x}","y":"{y}"}}}},
          {{"id":"#mb","type":"Ed25519VerificationKey2020","publicKeyMultibase":"{multibase}"}},
          {{"id":"#rsa","type":"JsonWebKey2020","publicKeyJwk":{{"kty":"RSA","n":"AQAB","e":"AQAB"}}}}]}}"##,
        edx = ed.public_key()
    );
    let set = KeySet::from_value(&json(&text)).unwrap();
    assert_eq!(set.len(), 3);
    let edr = set.find("did:web:org.example#ed").unwrap();
    assert_eq!(edr.public_key, ed.public_key());
    assert_eq!(edr.actor.as_deref(), Some("did:web:org.example"));
    assert_eq!(set.find("did:web:org.example#p256").unwrap().public_key, es.public_key());
    assert_eq!(set.find("did:web:org.example#mb").unwrap().public_key, ed.public_key());
    let doc = attach(
        &json(r#"{"id":"r"}"#),
        &es,
        "did:web:org.example#p256",
        "2026-05-01T00:00:00Z",
        SignedKind::Document,
    )
    .unwrap();
    assert!(verify_signature(&doc, &set, SignedKind::Document).is_ok());
}

#[test]
fn capabilities_document() {
    let es = SigningKey::generate(SigningAlg::Es256, &mut rng());
    let mut record = es.key_record("urn:dev:hob-1#k1", "2026-01-01T00:00:00Z").to_value();
    record.as_object_mut().unwrap().insert("hardwareBacked".into(), true.into());
    let text = format!(
        r#"{{"cookwala":"0.2.0","actor":{{"kind":"appliance","id":"urn:dev:hob-1"}},"roles":["executor"],"capabilities":[],"safety":{{}},"interfaces":{{}},"x-cookwala-keys":[{}]}}"#,
        String::from_utf8(canonical_json::to_jcs(&record).unwrap()).unwrap()
    );
    let set = KeySet::from_value(&json(&text)).unwrap();
    let r = set.find("urn:dev:hob-1#k1").unwrap();
    assert_eq!(r.alg, Alg::Es256);
    assert_eq!(r.hardware_backed, Some(true));
}

#[test]
fn key_files_round_trip() {
    for alg in [SigningAlg::EdDsa, SigningAlg::Es256] {
        let key = SigningKey::generate(alg, &mut rng());
        let file = key.to_key_file("k");
        let fields: Vec<_> = file.as_object().unwrap().keys().cloned().collect();
        assert_eq!(fields, ["alg", "kid", "privateKey", "publicKey"]);
        let (kid, back) = SigningKey::from_key_file(&file).unwrap();
        assert_eq!(kid, "k");
        assert_eq!(back.public_key(), key.public_key());
        assert_eq!(back.sign_raw(b"m"), key.sign_raw(b"m"));
        let mut wrong = file.clone();
        let mut other_rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(99);
        let other = SigningKey::generate(alg, &mut other_rng);
        wrong.as_object_mut().unwrap().insert("publicKey".into(), other.public_key().into());
        assert_eq!(SigningKey::from_key_file(&wrong).unwrap_err(), KeyError::PublicKeyMismatch);
        assert!(!format!("{key:?}").contains(&b64::encode(&key.private_bytes())));
    }
}

#[test]
fn rfc8032_test_key() {
    let seed = [
        0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c,
        0xc4, 0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae,
        0x7f, 0x60,
    ];
    let key = SigningKey::from_private_bytes(SigningAlg::EdDsa, &seed).unwrap();
    assert_eq!(key.public_key(), "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo");
}
