//! The models the built-in server holds: loaded on first use from the object store (copied to
//! a local directory, then read as the trainer reads them), kept while used, the least
//! recently used one dropped when a new one would exceed the count.

use std::path::PathBuf;
use std::sync::Arc;

use agentrl_store::ports::Objects;
use agentrl_train::model::Model;
use agentrl_train::tokenizer::Tok;
use agentrl_training::serving::Weights;
use anyhow::Context;
use candle_core::DType;

/// A model ready to generate.
pub struct Served {
    /// The weights, cast and stacked for decoding.
    pub view: Model,
    /// Its tokenizer and chat template.
    pub tok: Tok,
}

/// The loaded models, most recently used last.
pub struct Engine {
    objects: Arc<dyn Objects>,
    dir: PathBuf,
    capacity: usize,
    loaded: Vec<(Weights, Arc<Served>)>,
}

/// The files of a model directory a server reads (not a run's plots, metrics or
/// checkpoints).
fn model_file(name: &str) -> bool {
    !name.contains('/')
        && [".json", ".jinja", ".safetensors"]
            .iter()
            .any(|ext| name.ends_with(ext))
}

impl Engine {
    /// Holds at most `capacity` models, their files copied under `dir`.
    pub fn new(objects: Arc<dyn Objects>, dir: PathBuf, capacity: usize) -> Self {
        Self {
            objects,
            dir,
            capacity: capacity.max(1),
            loaded: Vec::new(),
        }
    }

    /// The model of `weights`, loaded now if it is not held.
    ///
    /// # Errors
    /// Its files are missing or not a model this trainer loads.
    pub async fn get(&mut self, weights: &Weights) -> anyhow::Result<Arc<Served>> {
        if let Some(at) = self.loaded.iter().position(|(w, _)| w == weights) {
            let entry = self.loaded.remove(at);
            let served = entry.1.clone();
            self.loaded.push(entry);
            return Ok(served);
        }
        if self.loaded.len() >= self.capacity {
            self.loaded.remove(0);
        }
        let dir = self.dir.join(uuid::Uuid::new_v4().simple().to_string());
        let files: Vec<String> = self
            .objects
            .list(&weights.model)
            .await?
            .into_iter()
            .map(|m| m.path)
            .filter(|p| p.strip_prefix(&weights.model).is_some_and(model_file))
            .collect();
        agentrl_gateway::copy_files(self.objects.as_ref(), &files, &dir).await?;
        let adapter = match &weights.adapter {
            Some(files) => {
                let at = dir.join("adapter");
                agentrl_gateway::copy_files(self.objects.as_ref(), files, &at).await?;
                Some(at)
            }
            None => None,
        };
        let load_dir = dir.clone();
        let loaded = tokio::task::spawn_blocking(move || load(&load_dir, adapter.as_deref()))
            .await
            .context("the loading thread panicked")?;
        // The weights are in memory now (or failed to load): the copy has done its work.
        let _ = tokio::fs::remove_dir_all(&dir).await;
        let served = Arc::new(loaded?);
        self.loaded.push((weights.clone(), served.clone()));
        Ok(served)
    }
}

/// Reads a model directory (and an adapter onto it) as the trainer does, on the trainer's
/// device: fp32 on the CPU, bf16 on a GPU.
fn load(dir: &std::path::Path, adapter: Option<&std::path::Path>) -> anyhow::Result<Served> {
    let (_, tok) = agentrl_train::run::open_model(dir)?;
    let device = agentrl_train::run::device()?;
    let dtype = if device.is_cpu() {
        DType::F32
    } else {
        DType::BF16
    };
    let mut model = Model::load(dir, dtype, &device)?;
    model.set_compute_dtype(dtype);
    if let Some(adapter) = adapter {
        model.load_adapter(adapter)?;
    }
    Ok(Served {
        view: model.sampling_view()?,
        tok,
    })
}
