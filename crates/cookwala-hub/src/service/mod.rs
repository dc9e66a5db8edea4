//! The hub state: live simulations, storage, the simulated clock and restart recovery.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use canonical_json::{Map, Value};
use cookwala_sim::SimConfig;

use crate::catalog::Catalog;
use crate::outbox::Bus;

pub use error::Error;

mod bus;
mod error;
pub(crate) mod executions;
pub(crate) mod fleet;
pub(crate) mod idempotency;
mod incidents;
pub(crate) mod live;
pub mod mqtt;
pub(crate) mod reads;
pub(crate) mod recalls;
mod recovery;
pub(crate) mod remote;
pub(crate) use recovery::{Loss, recover, recover_one};
mod webhooks;
use crate::identity::HubKey;
use crate::outbox::webhooks::{Webhook, WebhookPolicy};
use crate::storage::{Commit, ExecutionRecord, StatusUpdate, Storage, StorageError, jcs_text};

/// How the hub runs.
#[derive(Clone, Debug)]
pub struct HubConfig {
    /// The device served at the root (`/v1/...`): an id or alias in [`HubConfig::catalog`].
    /// Every device of the catalog, this one included, is also served under
    /// `/devices/{id}/v1/...`.
    pub device_id: String,
    /// The recipes and devices the hub knows (default: the built-in ones); every device is
    /// served, with the safety limits the catalog gives it.
    pub catalog: Catalog,
    /// Simulated milliseconds per real millisecond (0 = the clock only moves through
    /// [`Hub::advance`]).
    pub speed: f64,
    /// Tokens with roles (a tokens file, `--token`; see [`crate::auth`]). Only their SHA-256
    /// digests are held, so neither `Debug` nor a log line can show a token. A hub with no
    /// token refuses to open unless [`HubConfig::no_auth`] says so.
    pub tokens: crate::auth::Tokens,
    /// Every endpoint open, every caller an anonymous owner (`serve --no-auth`, local
    /// development with the upstream SDKs, which send no token). Never implied by an empty
    /// tokens list.
    pub no_auth: bool,
    /// The largest request body accepted (413 problem beyond it).
    pub max_body: usize,
    /// The most event streams open at once (503 problem beyond it).
    pub max_streams: usize,
    /// Unauthenticated incident reports kept this many days.
    pub incident_retention_days: u32,
    /// Idempotency records (the stored answers that let a retried request get the original
    /// one) are kept this many hours, then deleted hourly; 0 keeps them forever. A retry after
    /// that gets what a new request gets (a start with a stored id: 409, never a second
    /// execution).
    pub idempotency_retention_hours: u32,
    /// Unauthenticated incident reports accepted per client address per minute (429 beyond).
    pub incidents_per_minute: u32,
    /// Browser origins allowed by CORS (`*` for any); empty: no CORS headers.
    pub cors_origins: Vec<String>,
    /// Where the hub reads the time of day (the system clock; tests set their own).
    pub clock: Arc<dyn crate::clock::Clock>,
    /// The operation vocabulary document served at `/v1/tools/vocab/ops` as it was loaded
    /// (`serve --vocab`; `None`: the compiled-in vocabulary).
    pub vocab_ops: Option<Value>,
    /// Keys the hub trusts (`--keys`): it checks agent mandates and recalls with them, publishes
    /// them next to its own, and the verify tool uses them when a client sends none.
    pub trusted_keys: cookwala::keys::KeySet,
    /// The OpenAPI text served at `/openapi.yaml` (`None`: the hub's own description).
    pub spec: Option<String>,
    /// The hub's own signing key: it signs the conformance report and is published at
    /// `/.well-known/cookwala.json` (`None`: nothing is signed).
    pub key: Option<HubKey>,
    /// A folder of conformance vectors (the standard's `conformance/`): the Core suites are run
    /// once at start-up and the signed report is served at `/v1/conformance`.
    pub conformance: Option<PathBuf>,
    /// Webhooks that get every outbox event, in order, at least once (`http://`, or
    /// `https://` over TLS).
    pub webhooks: Vec<Webhook>,
    /// Extra trust anchors (DER certificates) for `https://` webhooks, next to the public
    /// web's roots (`--webhook-ca`, for a receiver with a private CA).
    pub webhook_roots: Vec<Vec<u8>>,
    /// How webhook deliveries are retried.
    pub webhook_policy: WebhookPolicy,
    /// Real time between two device heartbeats (zero: no heartbeats).
    pub heartbeat: std::time::Duration,
    /// Faults injected into every new execution's simulation (tests and demos; empty in
    /// production).
    pub sim_faults: Vec<cookwala_sim::Fault>,
    /// The kitchen's MQTT 5 broker: every outbox event is published there, and safety alarms
    /// are acted on (see [`crate::service::mqtt`]). `None`: no broker.
    pub mqtt: Option<mqtt::MqttConfig>,
    /// What bounds each connection (timeouts, header bytes) and how many are open at once.
    pub connections: crate::limits::ConnLimits,
    /// This process is one device of the kitchen (`cookwala device`): it serves the root
    /// device only and, with [`HubConfig::mqtt`], announces itself on the bus (a retained
    /// `online`, a will that publishes `offline`, heartbeats with its executions, telemetry).
    /// `None`: a hub, which with [`HubConfig::mqtt`] coordinates the devices announced there
    /// (see [`crate::kitchen`]).
    pub device_mode: Option<crate::kitchen::DeviceMode>,
    /// The token a coordinating hub presents to the kitchen's devices when it forwards a
    /// request to one (`None`: requests go without a token, for devices run with `--no-auth`).
    pub device_token: Option<crate::auth::DeviceToken>,
}

