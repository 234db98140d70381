//! Minimal-diff scoring of an agent's code change: how far the syntax trees moved (exact tree
//! edit distance in the common case), how much scaffolding was added, and whether the change
//! games the tests. Pure and synchronous: no I/O, no async.

#![deny(missing_docs)]

pub mod cache;
pub mod detect;
pub mod lang;
pub mod lines;
pub mod parse;
pub mod score;
pub mod ted;
pub mod tree;
mod visit;
pub mod weights;

pub use lang::Lang;
pub use score::{InputError, Limits, Report, Request, Scorer, Snapshot, SnapshotBody};
pub use weights::{WEIGHTS_CONFIG, Weights};
