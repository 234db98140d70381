//! One module per operation.

pub(crate) mod config;
pub(crate) mod post;
pub(crate) mod privacy;
