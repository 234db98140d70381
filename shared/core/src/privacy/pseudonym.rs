//! Keyed pseudonyms: tenant and user ids are replaced by an HMAC under a per-deploy secret.
//!
//! `pseudonym(kind, id)` is the lowercase hex of the first 16 bytes of
//! HMAC-SHA256(secret, kind ‖ 0x00 ‖ id). The same id always maps to the same pseudonym (joins
//! across trajectories still work), `kind` keeps namespaces apart (a tenant and a user with the
//! same id get different pseudonyms), and without the secret an id cannot be confirmed by
//! hashing guesses. `kind` is a constant of the calling code and must not contain a NUL byte.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fmt;

/// Namespace of tenant ids.
pub const TENANT: &str = "tenant";
/// Namespace of end-user ids.
pub const USER: &str = "user";
/// Shortest secret accepted: 128 bits.
pub const MIN_SECRET_BYTES: usize = 16;

/// The secret is too short to resist guessing the ids behind pseudonyms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("pseudonymisation secret must be at least {MIN_SECRET_BYTES} bytes, got {len}")]
pub struct WeakSecret {
    /// The length that was given.
    pub len: usize,
}

/// Maps ids to keyed pseudonyms; holds the keyed MAC state, never prints it.
#[derive(Clone)]
pub struct Pseudonymizer {
    mac: Hmac<Sha256>,
}

impl fmt::Debug for Pseudonymizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Pseudonymizer { secret: <redacted> }")
    }
}

impl Pseudonymizer {
    /// Keys the pseudonymizer with the per-deploy secret.
    ///
    /// # Errors
    /// [`WeakSecret`] when the secret is shorter than [`MIN_SECRET_BYTES`]: an empty or short
    /// key would make pseudonyms of guessable ids (emails, sequential numbers) reversible.
    pub fn new(secret: &[u8]) -> Result<Self, WeakSecret> {
        if secret.len() < MIN_SECRET_BYTES {
            return Err(WeakSecret { len: secret.len() });
        }
        let mac =
            Hmac::<Sha256>::new_from_slice(secret).map_err(|_| WeakSecret { len: secret.len() })?;
        Ok(Self { mac })
    }

    /// The full HMAC-SHA256(secret, kind ‖ 0x00 ‖ id). Also a sound seed for
    /// [`super::laplace_noise`]: derived from the secret and, say, the trajectory id, a
    /// redelivered trajectory gets the same noise.
    pub fn keyed_digest(&self, kind: &str, id: &str) -> [u8; 32] {
        let mut mac = self.mac.clone();
        mac.update(kind.as_bytes());
        mac.update(&[0]);
        mac.update(id.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// 32 lowercase hex characters standing in for `id` within namespace `kind`.
    pub fn pseudonym(&self, kind: &str, id: &str) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let digest = self.keyed_digest(kind, id);
        let mut out = String::with_capacity(32);
        for b in &digest[..16] {
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef-deploy-secret";

    #[test]
    fn matches_reference_hmac() {
        // Reference: Python `hmac.new(SECRET, b"user\x00alice", sha256).hexdigest()[:32]`.
        let p = Pseudonymizer::new(SECRET).unwrap();
        assert_eq!(
            p.pseudonym(USER, "alice"),
            "1ef35ee0fb74bbe0df09fe17fc66d19c"
        );
        assert_eq!(
            p.pseudonym(TENANT, "alice"),
            "d633e744e3c23f4bdf41321ba217516a"
        );
    }

    #[test]
    fn stable_keyed_and_namespaced() {
        let p = Pseudonymizer::new(SECRET).unwrap();
        let q = Pseudonymizer::new(b"another-secret-of-enough-length").unwrap();
        assert_eq!(p.pseudonym(USER, "bob"), p.pseudonym(USER, "bob"));
        assert_ne!(p.pseudonym(USER, "bob"), q.pseudonym(USER, "bob"));
        assert_ne!(p.pseudonym(USER, "bob"), p.pseudonym(TENANT, "bob"));
        assert_ne!(p.pseudonym("ab", "c"), p.pseudonym("a", "bc"));
    }

    #[test]
    fn short_secrets_are_refused_and_debug_hides_the_secret() {
        assert_eq!(
            Pseudonymizer::new(b"short").unwrap_err(),
            WeakSecret { len: 5 }
        );
        let p = Pseudonymizer::new(SECRET).unwrap();
        let dbg = format!("{p:?}");
        assert!(!dbg.contains("deploy"), "{dbg}");
        assert!(dbg.contains("redacted"));
    }
}
