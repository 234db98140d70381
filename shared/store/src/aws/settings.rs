//! How the AWS clients are configured: region, optional endpoint override, credentials.

use aws_config::{BehaviorVersion, Region, SdkConfig};
use futures::future::{BoxFuture, FutureExt, Shared};

/// Where the AWS services are.
#[derive(Debug, Clone)]
pub struct AwsSettings {
    /// The region.
    pub region: String,
    /// An endpoint for every service (moto, for tests); `None` for AWS itself.
    pub endpoint: Option<String>,
    /// Use fixed dummy credentials instead of the default chain (emulators only).
    pub dummy_credentials: bool,
}

impl AwsSettings {
    /// Settings for an emulator at `endpoint` (127.0.0.1 only in tests).
    pub fn emulator(endpoint: &str) -> Self {
        Self {
            region: "us-east-1".to_owned(),
            endpoint: Some(endpoint.to_owned()),
            dummy_credentials: true,
        }
    }

    /// What every deployed binary reads: `AWS_REGION` and an optional `AGENTRL_AWS_ENDPOINT`
    /// (an emulator); credentials from the default chain.
    ///
    /// # Errors
    /// When `AWS_REGION` is unset.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            region: crate::required_env("AWS_REGION")?,
            endpoint: std::env::var("AGENTRL_AWS_ENDPOINT").ok(),
            dummy_credentials: false,
        })
    }

    /// The shared SDK configuration.
    pub async fn load(&self) -> SdkConfig {
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new(self.region.clone()));
        if let Some(endpoint) = &self.endpoint {
            loader = loader.endpoint_url(endpoint);
        }
        if self.dummy_credentials {
            loader = loader.credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                "test", "test", None, None, "emulator",
            ));
        }
        loader.load().await
    }

    /// The shared SDK configuration, loaded on first use: see [`Deferred`].
    pub fn deferred(&self) -> Deferred<SdkConfig> {
        let settings = self.clone();
        Deferred(async move { settings.load().await }.boxed().shared())
    }
}

/// A value built by its first user and shared by every clone. Loading the SDK configuration
/// and building a client's HTTPS connector (which parses every root certificate on the
/// machine) were most of a function's start-up; deferred, they are paid by the first request
/// that needs AWS, and never by an instance that does not.
#[derive(Clone)]
pub struct Deferred<T: Clone>(Shared<BoxFuture<'static, T>>);

impl<T: Clone + Send + Sync + 'static> Deferred<T> {
    /// A value there already is, in the deferred shape.
    pub fn ready(value: T) -> Self {
        Self(futures::future::ready(value).boxed().shared())
    }

    /// The value, built by the first caller; the others wait for it.
    pub async fn get(&self) -> T {
        self.0.clone().await
    }
}

impl Deferred<SdkConfig> {
    /// A client built by `build` from this configuration, once it is loaded.
    pub fn client<C: Clone + Send + Sync + 'static>(
        &self,
        build: fn(&SdkConfig) -> C,
    ) -> Deferred<C> {
        let config = self.clone();
        Deferred(async move { build(&config.get().await) }.boxed().shared())
    }
}
