//! Judgements on one syntax node and its close neighbourhood: callees, statement lists, body
//! shapes, swallowed errors, null and type guards. Each reads a bounded piece of the tree
//! iteratively; the walker in `walk` decides where to ask.

use std::hash::{DefaultHasher, Hash, Hasher};

use tree_sitter::Node;

use crate::lang::Lang;

use super::facts::Shape;
use super::syntax::{self, Syntax, role};
use super::text::{SNIPPET, compact, contains_word, is_word_char, matches_any, text, unquote};

/// Keywords that end a guard's body early.
const EARLY_EXITS: &[&str] = &["return", "continue", "break", "pass"];

/// Exceptions (lowercase, matched inside longer names) that mark a placeholder body.
const PLACEHOLDER_EXCEPTIONS: &[&str] = &["notimplemented", "unsupportedoperation"];

/// Whole words in a thrown message that mark a placeholder body.
const PLACEHOLDER_MESSAGES: &[&str] = &[
    "not implemented",
    "not yet implemented",
    "todo",
    "unimplemented",
    "implement me",
];

/// Conditions with more parts than this are not read as a guard.
const CONDITION_PARTS: usize = 64;

/// Reads nodes of one source text in one language.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reader<'a> {
    pub syn: &'static Syntax,
    roles: &'static [u32],
    pub source: &'a str,
}

impl<'a> Reader<'a> {
    pub fn new(lang: Lang, source: &'a str) -> Self {
        Reader {
            syn: syntax::of(lang),
            roles: syntax::roles(lang),
            source,
        }
    }

    /// The [`role`] bits of a node's kind.
    pub fn roles(&self, node: Node<'_>) -> u32 {
        self.roles
            .get(usize::from(node.kind_id()))
            .copied()
            .unwrap_or_default()
    }

    pub fn is(&self, node: Node<'_>, role: u32) -> bool {
        self.roles(node) & role != 0
    }

