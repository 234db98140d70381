//! The run's final artifacts (weights or adapter, tokenizer, plots) and `run.json`.

use std::path::Path;

use agentrl_core::training::{ModelSummary, RunOutcome, RunReport, SftCounts};
use sha2::{Digest, Sha256};

use super::Trainer;
use crate::error::{Result, TrainError};

impl Trainer {
    /// Writes the final artifacts and `run.json` (last, marking the run finished): the common
    /// part of the report from the run itself, `sft` and `outcome` from the caller.
    ///
    /// # Errors
    /// I/O.
    pub fn finish(&mut self, sft: SftCounts, outcome: RunOutcome) -> Result<RunReport> {
        let out = self.out.clone();
        let staging = out.join(".tmp-final");
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging)?;
        let lora = self
            .model
            .save_adapter(&staging, &self.identity.base_model_sha256)?;
        if lora {
            if self.config.merge_lora {
                self.model
                    .save_hf(&staging.join("merged"), self.config.max_shard_size.0)?;
                self.tok.save(&staging.join("merged"))?;
            }
        } else {
            self.model.save_hf(&staging, self.config.max_shard_size.0)?;
        }
        self.tok.save(&staging)?;
        // An earlier attempt's weight files would sit beside a differently sharded set.
        crate::model::remove_weight_files(&out)?;
        for entry in std::fs::read_dir(&staging)? {
            let entry = entry?;
            let target = out.join(entry.file_name());
            if target.is_dir() {
                std::fs::remove_dir_all(&target)?;
            }
            std::fs::rename(entry.path(), target)?;
        }
        std::fs::remove_dir(&staging)?;
        self.metrics.plot(&out.join("plots"))?;
        let last = self
            .metrics
            .rows()
            .iter()
            .rev()
            .find(|m| m.eval_success.is_none())
            .cloned();
        let config = &self.model.config;
        let run = RunReport {
            base_model_sha256: self.identity.base_model_sha256.clone(),
            dataset_content_hash: self.identity.data_sha256.clone(),
            tokenizer_sha256: self.tok.sha256.clone(),
            config: serde_json::to_value(&self.config)
                .map_err(|e| TrainError::Data(e.to_string()))?,
            model: ModelSummary {
                architectures: vec![config.family.architecture().to_owned()],
                hidden_size: config.hidden_size,
                num_hidden_layers: config.num_hidden_layers,
                vocab_size: config.vocab_size,
                trainable_parameters: self.model.trainable_parameters(),
                lora,
            },
            sft_steps: self.state.sft_step,
            grpo_steps: self.state.grpo_step,
            sft,
            final_metrics: last,
            wall_time_s: self.elapsed(),
            peak_rss_mb: crate::run::peak_rss_mb(),
            device: format!("{:?}", self.model.device()),
            trainer_version: env!("CARGO_PKG_VERSION").to_owned(),
            outcome,
        };
        let bytes = serde_json::to_vec_pretty(&run).map_err(|e| TrainError::Data(e.to_string()))?;
        let tmp = out.join(".run.json.tmp");
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(tmp, out.join("run.json"))?;
        if let Some(mirror) = &self.mirror {
            mirror.upload_outputs(&out)?;
        }
        self.prune_after_finish()?;
        Ok(run)
    }
}

/// sha256 over a model directory's config and weight files (the base model's identity).
///
/// # Errors
/// Unreadable files.
pub fn hash_model_dir(dir: &Path) -> Result<String> {
    let mut files = vec![dir.join("config.json")];
    files.extend(crate::model::weight_files(dir)?);
    let files: Vec<&Path> = files.iter().map(std::path::PathBuf::as_path).collect();
    hash_files(&files)
}

/// sha256 of files' contents, in order.
///
/// # Errors
/// Unreadable files.
pub fn hash_files(files: &[&Path]) -> Result<String> {
    let mut h = Sha256::new();
    for f in files {
        // Streamed: weight files run to tens of GB.
        let mut file = std::fs::File::open(f).map_err(|e| TrainError::file(f, e))?;
        let mut digest = Sha256::new();
        std::io::copy(&mut file, &mut digest).map_err(|e| TrainError::file(f, e))?;
        h.update(digest.finalize());
    }
    Ok(hex::encode(h.finalize()))
}
