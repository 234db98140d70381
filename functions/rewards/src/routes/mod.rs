//! One module per route.

pub(crate) mod create;
pub(crate) mod examples;
pub(crate) mod read;
pub(crate) mod reward;
pub(crate) mod verify;
