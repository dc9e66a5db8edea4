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
    /// The records of the live executions are read before the hub's lock is taken; under it,
    /// only those started since are read, and the recall is in force before the lock is
    /// released, so no start slips between the decision and the commit (issue 24).
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
        // Which live executions run a recipe the recall covers, decided outside the lock.
        let mut covered = Vec::new();
        let mut checked = std::collections::HashSet::new();
        if stops {
            let ids: Vec<String> =
                self.live_executions().await.into_iter().map(|(id, _)| id).collect();
            checked.extend(ids.iter().cloned());
            covered = self.covered_by(&doc, ids).await?;
        }
        let mut live = self.inner.live.lock().await;
        if stops {
            // An execution started between the read above and the lock is decided now (a
            // storage read under the lock, only for those few), so none escapes the recall.
            let late: Vec<String> =
                live.keys().filter(|id| !checked.contains(*id)).cloned().collect();
            if !late.is_empty() {
                covered.extend(self.covered_by(&doc, late).await?);
            }
        }
        if let Some(existing) =
            self.recalls().into_iter().find(|r| r.get("id").and_then(Value::as_str) == Some(&id))
        {
            if existing.loose_eq(&doc) {
                return Ok((false, Answer::Fresh(existing)));
            }
            return Err(crate::service::Error::RecallExists { id });
        }
        let mut commit = Commit::default();
        let mut stopped = Vec::new();
        for exec_id in &covered {
            if let Some(run) = live.get_mut(exec_id) {
                let reason = format!("recall {id}");
                let (change, ()) = self.apply(exec_id, run, |sim| {
                    Ok::<_, crate::service::Error>((sim.stop(&reason), ()))
                })?;
                commit.absorb(change);
                stopped.push(Value::from(exec_id.as_str()));
            }
        }
        let mut ack = canonical_json::Map::new();
        ack.insert("published".into(), id.as_str().into());
        ack.insert("stopped".into(), Value::Array(stopped));
        let ack = Value::Object(ack);
        commit.idempotency = Some(idem_record(&key, &digest, 201, &ack));
        commit.recall = Some(NewRecall { id, issued_ms: issued, body: jcs_text(&doc) });
        commit.events.push(crate::outbox::events::to_new(&crate::outbox::events::recall(
            &doc,
            self.now_ms(),
        )));
        // The stops are already made in memory: their events are kept and retried if this
        // fails.
        self.commit(commit, true).await?;
        live.retain(|_, sim| !sim.is_final());
        // In force before the lock is released: a start decides under the same lock, so none
        // is accepted between the commit and this.
        self.push_recall(doc);
        drop(live);
        Ok((true, Answer::Fresh(ack)))
    }

    /// The executions among `ids` whose stored recipe `recall` covers.
    async fn covered_by(
        &self,
        recall: &Value,
        ids: Vec<String>,
    ) -> Result<Vec<String>, crate::service::Error> {
        let records = self
            .db(move |s| {
                let mut out = Vec::new();
                for id in &ids {
                    out.extend(s.execution(id)?);
                }
                Ok(out)
            })
            .await?;
        let mut covered = Vec::new();
        for rec in &records {
            // The recipe the execution runs: the one stored with it (the catalog's for a row
            // from before the documents were stored).
            let Some(recipe) = crate::service::recipe_of(rec, &self.inner.config.catalog) else {
                continue;
            };
            let held = canonical_json::digest::document_hash(&recipe).unwrap_or_default();
            if cookwala::precheck::recall_covers(recall, &recipe, &held) {
                covered.push(rec.id.clone());
            }
        }
        Ok(covered)
    }
}
