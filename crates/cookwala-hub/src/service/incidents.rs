//! Incident reports: stored with the idempotency record that answers them.

use canonical_json::{Map, Value};

use crate::service::idempotency::{Answer, hold_key, idem_record};
use crate::service::{Error, Hub};
use crate::storage::jcs_text;

impl Hub {
    /// Stores an IncidentReport the HTTP layer has checked (shape, no personal data) and
    /// acknowledges it; a repeat with the same key gets the same acknowledgement.
    ///
    /// # Errors
    /// A reused key (422), the storage fails.
    pub(crate) async fn report_incident(
        &self,
        key: String,
        digest: String,
        doc: &Value,
    ) -> Result<Answer, Error> {
        let _hold = hold_key(self, &key).await;
        if let Some(rec) = self.stored_answer(&key, &digest).await? {
            return Ok(Answer::Replay(rec));
        }
        let id = doc.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut ack = Map::new();
        ack.insert("received".into(), true.into());
        ack.insert("id".into(), id.as_str().into());
        let ack = Value::Object(ack);
        let idem = idem_record(&key, &digest, 202, &ack);
        let text = jcs_text(doc);
        self.db(move |s| s.add_incident(&id, &text, Some(&idem))).await?;
        Ok(Answer::Fresh(ack))
    }
}