impl Default for HubConfig {
    fn default() -> HubConfig {
        HubConfig {
            device_id: cookwala_sim::builtin::DEFAULT_DEVICE.to_owned(),
            catalog: Catalog::builtin(),
            speed: 60.0,
            tokens: crate::auth::Tokens::new(),
            no_auth: false,
            max_body: 1 << 20,
            max_streams: 64,
            incident_retention_days: 30,
            idempotency_retention_hours: 24 * 7,
            incidents_per_minute: 10,
            cors_origins: Vec::new(),
            vocab_ops: None,
            clock: Arc::new(crate::clock::SystemClock),
            trusted_keys: cookwala::keys::KeySet::new(),
            spec: None,
            key: None,
            conformance: None,
            webhooks: Vec::new(),
            webhook_roots: Vec::new(),
            webhook_policy: WebhookPolicy::default(),
            heartbeat: std::time::Duration::from_secs(30),
            sim_faults: Vec::new(),
            mqtt: None,
            connections: crate::limits::ConnLimits::default(),
            device_mode: None,
            device_token: None,
        }
    }
}

/// Why a hub could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HubError {
    /// The storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The device id is not in the catalog.
    #[error("unknown device {0}")]
    UnknownDevice(String),
    /// No token is configured and `no_auth` is not set: the hub would silently be open.
    #[error(
        "no token is configured, so this hub would accept every request; add one (--token, \
         COOKWALA_HUB_TOKEN, or an entry in the tokens file) or pass --no-auth (loopback only) \
         for local development"
    )]
    NoAuth,
    /// A blocking task failed.
    #[error("blocking task: {0}")]
    Join(#[from] tokio::task::JoinError),
    /// The conformance vectors could not be run.
    #[error(transparent)]
    Conformance(#[from] crate::conformance::ConformanceError),
    /// A webhook cannot be used.
    #[error("webhook {url}: {why}")]
    Webhook {
        /// The webhook URL.
        url: String,
        /// Why.
        why: String,
    },
}

/// What is needed to rebuild an execution's simulation (stored with the execution).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RunConfig {
    pub recipe: String,
    pub device: String,
    pub human_present: bool,
    pub seed: u64,
    pub start_unix_ms: i64,
    /// Simulated ms per wall ms when it started (1 in rows written before it was stored).
    pub time_scale: f64,
}

