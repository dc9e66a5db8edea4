//! `cookwala serve`: the Cookwala hub (Core HTTP API on simulated devices) until Ctrl-C.
//!
//! Everything the hub needs comes from `cookwala-hub`; this command only resolves the data
//! directory, the bearer token and the hub's signing key (`hub-key.json`, generated here from OS
//! randomness on first start), opens the SQLite store, and runs the server with a safe
//! shutdown on Ctrl-C (and SIGTERM): running executions are stopped first, then connections
//! close within `--shutdown-grace`; a second signal exits at once.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use cookwala::keys::{SigningAlg, SigningKey};
use cookwala_hub::auth::Tokens;
use cookwala_hub::storage::SqliteStorage;
use cookwala_hub::{Catalog, Hub, HubConfig, HubKey, Webhook};

/// The environment variable the upstream sample client also reads.
pub const TOKEN_ENV: &str = "COOKWALA_HUB_TOKEN";

/// The environment variable holding the webhook signing secret (when no secret file is given).
pub const WEBHOOK_SECRET_ENV: &str = "COOKWALA_WEBHOOK_SECRET";

/// The environment variable holding the MQTT password (when neither the URL nor
/// `--mqtt-password-file` gives one).
pub const MQTT_PASSWORD_ENV: &str = "COOKWALA_MQTT_PASSWORD";

