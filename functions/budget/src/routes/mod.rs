//! One module per route.

pub(crate) mod complete;
pub(crate) mod consume;
pub(crate) mod create;
pub(crate) mod read;
