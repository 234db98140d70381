//! One module per operation.

pub(crate) mod config;
pub(crate) mod score;
