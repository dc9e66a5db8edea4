//! The device and catalog documents: safety limits, capabilities, the device list and the
//! API description.

#[allow(clippy::wildcard_imports)]
use super::*;

// ---- catalog and device documents (open)

/// The SafetyLimits the device enforces (the default pack narrowed by its own; see
/// [`crate::catalog`]).
pub(super) async fn safety_limits(On(device): On) -> Response {
    doc_response(StatusCode::OK, &device.limits)
}

pub(super) async fn capabilities(State(hub): State<Hub>, On(device): On) -> Response {
    let mut res = doc_response(StatusCode::OK, &device.doc);
    if let Some(ms) = hub.last_heartbeat(&device.id)
        && let Ok(v) = HeaderValue::from_str(&cookwala_sim::rfc3339_ms(ms))
    {
        res.headers_mut().insert("x-hub-last-heartbeat", v);
    }
    res
}

/// `GET /v1/devices` (bearer, read): `{devices: [{id, name, vendor?, root, prefix, busy,
/// active, lastHeartbeat?}]}`, the root device first, then the others by id. `name` is the
/// Capabilities `actor.model` (else the id); `prefix` is where its Core endpoints are.
pub(super) async fn devices(
    State(hub): State<Hub>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize(&hub, &headers)?;
    let live = hub.live_executions().await;
    let root = hub.root_device();
    let others = hub.devices().values().filter(|d| !d.root);
    let mut list: Vec<Value> = std::iter::once(&root)
        .chain(others)
        .filter(|d| d.root || !hub.is_remote(&d.id))
        .map(|d| {
            let actor = |k: &str| d.doc.pointer(&format!("/actor/{k}")).and_then(Value::as_str);
            let active: Vec<Value> = live
                .iter()
                .filter(|(_, dev)| *dev == d.id)
                .map(|(id, _)| Value::from(id.as_str()))
                .collect();
            let mut m = Map::new();
            m.insert("id".into(), d.id.as_str().into());
            m.insert("name".into(), actor("model").unwrap_or(&d.id).into());
            if let Some(v) = actor("vendor") {
                m.insert("vendor".into(), v.into());
            }
            m.insert("root".into(), d.root.into());
            m.insert("origin".into(), "hub".into());
            m.insert("online".into(), true.into());
            m.insert("prefix".into(), format!("/devices/{}/v1", d.id).into());
            m.insert("busy".into(), (!active.is_empty()).into());
            m.insert("active".into(), Value::Array(active));
            if let Some(ms) = hub.last_heartbeat(&d.id) {
                m.insert("lastHeartbeat".into(), cookwala_sim::rfc3339_ms(ms).into());
            }
            Value::Object(m)
        })
        .collect();
    list.extend(
        hub.remote_list().iter().filter(|r| r.announce.device != root.id).map(remote_entry),
    );
    let mut body = Map::new();
    body.insert("devices".into(), Value::Array(list));
    Ok(doc_response(StatusCode::OK, &Value::Object(body)))
}

pub(super) async fn openapi(State(hub): State<Hub>) -> Response {
    let text = hub.config().spec.clone().unwrap_or_else(|| crate::openapi::OWN_SPEC.to_owned());
    let mut res = (StatusCode::OK, text).into_response();
    // JSON is YAML too: one text serves both paths.
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

/// A `GET /v1/devices` entry for a device of the kitchen announced on the bus.
fn remote_entry(r: &crate::kitchen::Remote) -> Value {
    let a = &r.announce;
    let mut m = Map::new();
    m.insert("id".into(), a.device.as_str().into());
    m.insert("name".into(), a.device.as_str().into());
    m.insert("root".into(), false.into());
    m.insert("origin".into(), "kitchen".into());
    m.insert("baseUrl".into(), a.base_url.as_str().into());
    m.insert("instance".into(), a.instance.as_str().into());
    if let Some(h) = &a.capabilities_hash {
        m.insert("capabilitiesHash".into(), h.as_str().into());
    }
    m.insert("online".into(), r.online.into());
    m.insert("since".into(), cookwala_sim::rfc3339_ms(r.since_ms).into());
    if let Some(why) = r.offline_reason {
        m.insert("offlineReason".into(), why.as_str().into());
    }
    m.insert("prefix".into(), format!("/devices/{}/v1", a.device).into());
    let active: Vec<Value> = r.active.keys().map(|id| Value::from(id.as_str())).collect();
    m.insert("busy".into(), (!active.is_empty()).into());
    m.insert("active".into(), Value::Array(active));
    if let Some(ms) = r.last_heartbeat_ms {
        m.insert("lastHeartbeat".into(), cookwala_sim::rfc3339_ms(ms).into());
    }
    Value::Object(m)
}
