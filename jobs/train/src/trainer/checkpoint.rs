//! Resumable checkpoints: written atomically, the newest `keep_checkpoints` kept (locally and
//! on S3, older ones deleted once a newer one is complete), mirrored to S3.

use std::path::{Path, PathBuf};

use super::{State, Trainer};
use crate::config::KeepAfterFinish;
use crate::error::{Result, TrainError};

/// The directory of a run's resumable checkpoints, inside its output.
const CHECKPOINTS: &str = "checkpoints";

impl Trainer {
    /// Writes a resumable checkpoint atomically (a temporary directory renamed into place;
    /// `state.json` inside it last): the trained weights (fp32 masters, sharded at
    /// `max_shard_size`; under LoRA the adapter), the optimizer's state beside them, the
    /// run's position. Keeps the `keep_checkpoints` most recent.
    ///
    /// # Errors
    /// I/O.
    pub fn checkpoint(&mut self) -> Result<()> {
        let root = self.out.join(CHECKPOINTS);
        std::fs::create_dir_all(&root)?;
        let name = format!(
            "{}-{:06}-{:06}",
            if self.state.sft_done { "grpo" } else { "sft" },
            self.state.sft_step,
            self.state.grpo_step
        );
        let tmp = root.join(format!(".tmp-{name}"));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp)?;
        if !self.model.save_adapter(&tmp, "base")? {
            crate::model::save_sharded(
                &self.model.state_dict(false)?,
                &tmp,
                candle_core::DType::F32,
                self.config.max_shard_size.0,
            )?;
        }
        self.optimizer
            .save(self.model.vars(), &tmp.join("optimizer.safetensors"))?;
        let state =
            serde_json::to_vec_pretty(&self.state).map_err(|e| TrainError::Data(e.to_string()))?;
        std::fs::write(tmp.join("state.json"), state)?;
        let dir = root.join(&name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(&tmp, &dir)?;
        let mut complete = complete_checkpoints(&self.out);
        let mut pruned = Vec::new();
        while complete.len() > self.config.keep_checkpoints {
            let old = complete.remove(0);
            let _ = std::fs::remove_dir_all(&old);
            pruned.extend(old.file_name().and_then(|n| n.to_str()).map(String::from));
        }
        if let Some(mirror) = &self.mirror {
            mirror.upload(&self.out, &format!("{CHECKPOINTS}/{name}"))?;
            mirror.upload(&self.out, "metrics.jsonl")?;
            // Only once the new one is complete remotely.
            for old in pruned {
                mirror.delete_under(&format!("{CHECKPOINTS}/{old}"))?;
            }
        }
        Ok(())
    }

    /// What `keep_after_finish` says of a finished run's checkpoints: with `weights`, they go
    /// (locally and on S3): the run's outputs are its product, their optimizer state is not.
    ///
    /// # Errors
    /// I/O, a failing deletion.
    pub(super) fn prune_after_finish(&self) -> Result<()> {
        if self.config.keep_after_finish == KeepAfterFinish::All {
            return Ok(());
        }
        let _ = std::fs::remove_dir_all(self.out.join(CHECKPOINTS));
        if let Some(mirror) = &self.mirror {
            mirror.delete_under(CHECKPOINTS)?;
        }
        Ok(())
    }
}

fn complete_checkpoints(out: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out.join(CHECKPOINTS))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.'))
                && p.join("state.json").exists()
        })
        .collect();
    dirs.sort_by_key(|p| {
        crate::remote::checkpoint_order(p.file_name().and_then(|n| n.to_str()).unwrap_or_default())
    });
    dirs
}

pub(super) fn latest_checkpoint(out: &Path, identity: &str) -> Option<PathBuf> {
    complete_checkpoints(out).into_iter().rev().find(|dir| {
        std::fs::read_to_string(dir.join("state.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<State>(&t).ok())
            .is_some_and(|s| s.identity == identity)
    })
}