    pub fn text(&self, node: Node<'_>) -> &'a str {
        text(node, self.source)
    }

    /// Compact text of a node no longer than [`SNIPPET`] bytes.
    pub fn short(&self, node: Node<'_>) -> Option<String> {
        let raw = self.text(node);
        (raw.len() <= SNIPPET).then(|| compact(raw))
    }

    pub fn named_children<'t>(&self, node: Node<'t>) -> Vec<Node<'t>> {
        let mut cursor = node.walk();
        node.named_children(&mut cursor)
            .filter(|n| !self.is(*n, role::COMMENT))
            .collect()
    }

    fn operators(&self, node: Node<'_>) -> Vec<&'static str> {
        let mut cursor = node.walk();
        node.children(&mut cursor)
            .filter(|n| !n.is_named())
            .map(|n| n.kind())
            .collect()
    }

    /// The value of a string or number literal (strings unquoted).
    pub fn literal(&self, node: Node<'_>) -> Option<&'a str> {
        let roles = self.roles(node);
        if roles & role::STRING != 0 {
            Some(unquote(self.text(node)))
        } else if roles & role::NUMBER != 0 {
            Some(self.text(node))
        } else {
            None
        }
    }

    /// What is called, in compact text: `sys.exit`, `expect(x).toBe`, `assert_eq` (macros
    /// without `!`), `Assertions.assertEquals` (Java: the receiver and the method name).
    pub fn callee(&self, call: Node<'_>) -> Option<String> {
        let (start, end) = match call
            .child_by_field_name("function")
            .or_else(|| call.child_by_field_name("macro"))
        {
            Some(f) => (f.start_byte(), f.end_byte()),
            None => (
                call.start_byte(),
                call.child_by_field_name("name")?.end_byte(),
            ),
        };
        let raw = self.source.get(start..end)?;
        (raw.len() <= SNIPPET).then(|| compact(raw))
    }

    /// The argument list of a call (a macro's token tree).
    pub fn arguments<'t>(&self, call: Node<'t>) -> Option<Node<'t>> {
        call.child_by_field_name("arguments").or_else(|| {
            let last = call.named_child(call.named_child_count().checked_sub(1)?)?;
            (last.kind() == "token_tree").then_some(last)
        })
    }

    /// Leaves of a node, with string literals kept whole; empty for nodes over [`SNIPPET`].
    pub fn leaves<'t>(&self, node: Node<'t>) -> Vec<Node<'t>> {
        let mut out = Vec::new();
        if node.byte_range().len() <= SNIPPET {
            preorder(node, |n| {
                let whole = self.is(n, role::STRING);
                if whole || n.child_count() == 0 {
                    out.push(n);
                }
                !whole
            });
        }
        out
    }

    /// A hash of the node's tokens: layout changes leave it alone, any token change (even
    /// inside a string or comment) changes it.
    pub fn token_hash(&self, node: Node<'_>) -> u64 {
        let mut hasher = DefaultHasher::new();
        preorder(node, |n| {
            if n.child_count() == 0 {
                self.text(n).hash(&mut hasher);
            }
            true
        });
        hasher.finish()
    }

    /// Words of a small node: leaf texts, string contents marked `true`.
    pub fn words(&self, node: Node<'_>) -> Vec<(&'a str, bool)> {
        self.leaves(node)
            .into_iter()
            .map(|n| {
                if self.is(n, role::STRING) {
                    (unquote(self.text(n)), true)
                } else {
                    (self.text(n), false)
                }
            })
            .collect()
    }

    /// An assertion subject that holds no name and is not a bare `false`: it can only pass.
    pub fn trivially_true(&self, subject: Node<'_>) -> bool {
        let leaves = self.leaves(subject);
        let named = leaves
            .iter()
            .any(|n| self.is(*n, role::IDENTIFIER) && Some(self.text(*n)) != self.syn.handle);
        let literal = leaves
            .iter()
            .any(|n| n.is_named() || matches!(n.kind(), "true" | "True"));
        let falsy = leaves
            .iter()
            .any(|n| matches!(self.text(*n), "false" | "False"));
        !leaves.is_empty() && literal && !named && !falsy
    }

    /// The statements of a body; an expression body is its own single statement. Comments
    /// and a leading docstring are left out.
    pub fn statements<'t>(&self, body: Node<'t>) -> Vec<Node<'t>> {
        if !self.is(body, role::BLOCK) {
            return vec![body];
        }
        let mut out = Vec::new();
        for child in self.named_children(body) {
            if self.is(child, role::BLOCK) {
                out.extend(self.named_children(child));
            } else {
                out.push(child);
            }
        }
        let docstring = out.first().is_some_and(|s| {
            s.kind() == "expression_statement"
                && s.named_child_count() == 1
                && s.named_child(0).is_some_and(|c| self.is(c, role::STRING))
        });
        if docstring {
            out.remove(0);
        }
        out
    }

    pub fn shape(&self, body: Node<'_>) -> Shape {
        let statements = self.statements(body);
        let [only] = statements.as_slice() else {
            return Shape::Plain;
        };
        let Some(text) = self.short(*only) else {
            return Shape::Plain;
        };
        let bare = text.trim_end_matches(';');
        if is_placeholder(bare) {
            return Shape::Stub(bare.to_owned());
        }
        let value = bare.strip_prefix("return ").unwrap_or(bare);
        if matches!(value, "true" | "True") {
            return Shape::ReturnsTrue;
        }
        let mut node = *only;
        for _ in 0..3 {
            if node.kind() == "macro_invocation" {
                break;
            }
            if self.is(node, role::CALL) {
                return self.callee(node).map_or(Shape::Plain, Shape::Forward);
            }
            match self.named_children(node).as_slice() {
                [child] => node = *child,
                _ => break,
            }
        }
        Shape::Plain
    }

    /// A statement that does nothing with an error: `pass`, `...`, `continue`, a bare
    /// `return`, or a return whose value (Go: whose last value) is null.
    fn inert(&self, statement: Node<'_>) -> bool {
        let Some(text) = self.short(statement) else {
            return false;
        };
        let text = text.trim_end_matches(';');
        if matches!(text, "pass" | "..." | "continue" | "return") {
            return true;
        }
        if !text.starts_with("return ") {
            return false;
        }
        let mut value = self.named_children(statement).pop();
        if let Some(list) = value.filter(|v| v.kind() == "expression_list") {
            value = self.named_children(list).pop();
        }
        value.is_some_and(|v| self.is(v, role::NULL))
    }

    fn body<'t>(&self, node: Node<'t>) -> Option<Node<'t>> {
        node.child_by_field_name("body")
            .or_else(|| self.named_children(node).pop())
    }

    /// Why a catch (or its per-language equivalent) discards what it caught, if it does.
    pub fn swallowed(&self, node: Node<'_>) -> Option<&'static str> {
        let inert_body = |body: Node<'_>| self.statements(body).iter().all(|s| self.inert(*s));
        match node.kind() {
            "except_clause" | "catch_clause" => {
                let caught = node.child_by_field_name("value").or_else(|| {
                    let mut cursor = node.walk();
                    let param = node
                        .named_children(&mut cursor)
                        .find(|c| c.kind() == "catch_formal_parameter")?;
                    let mut cursor = param.walk();
                    param
                        .named_children(&mut cursor)
                        .find(|c| c.kind() == "catch_type")
                });
                let broad = caught.is_none_or(|t| {
                    self.text(t)
                        .split(|c: char| !is_word_char(c))
                        .any(|w| self.syn.broad_exceptions.contains(&w))
                });
                (broad && inert_body(self.body(node)?))
                    .then_some("broad catch swallows the exception")
            }
            "match_arm" => {
                let pattern = self.short(node.child_by_field_name("pattern")?)?;
                let value = self.short(node.child_by_field_name("value")?)?;
                let discards = pattern == "Err(..)" || pattern.starts_with("Err(_");
                (discards && matches!(value.as_str(), "{}" | "()"))
                    .then_some("`Err(_)` arm discards the error")
            }
            "let_declaration" => {
                let pattern = node.child_by_field_name("pattern")?;
                let value = node.child_by_field_name("value")?;
                (self.text(pattern) == "_" && contains_word(self.text(value), "catch_unwind"))
                    .then_some("panic caught and discarded")
            }
            // Only Go lists these kinds among its catches.
            "if_statement" => {
                let condition = node.child_by_field_name("condition")?;
                let [checked, nil] = self.named_children(condition)[..] else {
                    return None;
                };
                let is_error_check = self.operators(condition) == ["!="]
                    && self.is(nil, role::NULL)
                    && error_named(self.text(checked));
                let statements = self.statements(node.child_by_field_name("consequence")?);
                // A bare `return` hands back named results, the error among them.
                let dropped = statements
                    .iter()
                    .all(|s| self.inert(*s) && self.text(*s) != "return");
                (is_error_check && dropped).then_some("error checked and dropped")
            }
            "expression_statement" => (self.short(node)?.trim_end_matches(';') == "recover()")
                .then_some("recover() result discarded"),
            _ => None,
        }
    }

    /// An `if` whose condition is a null or type check and whose body only leaves early.
    pub fn is_guard(&self, node: Node<'_>) -> bool {
        let (Some(condition), Some(consequence)) = (
            node.child_by_field_name("condition"),
            node.child_by_field_name("consequence"),
        ) else {
            return false;
        };
        let [only] = self.statements(consequence)[..] else {
            return false;
        };
        let first_word = self
            .text(only)
            .split(|c: char| !is_word_char(c))
            .next()
            .unwrap_or_default();
        EARLY_EXITS.contains(&first_word) && self.null_or_type_check(condition)
    }

    /// Every part of the condition tests for null, for a type, or (Python, JS) for falsiness
    /// of a bare name; value comparisons (`n == 0`, `i >= len`) make it a real check.
    fn null_or_type_check(&self, condition: Node<'_>) -> bool {
        let mut work = vec![condition];
        let mut parts = 0;
        while let Some(node) = work.pop() {
            parts += 1;
            if parts > CONDITION_PARTS {
                return false;
            }
            let kind = node.kind();
            let operators = self.operators(node);
            let has = |ops: &[&str]| operators.iter().any(|o| ops.contains(o));
            let operands = self.named_children(node);
            if kind == "parenthesized_expression" || has(&["&&", "||", "and", "or"]) {
                work.extend(operands);
            } else if kind == "not_operator" || (kind == "unary_expression" && has(&["!"])) {
                let Some(operand) = operands.last() else {
                    return false;
                };
                if !(self.syn.truthiness_guards && operand.kind() == "identifier") {
                    work.push(*operand);
                }
            } else if kind == "instanceof_expression" || has(&["instanceof"]) {
                continue;
            } else if self.is(node, role::COMPARISON)
                && has(&["==", "!=", "===", "!==", "is", "is not"])
            {
                let null = operands.iter().any(|o| self.is(*o, role::NULL));
                let error = operands.iter().any(|o| error_named(self.text(*o)));
                let typeof_ = operands
                    .iter()
                    .any(|o| self.operators(*o).contains(&"typeof"));
                if !(typeof_ || (null && !error)) {
                    return false;
                }
            } else if self.is(node, role::CALL) {
                if !self
                    .callee(node)
                    .is_some_and(|c| matches_any(self.syn.guard_calls, &c))
                {
                    return false;
                }
            } else {
                return false;
            }
        }
        true
    }

    /// Decorators, attributes and annotations of a definition, as compact text without `@`,
    /// `#[`, `#![` and `]`: those on the node itself (Java modifiers) and those just before it
    /// among its siblings (`preceding`: Rust attributes, TS class members, and the children of
    /// Python's `decorated_definition` and TS's `export_statement`).
    pub fn decorators(&self, node: Node<'_>, preceding: &[Node<'_>]) -> Vec<String> {
        let mut found = preceding.to_vec();
        for child in self.named_children(node) {
            if child.kind() == "modifiers" {
                found.extend(
                    self.named_children(child)
                        .into_iter()
                        .filter(|n| self.is(*n, role::DECORATOR)),
                );
            } else if self.is(child, role::DECORATOR) {
                found.push(child);
            }
        }
        found
            .into_iter()
            .map(|d| decorator_text(self.text(d)))
            .collect()
    }
}

