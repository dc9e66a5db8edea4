#![allow(clippy::unwrap_used)]

use super::*;

fn announce(device: &str, instance: &str) -> Announce {
    Announce {
        device: device.to_owned(),
        instance: instance.to_owned(),
        base_url: "http://127.0.0.1:7880".to_owned(),
        capabilities_hash: Some("sha256:00".to_owned()),
        heartbeat_ms: 1000,
    }
}

fn event(ty: &str, id: &str, data: Map) -> Vec<u8> {
    let mut m = Map::new();
    m.insert("specversion".into(), "1.0".into());
    m.insert("id".into(), id.into());
    m.insert("source".into(), "/cookwala/devices/hob".into());
    m.insert("type".into(), ty.into());
    m.insert("data".into(), Value::Object(data));
    crate::storage::jcs_text(&Value::Object(m)).into_bytes()
}

fn online(device: &str, instance: &str) -> Vec<u8> {
    event(ONLINE, &format!("{device}/online/{instance}"), announce(device, instance).to_data())
}

fn offline(device: &str, instance: &str) -> Vec<u8> {
    event(OFFLINE, &format!("{device}/offline/{instance}"), announce(device, instance).to_data())
}

fn heartbeat(device: &str, instance: &str, n: u32, active: &[Active]) -> Vec<u8> {
    let mut data = announce(device, instance).to_data();
    data.insert("x-executions".into(), Value::Array(active.iter().map(Active::to_value).collect()));
    event(HEARTBEAT, &format!("{device}/heartbeat/{instance}/{n}"), data)
}

fn exec_event(id: &str, subject: &str, seq: u64, state: &str) -> Vec<u8> {
    let mut data = Map::new();
    data.insert("state".into(), state.into());
    let mut m = Map::new();
    m.insert("specversion".into(), "1.0".into());
    m.insert("id".into(), id.into());
    m.insert("source".into(), "/cookwala/devices/hob".into());
    m.insert("type".into(), "cookwala.execution.state_changed".into());
    m.insert("subject".into(), subject.into());
    m.insert("cookwalaseq".into(), seq.into());
    m.insert("data".into(), Value::Object(data));
    crate::storage::jcs_text(&Value::Object(m)).into_bytes()
}

#[test]
fn a_device_comes_online_and_a_retained_copy_changes_nothing() {
    let mut k = Kitchen::new();
    let c = k.device_message("hob", &online("hob", "a"), 1_000).unwrap();
    assert_eq!(c, Some(Change::Online { device: "hob".into(), back: false, was: vec![] }));
    assert_eq!(k.device_message("hob", &online("hob", "a"), 1_100).unwrap(), None);
    assert!(k.get("hob").unwrap().online);
    assert_eq!(k.device_message("hob", b"", 1_200).unwrap(), None, "a cleared retained message");
}

#[test]
fn a_second_process_claiming_an_online_id_is_refused() {
    let mut k = Kitchen::new();
    k.device_message("hob", &online("hob", "a"), 1_000).unwrap();
    let e = k.device_message("hob", &online("hob", "b"), 1_100).unwrap_err();
    assert!(matches!(e, Refused::Spoofed { .. }), "{e}");
    let e = k.device_message("hob", &heartbeat("hob", "b", 0, &[]), 1_100).unwrap_err();
    assert!(matches!(e, Refused::Spoofed { .. }), "{e}");
    // Nor can it forge the first one's death.
    let e = k.device_message("hob", &offline("hob", "b"), 1_200).unwrap_err();
    assert!(matches!(e, Refused::Stale(_)), "{e}");
    assert_eq!(k.get("hob").unwrap().announce.instance, "a");
    assert!(k.get("hob").unwrap().online);
}

#[test]
fn an_event_naming_another_device_than_its_topic_is_refused() {
    let mut k = Kitchen::new();
    let e = k.device_message("oven", &online("hob", "a"), 1_000).unwrap_err();
    assert!(matches!(e, Refused::WrongTopic { .. }), "{e}");
    assert!(k.get("hob").is_none() && k.get("oven").is_none());
}

#[test]
fn hostile_messages_are_refused_without_harm() {
    let mut k = Kitchen::new();
    let big = vec![b' '; MAX_MESSAGE + 1];
    assert_eq!(k.device_message("hob", &big, 0), Err(Refused::TooLarge(MAX_MESSAGE + 1)));
    for junk in [&b"not json"[..], b"[]", b"{}", b"{\"id\":\"x\",\"type\":\"t\",\"source\":\"s\"}"]
    {
        assert_eq!(k.device_message("hob", junk, 0), Err(Refused::NotEvent));
        assert!(k.execution_event(junk, 0).is_err());
    }
    let mut bad = announce("hob", "a").to_data();
    bad.insert("baseUrl".into(), "http://user:pw@evil/".into());
    let e = k.device_message("hob", &event(ONLINE, "x", bad), 0).unwrap_err();
    assert_eq!(e, Refused::Field("baseUrl"));
    let mut bad = announce("hob", "a").to_data();
    bad.insert("heartbeatSecs".into(), 0i64.into());
    let e = k.device_message("hob", &event(ONLINE, "y", bad), 0).unwrap_err();
    assert_eq!(e, Refused::Field("heartbeatSecs"));
    assert!(k.devices().next().is_none());
}