/// Run the hub: the Core HTTP API on simulated devices, stored in SQLite, until Ctrl-C
///
/// Non-open endpoints need `Authorization: Bearer <token>`. Tokens and their roles (owner,
/// cook, agent, viewer) live in a tokens file, DATA/tokens.json by default, created on first
/// start (mode 0600) with one owner token; add entries by editing it ({"name", "role",
/// "token" or "sha256", and "agent" for agent tokens). --token or the environment variable
/// COOKWALA_HUB_TOKEN add an owner token for scripts. Open to all: capabilities, safety
/// limits, recalls, incidents, stop, /.well-known/cookwala.json and /openapi.yaml.
/// Executions left running by an unclean stop are ended safely on restart; Ctrl-C or
/// SIGTERM stops them before the hub exits (a second signal exits at once).
///
/// Every device of the catalog (built-in, --bundle, --devices) is served under
/// /devices/<id>/v1/...; the --device one also at /v1/... GET /v1/devices lists them.
///
/// Events (CloudEvents 1.0) stream at GET /cookwala/v1/events (SSE, resumable with
/// Last-Event-ID) and are POSTed to each --webhook, signed with X-Cookwala-Signature:
/// sha256=<HMAC-SHA256 of the body>. The webhook secret is read from --webhook-secret-file
/// or the environment variable COOKWALA_WEBHOOK_SECRET, never from the command line.
///
/// Configuration file: --config FILE reads the flags from TOML, each key a flag's long name
/// (flags on the command line win), e.g.
///
///   addr = "0.0.0.0:7878"
///   data = "/var/lib/cookwala"
///   speed = 1
///   webhook = ["https://example.org/hook"]
///   log-format = "json"
///
/// --print-config prints the effective configuration (file, flags and defaults; secrets
/// redacted) and exits. A token is never read from the file (use the tokens file).
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Read the flags from this TOML file (keys are the long flag names; the command line
    /// wins)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the effective configuration as TOML (secrets redacted) and exit
    #[arg(long)]
    pub print_config: bool,
    /// Listen address
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub addr: std::net::SocketAddr,
    /// Data directory (default: $XDG_DATA_HOME/cookwala or ~/.local/share/cookwala)
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Simulated time runs N times real time
    #[arg(long, default_value_t = 60.0)]
    pub speed: f64,
    /// An extra owner token, at least 16 characters (else the environment variable
    /// COOKWALA_HUB_TOKEN)
    #[arg(long)]
    pub token: Option<String>,
    /// Open every endpoint without a token, for local development with the upstream SDKs
    /// (which send none). Refused unless --addr is a loopback address; requests whose Host is
    /// not a loopback name or address are refused (a web page could otherwise reach the hub
    /// through DNS rebinding)
    #[arg(long)]
    pub no_auth: bool,
    /// The tokens file with roles (default DATA/tokens.json; created on first start)
    #[arg(long, value_name = "FILE")]
    pub tokens: Option<PathBuf>,
    /// Device served at the root (/v1/...): a device id (built-in or loaded with
    /// --devices / --bundle) or a capabilities JSON file
    #[arg(long, default_value = cookwala_sim::builtin::DEFAULT_DEVICE)]
    pub device: String,
    /// Serve this OpenAPI file at /openapi.yaml instead of the hub's own description
    #[arg(long)]
    pub spec: Option<PathBuf>,
    /// Inline the Cookwala JSON Schemas from DIR (e.g. a checkout's schemas/ folder) into
    /// the served OpenAPI description, so offline tools (schemathesis, code generators)
    /// get a self-contained one
    #[arg(long, value_name = "DIR")]
    pub schemas: Option<PathBuf>,
    /// Load the recipes and devices of an upstream samples bundle.json (devices are named
    /// by their bundle key, e.g. demo-hob-robot)
    #[arg(long, value_name = "FILE")]
    pub bundle: Option<PathBuf>,
    /// Load every *.json file in DIR as a recipe (next to the built-in ones); repeatable
    #[arg(long, value_name = "DIR")]
    pub recipes: Vec<PathBuf>,
    /// Load every *.json file in DIR as device capabilities, named by file stem; repeatable
    #[arg(long, value_name = "DIR")]
    pub devices: Vec<PathBuf>,
    /// Run the Core vectors of this conformance folder (the standard's conformance/) at
    /// start-up and serve the signed ConformanceReport at /v1/conformance
    #[arg(long, value_name = "DIR")]
    pub conformance: Option<PathBuf>,
    /// Also publish these keys at /.well-known/cookwala.json, after the hub's own key
    /// (kept in DATA/hub-key.json): KeyRecord lists, well-known or did:web documents;
    /// repeatable
    #[arg(long, value_name = "FILE")]
    pub keys: Vec<PathBuf>,
    /// POST every event to this http:// or https:// URL (at least once, in order, retried
    /// for 24 h); repeatable
    #[arg(long = "webhook", value_name = "URL")]
    pub webhooks: Vec<String>,
    /// Also trust the CA certificates in this PEM file for https:// webhooks (next to the
    /// public web's roots), for a receiver with a private CA; repeatable
    #[arg(long = "webhook-ca", value_name = "FILE")]
    pub webhook_ca: Vec<PathBuf>,
    /// File holding the webhook signing secret (else $COOKWALA_WEBHOOK_SECRET)
    #[arg(long, value_name = "FILE")]
    pub webhook_secret_file: Option<PathBuf>,
    /// Seconds between device heartbeats on the event stream (0: none)
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub heartbeat_secs: u64,
    /// The SafetyLimits pack this executor enforces (the device maker's; e.g. the standard's
    /// profiles/core/safety-limits.default.json). Device and bundle packs only narrow it.
    /// Default: the built-in copy of the standard's default pack
    #[arg(long, value_name = "FILE")]
    pub limits: Option<PathBuf>,
    /// The standard's vocabulary folder (ops.json, units.json): /v1/tools/vocab/ops serves
    /// its ops.json as it is, in the file's order
    #[arg(long, value_name = "DIR")]
    pub vocab: Option<PathBuf>,
    /// Serve only the recipes and devices loaded with --bundle, --recipes, --devices and
    /// --device, not the built-in ones
    #[arg(long)]
    pub no_builtin: bool,
    /// The largest request body accepted, in bytes (a 413 problem beyond it)
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    pub max_body: usize,
    /// The most event streams (SSE, WebSocket) open at once (a 503 problem beyond it); one
    /// token holds at most a quarter of them, and an owner holding none always gets one
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_streams: usize,
    /// The most connections open at once (kept below the open-file limit; when a new one
    /// finds it full, the oldest connection not being answered is closed for it)
    #[arg(long, value_name = "N", default_value_t = 512)]
    pub max_connections: usize,
    /// The most connections open at once from one client address (as above, the oldest one
    /// of that address not being answered gives way)
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub max_connections_per_address: usize,
    /// Seconds a request head may take to arrive, counted from when the hub waits for it
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub header_timeout: u64,
    /// Seconds a request body may take to arrive once its head is in (a 408 problem beyond)
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub body_timeout: u64,
    /// Seconds a kept-alive connection may wait for its next request
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    pub idle_timeout: u64,
    /// The largest request head (start line and headers) in bytes, at least 8192 (a 431
    /// beyond)
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024)]
    pub max_header_bytes: usize,
    /// Seconds open connections get to finish their answer at shutdown, after every running
    /// execution has been stopped (a second Ctrl-C or SIGTERM exits at once)
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    pub shutdown_grace: u64,
    /// Days to keep the incident reports clients post without a token
    #[arg(long, value_name = "DAYS", default_value_t = 30)]
    pub incident_retention_days: u32,
    /// Hours to keep the stored answers of idempotent requests (a retry within them gets the
    /// original answer; after, a start with the same id is a 409, never a second execution);
    /// 0 keeps them forever
    #[arg(long, value_name = "HOURS", default_value_t = 24 * 7)]
    pub idempotency_retention_hours: u32,
    /// Allow browser pages from ORIGIN (e.g. http://localhost:5173, or * for any) to call the
    /// hub: CORS preflights are answered and ETag is exposed; repeatable
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    pub cors_origins: Vec<String>,
    /// Publish every event to this kitchen's MQTT 5 broker and act on its safety alarms:
    /// mqtt://[USER[:PASS]@]HOST[:PORT] or mqtts:// (TLS); needs --kitchen
    // (These pairs are checked after a configuration file is merged, not by clap, so the
    // command line can give one half of a pair the file completes: `serve_config::pairs`.)
    #[arg(long, value_name = "URL")]
    pub mqtt: Option<String>,
    /// The kitchen id: topics are cookwala/KITCHEN/{category}/{subject}; needs --mqtt
    #[arg(long, value_name = "KITCHEN_ID")]
    pub kitchen: Option<String>,
    /// File holding the MQTT password (else the URL's, else $COOKWALA_MQTT_PASSWORD); needs
    /// --mqtt
    #[arg(long, value_name = "FILE")]
    pub mqtt_password_file: Option<PathBuf>,
    /// Where the hub keeps its state: postgres://USER[:PASS]@HOST:PORT/DATABASE (several
    /// replicas may share one database; the password may also come from $PGPASSWORD) or
    /// sqlite:PATH. Default: sqlite:DATA/hub.sqlite3
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// With a PostgreSQL store: seconds an unrenewed device lease lasts. A replica that dies
    /// loses its devices after this long; another replica then ends its executions safely
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub lease_secs: u64,
    /// With a PostgreSQL store: this replica's name, unique among the replicas (default:
    /// HOST-PID-START)
    #[arg(long, value_name = "NAME")]
    pub replica: Option<String>,
    /// With a PostgreSQL store reached over TLS (sslmode=require in the URL): also trust the
    /// CA certificates in this PEM file (next to the public web's roots); repeatable
    #[arg(long = "store-ca", value_name = "FILE")]
    pub store_ca: Vec<PathBuf>,
    /// How stderr diagnostics are written: human (plain lines, as always) or json (one JSON
    /// object a line: timestamp, level, target, message and fields such as request_id,
    /// execution, device; plus one line per request). Never a token or a password
    #[arg(long, value_name = "FORMAT", value_enum, default_value = "human")]
    pub log_format: LogFormat,
    /// Also serve /metrics, /healthz and /readyz on this address, without a token (for a
    /// Prometheus on a private or loopback interface; the address is the access control). The
    /// API's /metrics keeps needing a token that may read
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// The token this hub presents to the kitchen's devices (`cookwala device --token`) when
    /// it forwards a request to one announced on the bus (else --device-token-file, else
    /// $COOKWALA_DEVICE_TOKEN; none: devices run with --no-auth)
    #[arg(long, value_name = "TOKEN")]
    pub device_token: Option<String>,
    /// File holding the kitchen's device token (see --device-token)
    #[arg(long, value_name = "FILE")]
    pub device_token_file: Option<PathBuf>,
    /// Set by `cookwala device`: run as one device process of the kitchen.
    #[arg(skip)]
    pub device_process: Option<crate::commands::device_mode::Process>,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Plain lines.
    Human,
    /// One JSON object a line.
    Json,
}