/// Visits `node` and its descendants in preorder, iteratively; `visit` says whether to go
/// into the children of the node it was given.
pub(crate) fn preorder<'t>(node: Node<'t>, mut visit: impl FnMut(Node<'t>) -> bool) {
    let mut cursor = node.walk();
    'walk: loop {
        if visit(cursor.node()) && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
}

/// `@pytest.mark.skip(reason="x")` → `pytest.mark.skip(reason="x")`; `#[ignore]` → `ignore`.
pub(crate) fn decorator_text(raw: &str) -> String {
    let text = compact(raw);
    let text = text
        .trim_start_matches('@')
        .trim_start_matches("#!")
        .trim_start_matches('#');
    let text = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    text.to_owned()
}

/// The name part of a decorator text: before its arguments or `= value`.
pub(crate) fn decorator_name(text: &str) -> &str {
    text.split(['(', '=']).next().unwrap_or(text)
}

/// Go names its errors `err`, `parseErr`, `werr`: a nil check on one of those is error
/// handling, not a null guard.
fn error_named(name: &str) -> bool {
    name.to_ascii_lowercase().ends_with("err")
}

fn starts_with_word(s: &str, word: &str) -> bool {
    s.strip_prefix(word)
        .is_some_and(|rest| !rest.starts_with(is_word_char))
}

