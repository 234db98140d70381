//! An object store: whole-object put/get, listing, and streaming multipart writes.

use async_trait::async_trait;
use bytes::Bytes;

use crate::StoreError;

/// What a listing returns per object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    /// The object's path (`/`-separated, no leading slash).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
}

/// A streaming write: parts are uploaded as they fill, the object appears on `finish`.
#[async_trait]
pub trait ObjectWriter: Send {
    /// Appends bytes.
    ///
    /// # Errors
    /// MUST return [`StoreError::Backend`] when an upload fails.
    async fn write(&mut self, bytes: Bytes) -> Result<(), StoreError>;

    /// Completes the object; until then nothing is visible under its path.
    ///
    /// # Errors
    /// MUST return [`StoreError::Backend`] when completion fails.
    async fn finish(self: Box<Self>) -> Result<(), StoreError>;
}

/// The object-store port.
#[async_trait]
pub trait Objects: Send + Sync + 'static {
    /// Writes a whole object, replacing any object at `path`.
    ///
    /// # Errors
    /// MUST return [`StoreError::Invalid`] for a path with empty or `..` segments.
    async fn put(&self, path: &str, bytes: Bytes) -> Result<(), StoreError>;

    /// Reads a whole object; `None` if there is none.
    ///
    /// # Errors
    /// MUST return [`StoreError::Backend`] only when the backend fails.
    async fn get(&self, path: &str) -> Result<Option<Bytes>, StoreError>;

    /// Lists every object under `prefix` (a folder path), sorted by path.
    ///
    /// # Errors
    /// MUST return [`StoreError::Backend`] only when the backend fails.
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StoreError>;

    /// Deletes the object at `path`; deleting one that is not there is not an error.
    ///
    /// # Errors
    /// As [`Objects::put`].
    async fn delete(&self, path: &str) -> Result<(), StoreError>;

    /// Opens a streaming writer for `path`.
    ///
    /// # Errors
    /// As [`Objects::put`].
    async fn writer(&self, path: &str) -> Result<Box<dyn ObjectWriter>, StoreError>;
}
