//! One module per operation.

pub(crate) mod score;
