//! Where evaluations live: the record in the table (`tenant#evaluation#ID`, `sk =
//! evaluation`), the request it was asked with as an object (`evaluations/TENANT/ID.json`:
//! a change's files can pass the table's item limit), and the tenant's listing, newest first
//! (`tenant#evaluations#all`, see [`agentrl_store::listing`]).

use std::sync::Arc;

use agentrl_core::TenantId;
use agentrl_store::{
    StoreError,
    keys::partition,
    listing,
    ports::{Condition, Item, Key, Objects, Put, Table, Write, encode},
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

fn listing_pk(t: &TenantId) -> String {
    partition(t, "evaluations", "all")
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
            .transact(vec![
                Write::Put(Put {
                    key: key(t, &evaluation.evaluation_id),
                    doc: encode(evaluation)?,
                    expires_at: None,
                    condition: Condition::Absent,
                }),
                Write::Put(listing::entry(
                    listing_pk(t),
                    evaluation.created_at_ms,
                    &evaluation.evaluation_id,
                    None,
                )),
            ])
            .await
    }

    /// A page of the tenant's evaluations, newest first, and the next page's cursor.
    pub(crate) async fn list(
        &self,
        t: &TenantId,
        limit: usize,
        cursor: Option<String>,
    ) -> Result<(Vec<Evaluation>, Option<String>), StoreError> {
        let (ids, next) =
            listing::newest_first(self.table.as_ref(), listing_pk(t), limit, cursor).await?;
        let keys: Vec<Key> = ids.iter().map(|id| key(t, id)).collect();
        let evaluations = self
            .table
            .get_many(&keys)
            .await?
            .into_iter()
            .flatten()
            .map(|item| item.decode().map(|(e, _)| e))
            .collect::<Result<_, _>>()?;
        Ok((evaluations, next))
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
