//! Privacy before anything is written: PII and secret scrubbing, keyed pseudonyms for ids, and
//! optional Laplace noise on rewards with per-tenant ε accounting, and the Rényi-DP accountant
//! of federated rounds.

mod anonymize;
mod laplace;
mod pseudonym;
pub mod rdp;
mod scrub;

pub use anonymize::{Anonymized, anonymize};
pub use laplace::{BudgetExhausted, DpConfig, DpConfigError, PrivacyLedger, laplace_noise};
pub use pseudonym::{MIN_SECRET_BYTES, Pseudonymizer, TENANT, USER, WeakSecret};
pub use scrub::{PiiKind, Scrubbed, Scrubber};
