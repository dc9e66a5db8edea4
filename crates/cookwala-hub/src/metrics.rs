//! What the hub counts for its operators, in the Prometheus text format (`GET /metrics`).
//!
//! One [`Metrics`] per hub, built on `prometheus-client` (the Prometheus project's own Rust
//! client): counters and histograms are updated where the thing happens (a request answered,
//! an execution accepted, refused or ended, a safety limit fired, a commit written, a
//! connection opened or closed); gauges that mirror state (executions live, devices, how far
//! each transport is behind the outbox) are read at scrape time by [`Metrics::encode`]'s
//! caller and set just before encoding, so no code path keeps a second copy of that state.
//!
//! Label values are bounded: routes are the router's patterns (`/v1/executions/{id}`, never a
//! raw path), refusal reasons and states are the standard's enums, devices are the catalog's.
//! No label or value carries a token, a name or a request body.
//!
//! A leaf: nothing here knows the service or HTTP.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// A request's route (the router's pattern), method and status. The values are interned
/// (`&'static`): counting a request allocates nothing, and the label sets are bounded by the
/// router's patterns, the methods below and the status codes.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `/v1/executions/{id}`, or `unmatched`.
    pub route: &'static str,
    /// `GET`, `POST`, … (`other` for a method HTTP does not define).
    pub method: &'static str,
    /// `200`, `404`, …
    pub status: u16,
}

/// A route and method.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    /// The router's pattern.
    pub route: &'static str,
    /// The method.
    pub method: &'static str,
}

/// The method's label: one of HTTP's own, else `other` (a client inventing methods cannot
/// grow the label sets).
pub fn method_label(method: &str) -> &'static str {
    const KNOWN: [&str; 9] =
        ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"];
    KNOWN.into_iter().find(|m| *m == method).unwrap_or("other")
}

/// A device.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeviceLabels {
    /// The catalog id.
    pub device: String,
}

/// A refusal reason (the Core `RefusalReason`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    /// `busy`, `safety_limit`, …
    pub reason: String,
}

/// A final state an execution ended in.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    /// `completed`, `stopped` or `failed`.
    pub state: String,
}

/// A safety limit.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LimitLabels {
    /// The limit id (`oil.max_temp`, `x-sim.heater_runaway`, …).
    pub limit: String,
    /// Its action (`cut_heat`, `stop_all`, …).
    pub action: String,
}

/// A delivery transport.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TransportLabels {
    /// `webhook`, `mqtt`.
    pub transport: String,
}

fn latency_histogram() -> Histogram {
    // 100 µs to ~6.5 s.
    Histogram::new(exponential_buckets(0.000_1, 2.0, 17))
}