impl RunConfig {
    pub(crate) fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("recipe".into(), self.recipe.as_str().into());
        m.insert("device".into(), self.device.as_str().into());
        m.insert("humanPresent".into(), self.human_present.into());
        m.insert("seed".into(), self.seed.to_string().into());
        m.insert("startUnixMs".into(), self.start_unix_ms.into());
        if let Some(scale) = canonical_json::Finite::new(self.time_scale) {
            m.insert("timeScale".into(), Value::from(scale));
        }
        Value::Object(m)
    }

    pub(crate) fn from_text(text: &str) -> Option<RunConfig> {
        let v = canonical_json::parse(text.as_bytes()).ok()?;
        Some(RunConfig {
            recipe: v.get("recipe")?.as_str()?.to_owned(),
            device: v.get("device")?.as_str()?.to_owned(),
            human_present: v.get("humanPresent")?.as_bool()?,
            seed: v.get("seed")?.as_str()?.parse().ok()?,
            start_unix_ms: v.get("startUnixMs")?.as_i64()?,
            time_scale: v.get("timeScale").and_then(Value::as_f64).unwrap_or(1.0),
        })
    }

    /// The simulation `rec` ran: with the documents stored with it, or, for a row written
    /// before they were stored, the catalog's.
    pub(crate) fn sim_config(&self, rec: &ExecutionRecord, catalog: &Catalog) -> Option<SimConfig> {
        let recipe = recipe_of(rec, catalog)?;
        let (device, extra_limits) = match &rec.device_doc {
            Some(text) => {
                let limits = match &rec.limits_doc {
                    Some(l) => Some(canonical_json::parse(l.as_bytes()).ok()?),
                    None => None,
                };
                (canonical_json::parse(text.as_bytes()).ok()?, limits)
            }
            None => (
                catalog.device(&self.device)?.clone(),
                catalog.device_limits(&self.device).cloned(),
            ),
        };
        let mut config = SimConfig::new(recipe, device);
        config.pack = Some(catalog.pack().clone());
        config.extra_limits = extra_limits;
        config.human_present = self.human_present;
        config.seed = self.seed;
        config.start_unix_ms = self.start_unix_ms;
        config.time_scale = self.time_scale;
        config.execution_id = rec.id.clone();
        config.request_id = rec.id.clone();
        Some(config)
    }
}

/// The Recipe document an execution ran: the stored one, else (a row from before schema 4)
/// the catalog's recipe its request names.
pub(crate) fn recipe_of(rec: &ExecutionRecord, catalog: &Catalog) -> Option<Value> {
    if let Some(text) = &rec.recipe_doc {
        return canonical_json::parse(text.as_bytes()).ok();
    }
    let by_run = RunConfig::from_text(&rec.config).and_then(|r| catalog.recipe(&r.recipe).cloned());
    by_run.or_else(|| {
        let request = canonical_json::parse(rec.request.as_bytes()).ok()?;
        let recipe_ref = request.get("recipe")?.as_str()?;
        let id =
            catalog.recipe_id(recipe_ref).unwrap_or_else(|| cookwala::precheck::ref_id(recipe_ref));
        catalog.recipe(id).cloned()
    })
}

/// A device the hub serves.
#[derive(Debug)]
pub(crate) struct Device {
    /// The catalog id.
    pub id: String,
    /// What drives it (the in-process simulator for every device today).
    pub executor: Arc<dyn crate::executor::Executor>,
    /// The Capabilities document.
    pub doc: Value,
    /// The pack narrowing the default one (the simulator's `extra_limits`).
    pub extra_limits: Option<Value>,
    /// The pack it enforces and serves (the default narrowed by `extra_limits`).
    pub limits: Value,
    /// True for the device served at the root.
    pub root: bool,
    /// `doc` and `extra_limits` as JCS, stored with every execution (written once here).
    pub doc_jcs: String,
    /// See `doc_jcs`.
    pub extra_limits_jcs: Option<String>,
}