/// A body that only stands in for code: `pass`, `...`, `todo!()`, or raising or panicking
/// with a not-implemented message or exception.
fn is_placeholder(statement: &str) -> bool {
    if matches!(statement, "pass" | "...")
        || ["todo!", "unimplemented!"]
            .iter()
            .any(|m| statement.starts_with(m))
    {
        return true;
    }
    let raises = ["raise", "throw", "panic"]
        .iter()
        .any(|k| starts_with_word(statement, k));
    let lower = statement.to_lowercase();
    raises
        && (PLACEHOLDER_EXCEPTIONS.iter().any(|e| lower.contains(e))
            || PLACEHOLDER_MESSAGES
                .iter()
                .any(|m| contains_word(&lower, m)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_need_a_raise_and_a_placeholder_message() {
        assert!(is_placeholder("raise NotImplementedError"));
        assert!(is_placeholder("throw new Error(\"not implemented\")"));
        assert!(is_placeholder("panic!(\"TODO: parse\")"));
        assert!(is_placeholder("todo!()"));
        assert!(is_placeholder("throw new UnsupportedOperationException()"));
        assert!(!is_placeholder(
            "throw new Error(\"todos must not be empty\")"
        ));
        assert!(!is_placeholder("log(\"not implemented\")"));
        assert!(!is_placeholder("raise ValueError(x)"));
    }

    #[test]
    fn decorator_text_drops_the_sigils() {
        assert_eq!(
            decorator_text("@pytest.mark.skip(reason=\"x\")"),
            "pytest.mark.skip(reason=\"x\")"
        );
        assert_eq!(decorator_text("#[tokio::test]"), "tokio::test");
        assert_eq!(decorator_text("#![allow(dead_code)]"), "allow(dead_code)");
        assert_eq!(decorator_name("ignore=\"slow\""), "ignore");
        assert_eq!(decorator_name("cfg(test)"), "cfg");
    }
}
