//! Where evaluations live: the record in the table (`tenant#evaluation#ID`, `sk =
//! evaluation`), the request it was asked with as an object (`evaluations/TENANT/ID.json`:
//! a change's files can pass the table's item limit).

use std::sync::Arc;

use agentrl_core::TenantId;
use agentrl_store::{
    StoreError,
    keys::partition,
    ports::{Condition, Item, Key, Objects, Put, Table, encode},
};
use bytes::Bytes;

use super::{Evaluation, EvaluationRequest};

/// Typed access to evaluation records and requests.
#[derive(Clone)]
pub(crate) struct EvaluationStore {
    table: Arc<dyn Table>,
    objects: Arc<dyn Objects>,
}

fn key(t: &TenantId, id: &str) -> Key {
    Key::new(partition(t, "evaluation", id), "evaluation")
}

fn request_path(t: &TenantId, id: &str) -> String {
    format!("evaluations/{t}/{id}.json")
}

impl EvaluationStore {
    pub(crate) fn new(table: Arc<dyn Table>, objects: Arc<dyn Objects>) -> Self {
        Self { table, objects }
    }

    /// Stores a new evaluation and its request.
    pub(crate) async fn create(
        &self,
        t: &TenantId,
        evaluation: &Evaluation,
        request: &EvaluationRequest,
    ) -> Result<(), StoreError> {
        let body = serde_json::to_vec(request).map_err(|e| StoreError::Backend(e.into()))?;
        self.objects
            .put(
                &request_path(t, &evaluation.evaluation_id),
                Bytes::from(body),
            )
            .await?;
        self.table
            .put(Put {
                key: key(t, &evaluation.evaluation_id),
                doc: encode(evaluation)?,
                expires_at: None,
                condition: Condition::Absent,
            })
            .await
            .map(drop)
    }

    /// An evaluation with the version it was read at.
    pub(crate) async fn get(
        &self,
        t: &TenantId,
        id: &str,
    ) -> Result<Option<(Evaluation, u64)>, StoreError> {
        self.table
            .get(&key(t, id))
            .await?
            .map(Item::decode)
            .transpose()
    }

    /// Replaces an evaluation's record: unconditionally, as the queue's visibility timeout
    /// (longer than an evaluation may run) keeps one worker on an evaluation at a time.
    pub(crate) async fn update(
        &self,
        t: &TenantId,
        evaluation: &Evaluation,
    ) -> Result<(), StoreError> {
        self.table
            .put(Put {
                key: key(t, &evaluation.evaluation_id),
                doc: encode(evaluation)?,
                expires_at: None,
                condition: Condition::Exists,
            })
            .await
            .map(drop)
    }

    /// The request an evaluation was asked with; `None` if it is gone.
    pub(crate) async fn request(
        &self,
        t: &TenantId,
        id: &str,
    ) -> Result<Option<Result<EvaluationRequest, serde_json::Error>>, StoreError> {
        Ok(self
            .objects
            .get(&request_path(t, id))
            .await?
            .map(|bytes| serde_json::from_slice(&bytes)))
    }
}
