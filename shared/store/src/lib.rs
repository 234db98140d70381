//! Storage ports of agentrl and their two real adapter sets.
//!
//! - [`ports`]: the traits the functions and jobs depend on (a key-value table with
//!   conditional writes and transactions, a queue with a dead-letter queue, an object store).
//! - [`embedded`]: SQLite and a local directory, the default when no AWS is configured.
//! - [`aws`]: DynamoDB, SQS and S3.
//!
//! One conformance suite (`tests/conformance`) runs against both adapter sets.
#![deny(missing_docs)]

pub mod aws;
pub mod claims;
pub mod clock;
pub mod embedded;
mod error;
pub mod federation;
pub mod keys;
pub mod listing;
mod objects;
pub mod open_list;
pub mod ports;
pub mod retry;
mod stores;
pub mod tenant_config;
mod validate;

pub use error::StoreError;
pub use objects::ObjectStoreObjects;
pub use stores::{AwsResources, MAX_RECEIVES, Stores, required_env};
