//! Serving the versions training produced: the gateway as the training function's model
//! server, and `agentrl models sync`, which copies versions' adapters to the storage the
//! upstream's hosts read them from.

use std::path::PathBuf;

use agentrl_core::TenantId;
use agentrl_gateway::GatewayState;
use agentrl_training::TrainingRepo;
use agentrl_training::serving::{ModelServer, ServedVersion, adapters};
use anyhow::Context;

use crate::store_args::StoreArgs;
use async_trait::async_trait;

/// The gateway serving promoted versions from each tenant's upstream.
pub struct GatewayServer(pub GatewayState);

#[async_trait]
impl ModelServer for GatewayServer {
    async fn serve(&self, t: &TenantId, version: &ServedVersion) -> Result<(), String> {
        self.0
            .serve_version(t, &version.name, version.adapter.as_deref())
            .await
    }

    async fn retire(&self, t: &TenantId, name: &str) {
        self.0.retire_version(t, name).await;
    }
}

/// Arguments of `agentrl models sync`.
#[derive(clap::Args)]
pub struct SyncArgs {
    /// The directory the upstream's hosts mount as the tenants' `lora_dir`: each adapter goes
    /// to `DEST/{tenant}/{agent_id}-{version}/`.
    #[arg(long)]
    dest: PathBuf,
    /// The tenants whose versions to copy (repeat the flag for several).
    #[arg(long = "tenant", required = true)]
    tenants: Vec<String>,
    #[command(flatten)]
    stores: StoreArgs,
}

/// Copies every adapter version of the tenants, printing one line per version.
///
/// # Errors
/// An unknown data directory, a tenant id that is not one, a failing store or disk.
pub async fn sync(args: &SyncArgs) -> anyhow::Result<()> {
    agentrl_http::telemetry::init();
    let stores = args.stores.open()?;
    let repo = TrainingRepo::new(stores.table.clone());
    for tenant in &args.tenants {
        let t = TenantId::parse(tenant).map_err(|e| anyhow::anyhow!("--tenant {tenant}: {e}"))?;
        for version in adapters(&repo, &t).await? {
            let files = version.adapter.as_deref().unwrap_or_default();
            let dest = args.dest.join(t.as_str()).join(&version.name);
            agentrl_gateway::copy_files(stores.objects.as_ref(), files, &dest)
                .await
                .with_context(|| format!("copying {} of {tenant}", version.name))?;
            println!("{tenant}\t{}\t{}", version.name, dest.display());
        }
    }
    Ok(())
}
