//! Starting the webhook deliveries of a hub (see [`crate::outbox::webhooks`]).

use crate::service::Hub;

impl Hub {
    /// Starts one delivery task per configured webhook.
    pub fn spawn_webhooks(&self) -> Vec<tokio::task::JoinHandle<()>> {
        let policy = self.inner.config.webhook_policy;
        let tls = match crate::outbox::webhooks::tls_config(&self.inner.config.webhook_roots) {
            Ok(t) => t,
            Err(e) => {
                crate::clock::note(format_args!("cookwala hub: webhooks not started: {e}"));
                return Vec::new();
            }
        };
        self.inner
            .config
            .webhooks
            .iter()
            .filter_map(|hook| {
                let t = crate::outbox::webhooks::target(&hook.url).ok()?;
                let (storage, committed) = (self.inner.storage.clone(), self.inner.bus.committed());
                let task = crate::outbox::webhooks::deliver_all(
                    storage,
                    committed,
                    hook.clone(),
                    t,
                    policy,
                    tls.clone(),
                    self.inner.relay.clone(),
                );
                Some(tokio::spawn(task))
            })
            .collect()
    }
}
