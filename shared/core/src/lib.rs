//! The pure domain of agentrl: no I/O, no async, no AWS or HTTP types.
//!
//! Everything here is deterministic given its inputs (time is passed in as
//! epoch milliseconds, randomness as a seed), so the functions and jobs that
//! call it stay thin and every rule is testable in isolation.
#![deny(missing_docs)]

pub mod attribution;
pub mod budget;
pub mod calendar;
pub mod contracts;
pub mod dataset;
pub mod envelope;
pub mod federation;
mod field_error;
pub mod gateway;
pub mod judge;
pub mod kpi;
pub mod kpi_alarm;
pub mod learning;
pub mod privacy;
pub mod schema_version;
pub mod tenant;
pub mod traces;
pub mod training;
pub mod trajectory;
pub mod verify;

pub use field_error::FieldError;
pub use schema_version::SchemaVersion;
pub use tenant::{TenantId, TenantIdError};