impl Device {
    /// The path prefix of its routes as idempotency digests see them: empty for the root
    /// device (so its digests are those of a single-device hub), `/devices/<id>` otherwise.
    pub(crate) fn route_prefix(&self) -> String {
        if self.root { String::new() } else { format!("/devices/{}", self.id) }
    }
}

/// A catalog recipe as the hub holds it (see [`Inner::recipes`]).
#[derive(Debug)]
pub(crate) struct HeldRecipe {
    pub doc: Arc<Value>,
    pub jcs: String,
    pub hash: String,
}

/// The hub: cheap to clone (an `Arc`).
#[derive(Clone, Debug)]
pub struct Hub {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub storage: Arc<dyn Storage>,
    pub config: HubConfig,
    /// The canonical id of the device served at the root.
    pub device_id: String,
    /// The device served at the root (also in `devices`).
    pub root: Arc<Device>,
    /// Every device of the catalog, by canonical id.
    pub devices: BTreeMap<String, Arc<Device>>,
    /// Executions that are not final (and those being created), by id, each behind its own
    /// lock (see [`live`]).
    pub live: live::Live,
    /// Executions ended safely at start-up because the previous process stopped uncleanly.
    pub recovered: Vec<String>,
    /// Published recalls, oldest `issuedAt` first (a copy of the stored ones).
    pub recalls: std::sync::RwLock<Vec<Value>>,
    /// The `/v1/conformance` body, built once at start-up.
    pub conformance: Value,
    /// Event subscribers, heartbeats and the progress rate limit.
    pub bus: Bus,
    /// What POSTs being committed right now hold (see [`Reserved`]).
    pub reserved: std::sync::Mutex<Reserved>,
    /// Every catalog recipe, shared, with its JCS text (stored with each execution) and its
    /// document hash (what a recall is decided on): both written once here, not per start.
    pub recipes: BTreeMap<String, HeldRecipe>,
    /// Statuses of final executions already read, by device and id (see [`FinalStatuses`]).
    pub finals: std::sync::Mutex<FinalStatuses>,
    /// Event streams open now (bounded by [`HubConfig::max_streams`]).
    pub streams: Arc<crate::limits::StreamSlots>,
    /// Unauthenticated incident reports per client address in the current minute.
    pub incident_rate: std::sync::Mutex<crate::limits::RateWindow>,
    /// True while this hub delivers the outbox to webhooks and MQTT: always for a store of its
    /// own; in a fleet, while it holds the relay lease (one replica delivers, not each).
    pub relay: Arc<std::sync::atomic::AtomicBool>,
    /// Set once shutdown begins: new executions are refused from then on.
    pub closing: std::sync::atomic::AtomicBool,
    /// What the operators' `/metrics` shows (see [`crate::metrics`]).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// True while the MQTT session is connected (`/readyz`).
    pub mqtt_connected: std::sync::atomic::AtomicBool,
    /// When the fleet loop last renewed this replica's leases (Unix ms; 0: never).
    pub leases_renewed_ms: std::sync::atomic::AtomicI64,
    /// What this device process announces on the bus (device mode only).
    pub announce: Option<crate::kitchen::Announce>,
    /// The kitchen's devices on the bus (a hub with a broker; `None` otherwise).
    pub coordinator: Option<remote::Coordinator>,
}

/// A bounded cache of final statuses: a final status never changes, so a GET can answer from
/// memory. Oldest entries are dropped first once [`FinalStatuses::CAPACITY`] is reached.
#[derive(Debug, Default)]
pub(crate) struct FinalStatuses {
    map: std::collections::HashMap<(String, String), (u64, bytes::Bytes)>,
    order: std::collections::VecDeque<(String, String)>,
}

impl FinalStatuses {
    /// At most this many statuses are kept (a few MiB).
    pub const CAPACITY: usize = 8192;

    /// The cached `(seq, JCS bytes)` of execution `id` as served for `device`.
    pub fn get(&self, device: &str, id: &str) -> Option<(u64, bytes::Bytes)> {
        self.map.get(&(device.to_owned(), id.to_owned())).cloned()
    }

