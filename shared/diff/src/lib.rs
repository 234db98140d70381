//! Minimal-diff scoring of an agent's code change: how far the syntax trees moved (exact tree
//! edit distance in the common case), how much scaffolding was added, and whether the change
//! games the tests. Pure and synchronous: no I/O, no async.

pub mod lang;
pub mod parse;
pub mod tree;