/// Installs the JSON log writer for `--log-format json` (the hub's diagnostics and request
/// lines become `tracing` events; without a writer they are plain lines on stderr).
fn install_logs(format: LogFormat) {
    if format == LogFormat::Json {
        let _ = tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .with_target(true)
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// `--store`, `--lease-secs`, `--replica`.
struct StoreArgs {
    store: Option<String>,
    lease_secs: u64,
    replica: Option<String>,
    store_ca: Vec<PathBuf>,
}

/// The store `--store` names (default: SQLite in the data folder), and a line for the banner.
fn open_store(
    args: &StoreArgs,
    data: &std::path::Path,
) -> anyhow::Result<(Arc<dyn cookwala_hub::storage::Storage>, String)> {
    let url = args.store.clone().unwrap_or_default();
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        if args.lease_secs == 0 || args.lease_secs > 3600 {
            bail!("--lease-secs must be between 1 and 3600 (got {})", args.lease_secs);
        }
        let replica = args.replica.clone().unwrap_or_else(default_replica);
        let mut tls_roots = Vec::new();
        for path in &args.store_ca {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("--store-ca: reading {}", path.display()))?;
            let certs = cookwala_hub::webhooks::pem_certificates(&text)
                .map_err(|e| anyhow::anyhow!("--store-ca {}: {e}", path.display()))?;
            tls_roots.extend(certs);
        }
        let options = cookwala_hub_postgres::PgOptions {
            replica: replica.clone(),
            lease: std::time::Duration::from_secs(args.lease_secs),
            pool_size: 16,
            tls_roots,
        };
        let store = cookwala_hub_postgres::PgStorage::connect(&url, options)
            .with_context(|| format!("opening the PostgreSQL store {}", redact(&url)))?;
        let note = format!(
            "store {} (replica {replica}, device leases {} s)",
            redact(&url),
            args.lease_secs
        );
        return Ok((Arc::new(store), note));
    }
    let path = match url.strip_prefix("sqlite:") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        Some(_) => bail!("--store sqlite: needs a path (sqlite:PATH)"),
        None if url.is_empty() => data.join("hub.sqlite3"),
        None => bail!(
            "--store {}: expected postgres://USER@HOST:PORT/DATABASE or sqlite:PATH",
            redact(&url)
        ),
    };
    let store =
        SqliteStorage::open(&path).with_context(|| format!("opening {}", path.display()))?;
    Ok((Arc::new(store), format!("store sqlite:{}", path.display())))
}

