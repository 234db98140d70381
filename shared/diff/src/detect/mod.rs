//! Reward-hacking flags and scaffolding findings, from per-file [`Facts`] compared across the
//! before and after snapshots. Only what the change added (or, for tests, removed) is
//! reported: constructs are compared as multisets keyed by their compact text, so code that
//! was already there, or that moved into a new file from a deleted one, is never reported.
//!
//! Heuristics worth knowing:
//! - Test code is a test path ([`is_test_path`]) or code inside a marked test, a JS
//!   `describe`/`it` block or a Rust `#[cfg(test)]` module. Python `test_*` functions are
//!   tests only in test files.
//! - Flags about tests (skips, trivially true assertions) count only in test code; exits,
//!   environment sniffing, always-true equality and special-cased literals only outside it;
//!   a swallowed exception anywhere.
//! - Special casing: a literal compared with `==`/`!=` in an `if` or ternary condition, or
//!   used as a `case`/`match` label, that some test also contains. Empty and one-character
//!   strings and the numbers 0, 1, -1 and 2 are too common to count.
//! - Definitions called by a framework or an interface are never unreferenced: entry points
//!   (`main`, constructors, dunders), decorated or annotated ones (bar inert decorators such
//!   as `@staticmethod` or `#[inline]`), methods of classes with a base or interface and of
//!   `impl Trait for`, object-literal members, and exported Go methods.
//! - Unchanged files are usually passed without facts; references to a name in them are
//!   counted as whole words of their text.

mod definitions;
mod facts;
mod marks;
mod model;
mod nodes;
mod paths;
mod run;
mod syntax;
mod testfiles;
mod text;
mod walk;

pub use facts::{DefKind, Definition, Facts, Mark, Shape, Signal, TestKind, facts};
pub use model::{
    FileChange, Finding, Findings, Flag, FlagKind, ScaffoldKind, Side, scaffolding_penalty,
};
pub use paths::is_test_path;
pub use run::detect;
pub(crate) use walk::Walk;
