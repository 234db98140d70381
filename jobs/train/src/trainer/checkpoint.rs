//! Resumable checkpoints: written atomically, the newest two kept, mirrored to S3.

use std::path::{Path, PathBuf};

use super::{State, Trainer};
use crate::error::{Result, TrainError};

/// The directory of a run's resumable checkpoints, inside its output.
const CHECKPOINTS: &str = "checkpoints";

impl Trainer {
    /// Writes a resumable checkpoint atomically (a temporary directory renamed into place;
    /// `state.json` inside it last) and keeps the two most recent.
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
            crate::model::save_safetensors(
                &self.model.state_dict(false)?,
                &tmp.join("model.safetensors"),
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
        while complete.len() > 2 {
            let _ = std::fs::remove_dir_all(complete.remove(0));
        }
        if let Some(mirror) = &self.mirror {
            mirror.upload(&self.out, &format!("{CHECKPOINTS}/{name}"))?;
            mirror.upload(&self.out, "metrics.jsonl")?;
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
    // Names are `<phase>-<sft steps>-<grpo steps>`: run order is phase (sft before grpo), then
    // the counters; alphabetical order would put grpo first.
    dirs.sort_by_key(|p| {
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let mut parts = name.split('-');
        let phase = u8::from(parts.next() == Some("grpo"));
        let sft: u64 = parts.next().and_then(|x| x.parse().ok()).unwrap_or(0);
        let grpo: u64 = parts.next().and_then(|x| x.parse().ok()).unwrap_or(0);
        (phase, sft, grpo)
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