/// A URL with its password, if any, replaced by `***` (for messages and the banner).
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let Some((auth, host)) = rest.split_once('@') else { return url.to_owned() };
    match auth.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

/// `HOST-PID-START`: unique per process, readable in the leases table.
fn default_replica() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "hub".to_owned());
    format!("{host}-{}-{}", std::process::id(), crate::clock::unix_millis())
}

/// The broker of `--mqtt`/`--kitchen`; the password from `--mqtt-password-file` (trailing
/// newline removed), else the URL, else `$COOKWALA_MQTT_PASSWORD`.
fn mqtt(args: &ServeArgs) -> Result<Option<cookwala_hub::MqttConfig>> {
    let (Some(url), Some(kitchen)) = (&args.mqtt, &args.kitchen) else { return Ok(None) };
    let mut config = cookwala_hub::MqttConfig::parse(url, kitchen).context("--mqtt")?;
    if let Some(path) = &args.mqtt_password_file {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        config.password = Some(text.trim_end_matches(['\r', '\n']).to_owned());
    } else if config.password.is_none()
        && let Ok(p) = std::env::var(MQTT_PASSWORD_ENV)
        && !p.is_empty()
    {
        config.password = Some(p);
    }
    if config.password.is_some() && config.username.is_none() {
        bail!("--mqtt: a password needs a user name (mqtt://USER@HOST:PORT)");
    }
    Ok(Some(config))
}

/// The environment variable holding the kitchen's device token (when neither
/// `--device-token` nor `--device-token-file` gives one).
pub const DEVICE_TOKEN_ENV: &str = "COOKWALA_DEVICE_TOKEN";

/// The token the hub presents to the kitchen's devices: `--device-token`, else the first line
/// of `--device-token-file`, else `$COOKWALA_DEVICE_TOKEN`.
fn device_token(args: &ServeArgs) -> Result<Option<cookwala_hub::auth::DeviceToken>> {
    let token = match (&args.device_token, &args.device_token_file) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(path)) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?
                .trim_end_matches(['\r', '\n'])
                .to_owned(),
        ),
        (None, None) => std::env::var(DEVICE_TOKEN_ENV).ok(),
    };
    Ok(token.filter(|t| !t.is_empty()).map(|t| cookwala_hub::auth::DeviceToken::new(&t)))
}

/// The webhooks, all signed with the secret from `--webhook-secret-file` (trailing newline
/// removed), else `$COOKWALA_WEBHOOK_SECRET`. The secret never comes from the command line,
/// where other users could read it in the process list.
fn webhooks(args: &ServeArgs) -> Result<Vec<Webhook>> {
    if args.webhooks.is_empty() {
        return Ok(Vec::new());
    }
    let secret = match &args.webhook_secret_file {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading {}", path.display()))?
            .trim_end_matches(['\r', '\n'])
            .to_owned(),
        None => std::env::var(WEBHOOK_SECRET_ENV).unwrap_or_default(),
    };
    if secret.is_empty() {
        bail!("--webhook needs a secret: --webhook-secret-file FILE or {WEBHOOK_SECRET_ENV}");
    }
    Ok(args
        .webhooks
        .iter()
        .map(|url| Webhook { url: url.clone(), secret: secret.clone() })
        .collect())
}