    /// Remembers a final status.
    pub fn put(&mut self, device: &str, id: &str, seq: u64, body: bytes::Bytes) {
        let key = (device.to_owned(), id.to_owned());
        if self.map.insert(key.clone(), (seq, body)).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > Self::CAPACITY {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
    }
}

impl Hub {
    /// The final-status cache (a poisoned lock is recovered: entries are immutable values).
    fn finals(&self) -> std::sync::MutexGuard<'_, FinalStatuses> {
        self.inner.finals.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The idempotency keys held by requests being answered now, so that a repeat waits for the
/// first request's answer instead of racing it (see [`idempotency::hold_key`]).
#[derive(Debug, Default)]
pub(crate) struct Reserved {
    /// Idempotency keys being answered, and how to wake a retry waiting for the answer.
    pub keys: std::collections::HashMap<String, Arc<tokio::sync::Notify>>,
}

impl Hub {
    /// The reservations (a poisoned lock is recovered: they hold no invariant a panic breaks).
    pub(crate) fn reserved(&self) -> std::sync::MutexGuard<'_, Reserved> {
        self.inner.reserved.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The most simulated time one clock step may cover (one hour).
const MAX_STEP_MS: u64 = 3_600_000;

impl Hub {
    /// Opens a hub on `storage`: every execution left unfinished by a previous process is ended
    /// safely (never resumed).
    ///
    /// # Errors
    /// The device is unknown, the storage fails, or the conformance folder cannot be used.
    pub async fn open(storage: Arc<dyn Storage>, config: HubConfig) -> Result<Hub, HubError> {
        if config.tokens.is_empty() && !config.no_auth {
            return Err(HubError::NoAuth);
        }
        let device_id = config
            .catalog
            .device_id(&config.device_id)
            .ok_or_else(|| HubError::UnknownDevice(config.device_id.clone()))?
            .to_owned();
        let devices: BTreeMap<String, Arc<Device>> = config
            .catalog
            .device_ids()
            // A device process serves its own device only.
            .filter(|id| config.device_mode.is_none() || *id == device_id)
            .filter_map(|id| {
                let doc = config.catalog.device(id)?.clone();
                let extra_limits = config.catalog.device_limits(id).cloned();
                let limits =
                    crate::catalog::effective_limits(config.catalog.pack(), extra_limits.as_ref());
                let root = id == device_id;
                let doc_jcs = jcs_text(&doc);
                let extra_limits_jcs = extra_limits.as_ref().map(jcs_text);
                let executor: Arc<dyn crate::executor::Executor> = Arc::new(
                    crate::executor::SimExecutor::new(doc.clone(), config.sim_faults.clone()),
                );
                let device = Device {
                    id: id.to_owned(),
                    executor,
                    doc,
                    extra_limits,
                    limits,
                    root,
                    doc_jcs,
                    extra_limits_jcs,
                };
                Some((id.to_owned(), Arc::new(device)))
            })
            .collect();
        let recipes: BTreeMap<String, HeldRecipe> = config
            .catalog
            .recipe_ids()
            .filter_map(|id| {
                let doc = config.catalog.recipe(id)?;
                let held = HeldRecipe {
                    jcs: jcs_text(doc),
                    hash: canonical_json::digest::document_hash(doc).ok()?,
                    doc: Arc::new(doc.clone()),
                };
                Some((id.to_owned(), held))
            })
            .collect();
        let root = devices
            .get(&device_id)
            .cloned()
            .ok_or_else(|| HubError::UnknownDevice(config.device_id.clone()))?;
        crate::outbox::webhooks::check(&config.webhooks).map_err(|(url, why)| {
            HubError::Webhook { url: crate::privacy::redact_url(&url), why }
        })?;
        if !config.webhooks.is_empty() {
            crate::outbox::webhooks::tls_config(&config.webhook_roots)
                .map_err(|why| HubError::Webhook { url: "--webhook-ca".to_owned(), why })?;
        }
        let in_fleet = storage.fleet().is_some();
        let s = storage.clone();
        let catalog = config.catalog.clone();
        let urls: Vec<String> = config.webhooks.iter().map(|w| w.url.clone()).collect();
        let dev = device_id.clone();
        let now = config.clock.now_ms();
        let (recovered, recalls) = tokio::task::spawn_blocking(move || {
            // A webhook never seen starts at the end of the outbox (it gets what happens from
            // now on, including the recovery events below), not at the whole history.
            for url in &urls {
                if s.webhook_cursor(url)?.is_none() {
                    s.set_webhook_cursor(url, s.last_event_position()?, None)?;
                }
            }
            // A shared store's unfinished executions run on other replicas: they are ended
            // only once their device lease expires (see `service::fleet`). Leases a previous
            // process of this replica's name held are given up, so what it ran is ended too.
            let recovered = match s.fleet() {
                Some(f) => {
                    f.forget_leases()?;
                    Vec::new()
                }
                None => recover(&*s, &catalog, &dev, now)?,
            };
            let recalls: Vec<Value> = s
                .recalls()?
                .iter()
                .filter_map(|t| canonical_json::parse(t.as_bytes()).ok())
                .collect();
            Ok::<_, StorageError>((recovered, recalls))
        })
        .await??;
        let conformance = crate::conformance::claim(
            config.conformance.clone(),
            config.key.clone(),
            &root.doc,
            now,
        )
        .await?;
        let announce = config.device_mode.as_ref().map(|m| crate::kitchen::Announce {
            device: device_id.clone(),
            instance: m.instance.clone(),
            base_url: m.base_url.clone(),
            capabilities_hash: canonical_json::digest::document_hash(&root.doc).ok(),
            heartbeat_ms: u64::try_from(config.heartbeat.as_millis()).unwrap_or(u64::MAX),
        });
        let coordinator = (config.mqtt.is_some() && config.device_mode.is_none())
            .then(remote::Coordinator::default);
        Ok(Hub {
            inner: Arc::new(Inner {
                announce,
                coordinator,
                storage,
                config,
                device_id,
                root,
                devices,
                live: live::Live::default(),
                metrics: Arc::new(crate::metrics::Metrics::new()),
                mqtt_connected: std::sync::atomic::AtomicBool::new(false),
                leases_renewed_ms: std::sync::atomic::AtomicI64::new(0),
                reserved: std::sync::Mutex::new(Reserved::default()),
                recipes,
                finals: std::sync::Mutex::new(FinalStatuses::default()),
                streams: Arc::new(crate::limits::StreamSlots::default()),
                incident_rate: std::sync::Mutex::new(crate::limits::RateWindow::default()),
                relay: Arc::new(std::sync::atomic::AtomicBool::new(!in_fleet)),
                closing: std::sync::atomic::AtomicBool::new(false),
                recovered,
                recalls: std::sync::RwLock::new(recalls),
                conformance,
                bus: Bus::new(now),
            }),
        })
    }

