//! A database reached over TLS (`sslmode=require`): the server's certificate is checked
//! against the trusted roots (here a private one, `PgOptions::tls_roots`), and the connections
//! really are encrypted (the server's `pg_stat_ssl` says so).

use std::time::Duration;

use cookwala_hub::storage::{Commit, NewEvent, Storage};
use cookwala_hub_postgres::{PgOptions, PgStorage};
use test_support::postgres::PgCluster;

fn options(replica: &str, roots: Vec<Vec<u8>>) -> PgOptions {
    PgOptions {
        replica: replica.to_owned(),
        lease: Duration::from_secs(10),
        pool_size: 2,
        tls_roots: roots,
    }
}

#[test]
fn a_store_over_tls_checks_the_server_certificate_and_encrypts() {
    let Some(mut cluster) = PgCluster::start() else { return };
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).expect("cert");
    cluster.enable_tls(&cert.cert.pem(), &cert.signing_key.serialize_pem());
    let url = format!("{}?sslmode=require", cluster.url());
    let der = cert.cert.der().to_vec();

    // Trusted: the store opens, writes and reads over TLS.
    let s = PgStorage::connect(&url, options("tls-a", vec![der])).expect("connect over TLS");
    let event = NewEvent {
        id: "e-tls".into(),
        ty: "cookwala.test".into(),
        subject: "x".into(),
        body: "{}".into(),
    };
    s.commit(&Commit { events: vec![event], ..Commit::default() }).expect("commit");
    assert!(s.event_position("e-tls").expect("read").is_some());
    let encrypted = cluster.sql(
        "cookwala",
        "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.application_name = 'cookwala-hub tls-a'",
    );
    assert_eq!(encrypted, "t", "every connection of the store is encrypted");

    // Untrusted (only the public roots): refused, never downgraded to plain text.
    let err = PgStorage::connect(&url, options("tls-b", Vec::new())).expect_err("untrusted");
    let text = err.to_string();
    assert!(text.to_lowercase().contains("certificate"), "{text}");
    // Without sslmode=require the client stays plain (the server allows both).
    let plain = PgStorage::connect(&cluster.url(), options("plain", Vec::new())).expect("plain");
    assert!(plain.event_position("e-tls").expect("read").is_some());
    let ssl = cluster.sql(
        "cookwala",
        "SELECT bool_or(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.application_name = 'cookwala-hub plain'",
    );
    assert_eq!(ssl, "f");
}
