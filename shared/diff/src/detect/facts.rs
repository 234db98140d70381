//! What the detectors know of one parsed file: definitions (with their test status and body
//! shape), marks (suspicious constructs keyed by their compact text), assertion counts,
//! literals and identifier counts. Collected in one pass by `walk`.
//!
//! The facts depend on the content alone, never on the path, so the scorer can cache them
//! with the parsed file by content hash.

use std::collections::{BTreeSet, HashMap};

use tree_sitter::Tree;

use crate::lang::Lang;

use super::model::{FlagKind, ScaffoldKind};

/// What one parsed file contains that the detectors care about.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// Functions, methods, types and JS test cases, in source order.
    pub definitions: Vec<Definition>,
    /// Constructs the detectors report when added: skips, exits, catches, guards, pragmas, …
    pub marks: Vec<Mark>,
    /// Assertions outside any test function (module level, helpers).
    pub loose_assertions: u32,
    /// String contents and numbers, for looking up the literals the tests use.
    pub literals: BTreeSet<String>,
    /// The subset inside test code (a `#[cfg(test)]` module, a `describe` block, a test).
    pub test_literals: BTreeSet<String>,
    /// Occurrences of each identifier, and of strings shaped like one (dynamic references).
    pub identifiers: HashMap<String, u32>,
}

/// A function, method, class-like type, or JS test case (`it("title", …)`).
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// Function (JS test cases included) or type.
    pub kind: DefKind,
    /// The name as referenced; for a JS test case, its title.
    pub name: String,
    /// The name qualified by enclosing classes, modules, functions and `describe` titles.
    pub key: String,
    /// 1-based line where the definition starts.
    pub line: u32,
    /// Whether it is a test, and how that is known.
    pub test: TestKind,
    /// Inside test code: a test module, suite or function.
    pub in_test: bool,
    /// Called by a framework or through an interface rather than by name.
    pub exempt: bool,
    /// What a function's body amounts to; `Plain` for a type.
    pub shape: Shape,
    /// Hash of a function body's tokens (layout aside); 0 for a type.
    pub body: u64,
    /// Assertions in a test's body.
    pub assertions: u32,
}

/// What a [`Definition`] defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefKind {
    /// A function or method, or a JS test case.
    Function,
    /// A class-like type: class, struct, enum, interface, trait or the like.
    Type,
}

/// Whether a definition is a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestKind {
    /// Not a test.
    No,
    /// Collected by name (`def test_*`, methods of `class Test*`): a test only in a test file.
    ByName,
    /// Marked as a test wherever it is (`#[test]`, `@Test`, `it(…)`, `func TestX(t *testing.T)`).
    Marked,
}

/// What a function body amounts to, for the stub, wrapper and equality checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// Anything else: real code.
    Plain,
    /// Only a placeholder statement, given as compact text.
    Stub(String),
    /// Only a call (or the return of one), to the given callee.
    Forward(String),
    /// Only `return true`.
    ReturnsTrue,
}

/// A construct that a detector reports when the after side has more of it than the before
/// side, compared by `(signal, key)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// The flag or scaffolding kind it reports.
    pub signal: Signal,
    /// Compact source text (for special casing: the literal's value).
    pub key: String,
    /// What the construct is, for the detail line.
    pub what: &'static str,
    /// 1-based line of the construct.
    pub line: u32,
    /// Inside test code: a test module, suite or function.
    pub in_test: bool,
}

/// What a [`Mark`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signal {
    /// A reward-hacking flag of this kind.
    Flag(FlagKind),
    /// A scaffolding finding of this kind.
    Scaffold(ScaffoldKind),
}

/// Collects the facts of one parsed file. `_path` is not read: see the module docs.
pub fn facts(lang: Lang, _path: &str, syntax: &Tree, source: &str) -> Facts {
    super::walk::collect(lang, syntax, source)
}
