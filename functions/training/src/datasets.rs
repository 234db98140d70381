//! The tenant's datasets, as the dataset job left them: each a folder
//! `datasets/tenant=<pseudonym>/<dataset id>/` of Parquet and JSON Lines files described by
//! its `manifest.json` (counts, splits, rules, file sizes and hashes). Nothing here writes:
//! the manifests are read, newest first.

use agentrl_core::TenantId;
use agentrl_store::StoreError;
use serde_json::Value;

use crate::TrainingState;

/// The manifests of a page of the tenant's datasets, newest first (by id: ids start with
/// their day), and the id to continue after.
pub(crate) async fn list(
    state: &TrainingState,
    t: &TenantId,
    limit: usize,
    after: Option<&str>,
) -> Result<(Vec<Value>, Option<String>), StoreError> {
    let prefix = format!("datasets/tenant={}/", state.partition(t));
    let mut ids: Vec<String> = state
        .objects
        .list(&prefix)
        .await?
        .into_iter()
        .filter_map(|object| {
            let id = object
                .path
                .strip_prefix(&prefix)?
                .strip_suffix("/manifest.json")?;
            (!id.contains('/')).then(|| id.to_owned())
        })
        .filter(|id| after.is_none_or(|after| id.as_str() < after))
        .collect();
    ids.sort_unstable_by(|a, b| b.cmp(a));
    let next = (ids.len() > limit).then(|| ids[limit - 1].clone());
    ids.truncate(limit);
    let mut manifests = Vec::with_capacity(ids.len());
    for id in &ids {
        // A dataset deleted between the listing and this read is left out of the page.
        if let Some(manifest) = manifest(state, t, id).await? {
            manifests.push(manifest);
        }
    }
    Ok((manifests, next))
}

/// The manifest of the tenant's dataset `id`, as written.
pub(crate) async fn manifest(
    state: &TrainingState,
    t: &TenantId,
    id: &str,
) -> Result<Option<Value>, StoreError> {
    if id.is_empty() || id.contains('/') || id.starts_with('.') {
        return Ok(None);
    }
    let path = format!("datasets/tenant={}/{id}/manifest.json", state.partition(t));
    let Some(bytes) = state.objects.get(&path).await? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| StoreError::Backend(anyhow::anyhow!("the manifest {path}: {e}")))
}
