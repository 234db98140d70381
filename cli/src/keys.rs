//! `agentrl keys`: the tenant API keys that authenticate agents where no JWT authorizer
//! stands in front (the gateway's function URL on AWS; `agentrl serve` takes them beside its
//! `--api-key`s). A key is printed once, at creation; only its SHA-256 is stored. Rotate by
//! creating a new key, moving the agents to it, then revoking the old one.

use agentrl_core::TenantId;
use agentrl_http::api_keys::ApiKeys;

use crate::store_args::StoreArgs;

/// The key commands.
#[derive(clap::Subcommand)]
pub enum KeysCommand {
    /// Create a key for a tenant and print it (the only time it is shown).
    Create {
        /// The tenant the key authenticates as.
        #[arg(long)]
        tenant: String,
        /// A label for the key (who or what uses it).
        #[arg(long, default_value = "")]
        name: String,
        #[command(flatten)]
        stores: StoreArgs,
    },
    /// List a tenant's keys (never the keys themselves).
    List {
        /// The tenant.
        #[arg(long)]
        tenant: String,
        #[command(flatten)]
        stores: StoreArgs,
    },
    /// Revoke a tenant's key; calls with it are refused within 30 s.
    Revoke {
        /// The tenant.
        #[arg(long)]
        tenant: String,
        /// The key's id, from `create` or `list`.
        #[arg(long)]
        key_id: String,
        #[command(flatten)]
        stores: StoreArgs,
    },
}

fn tenant(id: &str) -> anyhow::Result<TenantId> {
    TenantId::parse(id).map_err(|e| anyhow::anyhow!("--tenant {id}: {e}"))
}

/// Runs a key command, printing JSON.
///
/// # Errors
/// A bad tenant id, unusable stores, a failing table, or a key id the tenant does not have.
pub async fn run(command: KeysCommand) -> anyhow::Result<()> {
    let (KeysCommand::Create { stores, .. }
    | KeysCommand::List { stores, .. }
    | KeysCommand::Revoke { stores, .. }) = &command;
    let keys = ApiKeys::new(stores.open()?.table);
    let printed = match command {
        KeysCommand::Create {
            tenant: t, name, ..
        } => {
            let (record, key) = keys.create(&tenant(&t)?, &name).await?;
            serde_json::json!({"key": key, "record": record})
        }
        KeysCommand::List { tenant: t, .. } => {
            serde_json::to_value(keys.list(&tenant(&t)?).await?)?
        }
        KeysCommand::Revoke {
            tenant: t, key_id, ..
        } => {
            anyhow::ensure!(
                keys.revoke(&tenant(&t)?, &key_id).await?,
                "tenant {t} has no key {key_id}"
            );
            serde_json::json!({"revoked": key_id})
        }
    };
    println!("{}", serde_json::to_string_pretty(&printed)?);
    Ok(())
}
