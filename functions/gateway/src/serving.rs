//! Serving trained versions from the tenant's upstream, for tenants that set `lora_dir`: an
//! adapter is loaded at run time (vLLM `POST /v1/load_lora_adapter`; vLLM runs with
//! `--enable-lora` and `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`) and unloaded when no longer
//! routed (`/v1/unload_lora_adapter`); full weights cannot be loaded at run time, so they are
//! served only once a deployment lists them in `/v1/models`. The training function calls
//! these before it routes a promoted version (a refusal blocks the promotion).

use std::path::{Path, PathBuf};

use agentrl_core::TenantId;
use agentrl_store::StoreError;
use agentrl_store::ports::Objects;
use serde_json::{Value, json};

use crate::GatewayState;
use crate::upstream::{MAX_ANSWER_BYTES, MAX_ERROR_BYTES, Overflow, read_capped};

/// The most of an upstream's answer a refusal quotes.
const QUOTED: usize = 512;

impl GatewayState {
    /// The same state, copying each adapter it loads for a tenant on the deployment's
    /// upstream into `dir/{tenant}/{name}/` first: `dir` is the deployment's `lora_dir` as
    /// this process sees it (the vLLM host's disk, or a shared mount).
    #[must_use]
    pub fn with_adapter_sync(mut self, dir: PathBuf) -> Self {
        self.adapter_sync = Some(dir);
        self
    }

    /// Has the tenant's upstream serve the version named `name`: its adapter (object paths of
    /// its PEFT files) loaded at run time, or, with no adapter, full weights a deployment
    /// already serves. A tenant without `lora_dir` serves versions itself: nothing to do.
    ///
    /// # Errors
    /// The reason the upstream does not serve it, in words (its own answer quoted).
    pub async fn serve_version(
        &self,
        t: &TenantId,
        name: &str,
        adapter: Option<&[String]>,
    ) -> Result<(), String> {
        let config = self
            .configs
            .get(t)
            .await
            .map_err(|e| format!("the gateway's settings could not be read: {e}"))?;
        let Some(lora_path) = config.lora_path(t.as_str(), name) else {
            return Ok(());
        };
        let Some(files) = adapter else {
            return self.deployed(t, &config, name).await;
        };
        if let (Some(dir), None) = (&self.adapter_sync, config.base_url()) {
            let dest = dir.join(t.as_str()).join(name);
            copy_files(self.objects.as_ref(), files, &dest)
                .await
                .map_err(|e| {
                    format!("its adapter could not be copied to {}: {e}", dest.display())
                })?;
        }
        let response = self
            .upstream
            .post(&config, "/load_lora_adapter", None)
            .map_err(|e| e.message().to_owned())?
            .json(&json!({"lora_name": name, "lora_path": lora_path}))
            .send()
            .await
            .map_err(|e| format!("the upstream could not be reached: {e}"))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let body = read_capped(response, MAX_ERROR_BYTES, Overflow::Cut)
            .await
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        // vLLM refuses a second load of one name; the adapter is served all the same.
        if body.contains("already been loaded") {
            return Ok(());
        }
        Err(format!(
            "the upstream answered {} to loading {lora_path}: {}",
            status.as_u16(),
            quote(&body)
        ))
    }

    /// Full weights are served when a deployment lists the name among its models.
    async fn deployed(
        &self,
        t: &TenantId,
        config: &agentrl_core::gateway::GatewayConfig,
        name: &str,
    ) -> Result<(), String> {
        let response = self
            .upstream
            .request(reqwest::Method::GET, config, "/models", None)
            .map_err(|e| e.message().to_owned())?
            .send()
            .await
            .map_err(|e| format!("the upstream could not be reached: {e}"))?;
        let body = read_capped(response, MAX_ANSWER_BYTES, Overflow::Refuse)
            .await
            .map_err(|e| e.message().to_owned())?;
        let listed: Value = serde_json::from_slice(&body)
            .map_err(|e| format!("the upstream's model list is not JSON: {e}"))?;
        let served = listed["data"]
            .as_array()
            .is_some_and(|models| models.iter().any(|m| m["id"] == name));
        if served {
            return Ok(());
        }
        tracing::info!(tenant = %t, name, "a full-weight version awaits a deployment");
        Err(format!(
            "{name} is full weights, which no upstream loads at run time: deploy it under that \
             name (vLLM `--served-model-name {name}`), then promote again"
        ))
    }

    /// Has the tenant's upstream unload the adapter named `name` (a tenant without `lora_dir`:
    /// nothing to do). A failure is logged: an idle adapter costs memory, not correctness.
    pub async fn retire_version(&self, t: &TenantId, name: &str) {
        let Ok(config) = self.configs.get(t).await else {
            tracing::warn!(tenant = %t, name, "gateway settings unreadable: version not unloaded");
            return;
        };
        if config.lora_dir.is_none() {
            return;
        }
        let sent = match self.upstream.post(&config, "/unload_lora_adapter", None) {
            Ok(request) => request.json(&json!({"lora_name": name})).send().await,
            Err(e) => {
                tracing::warn!(tenant = %t, name, reason = e.message(), "version not unloaded");
                return;
            }
        };
        match sent {
            Ok(r) if r.status().is_success() => {
                tracing::info!(tenant = %t, name, "version unloaded")
            }
            Ok(r) => {
                let status = r.status().as_u16();
                let body = read_capped(r, MAX_ERROR_BYTES, Overflow::Cut)
                    .await
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                tracing::warn!(tenant = %t, name, status, answer = quote(&body), "version not unloaded");
            }
            Err(e) => tracing::warn!(tenant = %t, name, error = %e, "version not unloaded"),
        }
    }
}

fn quote(body: &str) -> &str {
    let mut end = body.len().min(QUOTED);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    &body[..end]
}

/// Copies files (object paths: an adapter's, a model's) into `dest` (created), each written beside
/// under a temporary name and renamed into place, so a reader never sees half a file. A file
/// already there with the same size is kept: a version's files never change.
///
/// # Errors
/// A file missing from the store, the store, or the disk.
pub async fn copy_files(
    objects: &dyn Objects,
    files: &[String],
    dest: &Path,
) -> Result<(), StoreError> {
    let io = |e: std::io::Error| StoreError::Backend(e.into());
    tokio::fs::create_dir_all(dest).await.map_err(io)?;
    for path in files {
        let name = path.rsplit('/').next().unwrap_or(path);
        let target = dest.join(name);
        let bytes = objects
            .get(path)
            .await?
            .ok_or_else(|| StoreError::Invalid(format!("{path} is missing from the store")))?;
        if let Ok(meta) = tokio::fs::metadata(&target).await
            && meta.len() == bytes.len() as u64
        {
            continue;
        }
        let partial = dest.join(format!(".{name}.partial"));
        tokio::fs::write(&partial, &bytes).await.map_err(io)?;
        tokio::fs::rename(&partial, &target).await.map_err(io)?;
    }
    Ok(())
}