    /// The device served at the root.
    pub(crate) fn root_device(&self) -> Arc<Device> {
        self.inner.root.clone()
    }

    /// The device with this catalog id or alias.
    pub(crate) fn find_device(&self, key: &str) -> Option<Arc<Device>> {
        let id = self.inner.config.catalog.device_id(key)?;
        self.inner.devices.get(id).cloned()
    }

    /// Ids of the executions ended safely at start-up.
    pub fn recovered(&self) -> &[String] {
        &self.inner.recovered
    }

    /// The published recalls, oldest first.
    pub fn recalls(&self) -> Vec<Value> {
        self.inner.recalls.read().map(|r| r.clone()).unwrap_or_default()
    }

    /// Replaces the in-memory copy with the stored recalls (JCS texts, `issuedAt` order), as
    /// another replica of a shared store may have published some.
    /// Starts decided on the earlier copy decide again (see [`live::Live::recalls_changed`]).
    pub(crate) fn set_recalls(&self, texts: &[String]) {
        let list: Vec<Value> =
            texts.iter().filter_map(|t| canonical_json::parse(t.as_bytes()).ok()).collect();
        if self.recalls() == list {
            return;
        }
        self.inner.live.recalls_changed(
            || {
                if let Ok(mut r) = self.inner.recalls.write() {
                    *r = list;
                }
                true
            },
            |_, _| false,
        );
    }

