//! What makes a `cookwala serve` run a device process (`cookwala device`): the announced URL
//! and instance, the banner, and the device's own stop control. Kept apart from both commands
//! so that `serve` needs nothing of `device`'s argument parsing.

use std::net::SocketAddr;
use std::path::Path;

use anyhow::{Context, Result};

/// What makes a `serve` run a device process.
#[derive(Debug, Clone, Default)]
pub struct Process {
    /// `--public-url`.
    pub public_url: Option<String>,
}

impl Process {
    /// The device mode for a process bound at `addr`: the announced URL, and an instance
    /// name unique to this start (start time and process id).
    pub fn mode(&self, addr: SocketAddr) -> cookwala_hub::kitchen::DeviceMode {
        let base_url = self.public_url.clone().unwrap_or_else(|| format!("http://{addr}"));
        let started = cookwala_hub::unix_ms();
        cookwala_hub::kitchen::DeviceMode {
            base_url: base_url.trim_end_matches('/').to_owned(),
            instance: format!("{started}-{}", std::process::id()),
        }
    }

    /// The start-up lines.
    pub fn banner(
        &self,
        device: &str,
        addr: SocketAddr,
        data: &Path,
        token_note: &str,
        mqtt_note: &str,
    ) -> String {
        let url = self.public_url.clone().unwrap_or_else(|| format!("http://{addr}"));
        format!(
            "cookwala device {device} listening on http://{addr}\n  announced as {url}, data \
             {}\n  {token_note}{mqtt_note}\n  SIGUSR1 stops every running execution (the \
             device's own stop control); Ctrl-C stops the device\n",
            data.display()
        )
    }
}

/// Listens for SIGUSR1 (the device's stop button) and stops every running execution at each.
///
/// # Errors
/// The signal listener cannot be set up.
#[cfg(unix)]
pub fn spawn_local_stop(hub: cookwala_hub::Hub) -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut button =
        signal(SignalKind::user_defined1()).context("listening for SIGUSR1 (the stop button)")?;
    tokio::spawn(async move {
        while button.recv().await.is_some() {
            let pressed = cookwala_hub::unix_ms();
            match hub.local_stop().await {
                Ok(ids) if ids.is_empty() => cookwala_hub::note(format_args!(
                    "cookwala device: stop button: nothing is running"
                )),
                Ok(ids) => cookwala_hub::note(format_args!(
                    "cookwala device: stop button: stopping {} (heat and motion cut on the \
                     device; {} ms to commit)",
                    ids.join(", "),
                    cookwala_hub::unix_ms().saturating_sub(pressed)
                )),
                Err(e) => cookwala_hub::note(format_args!(
                    "cookwala device: stop button: the stop is made, not yet stored: {e}"
                )),
            }
        }
    });
    Ok(())
}

/// Without Unix signals there is no stop button to listen for.
///
/// # Errors
/// Never.
#[cfg(not(unix))]
pub fn spawn_local_stop(_hub: cookwala_hub::Hub) -> Result<()> {
    Ok(())
}
