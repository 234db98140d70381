//! What federated rounds keep per tenant, read by more than one function: the opt-in's name
//! among the tenant configurations, and the ledger of privacy spent on rounds (written by the
//! round that charges it, shown by `GET /v1/privacy/budget` beside the reward-noise ledger).

use agentrl_core::TenantId;
use serde::{Deserialize, Serialize};

use crate::{
    StoreError,
    keys::partition,
    ports::{Condition, Item, Key, Put, Table, encode},
    retry::optimistic,
};

/// The opt-in's name among a tenant's configuration documents (`/v1/config/federation`).
pub const OPT_IN: &str = "federation";

/// Round ids a ledger remembers as charged: a redelivered charge of one of them is a no-op.
const REMEMBERED: usize = 256;

/// A tenant's privacy spent on federated rounds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FederationSpend {
    /// Σ ρ = Σ 1/(2zᵣ²) over the rounds it took part in: its RDP curve is α·ρ.
    pub rho: f64,
    /// Rounds taken part in.
    pub rounds: u64,
    /// The newest rounds charged, so that charging one again changes nothing.
    #[serde(default)]
    pub charged: Vec<String>,
}

fn key(t: &TenantId) -> Key {
    Key::new(partition(t, "federation", "ledger"), "current")
}

/// The tenant's spend (nothing spent when it never took part).
///
/// # Errors
/// The table fails.
pub async fn spent(table: &dyn Table, t: &TenantId) -> Result<FederationSpend, StoreError> {
    Ok(match table.get(&key(t)).await? {
        Some(item) => Item::decode::<FederationSpend>(item)?.0,
        None => FederationSpend::default(),
    })
}

/// Adds round `round_id`'s `rho` to the tenant's ledger once, however often it is called.
///
/// # Errors
/// The table fails, or keeps changing under the write (the last condition failure).
pub async fn charge(
    table: &dyn Table,
    t: &TenantId,
    round_id: &str,
    rho: f64,
) -> Result<FederationSpend, StoreError> {
    let attempt = || async {
        let (mut spend, at) = match table.get(&key(t)).await? {
            Some(item) => {
                let (s, v) = Item::decode::<FederationSpend>(item)?;
                (s, Some(v))
            }
            None => (FederationSpend::default(), None),
        };
        if spend.charged.iter().any(|r| r == round_id) {
            return Ok(spend);
        }
        spend.rho += rho;
        spend.rounds += 1;
        spend.charged.push(round_id.to_owned());
        if spend.charged.len() > REMEMBERED {
            spend.charged.remove(0);
        }
        let put = Put {
            key: key(t),
            doc: encode(&spend)?,
            expires_at: None,
            condition: Condition::at(at),
        };
        table.put(put).await?;
        Ok(spend)
    };
    // A lost race is a condition failure, which `optimistic` retries.
    optimistic(attempt).await
}
