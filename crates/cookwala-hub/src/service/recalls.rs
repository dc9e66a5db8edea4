//! Recall rules the service applies: when a recall was issued, and which ones block.

use canonical_json::Value;

/// An RFC 3339 date-time in Unix milliseconds (`None` if it is not one).
pub(crate) fn timestamp_ms(text: &str) -> Option<i64> {
    let t = cookwala::time::parse_timestamp(text).ok()?;
    t.unix_seconds().checked_mul(1000)?.checked_add(i64::from(t.subsec_nanos() / 1_000_000))
}

/// A recall's `issuedAt` in Unix milliseconds.
pub(crate) fn issued_ms(recall: &Value) -> Option<i64> {
    timestamp_ms(recall.get("issuedAt")?.as_str()?)
}

/// The recalls that block new executions (every action but `warn`).
pub(crate) fn blocking(all: &[Value]) -> Vec<Value> {
    all.iter()
        .filter(|r| r.get("action").and_then(Value::as_str) != Some("warn"))
        .cloned()
        .collect()
}

impl crate::service::Hub {
    /// Publishes a Recall the HTTP layer has checked (shape, signature, `issuedAt`): stored with
    /// its event, and, for `block_and_stop_running`, every live execution of a recipe it covers
    /// stopped safely in the same commit. Returns whether it was new (`false`: the same recall
    /// was already published, and is answered as it is) and the answer.
    ///
    /// The recall is put in force and the executions it covers are chosen in one step under
    /// the live map's lock ([`crate::service::live::Live::recalls_changed`]): a start decided
    /// before it is in the map and chosen (its stop waits until its record is stored); a start
    /// decided after it sees the recall. No start slips between them (issue 24). If the commit
    /// fails the recall is taken out of force again (the stops stay made).
    ///
    /// # Errors
    /// The id is published with other content (409), a reused key (422), the storage fails.
    pub(crate) async fn publish_recall(
        &self,
        key: String,
        digest: String,
        doc: Value,
        id: String,
        issued: i64,
    ) -> Result<(bool, crate::service::idempotency::Answer), crate::service::Error> {
        use crate::service::idempotency::{Answer, hold_key, idem_record};
        use crate::storage::{Commit, NewRecall, jcs_text};
        let _hold = hold_key(self, &key).await;
        if let Some(rec) = self.stored_answer(&key, &digest).await? {
            return Ok((true, Answer::Replay(rec)));
        }
        let stops = doc.get("action").and_then(Value::as_str) == Some("block_and_stop_running");
        let mut existing = None;
        let covered = self.inner.live.recalls_changed(
            || {
                existing = self.insert_recall(&id, &doc);
                existing.is_none()
            },
            |recipe, held| stops && cookwala::precheck::recall_covers(&doc, recipe, held),
        );
        let Some(covered) = covered else {
            return match existing {
                Some(existing) if existing.loose_eq(&doc) => Ok((false, Answer::Fresh(existing))),
                _ => Err(crate::service::Error::RecallExists { id }),
            };
        };
        let mut held = crate::service::live::lock_live(covered).await;
        let mut commit = Commit::default();
        let mut stopped = Vec::new();
        let reason = format!("recall {id}");
        for (exec_id, run) in &mut held {
            let (change, ()) = self.apply(exec_id, run, |sim| {
                Ok::<_, crate::service::Error>((sim.stop(&reason), ()))
            })?;
            commit.absorb(change);
            stopped.push(Value::from(exec_id.as_str()));
        }
        let mut ack = canonical_json::Map::new();
        ack.insert("published".into(), id.as_str().into());
        ack.insert("stopped".into(), Value::Array(stopped));
        let ack = Value::Object(ack);
        commit.idempotency = Some(idem_record(&key, &digest, 201, &ack));
        commit.recall = Some(NewRecall { id: id.clone(), issued_ms: issued, body: jcs_text(&doc) });
        commit.events.push(crate::outbox::events::to_new(&crate::outbox::events::recall(
            &doc,
            self.now_ms(),
        )));
        // The stops are already made in memory: their events are kept and retried if this
        // fails.
        if let Err(e) = self.commit(commit, true).await {
            self.inner.live.recalls_changed(
                || {
                    self.remove_recall(&id);
                    true
                },
                |_, _| false,
            );
            return Err(e);
        }
        self.drop_finals(&held);
        Ok((true, Answer::Fresh(ack)))
    }

    /// Adds recall `id` to the in-memory copy, keeping `issuedAt` order; if one with that id
    /// is already there, adds nothing and returns it.
    fn insert_recall(&self, id: &str, recall: &Value) -> Option<Value> {
        let mut list =
            self.inner.recalls.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(found) = list.iter().find(|r| r.get("id").and_then(Value::as_str) == Some(id)) {
            return Some(found.clone());
        }
        let pos = list.partition_point(|r| issued_ms(r) <= issued_ms(recall));
        list.insert(pos, recall.clone());
        None
    }

    /// Takes recall `id` out of the in-memory copy.
    fn remove_recall(&self, id: &str) {
        let mut list =
            self.inner.recalls.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        list.retain(|r| r.get("id").and_then(Value::as_str) != Some(id));
    }
}
