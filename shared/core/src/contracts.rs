//! The messages and files that cross process boundaries, one type for both sides of each:
//! the dataset job's `manifest.json` (read by the trainer and the training function), its
//! `training.dataset.ready` message (read by the training function), and the evaluation
//! queue's job (read by the evaluation worker).
//!
//! Each carries a version. Messages are queue envelopes ([`crate::envelope`]): writers stamp
//! [`ENVELOPE_VERSION`], readers refuse a newer one with `check_version` before the parse.
//! The manifest stamps [`MANIFEST_VERSION`] and readers refuse a newer one with
//! [`Manifest::check_version`]. Fields that older writers left out read as their defaults, so
//! what was stored before a field existed stays readable.
//!
//! | manifest version | shape |
//! |---|---|
//! | 0 (no `manifest_version`) | written before the manifest had a version; counts and agents as the writer knew them |
//! | 1 | `manifest_version: 1` |

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{
    dataset::{AgentStats, Rules},
    envelope::ENVELOPE_VERSION,
};

/// The type of the message announcing a built dataset.
pub const DATASET_READY: &str = "training.dataset.ready";

/// The manifest version writers stamp.
pub const MANIFEST_VERSION: u32 = 1;

/// `training.dataset.ready`: a dataset was built, for everyone on the event queue and for the
/// training function on its queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetReady {
    /// The envelope version; absent in messages written before it was stamped.
    #[serde(default)]
    pub version: u32,
    /// [`DATASET_READY`].
    #[serde(rename = "type")]
    pub kind: String,
    /// The tenant's pseudonymous partition.
    pub tenant: String,
    /// The dataset.
    pub dataset_id: String,
    /// Its manifest's object path.
    #[serde(default)]
    pub manifest: String,
    /// Its manifest's counts.
    #[serde(default)]
    pub counts: Counts,
}

impl DatasetReady {
    /// The announcement of `manifest`, written at `path`, at the current version.
    #[must_use]
    pub fn of(manifest: &Manifest, path: String) -> Self {
        Self {
            version: ENVELOPE_VERSION,
            kind: DATASET_READY.to_owned(),
            tenant: manifest.tenant.clone(),
            dataset_id: manifest.dataset_id.clone(),
            manifest: path,
            counts: manifest.counts.clone(),
        }
    }
}

/// The evaluation queue's message: who and which, nothing else (the request is stored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluationJob {
    /// The envelope version; absent in version-0 messages.
    #[serde(default)]
    pub version: u32,
    /// The tenant, as authenticated.
    pub tenant: String,
    /// The evaluation to run.
    pub evaluation_id: String,
}

impl EvaluationJob {
    /// The job of `evaluation_id` of `tenant`, at the current version.
    #[must_use]
    pub fn new(tenant: &str, evaluation_id: &str) -> Self {
        Self {
            version: ENVELOPE_VERSION,
            tenant: tenant.to_owned(),
            evaluation_id: evaluation_id.to_owned(),
        }
    }
}

/// `manifest.json`: what a dataset holds and how it was made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Manifest {
    /// The manifest's own version (see the module's table); 0 before it had one.
    pub manifest_version: u32,
    /// The turn-table schema version of the Parquet files.
    pub schema_version: u32,
    /// Date and a hash of the inputs and rules: the same inputs build the same id.
    pub dataset_id: String,
    /// The tenant partition (a keyed hash).
    pub tenant: String,
    /// When it was built (epoch ms).
    pub created_at_ms: i64,
    /// The rules used.
    pub rules: Rules,
    /// The counts.
    pub counts: Counts,
    /// Every file, by name (`train`, `validation`, `sft`, `preferences`, `groups`,
    /// `openai_chat`, `openai_chat_validation`, `few_shot`).
    pub files: BTreeMap<String, FileEntry>,
    /// SHA-256 over the files' hashes in name order: one value for the whole dataset.
    pub content_hash: String,
    /// The turn-table objects read.
    pub source_objects: Vec<String>,
    /// The agents considered: their counts in the window (from the episodes, or from the
    /// learning projection that requested the dataset) and whether they were taken.
    pub agents: Vec<AgentStats>,
}

impl Manifest {
    /// Whether a reader of this build takes the manifest's version.
    ///
    /// # Errors
    /// The version and what this reader takes.
    pub fn check_version(&self) -> Result<(), String> {
        if self.manifest_version > MANIFEST_VERSION {
            return Err(format!(
                "manifest version {} is not supported: this reader takes versions 0 to \
                 {MANIFEST_VERSION}",
                self.manifest_version
            ));
        }
        Ok(())
    }
}

/// One written file of a dataset.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FileEntry {
    /// Its object path.
    pub path: String,
    /// Its size.
    pub bytes: u64,
    /// SHA-256 of its bytes.
    pub sha256: String,
}

