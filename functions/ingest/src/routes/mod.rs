//! One module per operation.

pub(crate) mod list;
pub(crate) mod post;
pub(crate) mod privacy;
pub(crate) mod read;
