//! `s3://bucket/prefix` locations for `--model`, `--dataset` and `--out`: inputs are
//! downloaded to a local directory before the run; the output directory is mirrored to its
//! prefix after every checkpoint and at the end (checkpoint files before their `state.json`,
//! `run.json` last), and a restarted run downloads what is there first, so a Batch retry of a
//! Spot-interrupted job resumes from its last uploaded checkpoint.
//!
//! Credentials and region come from the environment as for every AWS SDK (`AWS_REGION`,
//! `AWS_ACCESS_KEY_ID`, …, the Batch job role); `AGENTRL_AWS_ENDPOINT` points at an emulator.

use std::path::{Path, PathBuf};

use agentrl_store::ObjectStoreObjects;
use agentrl_store::aws::AwsSettings;
use agentrl_store::ports::Objects;

use crate::error::{Result, TrainError};

/// A local directory or an S3 prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A directory.
    Local(PathBuf),
    /// `s3://bucket/prefix`.
    S3 {
        /// The bucket.
        bucket: String,
        /// The key prefix, without a trailing slash.
        prefix: String,
    },
}

impl Location {
    /// Parses a command-line location.
    ///
    /// # Errors
    /// An `s3://` URL without a bucket or prefix.
    pub fn parse(text: &str) -> Result<Self> {
        let Some(rest) = text.strip_prefix("s3://") else {
            return Ok(Self::Local(PathBuf::from(text)));
        };
        match rest.trim_end_matches('/').split_once('/') {
            Some((bucket, prefix)) if !bucket.is_empty() && !prefix.is_empty() => Ok(Self::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.to_owned(),
            }),
            _ => Err(TrainError::Data(format!(
                "{text}: expected s3://bucket/prefix"
            ))),
        }
    }
}

fn block_on<F: std::future::Future>(future: F) -> Result<F::Output> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => Ok(tokio::task::block_in_place(|| handle.block_on(future))),
        Err(_) => Ok(tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(future)),
    }
}

/// A connection to one bucket prefix.
#[derive(Clone)]
pub struct Prefix {
    objects: ObjectStoreObjects,
    prefix: String,
    url: String,
}

impl std::fmt::Debug for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)
    }
}

impl Prefix {
    /// Connects to `bucket` as the environment says.
    ///
    /// # Errors
    /// A client that cannot be configured.
    pub fn connect(bucket: &str, prefix: &str) -> Result<Self> {
        let settings = AwsSettings {
            region: std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".into()),
            endpoint: std::env::var("AGENTRL_AWS_ENDPOINT").ok(),
            dummy_credentials: false,
        };
        let objects = ObjectStoreObjects::s3(bucket, &settings)
            .map_err(|e| TrainError::Data(format!("s3://{bucket}: {e:#}")))?;
        Ok(Self {
            objects,
            prefix: prefix.to_owned(),
            url: format!("s3://{bucket}/{prefix}"),
        })
    }

    /// Copies every object under the prefix into `dir`; returns how many.
    ///
    /// # Errors
    /// A failing request.
    pub fn download(&self, dir: &Path) -> Result<usize> {
        self.download_where(dir, |_| true)
    }

    /// Copies the objects under the prefix whose relative path `keep` accepts into `dir`;
    /// returns how many.
    ///
    /// # Errors
    /// A failing request.
    pub fn download_where(&self, dir: &Path, keep: impl Fn(&str) -> bool) -> Result<usize> {
        let remote = |e: agentrl_store::StoreError| TrainError::Data(format!("{}: {e}", self.url));
        let listed = block_on(self.objects.list(&format!("{}/", self.prefix)))?.map_err(remote)?;
        let mut copied = 0;
        for meta in &listed {
            let relative = meta
                .path
                .strip_prefix(&format!("{}/", self.prefix))
                .unwrap_or(&meta.path);
            if relative.split('/').any(|s| s == ".." || s.is_empty()) || !keep(relative) {
                continue;
            }
            copied += 1;
            let bytes = block_on(self.objects.get(&meta.path))?
                .map_err(remote)?
                .ok_or_else(|| TrainError::Data(format!("{}: {} vanished", self.url, meta.path)))?;
            let target = dir.join(relative);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(target, bytes)?;
        }
        Ok(copied)
    }

