//! Where turn rows are written: deterministic object names in Hive-style partitions.

use agentrl_turns::TABLE_PREFIX;
use sha2::{Digest, Sha256};

/// The object holding the rows of `message_ids` for one tenant and date: named by a hash of
/// the sorted message ids, so a redelivered batch rewrites the same object instead of adding
/// a second copy.
pub fn object_path(tenant: &str, date: &str, message_ids: &[&str]) -> String {
    let mut ids = message_ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let mut hash = Sha256::new();
    for id in ids {
        hash.update(id.as_bytes());
        hash.update([0]);
    }
    let digest = hex::encode(&hash.finalize()[..16]);
    format!("{TABLE_PREFIX}tenant={tenant}/date={date}/part-{digest}.parquet")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_depend_on_the_set_of_message_ids_only() {
        let a = object_path("t", "2026-11-22", &["m2", "m1"]);
        assert_eq!(a, object_path("t", "2026-11-22", &["m1", "m2", "m1"]));
        assert_ne!(a, object_path("t", "2026-11-22", &["m1"]));
        assert!(a.starts_with("trajectories/tenant=t/date=2026-11-22/part-"));
        assert!(a.ends_with(".parquet"));
    }
}
