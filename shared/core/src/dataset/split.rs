//! The train/validation split, by conversation: every turn of a conversation lands on the
//! same side, so no conversation is in both.

use sha2::{Digest, Sha256};

/// A side of the split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Split {
    /// Training data.
    Train,
    /// Held out.
    Validation,
}

/// The side of `conversation_id`: a hash of (seed, id) mapped to [0, 1), so the split is
/// stable across builds and independent of the order rows arrive in.
pub fn split_of(conversation_id: &str, seed: u64, validation_fraction: f64) -> Split {
    let digest = Sha256::new()
        .chain_update(seed.to_le_bytes())
        .chain_update(conversation_id.as_bytes())
        .finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    // 53 bits: the mantissa of an f64, so every value maps to a distinct, exact fraction.
    let unit = (u64::from_le_bytes(first) >> 11) as f64 / (1u64 << 53) as f64;
    if unit < validation_fraction {
        Split::Validation
    } else {
        Split::Train
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_stable_and_near_the_fraction() {
        let validation = (0..10_000)
            .filter(|i| split_of(&format!("conv-{i}"), 7, 0.1) == Split::Validation)
            .count();
        assert!((850..1150).contains(&validation), "{validation}");
        assert_eq!(split_of("x", 1, 0.5), split_of("x", 1, 0.5));
        assert_eq!(split_of("x", 1, 0.0), Split::Train);
        let moved = (0..1000)
            .filter(|i| split_of(&i.to_string(), 1, 0.3) != split_of(&i.to_string(), 2, 0.3))
            .count();
        assert!(moved > 100, "another seed draws another split");
    }
}