    /// The storage.
    pub fn storage(&self) -> Arc<dyn Storage> {
        self.inner.storage.clone()
    }

    /// Runs a storage call on the blocking pool.
    async fn db<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Storage) -> Result<T, StorageError> + Send + 'static,
    {
        let s = self.inner.storage.clone();
        Ok(tokio::task::spawn_blocking(move || f(&*s)).await??)
    }

    /// Advances every live execution by `dt_ms` of simulated time and persists every change
    /// (one locked by a stop or a resume at this moment gets its time in the next step).
    ///
    /// # Errors
    /// The storage fails (the simulations keep their state and are persisted next time).
    pub async fn advance(&self, dt_ms: u64) -> Result<(), Error> {
        Ok(self.advance_raw(dt_ms).await?)
    }

    /// [`Hub::advance`] with the storage's own error. Each free run is locked (a run locked
    /// by a stop or a resume right now is skipped and gets its time in a later step) and stays
    /// locked, with its change, until the one commit of the step is durable.
    async fn advance_raw(&self, dt_ms: u64) -> Result<(), StorageError> {
        let mut held = Vec::new();
        let mut commit = Commit::default();
        for (id, mut run, dt_ms) in live::lock_free(self.inner.live.slots(), dt_ms) {
            let before = run.seq();
            let prev = run.state();
            let incidents = run.incidents().len();
            let mut events = Vec::new();
            let mut left = dt_ms;
            while left > 0 && !run.is_final() {
                let step = left.min(MAX_STEP_MS);
                events.extend(run.advance(step));
                left -= step;
            }
            // A run already final (its final commit failed earlier) is written again.
            if run.seq() != before || run.is_final() {
                commit.absorb(self.change(&id, &run, prev, &events, incidents));
                held.push((id, run));
            }
        }
        self.inner.bus.clock_moved(dt_ms);
        // A fenced execution (taken over by another replica) is dropped here, and the rest of
        // the commit written without it.
        loop {
            match self.commit_raw(commit.clone(), true).await {
                Err(StorageError::Fenced(id)) if held.iter().any(|(h, _)| *h == id) => {
                    crate::clock::note(format_args!(
                        "cookwala-hub: execution {id} was taken over by another replica; no \
                         longer run here"
                    ));
                    for (h, run) in &mut held {
                        if *h == id {
                            run.gone = true;
                        }
                    }
                    self.inner.live.remove(&id);
                    commit.updates.retain(|u| u.id != id);
                    commit.events.retain(|e| e.subject != id);
                    commit.incidents.retain(|i| i.id != id);
                }
                other => {
                    other?;
                    break;
                }
            }
        }
        for (id, run) in &held {
            if run.is_final() {
                self.inner.live.remove(id);
            }
        }
        Ok(())
    }