#[test]
fn the_will_of_the_online_instance_takes_it_offline_with_what_it_ran() {
    let mut k = Kitchen::new();
    k.device_message("hob", &online("hob", "a"), 1_000).unwrap();
    let running = Active::new("e1", "running", 4);
    k.device_message("hob", &heartbeat("hob", "a", 0, std::slice::from_ref(&running)), 1_500)
        .unwrap();
    let c = k.device_message("hob", &offline("hob", "a"), 2_000).unwrap();
    let Some(Change::Offline { reason, active, last_seen_ms, .. }) = c else { panic!("{c:?}") };
    assert_eq!(reason, OfflineReason::Will);
    assert_eq!(active, vec![running.clone()]);
    assert_eq!(last_seen_ms, 1_500);
    // Back under a new instance: what it ran when lost is to be asked of it.
    let c = k.device_message("hob", &online("hob", "b"), 3_000).unwrap();
    assert_eq!(c, Some(Change::Online { device: "hob".into(), back: true, was: vec![running] }));
    // A late will of the earlier life is stale.
    assert!(matches!(k.device_message("hob", &offline("hob", "a"), 3_100), Err(Refused::Stale(_))));
    assert!(k.get("hob").unwrap().online);
}

#[test]
fn three_missed_heartbeats_take_a_device_offline_once() {
    let mut k = Kitchen::new();
    k.device_message("hob", &online("hob", "a"), 1_000).unwrap();
    assert_eq!(k.next_deadline(), Some(4_000));
    assert!(k.expire(3_999).is_empty());
    k.device_message("hob", &heartbeat("hob", "a", 0, &[]), 2_000).unwrap();
    assert_eq!(k.next_deadline(), Some(5_000));
    let gone = k.expire(5_000);
    assert!(matches!(
        gone.as_slice(),
        [Change::Offline { reason: OfflineReason::MissedHeartbeats, .. }]
    ));
    assert!(k.expire(9_000).is_empty(), "offline once");
    assert_eq!(k.next_deadline(), None);
    // A heartbeat of the same instance brings it back (it was only silent).
    let c = k.device_message("hob", &heartbeat("hob", "a", 1, &[]), 9_500).unwrap();
    assert!(matches!(c, Some(Change::Online { back: true, .. })));
}

#[test]
fn execution_events_are_deduplicated_and_ordered_by_seq() {
    let mut k = Kitchen::new();
    k.device_message("hob", &online("hob", "a"), 0).unwrap();
    k.execution_event(&exec_event("e1/1/x", "e1", 1, "running"), 1).unwrap();
    assert_eq!(k.get("hob").unwrap().active["e1"].state, "running");
    assert!(matches!(
        k.execution_event(&exec_event("e1/1/x", "e1", 1, "running"), 2),
        Err(Refused::Duplicate(_))
    ));
    k.execution_event(&exec_event("e1/3/x", "e1", 3, "paused"), 3).unwrap();
    // An older event arriving late does not move the state back.
    assert!(matches!(
        k.execution_event(&exec_event("e1/2/x", "e1", 2, "running"), 4),
        Err(Refused::Stale(_))
    ));
    assert_eq!(k.get("hob").unwrap().active["e1"].state, "paused");
    k.execution_event(&exec_event("e1/5/x", "e1", 5, "stopped"), 5).unwrap();
    assert!(k.get("hob").unwrap().active.is_empty(), "a final state ends tracking");
}

#[test]
fn a_device_that_comes_back_is_authoritative() {
    let mut k = Kitchen::new();
    k.device_message("hob", &online("hob", "a"), 0).unwrap();
    k.started("hob", Active::new("e1", "accepted", 0));
    k.device_message("hob", &offline("hob", "a"), 10).unwrap();
    // Restarted: its first heartbeat says it runs nothing (it ended e1 safely).
    let c = k.device_message("hob", &heartbeat("hob", "b", 0, &[]), 20).unwrap();
    assert!(matches!(c, Some(Change::Online { back: true, ref was, .. }) if was.len() == 1));
    assert!(k.get("hob").unwrap().active.is_empty());
}

#[test]
fn step_hazards_resolve_the_nodes_references() {
    let recipe = canonical_json::parse(
        br#"{"process":{"nodes":[{"id":"n1","hazards":["hz_hot","hz_none"]},{"id":"n2"}]},
            "safety":{"hazards":[{"id":"hz_hot","type":"cw.hz.burn","severity":"high"},
                                 {"id":"hz_knife","type":"cw.hz.cut","severity":"low"}]}}"#,
    )
    .unwrap();
    let h = step_hazards(&recipe, "n1");
    assert_eq!(h.len(), 1);
    assert_eq!(h[0].get("id").and_then(Value::as_str), Some("hz_hot"));
    assert!(step_hazards(&recipe, "n2").is_empty());
    assert!(step_hazards(&recipe, "n9").is_empty());
}

#[test]
fn only_plain_http_urls_are_called() {
    assert!(usable_base_url("http://127.0.0.1:7880"));
    assert!(usable_base_url("https://hob.local"));
    for bad in ["ftp://x", "http://", "http://a@b", "http://a/?q", "javascript:x", "http://a b"] {
        assert!(!usable_base_url(bad), "{bad}");
    }
}