/// The hub's metrics (see the module documentation for their names).
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// `cookwala_http_requests_total{route,method,status}`.
    pub requests: Family<RequestLabels, Counter>,
    /// `cookwala_http_request_duration_seconds{route,method}`.
    pub request_seconds: Family<RouteLabels, Histogram>,
    /// `cookwala_executions_started_total{device}`: accepted executions.
    pub started: Family<DeviceLabels, Counter>,
    /// `cookwala_executions_refused_total{reason}`.
    pub refused: Family<ReasonLabels, Counter>,
    /// `cookwala_executions_ended_total{state}`: accepted executions that reached a final
    /// state.
    pub ended: Family<StateLabels, Counter>,
    /// `cookwala_executions_active`: live on this hub (set at scrape time).
    pub active: Gauge,
    /// `cookwala_devices`: devices served (set at scrape time).
    pub devices: Gauge,
    /// `cookwala_safety_limit_firings_total{limit,action}`.
    pub safety_firings: Family<LimitLabels, Counter>,
    /// `cookwala_store_commit_duration_seconds`: one durable commit (group commits included).
    pub commit_seconds: Histogram,
    /// `cookwala_store_commit_failures_total`.
    pub commit_failures: Counter,
    /// `cookwala_connections_open`: HTTP connections open now.
    pub connections: Gauge,
    /// `cookwala_event_streams_open`: SSE and WebSocket streams open now (set at scrape time).
    pub streams: Gauge,
    /// `cookwala_outbox_position`: the last committed outbox position (set at scrape time).
    pub outbox_position: Gauge,
    /// `cookwala_outbox_pending_events{transport}`: committed events a transport has not
    /// delivered yet (set at scrape time; a webhook's is the slowest webhook's).
    pub pending: Family<TransportLabels, Gauge>,
    /// `cookwala_fleet_leases_held`: devices this replica holds a lease on (set at scrape
    /// time; 0 on a store of its own).
    pub leases: Gauge,
    /// `cookwala_fleet_failovers_total`: executions of a lost replica this one ended.
    pub failovers: Counter,
    /// Route patterns seen, interned (the router's patterns: a bounded set).
    routes: std::sync::RwLock<std::collections::HashSet<&'static str>>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// Every metric, registered.
    pub fn new() -> Metrics {
        let mut r = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        r.register("cookwala_http_requests", "HTTP requests answered", requests.clone());
        let request_seconds =
            Family::<RouteLabels, Histogram>::new_with_constructor(latency_histogram as fn() -> _);
        r.register(
            "cookwala_http_request_duration_seconds",
            "Time from the request read to the answer's head",
            request_seconds.clone(),
        );
        let started = Family::<DeviceLabels, Counter>::default();
        r.register("cookwala_executions_started", "Executions accepted", started.clone());
        let refused = Family::<ReasonLabels, Counter>::default();
        r.register("cookwala_executions_refused", "Executions refused, by reason", refused.clone());
        let ended = Family::<StateLabels, Counter>::default();
        r.register(
            "cookwala_executions_ended",
            "Accepted executions that reached a final state",
            ended.clone(),
        );
        let active = Gauge::default();
        r.register("cookwala_executions_active", "Executions live on this hub", active.clone());
        let devices = Gauge::default();
        r.register("cookwala_devices", "Devices served", devices.clone());
        let safety_firings = Family::<LimitLabels, Counter>::default();
        r.register(
            "cookwala_safety_limit_firings",
            "Safety limits and guards that fired",
            safety_firings.clone(),
        );
        let commit_seconds = latency_histogram();
        r.register(
            "cookwala_store_commit_duration_seconds",
            "Durable commits to the store",
            commit_seconds.clone(),
        );
        let commit_failures = Counter::default();
        r.register(
            "cookwala_store_commit_failures",
            "Commits the store refused or failed",
            commit_failures.clone(),
        );
        let connections = Gauge::default();
        r.register("cookwala_connections_open", "HTTP connections open", connections.clone());
        let streams = Gauge::default();
        r.register(
            "cookwala_event_streams_open",
            "SSE and WebSocket event streams open",
            streams.clone(),
        );
        let outbox_position = Gauge::default();
        r.register(
            "cookwala_outbox_position",
            "The last committed outbox position",
            outbox_position.clone(),
        );
        let pending = Family::<TransportLabels, Gauge>::default();
        r.register(
            "cookwala_outbox_pending_events",
            "Committed events a transport has not delivered yet",
            pending.clone(),
        );
        let leases = Gauge::default();
        r.register(
            "cookwala_fleet_leases_held",
            "Device leases this replica holds",
            leases.clone(),
        );
        let failovers = Counter::default();
        r.register(
            "cookwala_fleet_failovers",
            "Executions of a lost replica ended by this one",
            failovers.clone(),
        );
        Metrics {
            registry: r,
            requests,
            request_seconds,
            started,
            refused,
            ended,
            active,
            devices,
            safety_firings,
            commit_seconds,
            commit_failures,
            connections,
            streams,
            outbox_position,
            pending,
            leases,
            failovers,
            routes: std::sync::RwLock::default(),
        }
    }

    /// `route` as a `&'static str`: leaked once per distinct pattern. Only the router's
    /// patterns (and `unmatched`) reach here, never a raw path, so the set is bounded.
    fn intern(&self, route: &str) -> &'static str {
        use std::sync::PoisonError;
        if let Some(r) = self.routes.read().unwrap_or_else(PoisonError::into_inner).get(route) {
            return r;
        }
        let mut routes = self.routes.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(r) = routes.get(route) {
            return r;
        }
        let r: &'static str = Box::leak(route.to_owned().into_boxed_str());
        routes.insert(r);
        r
    }

    /// Records one answered request (`route` is the router's pattern, never a raw path).
    pub fn request(&self, route: &str, method: &str, status: u16, seconds: f64) {
        let (route, method) = (self.intern(route), method_label(method));
        self.requests.get_or_create(&RequestLabels { route, method, status }).inc();
        self.request_seconds.get_or_create(&RouteLabels { route, method }).observe(seconds);
    }

    /// The text exposition (OpenMetrics text, which Prometheus reads).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// The content type of [`Metrics::encode`].
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_every_metric_and_its_labels() {
        let m = Metrics::new();
        m.request("/v1/executions", "POST", 202, 0.002);
        m.request("/v1/executions", "BREW", 405, 0.001);
        m.started.get_or_create(&DeviceLabels { device: "hob".into() }).inc();
        m.refused.get_or_create(&ReasonLabels { reason: "busy".into() }).inc();
        m.commit_seconds.observe(0.001);
        let text = m.encode();
        for needle in [
            "cookwala_http_requests_total{route=\"/v1/executions\",method=\"POST\",status=\"202\"} 1",
            "cookwala_http_request_duration_seconds_count{route=\"/v1/executions\",method=\"POST\"} 1",
            "cookwala_executions_started_total{device=\"hob\"} 1",
            "cookwala_executions_refused_total{reason=\"busy\"} 1",
            "cookwala_store_commit_duration_seconds_count 1",
            "cookwala_http_requests_total{route=\"/v1/executions\",method=\"other\",status=\"405\"} 1",
            "# EOF",
        ] {
            assert!(text.contains(needle), "{needle} missing from\n{text}");
        }
    }
}