/// The built-in catalog plus `--bundle`, `--recipes` and `--devices`, and the id of the root
/// device (`--device` names a catalog device, else is read as a capabilities file).
fn build_catalog(args: &ServeArgs) -> Result<(Catalog, String, usize, usize)> {
    let mut catalog = if args.no_builtin { Catalog::empty() } else { Catalog::builtin() };
    if let Some(file) = &args.limits {
        let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        let pack = canonical_json::parse(&bytes)
            .with_context(|| format!("--limits: {} is not valid JSON", file.display()))?;
        catalog.set_pack(file, pack).context("--limits")?;
    }
    let (mut n_recipes, mut n_devices) = (0, 0);
    if let Some(b) = &args.bundle {
        let (r, d) = catalog.load_bundle(b).context("--bundle")?;
        n_recipes += r.len();
        n_devices += d.len();
    }
    for dir in &args.recipes {
        n_recipes += catalog.load_recipe_dir(dir).context("--recipes")?.len();
    }
    for dir in &args.devices {
        n_devices += catalog.load_device_dir(dir).context("--devices")?.len();
    }
    let as_file = Path::new(&args.device);
    let device = match catalog.device_id(&args.device) {
        Some(id) => id.to_owned(),
        // A file already loaded by --devices or --bundle is that device.
        None if as_file.is_file() && catalog.device_from_file(as_file).is_some() => {
            catalog.device_from_file(as_file).unwrap_or_default().to_owned()
        }
        None if as_file.is_file() => {
            n_devices += 1;
            catalog.load_device_file(Path::new(&args.device)).context("--device")?
        }
        None if args.no_builtin && catalog.device_ids().next().is_none() => {
            bail!(
                "--no-builtin leaves no device: load some with --devices, --bundle or --device FILE"
            )
        }
        None if args.no_builtin && args.device == cookwala_sim::builtin::DEFAULT_DEVICE => {
            // The default root device is built in; without it, the first loaded one serves
            // the root.
            catalog.device_ids().next().unwrap_or_default().to_owned()
        }
        None => {
            let ids: Vec<&str> = catalog.device_ids().collect();
            bail!(
                "unknown device {}: neither a known device id ({}) nor a capabilities file",
                args.device,
                ids.join(", ")
            );
        }
    };
    Ok((catalog, device, n_recipes, n_devices))
}

/// The banner lines listing every served device and where its Core endpoints are.
fn devices_note(catalog: &Catalog, root: &str) -> String {
    let ids: Vec<&str> = catalog.device_ids().collect();
    let width = ids.iter().map(|id| id.len()).max().unwrap_or(0);
    let mut note = String::from("  devices (Core endpoints; GET /v1/devices lists them):\n");
    for id in ids {
        let at_root = if id == root { "/v1, " } else { "" };
        note.push_str(&format!("    {id:<width$}  {at_root}/devices/{id}/v1\n"));
    }
    note
}

/// `$XDG_DATA_HOME/cookwala`, else `~/.local/share/cookwala`.
pub fn default_data_dir() -> Result<PathBuf> {
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg).join("cookwala"));
    }
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .context("neither XDG_DATA_HOME nor HOME is set; pass --data DIR")?;
    Ok(PathBuf::from(home).join(".local/share/cookwala"))
}

/// The tokens the hub accepts and a line saying where they came from.
///
/// `--tokens FILE` (default `DATA/tokens.json`) is read; on first start it is created (mode
/// 0600) holding one owner token, taken from a `DATA/token` file an earlier version wrote, or
/// fresh from the OS. `--token` / `$COOKWALA_HUB_TOKEN` add an owner token on top.
fn resolve_tokens(
    arg: Option<String>,
    file: Option<PathBuf>,
    data: &Path,
    env: &str,
) -> Result<(Tokens, String)> {
    let extra =
        arg.filter(|t| !t.is_empty()).or_else(|| std::env::var(env).ok().filter(|t| !t.is_empty()));
    if let Some(t) = &extra
        && !cookwala_hub::auth::acceptable_token(t)
    {
        bail!(
            "--token / {env} needs at least {} non-space characters and no space at either \
             end; use a longer one",
            cookwala_hub::auth::MIN_TOKEN_LEN
        );
    }
    let path = file.unwrap_or_else(|| data.join("tokens.json"));
    let created = if path.exists() {
        false
    } else {
        let legacy = data.join("token");
        let token = match std::fs::read_to_string(&legacy) {
            Ok(t) if !t.trim().is_empty() => t.trim().to_owned(),
            _ => {
                let bytes: [u8; 24] = rand::random();
                bytes.iter().map(|b| format!("{b:02x}")).collect()
            }
        };
        let doc = Tokens::owner_document(&token);
        let text = canonical_json::to_python_pretty(&doc).context("writing the tokens file")?;
        write_private(&path, &text)?;
        true
    };
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let doc = canonical_json::parse(&bytes)
        .with_context(|| format!("{} is not valid JSON", path.display()))?;
    let mut tokens = Tokens::parse(&doc).with_context(|| format!("{}", path.display()))?;
    #[cfg(unix)]
    if let Ok(meta) = std::fs::metadata(&path) {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            cookwala_hub::note(format_args!(
                "cookwala serve: warning: {} is readable by other users; chmod 600 it",
                path.display()
            ));
        }
    }
    let roles: Vec<String> =
        tokens.entries().iter().map(|e| format!("{} ({})", e.name, e.role.as_str())).collect();
    let mut note = format!(
        "{} {}: {}",
        if created { "created tokens file" } else { "tokens from" },
        path.display(),
        if roles.is_empty() { "none".to_owned() } else { roles.join(", ") }
    );
    if let Some(t) = &extra {
        let entry = cookwala_hub::auth::TokenEntry::new(
            "owner (--token)",
            cookwala_hub::auth::Role::Owner,
            t,
            None,
        );
        if tokens.find(t).is_none() {
            tokens.push(entry);
        }
        note.push_str(&format!("\n  plus an owner token from --token / {env}"));
    }
    Ok((tokens, note))
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).with_context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

