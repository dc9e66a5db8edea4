#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

/// RFC 4231 §4.2–4.8, HMAC-SHA-256 (case 5, a truncated output, is left out).
#[test]
fn hmac_sha256_matches_rfc_4231() {
    let aa131 = "aa".repeat(131);
    let cases: [(&str, Vec<u8>, &str); 6] = [
        (
            &"0b".repeat(20),
            b"Hi There".to_vec(),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
        ),
        (
            "4a656665",
            b"what do ya want for nothing?".to_vec(),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
        ),
        (
            &"aa".repeat(20),
            vec![0xdd; 50],
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
        ),
        (
            "0102030405060708090a0b0c0d0e0f10111213141516171819",
            vec![0xcd; 50],
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
        ),
        (
            &aa131,
            b"Test Using Larger Than Block-Size Key - Hash Key First".to_vec(),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
        ),
        (
            &aa131,
            b"This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.".to_vec(),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
        ),
    ];
    for (key, data, mac) in cases {
        assert_eq!(hex(&hmac_sha256(&unhex(key), &data)), mac, "key {key}");
    }
}

#[test]
fn signature_is_sha256_and_lowercase_hex() {
    let sig = signature("Jefe", b"what do ya want for nothing?");
    assert_eq!(sig, "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

#[test]
fn only_http_and_https_urls_with_a_secret_are_accepted() {
    let t = target("http://127.0.0.1:9000/hooks/cw?x=1").unwrap();
    assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("127.0.0.1", 9000, "/hooks/cw?x=1"));
    assert_eq!(t.authority, "127.0.0.1:9000");
    let t = target("http://[::1]/").unwrap();
    assert_eq!((t.host.as_str(), t.port), ("::1", 80));
    assert_eq!(target("http://localhost").unwrap().path, "/");
    let t = target("https://example.test/x").unwrap();
    assert!(t.tls);
    assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("example.test", 443, "/x"));
    assert!(!target("http://example.test/x").unwrap().tls);
    assert!(target("ftp://h/x").is_err());
    assert!(target("http://user:pw@h/x").is_err());
    assert!(target("not a url").is_err());

    let hook = |url: &str, secret: &str| Webhook { url: url.to_owned(), secret: secret.to_owned() };
    assert!(check(&[hook("http://h/a", "s"), hook("http://h/b", "s")]).is_ok());
    assert!(check(&[hook("http://h/a", "")]).is_err());
    assert!(check(&[hook("http://h/a", "s"), hook("http://h/a", "t")]).is_err());
    assert!(check(&[hook("https://h/a", "s")]).is_ok());
    let (url, why) = check(&[hook("ftp://h/a", "s")]).unwrap_err();
    assert_eq!(url, "ftp://h/a");
    assert!(why.starts_with("the URL must start with"), "{why}");
    assert!(!format!("{:?}", hook("http://h/a", "hunter2")).contains("hunter2"));
}
