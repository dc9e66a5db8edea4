#![allow(clippy::unwrap_used)]

use super::alarm::{Reaction, Skip, parse};
use super::{MqttConfig, MqttError, plan, qos_for, segment, topic};

#[test]
fn broker_urls_are_parsed_and_never_show_the_password() {
    let c = MqttConfig::parse("mqtt://hub:s%40cret@broker.local:1884/", "k1").unwrap();
    assert_eq!((c.host.as_str(), c.port, c.tls), ("broker.local", 1884, false));
    assert_eq!(c.username.as_deref(), Some("hub"));
    assert_eq!(c.password.as_deref(), Some("s@cret"));
    assert_eq!(c.cursor_key(), "mqtt://broker.local:1884/k1");
    assert!(!format!("{c:?}").contains("s@cret"));
    let c = MqttConfig::parse("mqtts://[::1]", "k1").unwrap();
    assert_eq!((c.host.as_str(), c.port, c.tls), ("::1", 8883, true));
    assert_eq!(MqttConfig::parse("mqtt://127.0.0.1", "k").unwrap().port, 1883);
    for bad in ["http://x", "mqtt://", "mqtt://h:notaport", "mqtt://h/path", "mqtt://u:p%zz@h"] {
        let err = MqttConfig::parse(bad, "k").unwrap_err();
        assert!(matches!(err, MqttError::Url { .. }), "{bad}");
        assert!(!err.to_string().contains("p%zz"), "{err}");
    }
    for bad in ["", "a/b", "a+b", "#"] {
        assert_eq!(MqttConfig::parse("mqtt://h", bad).unwrap_err(), MqttError::Kitchen(bad.into()));
    }
}

#[test]
fn topics_follow_the_asyncapi_layout_with_safe_segments() {
    assert_eq!(topic("k1", "cookwala.execution.step", "ex-1"), "cookwala/k1/execution/ex-1");
    assert_eq!(topic("k1", "cookwala.safety.limit_fired", "a/b+#"), "cookwala/k1/safety/a_b__");
    assert_eq!(topic("k1", "cookwala.recall.published", ""), "cookwala/k1/recall/hub");
    assert_eq!(topic("k1", "weird", "s"), "cookwala/k1/other/s");
    assert_eq!(segment(""), "_");
    assert_eq!(qos_for("safety"), 2);
    for c in ["task", "lease", "handoff", "ccp", "execution", "recall"] {
        assert_eq!(qos_for(c), 1, "{c}");
    }
    for c in ["telemetry", "device", "notify"] {
        assert_eq!(qos_for(c), 0, "{c}");
    }
}

#[test]
fn hazards_are_retained_and_cleared_when_the_execution_ends() {
    let hazard = r#"{"type":"cookwala.safety.limit_fired","data":{"level":"alarm","action":"heat_off_all"}}"#;
    let p = plan("k", "cookwala.safety.limit_fired", "ex-1", hazard);
    assert_eq!((p.qos, p.retain, p.clear), (2, true, None));
    let note = r#"{"data":{"level":"warning","action":"none"}}"#;
    assert!(!plan("k", "cookwala.safety.limit_fired", "ex-1", note).retain);
    let stopped = r#"{"data":{"state":"stopped"}}"#;
    let p = plan("k", "cookwala.execution.state_changed", "ex-1", stopped);
    assert_eq!((p.qos, p.retain), (1, false));
    assert_eq!(p.clear.as_deref(), Some("cookwala/k/safety/ex-1"));
    let running = r#"{"data":{"state":"running"}}"#;
    assert_eq!(plan("k", "cookwala.execution.state_changed", "ex-1", running).clear, None);
}

#[test]
fn alarms_are_read_and_everything_else_is_dropped() {
    let own = vec!["/cookwala/hub".to_owned(), "/cookwala/devices/hob".to_owned()];
    let alarm = |source: &str, action: &str| {
        format!(
            r#"{{"specversion":"1.0","id":"a1","source":"{source}","type":"cookwala.safety.smoke",
            "time":"2026-12-01T00:00:00Z","data":{{"level":"alarm","action":"{action}","zone":"z1"}}}}"#
        )
    };
    let a =
        parse("cookwala/k/safety/z1", alarm("/smoke/1", "abort_session").as_bytes(), &own).unwrap();
    assert_eq!((a.reaction, a.zone.as_deref(), a.id.as_str()), (Reaction::Stop, Some("z1"), "a1"));
    for (action, reaction) in [
        ("evacuate", Reaction::Stop),
        ("heat_off_all", Reaction::Stop),
        ("pause_all", Reaction::Pause),
    ] {
        let a = parse("t", alarm("/smoke/1", action).as_bytes(), &own).unwrap();
        assert_eq!(a.reaction, reaction);
    }
    assert_eq!(
        parse("t", alarm("/cookwala/devices/hob", "abort_session").as_bytes(), &own),
        Err(Skip::Ignored)
    );
    assert_eq!(parse("t", alarm("/smoke/1", "none").as_bytes(), &own), Err(Skip::Ignored));
    assert_eq!(parse("t", b"", &own), Err(Skip::Ignored));
    assert!(matches!(parse("t", b"{not json", &own), Err(Skip::Malformed(_))));
    assert!(matches!(parse("t", alarm("/s", "dance").as_bytes(), &own), Err(Skip::Malformed(_))));
    let huge = vec![b' '; super::alarm::MAX_ALARM_BYTES + 1];
    assert!(matches!(parse("t", &huge, &own), Err(Skip::Malformed(_))));
}
