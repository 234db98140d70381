//! One module per operation.

pub(crate) mod post;
pub(crate) mod privacy;