/// How much went where.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counts {
    /// Turn rows in `train.parquet`.
    pub train_rows: u64,
    /// Turn rows in `validation.parquet`.
    pub validation_rows: u64,
    /// Trajectories in train.
    pub train_trajectories: u64,
    /// Trajectories in validation.
    pub validation_trajectories: u64,
    /// Conversations in train (none of them is in validation).
    pub train_conversations: u64,
    /// Conversations in validation.
    pub validation_conversations: u64,
    /// Lines of `sft.jsonl`.
    pub sft_examples: u64,
    /// Lines of `openai-chat.jsonl` and `openai-chat-validation.jsonl`.
    pub openai_chat_examples: u64,
    /// Examples in `few-shot.json`.
    pub few_shot_examples: u64,
    /// Lines of `preferences.jsonl`.
    pub preference_pairs: u64,
    /// Lines of `groups.jsonl`.
    pub groups: u64,
    /// Groups whose rewards are all equal (no GRPO signal).
    pub zero_variance_groups: u64,
    /// Episodes of selected agents in the window.
    pub episodes_considered: u64,
    /// Of those, dropped as near duplicates.
    pub duplicates_removed: u64,
    /// Agents that met the rules.
    pub agents_selected: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::CountsSource;

    /// `manifest.json` as the dataset job's first version wrote it (commit ac765e2): no
    /// manifest version, no OpenAI or few-shot counts, agents without `counts_from`.
    const FIRST_MANIFEST: &str = r#"{
      "schema_version": 1,
      "dataset_id": "2026-11-22-0a1b2c3d4e5f",
      "tenant": "5f2b",
      "created_at_ms": 1795800000000,
      "rules": {"min_positive_feedback": 100, "min_high_quality_interactions": 50,
                "window_days": 30, "positive_threshold": 0.7, "high_quality_threshold": 0.8,
                "near_duplicate_jaccard": 0.9, "validation_fraction": 0.1, "split_seed": 7,
                "min_group_size": 2, "preference_margin": 0.2},
      "counts": {"train_rows": 40, "validation_rows": 4, "train_trajectories": 10,
                 "validation_trajectories": 1, "train_conversations": 9,
                 "validation_conversations": 1, "sft_examples": 10, "preference_pairs": 3,
                 "groups": 2, "zero_variance_groups": 0, "episodes_considered": 12,
                 "duplicates_removed": 1, "agents_selected": 1},
      "files": {"validation": {"path": "datasets/tenant=5f2b/2026-11-22-0a1b2c3d4e5f/validation.parquet",
                               "bytes": 2048, "sha256": "ab12"}},
      "content_hash": "cd34",
      "source_objects": ["turns/tenant=5f2b/date=2026-11-21/m-1.parquet"],
      "agents": [{"agent_id": "coder-7", "episodes": 12, "positive_feedback": 110,
                  "high_quality_interactions": 60, "selected": true}]
    }"#;

    #[test]
    fn a_manifest_of_the_first_dataset_job_still_reads() {
        let manifest: Manifest = serde_json::from_str(FIRST_MANIFEST).expect("readable");
        assert_eq!(manifest.check_version(), Ok(()));
        assert_eq!((manifest.manifest_version, manifest.schema_version), (0, 1));
        assert_eq!(manifest.counts.train_rows, 40);
        assert_eq!(manifest.counts.openai_chat_examples, 0);
        assert_eq!(manifest.files["validation"].sha256, "ab12");
        assert_eq!(manifest.rules.split_seed, 7);
        let agent = &manifest.agents[0];
        assert!(agent.selected);
        assert_eq!(agent.counts_from, CountsSource::Episodes);
        // What the training function's tests write: only what it reads.
        let minimal: Manifest = serde_json::from_str(
            r#"{"schema_version": 1, "agents": [{"agent_id": "coder-7", "selected": true}]}"#,
        )
        .expect("readable");
        assert_eq!(
            (
                minimal.agents[0].agent_id.as_str(),
                minimal.agents[0].selected
            ),
            ("coder-7", true)
        );
    }

    #[test]
    fn a_manifest_round_trips_and_a_newer_one_is_named() {
        let manifest = Manifest {
            manifest_version: MANIFEST_VERSION,
            schema_version: 4,
            dataset_id: "d".to_owned(),
            ..Manifest::default()
        };
        let text = serde_json::to_string(&manifest).unwrap();
        assert_eq!(serde_json::from_str::<Manifest>(&text).unwrap(), manifest);
        let newer = Manifest {
            manifest_version: MANIFEST_VERSION + 1,
            ..manifest
        };
        let e = newer.check_version().expect_err("newer");
        assert!(
            e.contains("manifest version 2") && e.contains("0 to 1"),
            "{e}"
        );
    }

    #[test]
    fn messages_written_before_their_version_still_read() {
        // `training.dataset.ready` as the dataset job wrote it with `json!`.
        let ready: DatasetReady = serde_json::from_str(
            r#"{"counts": {"train_rows": 3}, "dataset_id": "d-1",
                "manifest": "datasets/tenant=p/d-1/manifest.json", "tenant": "p",
                "type": "training.dataset.ready"}"#,
        )
        .unwrap();
        assert_eq!(
            (ready.version, ready.kind.as_str(), ready.tenant.as_str()),
            (0, DATASET_READY, "p")
        );
        assert_eq!(ready.counts.train_rows, 3);
        let job: EvaluationJob =
            serde_json::from_str(r#"{"tenant": "acme", "evaluation_id": "ev-1"}"#).unwrap();
        assert_eq!(job.version, 0);
        let current = serde_json::to_value(EvaluationJob::new("acme", "ev-1")).unwrap();
        assert_eq!(
            current,
            serde_json::json!({"version": ENVELOPE_VERSION, "tenant": "acme", "evaluation_id": "ev-1"})
        );
    }

    #[test]
    fn the_announcement_names_its_manifest() {
        let manifest = Manifest {
            tenant: "p".to_owned(),
            dataset_id: "d-1".to_owned(),
            ..Manifest::default()
        };
        let ready = DatasetReady::of(&manifest, "datasets/tenant=p/d-1/manifest.json".to_owned());
        let body = serde_json::to_value(&ready).unwrap();
        assert_eq!(body["type"], DATASET_READY);
        assert_eq!(body["version"], ENVELOPE_VERSION);
        assert_eq!(crate::envelope::check_version(&body.to_string()), Ok(()));
    }
}
