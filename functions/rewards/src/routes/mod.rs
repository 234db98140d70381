//! One module per route.

pub(crate) mod create;
pub(crate) mod evaluations;
pub(crate) mod examples;
pub(crate) mod gates;
pub(crate) mod read;
pub(crate) mod reward;
pub(crate) mod usage;
pub(crate) mod verify;