fn create_private_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).with_context(|| format!("creating {}", dir.display()))
}

/// The connection limits of the flags, with `--max-connections` lowered (with a note) when the
/// open-file limit could not hold it: a budget above the limit would let `accept` fail for
/// want of a descriptor, which is what a flood aims at.
fn connection_limits(args: &ServeArgs) -> Result<cookwala_hub::ConnLimits> {
    if args.max_connections == 0 || args.max_connections_per_address == 0 {
        bail!("--max-connections and --max-connections-per-address must be at least 1");
    }
    if args.max_header_bytes < cookwala_hub::MIN_HEADER_BYTES {
        bail!("--max-header-bytes must be at least {}", cookwala_hub::MIN_HEADER_BYTES);
    }
    if args.header_timeout == 0 || args.body_timeout == 0 || args.idle_timeout == 0 {
        bail!("--header-timeout, --body-timeout and --idle-timeout must be at least 1 second");
    }
    let secs = std::time::Duration::from_secs;
    let mut max_connections = args.max_connections;
    if let Some(room) = descriptor_room(max_connections)
        && room < max_connections
    {
        cookwala_hub::note(format_args!(
            "cookwala serve: the open-file limit leaves room for {room} connections; \
             --max-connections {max_connections} lowered to {room} (raise ulimit -n for more)"
        ));
        max_connections = room;
    }
    Ok(cookwala_hub::ConnLimits {
        max_connections,
        max_per_address: args.max_connections_per_address.min(max_connections),
        header_timeout: secs(args.header_timeout),
        body_timeout: secs(args.body_timeout),
        idle_timeout: secs(args.idle_timeout),
        max_header_bytes: args.max_header_bytes,
        shutdown_grace: secs(args.shutdown_grace),
    })
}

/// Descriptors the hub keeps for itself beside connections: the store, the listener, the
/// webhook and MQTT clients, files read at start.
const RESERVED_DESCRIPTORS: u64 = 64;

/// How many connections the open-file limit leaves room for, after raising the soft limit
/// towards the hard one as far as `want` needs; `None` when the limit is unknown.
#[cfg(unix)]
fn descriptor_room(want: usize) -> Option<usize> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let need = u64::try_from(want).unwrap_or(u64::MAX).saturating_add(RESERVED_DESCRIPTORS);
    let mut soft = limit.current?;
    if soft < need {
        let raised = limit.maximum.map_or(need, |hard| need.min(hard));
        if setrlimit(Resource::Nofile, Rlimit { current: Some(raised), maximum: limit.maximum })
            .is_ok()
        {
            soft = raised;
        }
    }
    let room = soft.saturating_sub(RESERVED_DESCRIPTORS).max(16);
    Some(usize::try_from(room).unwrap_or(usize::MAX))
}

#[cfg(not(unix))]
fn descriptor_room(_want: usize) -> Option<usize> {
    None
}

/// Resolves at the first Ctrl-C or SIGTERM. From then on a second one ends the process at
/// once (exit status 130), for when the safe shutdown takes longer than the person waits.
/// The same listeners wait for both, so the first signal is never taken for the second.
async fn shutdown_signal(mut signals: Signals) {
    signals.next().await;
    cookwala_hub::note(format_args!(
        "cookwala serve: shutting down: stopping running executions, then closing connections \
         (again to exit at once)"
    ));
    tokio::spawn(async move {
        signals.next().await;
        cookwala_hub::note(format_args!("cookwala serve: second signal; exiting now"));
        std::process::exit(130);
    });
}

