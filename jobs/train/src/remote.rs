//! `s3://bucket/prefix` locations for `--model`, `--dataset` and `--out`: inputs are
//! downloaded to a local directory before the run; the output directory is mirrored to its
//! prefix after every checkpoint and at the end (checkpoint files before their `state.json`,
//! `run.json` last), and a restarted run downloads what is there first, so a Batch retry of a
//! Spot-interrupted job resumes from its last uploaded checkpoint.
//!
//! Credentials and region come from the environment as for every AWS SDK (`AWS_REGION`,
//! `AWS_ACCESS_KEY_ID`, …, the Batch job role); `AGENTRL_AWS_ENDPOINT` points at an emulator.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use agentrl_store::ObjectStoreObjects;
use agentrl_store::aws::AwsSettings;
use agentrl_store::ports::{ObjectMeta, Objects};
use bytes::Bytes;
use object_store::ObjectStoreExt;
use object_store::path::Path as ObjectPath;

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

    fn remote(&self, e: impl std::fmt::Display) -> TrainError {
        TrainError::Data(format!("{}: {e}", self.url))
    }

    /// The objects under the prefix with their paths relative to it (unsafe paths left out).
    fn listing(&self) -> Result<Vec<(String, ObjectMeta)>> {
        let listed = block_on(self.objects.list(&format!("{}/", self.prefix)))?
            .map_err(|e| self.remote(e))?;
        Ok(listed
            .into_iter()
            .filter_map(|meta| {
                let relative = meta
                    .path
                    .strip_prefix(&format!("{}/", self.prefix))
                    .unwrap_or(&meta.path)
                    .to_owned();
                let safe = !relative.split('/').any(|s| s == ".." || s.is_empty());
                safe.then_some((relative, meta))
            })
            .collect())
    }

    /// Copies the objects under the prefix whose relative path `keep` accepts into `dir`;
    /// returns how many. Each streams in ranged reads of [`PART`] bytes: memory stays bounded
    /// and no request outlives the client's timeout, whatever the object's size.
    ///
    /// # Errors
    /// A failing request.
    pub fn download_where(&self, dir: &Path, keep: impl Fn(&str) -> bool) -> Result<usize> {
        let mut copied = 0;
        for (relative, meta) in self.listing()? {
            if !keep(&relative) {
                continue;
            }
            let target = dir.join(&relative);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let mut file = std::io::BufWriter::new(std::fs::File::create(&target)?);
            let path = ObjectPath::from(meta.path.as_str());
            let store = self.objects.inner();
            let mut at = 0;
            while at < meta.size {
                let end = (at + PART).min(meta.size);
                let bytes = block_on(store.get_range(&path, at..end))?
                    .map_err(|e| self.remote(format!("{}: {e}", meta.path)))?;
                file.write_all(&bytes)?;
                at = end;
            }
            file.flush()?;
            copied += 1;
        }
        Ok(copied)
    }

    /// Uploads the files under `root/sub` (all of `root` when `sub` is empty), keyed by their
    /// path relative to `root`; each `state.json` after the files beside it, `run.json` last.
    /// Each file streams as a multipart upload in parts of [`PART`] bytes (S3 refuses a single
    /// PUT over 5 GB; a run's weights and optimizer state are larger).
    ///
    /// # Errors
    /// A failing request.
    pub fn upload(&self, root: &Path, sub: &str) -> Result<()> {
        self.upload_where(root, sub, |_| true)
    }

    /// A finished run's outputs: everything under `root` but its checkpoints (uploaded as they
    /// were written), `run.json` last.
    ///
    /// # Errors
    /// A failing request.
    pub fn upload_outputs(&self, root: &Path) -> Result<()> {
        self.upload_where(root, "", |p| !p.starts_with("checkpoints/"))
    }

    fn upload_where(&self, root: &Path, sub: &str, keep: impl Fn(&str) -> bool) -> Result<()> {
        let mut files = Vec::new();
        walk(root, &root.join(sub), &mut files)?;
        files.retain(|p| keep(p));
        let rank = |p: &str| match p.rsplit('/').next() {
            Some("run.json") => 2,
            Some("state.json") => 1,
            _ => 0,
        };
        files.sort_by_key(|p| (rank(p), p.clone()));
        for relative in files {
            let mut file = std::fs::File::open(root.join(&relative))?;
            let key = format!("{}/{relative}", self.prefix);
            let mut writer = block_on(self.objects.writer(&key))?.map_err(|e| self.remote(e))?;
            let mut buf = vec![0u8; PART as usize];
            loop {
                let n = read_full(&mut file, &mut buf)?;
                if n == 0 {
                    break;
                }
                block_on(writer.write(Bytes::copy_from_slice(&buf[..n])))?
                    .map_err(|e| self.remote(e))?;
            }
            block_on(writer.finish())?.map_err(|e| self.remote(e))?;
        }
        Ok(())
    }

    /// Deletes every object under `sub` (a folder of the prefix).
    ///
    /// # Errors
    /// A failing request.
    pub fn delete_under(&self, sub: &str) -> Result<()> {
        let folder = format!("{}/", sub.trim_end_matches('/'));
        let store = self.objects.inner();
        for (relative, meta) in self.listing()? {
            if relative.starts_with(&folder) {
                block_on(store.delete(&ObjectPath::from(meta.path.as_str())))?
                    .map_err(|e| self.remote(format!("{}: {e}", meta.path)))?;
            }
        }
        Ok(())
    }

    /// A run's output for resuming it: everything but its checkpoints, and of those only the
    /// newest complete one (its `state.json`, uploaded last, is there). Returns how many
    /// objects came.
    ///
    /// # Errors
    /// A failing request.
    pub fn download_resumable(&self, dir: &Path) -> Result<usize> {
        let newest = self
            .listing()?
            .into_iter()
            .filter_map(|(relative, _)| {
                let name = relative
                    .strip_prefix("checkpoints/")?
                    .strip_suffix("/state.json")?
                    .to_owned();
                (!name.contains('/')).then_some(name)
            })
            .max_by_key(|name| checkpoint_order(name));
        self.download_where(dir, |p| match p.strip_prefix("checkpoints/") {
            None => true,
            Some(rest) => newest
                .as_deref()
                .is_some_and(|n| rest.strip_prefix(n).is_some_and(|r| r.starts_with('/'))),
        })
    }
}

/// Bytes per ranged read and per multipart part.
pub const PART: u64 = 16 << 20;

/// Reads until `buf` is full or the file ends; returns how many bytes came.
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = file.read(&mut buf[filled..])?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(filled)
}

/// The run order of a checkpoint's name, `<phase>-<sft steps>-<grpo steps>`: phase (SFT
/// before GRPO), then the counters (alphabetical order would put GRPO first).
#[must_use]
pub fn checkpoint_order(name: &str) -> (u8, u64, u64) {
    let mut parts = name.split('-');
    let phase = u8::from(parts.next() == Some("grpo"));
    let sft = parts.next().and_then(|x| x.parse().ok()).unwrap_or(0);
    let grpo = parts.next().and_then(|x| x.parse().ok()).unwrap_or(0);
    (phase, sft, grpo)
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
            let n = if input {
                remote.download(temp.path())?
            } else {
                remote.download_resumable(temp.path())?
            };
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
