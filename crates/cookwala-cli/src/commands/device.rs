//! `cookwala device`: one device's executor as a process of its own — the runtime a device
//! maker embeds, with the simulator as its first hardware adapter (behind
//! `cookwala_hub::executor::Executor`, the trait a maker implements for real sensors and
//! actuators).
//!
//! It is `cookwala serve` cut down to one device: the same Core routes at the root, the same
//! auth rules, its own durable store in `--data`, its own SafetyLimits pack, the same safe
//! restart (what was running is ended `stopped`, `aborted_safe`) — and, with `--mqtt`, a member
//! of the kitchen bus: a retained `cookwala.device.online` when it connects, an MQTT will that
//! makes the broker publish a retained `cookwala.device.offline` when its session dies,
//! heartbeats every `--heartbeat-secs` (with its executions, the step each is on and the
//! step's hazards, which a hub needs once the device is lost), telemetry readings, its
//! execution events, and the kitchen's safety alarms acted on.
//!
//! **Local stop.** SIGUSR1 stands for the stop button on the appliance: every running
//! execution is stopped through the same code as a remote stop, with nothing on the way that
//! needs a network (the events it produces go out when a connection allows). The log records
//! it as `x-localStop` (`requestedAt`, `motionStoppedAt`, `heatOffAt`, device time).

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;

use super::device_mode::Process;
use super::serve::{LogFormat, ServeArgs};

/// Run one device as a process of its own, on the kitchen bus
///
/// Serves the Core HTTP API of that one device at --addr (the routes a hub serves at its
/// root, with the same auth rules), keeps its own durable store in --data, enforces its own
/// safety limits and, with --mqtt and --kitchen, joins the kitchen bus: a retained
/// cookwala.device.online on cookwala/KITCHEN/device/ID when it connects, a will that makes
/// the broker publish cookwala.device.offline there when its session dies, a heartbeat every
/// --heartbeat-secs, telemetry on cookwala/KITCHEN/telemetry/ID, its execution events, and
/// the kitchen's safety alarms acted on within a second.
///
/// A hub started with the same --mqtt and --kitchen (and --device-token set to this device's
/// --token) lists it, forwards /devices/ID/v1/... to it, and hands its executions to a person
/// when it is lost.
///
/// SIGUSR1 is the device's own stop button: every running execution stops (motion within
/// 0.5 s, heat within 1 s of device time, recorded as x-localStop in its log) with or without
/// a network. Killed mid-run and started again on the same --data, it ends what was running
/// safely (stopped, aborted_safe) before it announces itself.
///
/// Example:
///   cookwala device --device demo-hob-robot --bundle samples/bundle.json \
///     --addr 127.0.0.1:7880 --data /tmp/hob --token "$COOKWALA_DEVICE_TOKEN" \
///     --mqtt mqtt://127.0.0.1:1883 --kitchen home --heartbeat-secs 1
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct DeviceArgs {
    /// The device: an id (built-in, or from --bundle) or a capabilities JSON file
    #[arg(long, value_name = "ID|FILE")]
    pub device: String,
    /// Load the recipes and devices of an upstream samples bundle.json
    #[arg(long, value_name = "FILE")]
    pub bundle: Option<PathBuf>,
    /// Load every *.json file in DIR as a recipe; repeatable
    #[arg(long, value_name = "DIR")]
    pub recipes: Vec<PathBuf>,
    /// Listen address
    #[arg(long, default_value = "127.0.0.1:7880")]
    pub addr: SocketAddr,
    /// The base URL a hub reaches this device at (announced on the bus; default
    /// http://ADDR as bound)
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Data directory (its own store, tokens file and key)
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,
    /// An owner token, at least 16 characters: the kitchen's device token, which the hub
    /// presents (else $COOKWALA_DEVICE_TOKEN)
    #[arg(long)]
    pub token: Option<String>,
    /// Open every endpoint without a token (loopback only; local development)
    #[arg(long)]
    pub no_auth: bool,
    /// Simulated time runs N times real time (1: a real appliance's pace)
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// The SafetyLimits pack this executor enforces (default: the standard's default pack)
    #[arg(long, value_name = "FILE")]
    pub limits: Option<PathBuf>,
    /// The kitchen's MQTT 5 broker: mqtt://[USER[:PASS]@]HOST[:PORT] or mqtts://; needs
    /// --kitchen
    #[arg(long, value_name = "URL", requires = "kitchen")]
    pub mqtt: Option<String>,
    /// The kitchen id (topics cookwala/KITCHEN/...); needs --mqtt
    #[arg(long, value_name = "KITCHEN_ID", requires = "mqtt")]
    pub kitchen: Option<String>,
    /// File holding the MQTT password (else the URL's, else $COOKWALA_MQTT_PASSWORD)
    #[arg(long, value_name = "FILE", requires = "mqtt")]
    pub mqtt_password_file: Option<PathBuf>,
    /// Seconds between heartbeats (a hub marks the device offline after three missed)
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub heartbeat_secs: u64,
    /// How stderr diagnostics are written: human or json
    #[arg(long, value_name = "FORMAT", value_enum, default_value = "human")]
    pub log_format: LogFormat,
}

/// The `serve` arguments for `args`: the hub's defaults (parsed from nothing, so they are
/// the ones `--help` shows) with the device's flags.
///
/// # Errors
/// `--public-url` is not an http(s) URL a hub could call.
pub fn serve_args(args: DeviceArgs) -> Result<ServeArgs> {
    #[derive(Parser)]
    struct Defaults {
        #[command(flatten)]
        serve: ServeArgs,
    }
    if let Some(url) = &args.public_url
        && !cookwala_hub::kitchen::usable_base_url(url)
    {
        anyhow::bail!("--public-url {url:?} must be http://HOST[:PORT] or https://HOST[:PORT]");
    }
    let mut serve = Defaults::try_parse_from(["device"])
        .context("the hub's default arguments do not parse")?
        .serve;
    serve.device = args.device;
    serve.bundle = args.bundle;
    serve.recipes = args.recipes;
    serve.addr = args.addr;
    serve.data = Some(args.data);
    // `serve` reads $COOKWALA_DEVICE_TOKEN for a device process when no --token is given.
    serve.token = args.token;
    serve.no_auth = args.no_auth;
    serve.speed = args.speed;
    serve.limits = args.limits;
    serve.mqtt = args.mqtt;
    serve.kitchen = args.kitchen;
    serve.mqtt_password_file = args.mqtt_password_file;
    serve.heartbeat_secs = args.heartbeat_secs;
    serve.log_format = args.log_format;
    serve.device_process = Some(Process { public_url: args.public_url });
    Ok(serve)
}
