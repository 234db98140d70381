//! The commands of the `agentrl` binary, as a library so tests and benchmarks can start the
//! local stack in-process.

pub mod dataset;
pub mod demo;
pub mod diff_score;
pub mod federation;
pub mod keys;
pub mod model_server;
pub mod models;
pub mod replay;
pub mod secret;
pub mod serve;
pub mod stack;
pub mod store_args;
