//! One module per route, and the path check they share.

pub(crate) mod agent;
pub(crate) mod events;
pub(crate) mod reply;
pub(crate) mod settings;
pub(crate) mod update;
