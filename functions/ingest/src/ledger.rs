//! The ε each tenant has spent on differentially private rewards, kept in the table.
//!
//! A trajectory is charged once: its charge is recorded with it in one transaction, so a
//! redelivered trajectory finds its charge and gets the same noisy value (the noise is seeded
//! by the trajectory) without spending ε again.

use std::sync::Arc;

use agentrl_core::{
    TenantId,
    privacy::{DpConfig, PrivacyLedger},
};
use agentrl_store::{
    StoreError,
    keys::partition,
    ports::{Condition, Item, Key, Put, Table, Write, encode},
    retry::optimistic,
};
use serde::{Deserialize, Serialize};

/// What one trajectory's release was.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Charge {
    /// ε spent; 0 when the budget was exhausted and the reward suppressed.
    epsilon: f64,
}

fn ledger_key(t: &TenantId) -> Key {
    Key::new(partition(t, "privacy", "ledger"), "epsilon")
}

fn charge_key(t: &TenantId, trajectory_id: &str) -> Key {
    Key::new(partition(t, "privacy-charge", trajectory_id), "charge")
}

/// The tenant's ε spent so far.
pub(crate) async fn spent(table: &dyn Table, t: &TenantId) -> Result<f64, StoreError> {
    Ok(match table.get(&ledger_key(t)).await? {
        Some(item) => Item::decode::<PrivacyLedger>(item)?.0.spent,
        None => 0.0,
    })
}

/// Releases `reward` of `trajectory_id` under `dp`: `Some(noisy)` with the ε charged once per
/// trajectory, or `None` when the tenant's budget is exhausted (the reward is suppressed, and
/// stays suppressed on redelivery).
pub(crate) async fn release(
    table: &Arc<dyn Table>,
    t: &TenantId,
    trajectory_id: &str,
    reward: f64,
    dp: &DpConfig,
    seed: [u8; 32],
) -> Result<Option<f64>, StoreError> {
    let noisy = |charge: Charge| {
        (charge.epsilon > 0.0)
            .then(|| dp.noisy(reward, seed))
            .flatten()
    };
    // Another delivery of this trajectory, or another trajectory of the tenant, that got
    // there first makes the write fail: read again.
    optimistic(move || async move {
        if let Some(item) = table.get(&charge_key(t, trajectory_id)).await? {
            return Ok(noisy(Item::decode::<Charge>(item)?.0));
        }
        let (mut ledger, version) = match table.get(&ledger_key(t)).await? {
            Some(item) => {
                let (ledger, version) = Item::decode::<PrivacyLedger>(item)?;
                (ledger, Some(version))
            }
            None => (PrivacyLedger::default(), None),
        };
        let charge = Charge {
            epsilon: if ledger.charge(dp.epsilon, dp.budget).is_ok() {
                dp.epsilon
            } else {
                0.0
            },
        };
        let writes = vec![
            Write::Put(Put {
                key: charge_key(t, trajectory_id),
                doc: encode(&charge)?,
                expires_at: None,
                condition: Condition::Absent,
            }),
            Write::Put(Put {
                key: ledger_key(t),
                doc: encode(&ledger)?,
                expires_at: None,
                condition: Condition::at(version),
            }),
        ];
        table.transact(writes).await?;
        Ok(noisy(charge))
    })
    .await
}