/// SIGINT (Ctrl-C) and SIGTERM listeners; a listener that cannot be set up never fires.
struct Signals {
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    #[cfg(unix)]
    fn new() -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        Signals {
            int: signal(SignalKind::interrupt()).ok(),
            term: signal(SignalKind::terminate()).ok(),
        }
    }

    #[cfg(not(unix))]
    fn new() -> Signals {
        Signals {}
    }

    /// The next signal.
    #[cfg(unix)]
    async fn next(&mut self) {
        async fn recv(s: Option<&mut tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            () = recv(self.int.as_mut()) => {}
            () = recv(self.term.as_mut()) => {}
        }
    }

    #[cfg(not(unix))]
    async fn next(&mut self) {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The description to serve at /openapi.yaml: `--spec` (or the hub's own), with the schemas
/// of `--schemas` inlined.
fn served_spec(spec: Option<&Path>, schemas: Option<&Path>) -> Result<Option<String>> {
    let text = match spec {
        Some(p) => {
            Some(std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?)
        }
        None => None,
    };
    let Some(dir) = schemas else { return Ok(text) };
    let source = text.as_deref().unwrap_or(cookwala_hub::openapi::OWN_SPEC);
    let doc = canonical_json::parse(source.as_bytes())
        .context("--schemas needs a JSON description (the hub's own, or a --spec in JSON)")?;
    let files = cookwala_hub::openapi::load_schemas(dir).context("--schemas")?;
    let bundled = cookwala_hub::openapi::bundle(&doc, &files).context("--schemas")?;
    for file in &bundled.missing {
        cookwala_hub::note(format_args!(
            "cookwala serve: {file} is not in {}; the description accepts anything there",
            dir.display()
        ));
    }
    let bytes = canonical_json::to_python_pretty(&bundled.spec)
        .context("writing the bundled description")?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The standard's `ops.json` from `dir`, checked by reading it (with `units.json`) as a
/// vocabulary.
fn load_vocab(dir: &Path) -> Result<canonical_json::Value> {
    let read = |name: &str| -> Result<canonical_json::Value> {
        let file = dir.join(name);
        let bytes =
            std::fs::read(&file).with_context(|| format!("--vocab: reading {}", file.display()))?;
        canonical_json::parse(&bytes)
            .with_context(|| format!("--vocab: {} is not valid JSON", file.display()))
    };
    let ops = read("ops.json")?;
    let units = read("units.json")?;
    cookwala::vocab::Vocabulary::from_json(&ops, &units)
        .with_context(|| format!("--vocab: {} is not a Cookwala vocabulary", dir.display()))?;
    Ok(ops)
}

/// Runs the hub until Ctrl-C.
///
/// # Errors
/// The data dir, token, database or listener cannot be set up.
pub fn run(args: ServeArgs) -> Result<bool> {
    install_logs(args.log_format);
    if !(args.speed.is_finite() && args.speed > 0.0) {
        bail!("--speed must be a positive number");
    }
    if args.no_auth && !args.addr.ip().is_loopback() {
        bail!(
            "--no-auth opens every endpoint to anyone who can reach {}; it is only allowed on a \
             loopback address (e.g. --addr 127.0.0.1:7878)",
            args.addr
        );
    }
    if args.max_body == 0 || args.max_streams == 0 {
        bail!("--max-body and --max-streams must be at least 1");
    }
    let connections = connection_limits(&args)?;
    let (catalog, device, n_recipes, n_devices) = build_catalog(&args)?;
    let vocab_ops = match &args.vocab {
        Some(dir) => Some(load_vocab(dir)?),
        None => None,
    };
    let devices_note = devices_note(&catalog, &device);
    let hooks = webhooks(&args)?;
    let mqtt = mqtt(&args)?;
    let mqtt_note = mqtt.as_ref().map_or_else(String::new, |m| {
        format!("\n  events to MQTT {} (safety alarms on {})", m.cursor_key(), m.safety_filter())
    });
    let mut webhook_roots = Vec::new();
    for file in &args.webhook_ca {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("--webhook-ca: reading {}", file.display()))?;
        let certs = cookwala_hub::webhooks::pem_certificates(&text)
            .map_err(|e| anyhow::anyhow!("--webhook-ca {}: {e}", file.display()))?;
        webhook_roots.extend(certs);
    }
    let n_hooks = hooks.len();
    let device_token = device_token(&args)?;
    let data = match args.data {
        Some(d) => d,
        None => default_data_dir()?,
    };
    create_private_dir(&data)?;
    // A device process's owner token is the kitchen's device token.
    let env = if args.device_process.is_some() { DEVICE_TOKEN_ENV } else { TOKEN_ENV };
    let (tokens, mut token_note) = resolve_tokens(args.token, args.tokens, &data, env)?;
    if tokens.is_empty() && !args.no_auth {
        bail!(
            "no token: the tokens file holds none and neither --token nor {env} gives one, \
             so this hub would accept every request. Add an entry to the tokens file (e.g. \
             {{\"name\": \"owner\", \"role\": \"owner\", \"token\": \"<16+ characters>\"}}), pass \
             --token, or pass --no-auth (loopback only) for local development"
        );
    }
    if args.no_auth {
        token_note = "WARNING: --no-auth: every endpoint is open to every local process, \
                      with an owner's rights; for local development only"
            .to_owned();
    }
    let spec = served_spec(args.spec.as_deref(), args.schemas.as_deref())?;
    let trusted_keys = crate::commands::keys::load_keys(&args.keys).context("--keys")?;
    let key_file = data.join(cookwala_hub::identity::HUB_KEY_FILE);
    let (key, created) = HubKey::load_or_create(&key_file, || {
        SigningKey::generate(SigningAlg::EdDsa, &mut rand::rng())
    })?;
    let store_args = StoreArgs {
        store: args.store.clone(),
        lease_secs: args.lease_secs,
        replica: args.replica.clone(),
        store_ca: args.store_ca.clone(),
    };
    let (storage, store_note) = open_store(&store_args, &data)?;
    let mut config = HubConfig {
        device_token,
        device_id: device.clone(),
        catalog,
        speed: args.speed,
        tokens,
        no_auth: args.no_auth,
        max_body: args.max_body,
        max_streams: args.max_streams,
        incident_retention_days: args.incident_retention_days,
        idempotency_retention_hours: args.idempotency_retention_hours,
        cors_origins: args.cors_origins.clone(),
        vocab_ops,
        spec,
        key: Some(key.clone()),
        trusted_keys,
        conformance: args.conformance,
        webhooks: hooks,
        webhook_roots,
        mqtt,
        heartbeat: std::time::Duration::from_secs(args.heartbeat_secs),
        connections,
        ..HubConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let process = args.device_process.clone();
    let what = if process.is_some() { "device" } else { "serve" };
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("binding {}", args.addr))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        if let Some(p) = &process {
            // The announced URL needs the port actually bound (`--addr HOST:0`).
            config.device_mode = Some(p.mode(addr));
        }
        let hub = Hub::open(storage, config).await.context("opening the hub")?;
        for id in hub.recovered() {
            cookwala_hub::note(format_args!(
                "cookwala {what}: execution {id} was active at the last stop; ended safely"
            ));
        }
        // Listening for signals before the banner says the hub is up: a SIGTERM sent the
        // moment it is, is a safe shutdown, not the default action's sudden end.
        let signals = Signals::new();
        if process.is_some() {
            crate::commands::device_mode::spawn_local_stop(hub.clone())?;
        }
        let operators = match args.metrics_addr {
            Some(at) => {
                let l = tokio::net::TcpListener::bind(at)
                    .await
                    .with_context(|| format!("binding --metrics-addr {at}"))?;
                Some((l.local_addr().context("reading the metrics address")?, l))
            }
            None => None,
        };
        let metrics_note = match &operators {
            Some((at, _)) => format!(
                "\n  metrics at http://{at}/metrics (no token: this address is the access \
                 control), health at /healthz and /readyz"
            ),
            None => format!(
                "\n  metrics at http://{addr}/metrics (a token that may read), health at \
                 /healthz and /readyz"
            ),
        };
        let key_note = format!(
            "hub key {} in {}{}",
            key.kid(),
            key_file.display(),
            if created { " (new)" } else { "" }
        );
        let hooks_note = if n_hooks > 0 {
            format!("\n  events to {n_hooks} webhook(s)")
        } else {
            String::new()
        };
        let loaded = if n_recipes + n_devices > 0 {
            format!("loaded {n_recipes} recipe(s) and {n_devices} device(s) from files\n  ")
        } else {
            String::new()
        };
        // One write, errors ignored: a closed stdout must not take the server down.
        let banner = match &process {
            Some(p) => p.banner(&device, addr, &data, &token_note, &mqtt_note),
            None => format!(
            "cookwala hub listening on http://{addr}\n  root device {device}, simulated time x{}, data {}\n  {store_note}\n  {loaded}{token_note}\n  {key_note}\n{devices_note}  events at http://{addr}/cookwala/v1/events{hooks_note}{mqtt_note}{metrics_note}\n  Ctrl-C stops the server\n",
            args.speed,
            data.display()
        ),
        };
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(banner.as_bytes()).and_then(|()| out.flush());
        drop(out);
        // The operators' listener lives as long as the API's (aborted when it returns).
        let operators = operators.map(|(_, l)| {
            tokio::spawn(cookwala_hub::serve_operators(hub.clone(), l, std::future::pending()))
        });
        let served = cookwala_hub::serve(hub, listener, shutdown_signal(signals)).await;
        if let Some(task) = operators {
            task.abort();
        }
        served.context("serving")?;
        anyhow::Ok(())
    })?;
    Ok(true)
}
