//! `cookwala serve`: the Cookwala hub (Core HTTP API on a simulated device) until Ctrl-C.
//!
//! Everything the hub needs comes from `cookwala-hub`; this command only resolves the data
//! directory and the bearer token, opens the SQLite store, and runs the server with a graceful
//! shutdown on Ctrl-C (and SIGTERM).

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use cookwala_hub::storage::SqliteStorage;
use cookwala_hub::{Catalog, Hub, HubConfig, Webhook};

/// The environment variable the upstream sample client also reads.
pub const TOKEN_ENV: &str = "COOKWALA_HUB_TOKEN";

/// The environment variable holding the webhook signing secret (when no secret file is given).
pub const WEBHOOK_SECRET_ENV: &str = "COOKWALA_WEBHOOK_SECRET";

/// `serve` arguments.
#[derive(Debug)]
pub struct ServeArgs {
    /// Listen address.
    pub addr: SocketAddr,
    /// Data directory (`None`: the per-user default).
    pub data: Option<PathBuf>,
    /// Simulated time per real time.
    pub speed: f64,
    /// Bearer token (else the environment, else the data dir's token file).
    pub token: Option<String>,
    /// Device served at the root: a catalog id or a capabilities file.
    pub device: String,
    /// An OpenAPI file to serve at /openapi.yaml instead of the hub's own description.
    pub spec: Option<PathBuf>,
    /// An upstream samples `bundle.json` to load recipes and devices from.
    pub bundle: Option<PathBuf>,
    /// Folders of recipe JSON files.
    pub recipes: Vec<PathBuf>,
    /// Folders of capabilities JSON files.
    pub devices: Vec<PathBuf>,
    /// Webhook URLs.
    pub webhooks: Vec<String>,
    /// The file holding the webhook secret (else the environment).
    pub webhook_secret_file: Option<PathBuf>,
    /// Seconds between heartbeats (0: none).
    pub heartbeat_secs: u64,
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
    let mut catalog = Catalog::builtin();
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
    let device = match catalog.device_id(&args.device) {
        Some(id) => id.to_owned(),
        None if Path::new(&args.device).is_file() => {
            n_devices += 1;
            catalog.load_device_file(Path::new(&args.device)).context("--device")?
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

/// The token to require: `--token`, else `$COOKWALA_HUB_TOKEN`, else the data dir's `token`
/// file (created with a fresh random token, mode 0600, on first start). The second value is
/// the file the token came from.
fn resolve_token(arg: Option<String>, data: &Path) -> Result<(String, Option<PathBuf>)> {
    if let Some(t) = arg.filter(|t| !t.is_empty()) {
        return Ok((t, None));
    }
    if let Ok(t) = std::env::var(TOKEN_ENV)
        && !t.is_empty()
    {
        return Ok((t, None));
    }
    let path = data.join("token");
    if path.exists() {
        let t = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?
            .trim()
            .to_owned();
        if t.is_empty() {
            bail!("{} is empty; delete it to get a new token", path.display());
        }
        return Ok((t, Some(path)));
    }
    let bytes: [u8; 24] = rand::random();
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path).with_context(|| format!("creating {}", path.display()))?;
    file.write_all(format!("{token}\n").as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok((token, Some(path)))
}

fn create_private_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).with_context(|| format!("creating {}", dir.display()))
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    cookwala_hub::note(format_args!("cookwala serve: shutting down"));
}

/// Runs the hub until Ctrl-C.
///
/// # Errors
/// The data dir, token, database or listener cannot be set up.
pub fn run(args: ServeArgs) -> Result<bool> {
    if !(args.speed.is_finite() && args.speed > 0.0) {
        bail!("--speed must be a positive number");
    }
    let (catalog, device, n_recipes, n_devices) = build_catalog(&args)?;
    let hooks = webhooks(&args)?;
    let n_hooks = hooks.len();
    let data = match args.data {
        Some(d) => d,
        None => default_data_dir()?,
    };
    create_private_dir(&data)?;
    let (token, token_file) = resolve_token(args.token, &data)?;
    let spec = match &args.spec {
        Some(p) => {
            Some(std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?)
        }
        None => None,
    };
    let db = data.join("hub.sqlite3");
    let storage =
        Arc::new(SqliteStorage::open(&db).with_context(|| format!("opening {}", db.display()))?);
    let config = HubConfig {
        device_id: device.clone(),
        catalog,
        speed: args.speed,
        token: Some(token),
        spec,
        webhooks: hooks,
        heartbeat: std::time::Duration::from_secs(args.heartbeat_secs),
        ..HubConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let hub = Hub::open(storage, config).await.context("opening the hub")?;
        for id in hub.recovered() {
            cookwala_hub::note(format_args!(
                "cookwala serve: execution {id} was active at the last stop; ended safely"
            ));
        }
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("binding {}", args.addr))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        let token_note = match token_file {
            Some(path) => format!("bearer token in {}", path.display()),
            None => format!("bearer token from --token / {TOKEN_ENV}"),
        };
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
        let banner = format!(
            "cookwala hub listening on http://{addr}\n  device {device}, simulated time x{}, data {}\n  {loaded}{token_note}\n  events at http://{addr}/cookwala/v1/events{hooks_note}\n  Ctrl-C stops the server\n",
            args.speed,
            data.display()
        );
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(banner.as_bytes()).and_then(|()| out.flush());
        drop(out);
        cookwala_hub::serve(hub, listener, shutdown_signal()).await.context("serving")?;
        anyhow::Ok(())
    })?;
    Ok(true)
}
