//! `agentrl serve`: the local stack on the embedded store (default) or on AWS (`--aws`), with
//! the built-in model server at `/models/v1` (see [`crate::model_server`]).

use std::{net::SocketAddr, path::PathBuf};

use agentrl_core::TenantId;
use agentrl_http::{Auth, Metrics, oidc::OidcVerifier, telemetry};
use agentrl_store::Stores;
use anyhow::{Context, bail};
use clap::Args;

use crate::stack;

/// Arguments of `serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Directory of the embedded store (SQLite database and objects).
    #[arg(long, default_value = "./agentrl-data")]
    data_dir: PathBuf,
    /// A tenant and its API key, as TENANT=KEY; repeat for more tenants.
    #[arg(long = "api-key", value_name = "TENANT=KEY", required = true)]
    api_keys: Vec<String>,
    /// Use the AWS adapters (DynamoDB, SQS, S3) instead of the embedded store; resources
    /// come from AGENTRL_TABLE, AGENTRL_QUEUE_URL, AGENTRL_DLQ_URL, AGENTRL_EVENTS_QUEUE_URL,
    /// AGENTRL_EVENTS_DLQ_URL, AGENTRL_BUCKET, AWS_REGION and optionally AGENTRL_AWS_ENDPOINT.
    #[arg(long, env = "AGENTRL_AWS")]
    aws: bool,
    /// Print CloudWatch EMF metric lines on stdout.
    #[arg(long)]
    emf: bool,
    /// Also accept bearer JWTs of this OIDC issuer (RS256, checked against the keys of its
    /// JWKS), as API Gateway's JWT authorizer does on AWS: the tenant is the `tenant_id` claim.
    #[arg(long, env = "AGENTRL_OIDC_ISSUER", requires = "oidc_audience")]
    oidc_issuer: Option<String>,
    /// The audience those JWTs must name (`aud`, or `client_id` without one).
    #[arg(long, env = "AGENTRL_OIDC_AUDIENCE", requires = "oidc_issuer")]
    oidc_audience: Option<String>,
}

fn parse_keys(pairs: &[String]) -> anyhow::Result<Vec<(TenantId, String)>> {
    pairs
        .iter()
        .map(|pair| {
            let (tenant, key) = pair
                .split_once('=')
                .with_context(|| format!("--api-key {pair:?} is not TENANT=KEY"))?;
            let tenant = TenantId::parse(tenant).with_context(|| format!("tenant {tenant:?}"))?;
            if key.len() < 16 {
                bail!("the API key of tenant {tenant} is shorter than 16 characters");
            }
            Ok((tenant, key.to_owned()))
        })
        .collect()
}

fn stores(args: &ServeArgs) -> anyhow::Result<Stores> {
    if args.aws {
        Stores::aws_from_env()
    } else {
        Stores::embedded(&args.data_dir)
    }
}

/// Training jobs: child processes of this binary (on the data directory's objects, or on the
/// bucket's under `--aws`), or AWS Batch under `--aws` when `AGENTRL_BATCH_GPU_CLASSES` is set.
fn launch(args: &ServeArgs) -> anyhow::Result<stack::Launch> {
    if !args.aws {
        return stack::Launch::embedded(&args.data_dir);
    }
    if std::env::var_os("AGENTRL_BATCH_GPU_CLASSES").is_some() {
        let batch = agentrl_training::launch::BatchLauncher::from_env()?;
        return Ok(stack::Launch::Remote(std::sync::Arc::new(batch)));
    }
    let bucket = agentrl_store::required_env("AGENTRL_BUCKET")?;
    stack::Launch::this_binary(
        agentrl_training::launch::Storage::Bucket(bucket),
        args.data_dir.join("training-logs"),
    )
}

/// Serves until SIGINT or SIGTERM, then drains in-flight requests and exits.
pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    telemetry::init();
    let mut auth = Auth::api_keys(parse_keys(&args.api_keys)?);
    if let (Some(issuer), Some(audience)) = (&args.oidc_issuer, &args.oidc_audience) {
        auth = auth.with_oidc(OidcVerifier::new(issuer, audience)?);
    }
    let metrics = if args.emf {
        Metrics::Emf {
            namespace: "agentrl".into(),
            service: "local".into(),
        }
    } else {
        Metrics::Off
    };
    let stores = stores(&args)?;
    let pseudonyms = if args.aws {
        agentrl_http::lambda::pseudonyms_from_env()?
    } else {
        crate::secret::local_pseudonyms(&args.data_dir)?
    };
    let launch = launch(&args)?;
    let running = stack::start(args.addr, stores, auth, metrics, pseudonyms, launch).await?;
    tracing::info!(addr = %running.addr, embedded = !args.aws, "agentrl listening");
    eprintln!("agentrl listening on http://{}", running.addr);
    shutdown_signal().await?;
    tracing::info!("shutting down");
    running.stop().await
}

async fn shutdown_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.context("waiting for SIGINT"),
        _ = term.recv() => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_keys_are_tenant_equals_key() {
        let keys = parse_keys(&["acme=0123456789abcdef".into()]).unwrap();
        assert_eq!(keys[0].0.as_str(), "acme");
        assert!(parse_keys(&["acme".into()]).is_err());
        assert!(parse_keys(&["acme=short".into()]).is_err());
        assert!(parse_keys(&["a#b=0123456789abcdef".into()]).is_err());
    }
}
