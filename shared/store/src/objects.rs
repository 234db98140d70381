//! The object-store adapter for both sets: `object_store` over S3 or over a local directory.
//!
//! `object_store` gives one implementation of streaming multipart uploads for S3 and
//! the local file system, and the Parquet writer of the trajectory pipeline writes
//! through it directly; see docs/storage.md for why it was chosen over aws-sdk-s3.

use std::{
    path::Path,
    sync::{Arc, OnceLock},
};

use anyhow::Context;
use async_trait::async_trait;
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::{
    ClientOptions, ObjectStore, ObjectStoreExt, PutPayload,
    aws::AmazonS3Builder,
    buffered::BufWriter,
    client::{
        HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse,
        HttpService, ReqwestConnector,
    },
    local::LocalFileSystem,
    path::Path as ObjectPath,
};
use tokio::io::AsyncWriteExt;

use crate::{
    StoreError,
    aws::AwsSettings,
    ports::{ObjectMeta, ObjectWriter, Objects},
};

/// [`Objects`] over any `object_store` backend.
#[derive(Clone)]
pub struct ObjectStoreObjects {
    inner: Arc<dyn ObjectStore>,
}

impl ObjectStoreObjects {
    /// Objects as files under `dir` (created if missing).
    ///
    /// # Errors
    /// When the directory cannot be created.
    pub fn local(dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let fs = LocalFileSystem::new_with_prefix(dir)?.with_automatic_cleanup(true);
        Ok(Self {
            inner: Arc::new(fs),
        })
    }

    /// Objects in an S3 bucket, reached as `settings` say (endpoint override with path-style
    /// URLs for emulators).
    ///
    /// # Errors
    /// When the builder rejects the settings.
    pub fn s3(bucket: &str, settings: &AwsSettings) -> anyhow::Result<Self> {
        let mut builder = AmazonS3Builder::from_env()
            .with_http_connector(DeferredConnector)
            .with_bucket_name(bucket)
            .with_region(&settings.region);
        if let Some(endpoint) = &settings.endpoint {
            builder = builder
                .with_endpoint(endpoint)
                .with_allow_http(endpoint.starts_with("http://"))
                .with_virtual_hosted_style_request(false);
        }
        if settings.dummy_credentials {
            builder = builder
                .with_access_key_id("test")
                .with_secret_access_key("test");
        }
        Ok(Self {
            inner: Arc::new(builder.build()?),
        })
    }

    /// The underlying store, for writers (Parquet) that speak `object_store` directly.
    pub fn inner(&self) -> Arc<dyn ObjectStore> {
        self.inner.clone()
    }
}

/// `object_store`'s own reqwest client, built on the first request instead of with the
/// store: building it loads the machine's root certificates, milliseconds of a function's
/// start-up that only a request reaching S3 needs (the same reason as
/// [`crate::aws::Deferred`]).
#[derive(Debug)]
struct DeferredConnector;

impl HttpConnector for DeferredConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        Ok(HttpClient::new(DeferredClient {
            options: options.clone(),
            client: OnceLock::new(),
        }))
    }
}

#[derive(Debug)]
struct DeferredClient {
    options: ClientOptions,
    /// The client, or why it could not be built (a TLS set-up failure: every request fails
    /// with it at once, as an error `object_store` does not retry).
    client: OnceLock<Result<HttpClient, String>>,
}

#[async_trait]
impl HttpService for DeferredClient {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let client = self.client.get_or_init(|| {
            ReqwestConnector::default()
                .connect(&self.options)
                .map_err(|e| e.to_string())
        });
        match client {
            Ok(client) => client.execute(request).await,
            Err(why) => Err(HttpError::new(
                HttpErrorKind::Unknown,
                std::io::Error::other(format!("building the S3 client: {why}")),
            )),
        }
    }
}

fn object_path(path: &str) -> Result<ObjectPath, StoreError> {
    let bad = path.is_empty()
        || path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..");
    if bad {
        return Err(StoreError::Invalid(format!("bad object path {path:?}")));
    }
    ObjectPath::parse(path).map_err(|e| StoreError::Invalid(e.to_string()))
}

fn backend(e: object_store::Error, what: &str) -> StoreError {
    StoreError::Backend(anyhow::Error::new(e).context(what.to_owned()))
}

#[async_trait]
impl Objects for ObjectStoreObjects {
    async fn put(&self, path: &str, bytes: Bytes) -> Result<(), StoreError> {
        let p = object_path(path)?;
        self.inner
            .put(&p, PutPayload::from(bytes))
            .await
            .map_err(|e| backend(e, "put object"))?;
        Ok(())
    }

    async fn get(&self, path: &str) -> Result<Option<Bytes>, StoreError> {
        let p = object_path(path)?;
        match self.inner.get(&p).await {
            Ok(r) => Ok(Some(
                r.bytes().await.map_err(|e| backend(e, "read object"))?,
            )),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(backend(e, "get object")),
        }
    }

    async fn delete(&self, path: &str) -> Result<(), StoreError> {
        let p = object_path(path)?;
        match self.inner.delete(&p).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(backend(e, "delete object")),
        }
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StoreError> {
        let prefix = prefix.trim_end_matches('/');
        let p = if prefix.is_empty() {
            None
        } else {
            Some(object_path(prefix)?)
        };
        let mut out: Vec<ObjectMeta> = self
            .inner
            .list(p.as_ref())
            .map_ok(|m| ObjectMeta {
                path: m.location.to_string(),
                size: m.size,
            })
            .try_collect()
            .await
            .map_err(|e| backend(e, "list objects"))?;
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    async fn writer(&self, path: &str) -> Result<Box<dyn ObjectWriter>, StoreError> {
        let p = object_path(path)?;
        Ok(Box::new(StreamingWriter {
            inner: BufWriter::new(self.inner.clone(), p),
        }))
    }
}

struct StreamingWriter {
    inner: BufWriter,
}

#[async_trait]
impl ObjectWriter for StreamingWriter {
    async fn write(&mut self, bytes: Bytes) -> Result<(), StoreError> {
        self.inner
            .put(bytes)
            .await
            .map_err(|e| backend(e, "upload part"))
    }

    async fn finish(mut self: Box<Self>) -> Result<(), StoreError> {
        self.inner
            .shutdown()
            .await
            .context("complete multipart upload")
            .map_err(StoreError::Backend)
    }
}