    /// Starts the task that moves simulated time at `speed` (nothing when the speed is 0).
    pub fn spawn_clock(&self) -> Option<tokio::task::JoinHandle<()>> {
        let speed = self.inner.config.speed;
        if !(speed.is_finite() && speed > 0.0) {
            return None;
        }
        let hub = self.clone();
        Some(tokio::spawn(async move {
            let mut interval = tokio::time::interval(std::time::Duration::from_millis(100));
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut last = tokio::time::Instant::now();
            let mut carry = 0.0_f64;
            let mut failing = false;
            loop {
                interval.tick().await;
                let now = tokio::time::Instant::now();
                let real_ms = now.duration_since(last).as_secs_f64() * 1000.0;
                last = now;
                carry += real_ms * speed;
                let whole = carry.floor();
                carry -= whole;
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let dt = whole.min(1e12) as u64;
                // One line when steps start failing (the store is down) and one when they work
                // again; the simulations keep their state meanwhile and are persisted then.
                match hub.advance_raw(dt).await {
                    Err(e) if !failing => {
                        failing = true;
                        crate::clock::note(format_args!("cookwala-hub: clock step failed: {e}"));
                    }
                    Ok(()) if failing => {
                        failing = false;
                        crate::clock::note(format_args!("cookwala-hub: clock steps persist again"));
                    }
                    _ => {}
                }
            }
        }))
    }
}

pub(crate) fn snapshot(id: &str, sim: &dyn crate::executor::Run) -> StatusUpdate {
    StatusUpdate {
        id: id.to_owned(),
        status: jcs_text(&sim.status()),
        seq: sim.seq(),
        state: sim.state(),
        is_final: sim.is_final(),
        log: sim.log().map(|l| jcs_text(&l)),
    }
}

impl Hub {
    /// Runs [`Hub::prune`] at start and then hourly.
    pub fn spawn_incident_pruning(&self) -> Option<tokio::task::JoinHandle<()>> {
        let hub = self.clone();
        Some(tokio::spawn(async move {
            let mut interval = tokio::time::interval(std::time::Duration::from_secs(3600));
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                if let Err(e) = hub.prune().await {
                    crate::clock::note(format_args!("cookwala hub: pruning: {e}"));
                }
            }
        }))
    }

    /// Deletes what the hub keeps for a while only: the incident reports clients posted, once
    /// older than [`HubConfig::incident_retention_days`], and the idempotency records, once
    /// older than [`HubConfig::idempotency_retention_hours`] (unless 0). Returns how many of
    /// each were deleted.
    ///
    /// # Errors
    /// The storage fails.
    pub async fn prune(&self) -> Result<(u64, u64), Error> {
        let config = &self.inner.config;
        let now = self.now_ms();
        let reports = now
            .saturating_sub(i64::from(config.incident_retention_days).saturating_mul(86_400_000));
        let hours = i64::from(config.idempotency_retention_hours);
        let answers = (hours > 0).then(|| now.saturating_sub(hours.saturating_mul(3_600_000)));
        self.db(move |s| {
            let r = s.prune_reports(reports)?;
            let a = match answers {
                Some(before) => s.prune_idempotency(before)?,
                None => 0,
            };
            Ok((r, a))
        })
        .await
    }
}

impl Hub {
    /// The time of day, from the configured clock.
    pub(crate) fn now_ms(&self) -> i64 {
        self.inner.config.clock.now_ms()
    }

    /// Simulated ms per wall ms for new executions: the configured speed, or 1 when the clock
    /// only moves through [`Hub::advance`] (tests).
    pub(crate) fn time_scale(&self) -> f64 {
        let speed = self.inner.config.speed;
        if speed.is_finite() && speed > 0.0 { speed } else { 1.0 }
    }
}

#[cfg(test)]
mod final_status_tests {
    use super::FinalStatuses;

    #[test]
    fn the_final_status_cache_is_bounded_and_keyed_by_device() {
        let mut c = FinalStatuses::default();
        for i in 0..FinalStatuses::CAPACITY + 10 {
            c.put("hob", &format!("ex-{i}"), 3, bytes::Bytes::from_static(b"{}"));
        }
        // The oldest entries went first; the newest are there.
        assert!(c.get("hob", "ex-0").is_none());
        assert!(c.get("hob", "ex-9").is_none());
        assert!(c.get("hob", "ex-10").is_some());
        let last = format!("ex-{}", FinalStatuses::CAPACITY + 9);
        assert_eq!(c.get("hob", &last).map(|(seq, _)| seq), Some(3));
        // Another device's path does not see it.
        assert!(c.get("oven", &last).is_none());
        // Putting the same entry again does not grow the queue.
        c.put("hob", &last, 3, bytes::Bytes::from_static(b"{}"));
        assert_eq!(c.order.len(), FinalStatuses::CAPACITY);
    }
}