    /// Uploads the files under `root/sub` (all of `root` when `sub` is empty), keyed by their
    /// path relative to `root`; each `state.json` after the files beside it, `run.json` last.
    ///
    /// # Errors
    /// A failing request.
    pub fn upload(&self, root: &Path, sub: &str) -> Result<()> {
        let mut files = Vec::new();
        walk(root, &root.join(sub), &mut files)?;
        let rank = |p: &str| match p.rsplit('/').next() {
            Some("run.json") => 2,
            Some("state.json") => 1,
            _ => 0,
        };
        files.sort_by_key(|p| (rank(p), p.clone()));
        for relative in files {
            let bytes = std::fs::read(root.join(&relative))?;
            block_on(
                self.objects
                    .put(&format!("{}/{relative}", self.prefix), bytes.into()),
            )?
            .map_err(|e| TrainError::Data(format!("{}: {e}", self.url)))?;
        }
        Ok(())
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
    if dir.is_file() {
        if let Ok(relative) = dir.strip_prefix(root) {
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
        return Ok(());
    }
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with('.') {
            continue; // temporary files and directories of an unfinished write
        }
        if path.is_dir() {
            walk(root, &path, out)?;
        } else if let Ok(relative) = path.strip_prefix(root) {
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

/// A location made local: the directory to use, and the prefix to mirror it to (outputs).
#[derive(Debug)]
pub struct Staged {
    /// The local directory.
    pub dir: PathBuf,
    /// Where it lives remotely.
    pub remote: Option<Prefix>,
    _temp: Option<tempfile::TempDir>,
}

/// Whether a model directory's file is a weight file (fetched after the run's plan).
#[must_use]
pub fn is_weights(relative: &str) -> bool {
    relative.ends_with(".safetensors")
}

/// A model directory for `location` without its weight files when remote: `config.json`, the
/// tokenizer's files and the index are there for the plan; [`Staged::remote`] fetches the
/// weights ([`Prefix::download_where`] with [`is_weights`]) once the run fits.
///
/// # Errors
/// A failing download, an empty prefix.
pub fn stage_model(location: &Location) -> Result<Staged> {
    match location {
        Location::Local(_) => stage(location, true),
        Location::S3 { bucket, prefix } => {
            let temp = tempfile::tempdir()?;
            let remote = Prefix::connect(bucket, prefix)?;
            if remote.download_where(temp.path(), |p| !is_weights(p))? == 0 {
                return Err(TrainError::Data(format!(
                    "s3://{bucket}/{prefix}: no objects under this prefix but weight files \
                     (config.json and the tokenizer's files are read first)"
                )));
            }
            Ok(Staged {
                dir: temp.path().to_owned(),
                remote: Some(remote),
                _temp: Some(temp),
            })
        }
    }
}

/// A local directory for `location`: itself, or a temporary copy of the prefix's objects.
///
/// # Errors
/// A failing download, an empty input prefix.
pub fn stage(location: &Location, input: bool) -> Result<Staged> {
    match location {
        Location::Local(dir) => Ok(Staged {
            dir: dir.clone(),
            remote: None,
            _temp: None,
        }),
        Location::S3 { bucket, prefix } => {
            let temp = tempfile::tempdir()?;
            let remote = Prefix::connect(bucket, prefix)?;
            let n = remote.download(temp.path())?;
            if input && n == 0 {
                return Err(TrainError::Data(format!(
                    "s3://{bucket}/{prefix}: no objects under this prefix"
                )));
            }
            Ok(Staged {
                dir: temp.path().to_owned(),
                remote: Some(remote),
                _temp: Some(temp),
            })
        }
    }
}
