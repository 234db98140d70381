//! The single pass that collects a file's [`Facts`]: a walk over every node, where a node's
//! roles (from the language table) decide what is recorded, and a stack of scopes carries
//! what encloses it (test code, a condition, a class, a named definition).

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::ops::ControlFlow;

use tree_sitter::{Node, Tree};

use crate::lang::Lang;
use crate::visit::{self, Visitor};

use super::facts::{DefKind, Definition, Facts, Mark, Shape, Signal, TestKind};
use super::model::{FlagKind, ScaffoldKind};
use super::nodes::{Reader, decorator_name, decorator_text};
use super::syntax::{DECLARATION_DECORATORS, ENTRY_POINTS, ExitArgs, Syntax, role};
use super::text::{
    SNIPPET, compact, contains_word, is_identifier, is_word_char, line, matches_any, unquote,
};

/// Collects the facts of a file in a walk of its own.
pub(crate) fn collect(lang: Lang, syntax: &Tree, source: &str) -> Facts {
    let mut walk = Walk::new(lang, source);
    visit::walk(syntax, &mut walk);
    walk.finish()
}

/// What an open node contributes to everything inside it.
#[derive(Debug, Default)]
struct Scope {
    id: usize,
    /// Part of the qualified key of definitions inside.
    name: Option<String>,
    test_code: bool,
    /// The index of a test definition that assertions inside count towards.
    test: Option<usize>,
    condition: bool,
    class: Option<Class>,
}

impl Scope {
    fn is_empty(&self) -> bool {
        self.name.is_none()
            && !self.test_code
            && self.test.is_none()
            && !self.condition
            && self.class.is_none()
    }
}

/// An open node, and the decorators seen so far among its children that no named node has
/// claimed yet. Tracking them here avoids `prev_sibling`, which is linear in tree-sitter.
#[derive(Debug)]
struct Frame<'a> {
    node: Node<'a>,
    decorators: Vec<Node<'a>>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Class {
    /// Has a base class, interface or trait: its methods may be called through it.
    inherits: bool,
    /// A Python `Protocol`: its `...` bodies are declarations.
    protocol: bool,
    /// A Python `Test*` class: its methods are tests by name.
    tests: bool,
}

/// The facts' reader of a syntax tree, for a [`visit::walk`] alone or beside other readers.
pub(crate) struct Walk<'a> {
    syn: &'static Syntax,
    read: Reader<'a>,
    facts: Facts,
    ancestors: Vec<Frame<'a>>,
    /// The decorators just before the node being entered, among its siblings.
    preceding: Vec<Node<'a>>,
    scopes: Vec<Scope>,
    test_depth: u32,
    conditions: u32,
    tests: Vec<usize>,
    /// (probe, line) pairs already reported, so nested expressions report a probe once.
    sniffed: HashSet<(usize, u32)>,
    /// Function bodies defined but not yet entered, with their definitions' indexes.
    bodies_ahead: Vec<(Node<'a>, usize)>,
    /// Function bodies being walked, innermost last, hashing their tokens as they pass:
    /// (body node id, definition index, hash so far).
    bodies_open: Vec<(usize, usize, DefaultHasher)>,
}

impl<'a> Visitor<'a> for Walk<'a> {
    fn enter(&mut self, node: Node<'a>, field: Option<&'static str>) -> ControlFlow<()> {
        self.enter_node(node, field);
        // After the node's own definitions: a test call can be its own body.
        while let Some(i) = self.bodies_ahead.iter().position(|b| b.0.id() == node.id()) {
            let (_, definition) = self.bodies_ahead.swap_remove(i);
            self.bodies_open
                .push((node.id(), definition, DefaultHasher::new()));
        }
        if node.child_count() == 0 {
            let text = self.read.text(node);
            for (_, _, hash) in &mut self.bodies_open {
                text.hash(hash);
            }
        }
        ControlFlow::Continue(())
    }

    fn leave(&mut self, node: Node<'a>) -> ControlFlow<()> {
        self.leave_node(node);
        while let Some((_, definition, hash)) =
            self.bodies_open.pop_if(|(id, _, _)| *id == node.id())
        {
            self.facts.definitions[definition].body = hash.finish();
        }
        ControlFlow::Continue(())
    }
}

impl<'a> Walk<'a> {
    pub(crate) fn new(lang: Lang, source: &'a str) -> Self {
        let read = Reader::new(lang, source);
        Walk {
            syn: read.syn,
            read,
            facts: Facts::default(),
            ancestors: Vec::new(),
            preceding: Vec::new(),
            scopes: Vec::new(),
            test_depth: 0,
            conditions: 0,
            tests: Vec::new(),
            sniffed: HashSet::new(),
            bodies_ahead: Vec::new(),
            bodies_open: Vec::new(),
        }
    }

    /// The facts, once the walk is over.
    pub(crate) fn finish(mut self) -> Facts {
        // A body the walk never entered (one outside its definition) is hashed on its own.
        for (body, definition) in std::mem::take(&mut self.bodies_ahead) {
            self.facts.definitions[definition].body = self.read.token_hash(body);
        }
        self.facts
    }

    fn enter_node(&mut self, node: Node<'a>, field: Option<&'static str>) {
        let roles = self.read.roles(node);
        let has = |role: u32| roles & role != 0;
        self.preceding.clear();
        if node.is_named()
            && !has(role::COMMENT)
            && let Some(frame) = self.ancestors.last_mut()
        {
            if has(role::DECORATOR) {
                frame.decorators.push(node);
            } else {
                self.preceding = std::mem::take(&mut frame.decorators);
            }
        }
        let mut scope = Scope {
            id: node.id(),
            ..Scope::default()
        };
        if has(role::IDENTIFIER) {
            self.count(self.read.text(node));
        } else if has(role::COMMENT) {
            self.comment(node);
        } else if let Some(value) = self.read.literal(node) {
            self.literal(value, has(role::STRING));
        }
        if has(role::DECORATOR) {
            self.decorator(node);
        }
        if field == Some("condition") && self.parent().is_some_and(|p| self.read.is(p, role::IF)) {
            scope.condition = true;
        }
        if (scope.condition || self.conditions > 0) && has(role::COMPARISON) {
            self.compared(node);
        }
        if has(role::CASE) {
            self.case(node);
        }
        if has(role::CALL) {
            self.call(node, &mut scope);
        }
        if has(role::ASSERT) {
            self.assertion(node, node.named_child(0));
        }
        if has(role::THROW) {
            self.throw(node);
        }
        if has(role::CATCH)
            && let Some(what) = self.read.swallowed(node)
        {
            self.caught(node, what);
        }
        if has(role::IF) && self.read.is_guard(node) {
            let condition = node
                .child_by_field_name("condition")
                .and_then(|c| self.read.short(c));
            let key = condition.unwrap_or_else(|| "…".to_owned());
            self.scaffold(
                ScaffoldKind::DefensiveGuard,
                key,
                "null or type guard with an early exit",
                node,
            );
        }
        if has(role::PROBED) {
            self.sniff(node);
        }
        if has(role::FUNCTION) {
            self.function(node, &mut scope);
        }
        if has(role::TYPE) {
            self.type_definition(node, &mut scope);
        }
        if has(role::MODULE) {
            self.module(node, &mut scope);
        }
        if !scope.is_empty() {
            self.test_depth += u32::from(scope.test_code);
            self.conditions += u32::from(scope.condition);
            self.tests.extend(scope.test);
            self.scopes.push(scope);
        }
        self.ancestors.push(Frame {
            node,
            decorators: Vec::new(),
        });
    }

    fn leave_node(&mut self, node: Node<'a>) {
        self.ancestors.pop();
        if self.scopes.last().is_some_and(|s| s.id == node.id())
            && let Some(scope) = self.scopes.pop()
        {
            self.test_depth -= u32::from(scope.test_code);
            self.conditions -= u32::from(scope.condition);
            if scope.test.is_some() {
                self.tests.pop();
            }
        }
    }

    fn parent(&self) -> Option<Node<'a>> {
        self.ancestors.last().map(|f| f.node)
    }

    fn mark(&mut self, signal: Signal, key: String, what: &'static str, node: Node<'_>) {
        let in_test = self.test_depth > 0;
        self.facts.marks.push(Mark {
            signal,
            key,
            what,
            line: line(node),
            in_test,
        });
    }

    fn flag(&mut self, kind: FlagKind, key: String, what: &'static str, node: Node<'_>) {
        self.mark(Signal::Flag(kind), key, what, node);
    }

    fn scaffold(&mut self, kind: ScaffoldKind, key: String, what: &'static str, node: Node<'_>) {
        self.mark(Signal::Scaffold(kind), key, what, node);
    }

    fn count(&mut self, name: &str) {
        match self.facts.identifiers.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                self.facts.identifiers.insert(name.to_owned(), 1);
            }
        }
    }

    fn literal(&mut self, value: &str, string: bool) {
        if value.len() > SNIPPET {
            return;
        }
        if string && is_identifier(value) {
            self.count(value);
        }
        if self.test_depth > 0 && !self.facts.test_literals.contains(value) {
            self.facts.test_literals.insert(value.to_owned());
        }
        if !self.facts.literals.contains(value) {
            self.facts.literals.insert(value.to_owned());
        }
    }

    fn comment(&mut self, node: Node<'a>) {
        let text = compact(self.read.text(node));
        if self.syn.pragma_comments.iter().any(|p| text.contains(p)) {
            self.scaffold(
                ScaffoldKind::SuppressionPragma,
                text,
                "suppression comment",
                node,
            );
        }
    }

    fn decorator(&mut self, node: Node<'a>) {
        let text = decorator_text(self.read.text(node));
        let name = decorator_name(&text);
        if matches_any(self.syn.skips, name) {
            self.flag(FlagKind::TestSkipped, text.clone(), "skip marker", node);
        }
        if self.syn.pragma_decorators.contains(&name) {
            self.scaffold(
                ScaffoldKind::SuppressionPragma,
                text,
                "suppression attribute",
                node,
            );
        }
    }

    /// Marks a literal compared in a condition, unless it is too common to single out a test
    /// input: empty or one-character strings, and the numbers 0, 1, -1 and 2.
    fn special_literal(&mut self, node: Node<'a>, what: &'static str) {
        let Some(value) = self.read.literal(node) else {
            return;
        };
        let common = if self.read.is(node, role::STRING) {
            value.trim().chars().count() < 2
        } else {
            value
                .parse::<f64>()
                .is_ok_and(|n| [0.0, 1.0, -1.0, 2.0].contains(&n))
        };
        if !common {
            self.flag(FlagKind::TestSpecialCasing, value.to_owned(), what, node);
        }
    }

    fn compared(&mut self, node: Node<'a>) {
        let mut cursor = node.walk();
        let equality = node
            .children(&mut cursor)
            .any(|c| !c.is_named() && matches!(c.kind(), "==" | "!=" | "===" | "!=="));
        if equality {
            for operand in self.read.named_children(node) {
                self.special_literal(operand, "comparison with a literal");
            }
        }
    }

    fn case(&mut self, node: Node<'a>) {
        // A Rust arm's `value` is its result, so its `pattern` is looked at first.
        let target = node
            .child_by_field_name("pattern")
            .or_else(|| node.child_by_field_name("value"))
            .unwrap_or(node);
        let labels = if self.read.literal(target).is_some() {
            vec![target]
        } else {
            self.read.named_children(target)
        };
        for label in labels {
            if self.read.is(label, role::CASE_PATTERN) {
                for literal in self.read.named_children(label) {
                    self.special_literal(literal, "case label with a literal");
                }
            } else {
                self.special_literal(label, "case label with a literal");
            }
        }
    }

    fn count_assertion(&mut self) {
        match self
            .tests
            .last()
            .and_then(|&i| self.facts.definitions.get_mut(i))
        {
            Some(test) => test.assertions += 1,
            None => self.facts.loose_assertions += 1,
        }
    }

    /// Counts an assertion and marks it when its subject can only pass.
    fn assertion(&mut self, node: Node<'a>, subject: Option<Node<'a>>) {
        self.count_assertion();
        if subject.is_some_and(|s| self.read.trivially_true(s))
            && let Some(key) = self.read.short(node)
        {
            self.flag(
                FlagKind::AssertionRemoved,
                key,
                "trivially true assertion",
                node,
            );
        }
    }

    fn call(&mut self, node: Node<'a>, scope: &mut Scope) {
        let Some(callee) = self.read.callee(node) else {
            return;
        };
        let syn = self.syn;
        let arguments = self.read.arguments(node);
        let args = arguments
            .map(|a| self.read.named_children(a))
            .unwrap_or_default();
        if matches_any(syn.failures, &callee) {
            self.count_assertion();
        } else if matches_any(syn.assertions, &callee) {
            self.assertion(node, arguments.filter(|_| !args.is_empty()));
        }
        // A decorator's call (`@pytest.mark.skip(…)`) is marked once, as the decorator.
        let decorated = self
            .parent()
            .is_some_and(|p| self.read.is(p, role::DECORATOR));
        if matches_any(syn.skips, &callee) && !decorated {
            self.flag(FlagKind::TestSkipped, callee.clone(), "skip call", node);
        }
        let success = match args.as_slice() {
            [] => true,
            [arg] => self.read.text(*arg) == "0",
            _ => false,
        };
        let exits = syn
            .exits
            .iter()
            .any(|(name, rule)| *name == callee && (matches!(rule, ExitArgs::Any) || success));
        if exits && let Some(key) = self.read.short(node) {
            self.flag(FlagKind::ForcedExit, key, "process exit", node);
        }
        let defaulted = syn.default_lookups.iter().any(|(pat, n)| {
            pat.matches(&callee)
                && args.len() == *n
                && args.iter().all(|a| a.kind() != "keyword_argument")
        });
        if defaulted && let Some(key) = self.read.short(node) {
            self.scaffold(
                ScaffoldKind::DefensiveGuard,
                key,
                "lookup with a default",
                node,
            );
        }
        if (scope.condition || self.conditions > 0)
            && callee
                .rsplit('.')
                .next()
                .is_some_and(|m| m.starts_with("equals"))
        {
            let receiver = node.child_by_field_name("object");
            for operand in args.iter().copied().chain(receiver) {
                self.special_literal(operand, "comparison with a literal");
            }
        }
        self.test_call(node, &callee, &args, scope);
    }

    /// `describe("suite", …)` names a scope of test code; `it("title", fn)` is a test.
    fn test_call(&mut self, node: Node<'a>, callee: &str, args: &[Node<'a>], scope: &mut Scope) {
        let root = callee.split('.').next().unwrap_or(callee);
        let group = self.syn.test_groups.contains(&root);
        if callee.contains('(') || !(group || self.syn.test_cases.contains(&root)) {
            return;
        }
        let Some(title) = args.first().filter(|a| self.read.is(**a, role::STRING)) else {
            return;
        };
        let title = unquote(self.read.text(*title)).to_owned();
        scope.test_code = true;
        if group {
            scope.name = Some(title);
            return;
        }
        let body = args.last().copied().unwrap_or(node);
        let definition = Definition {
            test: TestKind::Marked,
            ..self.definition(DefKind::Function, title, node)
        };
        scope.test = Some(self.define(definition, body));
    }

    fn throw(&mut self, node: Node<'a>) {
        let Some(raised) = self.read.named_children(node).into_iter().next() else {
            return;
        };
        let name = if self.read.is(raised, role::CALL) {
            self.read.callee(raised)
        } else {
            self.read.short(raised)
        };
        if let Some(name) = name.filter(|n| matches_any(self.syn.skips, n)) {
            self.flag(FlagKind::TestSkipped, name, "skip raised", node);
        }
    }

    fn caught(&mut self, node: Node<'a>, what: &'static str) {
        let key = self
            .read
            .short(node)
            .unwrap_or_else(|| compact(self.read.text(node).lines().next().unwrap_or_default()));
        self.flag(FlagKind::ExceptionSwallowed, key.clone(), what, node);
        self.scaffold(ScaffoldKind::BroadCatch, key, what, node);
    }

    /// Checks the outermost small expression for the language's probes: an inner one's words
    /// are all among its parent's.
    fn sniff(&mut self, node: Node<'a>) {
        let raw = self.read.text(node);
        let parent_checked = self
            .parent()
            .is_some_and(|p| self.read.is(p, role::PROBED) && p.byte_range().len() <= SNIPPET);
        if raw.len() > SNIPPET || parent_checked {
            return;
        }
        let mut words = None;
        for (index, probe) in self.syn.probes.iter().enumerate() {
            if !probe.all.iter().all(|p| p.may_match_in(raw)) {
                continue;
            }
            let words = words.get_or_insert_with(|| self.read.words(node));
            let found = probe
                .all
                .iter()
                .all(|p| words.iter().any(|(w, quoted)| p.matches_word(w, *quoted)));
            if found && self.sniffed.insert((index, line(node))) {
                self.flag(FlagKind::TestEnvSniffing, compact(raw), probe.what, node);
            }
        }
    }

    /// The innermost named scope, and its class facts when it is a class or impl block.
    fn owner(&self) -> Option<&Scope> {
        self.scopes.iter().rev().find(|s| s.name.is_some())
    }

    fn qualified(&self, name: &str) -> String {
        let mut key = String::new();
        for scope_name in self.scopes.iter().filter_map(|s| s.name.as_deref()) {
            key.push_str(scope_name);
            key.push_str("::");
        }
        key.push_str(name);
        key
    }

    /// A definition of `name` at `node` (at the line of its name, past any annotations), in
    /// the current scope, not (yet) a test.
    fn definition(&self, kind: DefKind, name: String, node: Node<'a>) -> Definition {
        Definition {
            kind,
            key: self.qualified(&name),
            name,
            line: line(node.child_by_field_name("name").unwrap_or(node)),
            test: TestKind::No,
            in_test: self.test_depth > 0,
            exempt: false,
            shape: Shape::Plain,
            body: 0,
            assertions: 0,
        }
    }

    /// Records a definition; a function's body tokens are hashed as the walk passes them
    /// (so edits to tests and test helpers can be seen) — the body is the definition's node
    /// or inside it, entered now or later.
    fn define(&mut self, definition: Definition, body: Node<'a>) -> usize {
        let function = definition.kind == DefKind::Function;
        self.facts.definitions.push(definition);
        let index = self.facts.definitions.len() - 1;
        if function {
            self.bodies_ahead.push((body, index));
        }
        index
    }

    /// The name a function is referenced by: its own, or (for JS function values) the
    /// variable, field or property it is assigned to. `true` when it is reached through an
    /// object (an object-literal member, or assigned to a property such as `window.onload`),
    /// so its name need not appear at the call.
    fn function_name(&self, node: Node<'a>) -> Option<(String, bool)> {
        let parent = self.parent();
        let in_object = parent.is_some_and(|p| matches!(p.kind(), "object" | "pair"));
        if let Some(name) = node.child_by_field_name("name") {
            return Some((self.read.text(name).to_owned(), in_object));
        }
        let parent = parent?;
        let (name, through_object) = match parent.kind() {
            "variable_declarator" | "public_field_definition" | "field_definition" => {
                (parent.child_by_field_name("name")?, false)
            }
            "pair" => (parent.child_by_field_name("key")?, true),
            "assignment_expression" => {
                let left = parent.child_by_field_name("left")?;
                (left, left.kind() != "identifier")
            }
            _ => return None,
        };
        let name = self.read.text(name).rsplit('.').next().unwrap_or_default();
        is_identifier(name).then(|| (name.to_owned(), through_object))
    }

    fn function(&mut self, node: Node<'a>, scope: &mut Scope) {
        let (Some((name, in_object)), Some(body)) =
            (self.function_name(node), node.child_by_field_name("body"))
        else {
            return;
        };
        let syn = self.syn;
        let decorators = self.read.decorators(node, &self.preceding);
        let names: Vec<&str> = decorators.iter().map(|d| decorator_name(d)).collect();
        let owner = self.owner();
        let class = owner.and_then(|s| s.class).unwrap_or_default();
        let is_constructor = owner.and_then(|s| s.name.as_deref()) == Some(name.as_str());
        let marked = names.iter().any(|d| matches_any(syn.test_decorators, d))
            || (syn.test_signatures.iter().any(|p| name.starts_with(p))
                && node
                    .child_by_field_name("parameters")
                    .is_some_and(|p| self.read.text(p).contains("*testing.")));
        let test = if marked {
            TestKind::Marked
        } else if syn.tests_by_name && (name.starts_with("test") || class.tests) {
            TestKind::ByName
        } else {
            TestKind::No
        };
        let registered = names.iter().any(|d| !syn.inert_decorators.contains(d));
        let dunder = name.len() > 4 && name.starts_with("__") && name.ends_with("__");
        // Go satisfies interfaces implicitly, so an exported method may be called through one.
        let go_interface = node.kind() == "method_declaration"
            && node.child_by_field_name("receiver").is_some()
            && name.starts_with(|c: char| c.is_uppercase());
        let exempt = ENTRY_POINTS.contains(&name.as_str())
            || dunder
            || is_constructor
            || registered
            || in_object
            || class.inherits
            || go_interface;
        let declaration =
            class.protocol || names.iter().any(|d| DECLARATION_DECORATORS.contains(d));
        let shape = if declaration {
            Shape::Plain
        } else {
            self.read.shape(body)
        };
        // Go methods are keyed by their receiver type, as classes key their methods.
        let receiver = node.child_by_field_name("receiver").and_then(|r| {
            self.read
                .text(r)
                .split(|c: char| !is_word_char(c))
                .rfind(|w| !w.is_empty())
        });
        let scope_name = match receiver {
            Some(receiver) => format!("{receiver}::{name}"),
            None => name.clone(),
        };
        let key = self.qualified(&scope_name);
        let definition = Definition {
            key,
            test,
            exempt,
            shape,
            ..self.definition(DefKind::Function, name, node)
        };
        let index = self.define(definition, body);
        scope.name = Some(scope_name);
        scope.test_code |= test == TestKind::Marked;
        if test != TestKind::No {
            scope.test = Some(index);
        }
    }

    fn heritage(&self, node: Node<'a>) -> Option<Node<'a>> {
        self.syn.heritage.iter().find_map(|h| {
            node.child_by_field_name(h).or_else(|| {
                self.read
                    .named_children(node)
                    .into_iter()
                    .find(|c| c.kind() == *h)
            })
        })
    }

    fn type_definition(&mut self, node: Node<'a>, scope: &mut Scope) {
        let Some(name) = node
            .child_by_field_name("name")
            .map(|n| self.read.text(n).to_owned())
        else {
            return;
        };
        let decorators = self.read.decorators(node, &self.preceding);
        let exempt = decorators
            .iter()
            .any(|d| !self.syn.inert_decorators.contains(&decorator_name(d)));
        let bases = self
            .heritage(node)
            .map(|h| compact(self.read.text(h)))
            .unwrap_or_default();
        let class = Class {
            inherits: !matches!(bases.as_str(), "" | "()" | "(object)"),
            protocol: contains_word(&bases, "Protocol"),
            tests: self.syn.tests_by_name && name.starts_with("Test"),
        };
        let definition = Definition {
            exempt,
            ..self.definition(DefKind::Type, name.clone(), node)
        };
        self.define(definition, node);
        scope.name = Some(name);
        scope.class = Some(class);
    }

    /// Rust `mod` (test code under `#[cfg(test)]`) and `impl` blocks (`impl Trait for X`
    /// methods are called through the trait).
    fn module(&mut self, node: Node<'a>, scope: &mut Scope) {
        if let Some(name) = node.child_by_field_name("name") {
            scope.name = Some(self.read.text(name).to_owned());
            scope.test_code = self
                .read
                .decorators(node, &self.preceding)
                .iter()
                .any(|d| d == "cfg(test)");
        } else if let Some(target) = node.child_by_field_name("type") {
            scope.name = Some(compact(self.read.text(target)));
            let inherits = self.heritage(node).is_some();
            scope.class = Some(Class {
                inherits,
                ..Class::default()
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::parse::parse;

    fn facts_of(lang: Lang, source: &str) -> Facts {
        let tree = parse(lang, source, Instant::now() + Duration::from_secs(10)).expect("parses");
        collect(lang, &tree, source)
    }

    fn has_mark(lang: Lang, source: &str, signal: Signal, key: &str) -> bool {
        facts_of(lang, source)
            .marks
            .iter()
            .any(|m| m.signal == signal && m.key.contains(key))
    }

    /// Body hashes are taken as the walk passes the body's tokens; each must equal the hash
    /// of a body read on its own: nested functions, a JS test whose body is its callback, an
    /// arrow function whose body is a single token, methods.
    #[test]
    fn body_hashes_are_the_bodies_token_hashes() {
        let cases = [
            (
                Lang::Python,
                "def outer(x):\n    def inner(y):\n        return y + 1\n    return inner(x)\n\nclass A:\n    def m(self):\n        pass\n",
            ),
            (
                Lang::JavaScript,
                "const f = (a) => a;\ndescribe('s', () => {\n  it('works', function () { expect(f(1)).toBe(1); });\n});\nfunction g() { return () => 2; }\n",
            ),
            (
                Lang::Rust,
                "fn a() -> u8 { fn b() -> u8 { 1 } b() }\nimpl S { fn c(&self) {} }\n",
            ),
        ];
        for (lang, source) in cases {
            let syntax = parse(lang, source, Instant::now() + Duration::from_secs(10)).unwrap();
            let facts = collect(lang, &syntax, source);
            let read = Reader::new(lang, source);
            let mut expected = Vec::new();
            super::super::nodes::preorder(syntax.root_node(), |node| {
                if read.is(node, role::FUNCTION)
                    && let Some(body) = node.child_by_field_name("body")
                {
                    expected.push(read.token_hash(body));
                }
                if read.is(node, role::CALL) && read.text(node).starts_with("it(") {
                    let callback = node
                        .child_by_field_name("arguments")
                        .and_then(|a| a.named_child(a.named_child_count() - 1))
                        .unwrap();
                    expected.push(read.token_hash(callback));
                }
                true
            });
            let functions: Vec<u64> = facts
                .definitions
                .iter()
                .filter(|d| d.kind == DefKind::Function)
                .map(|d| d.body)
                .collect();
            // Anonymous callbacks have bodies but are no definitions: every definition's
            // hash must be one of the bodies' hashes.
            assert!(functions.len() >= 3, "{lang:?}: {:?}", facts.definitions);
            for hash in &functions {
                assert!(
                    expected.contains(hash),
                    "{lang:?}: {hash} not a body's hash"
                );
            }
        }
    }

    const EXIT: Signal = Signal::Flag(FlagKind::ForcedExit);
    const SKIP: Signal = Signal::Flag(FlagKind::TestSkipped);
    const SNIFF: Signal = Signal::Flag(FlagKind::TestEnvSniffing);
    const SWALLOW: Signal = Signal::Flag(FlagKind::ExceptionSwallowed);
    const GUARD: Signal = Signal::Scaffold(ScaffoldKind::DefensiveGuard);
    const PRAGMA: Signal = Signal::Scaffold(ScaffoldKind::SuppressionPragma);

    #[test]
    fn marks_each_language_reads() {
        let cases: &[(Lang, &str, Signal, &str)] = &[
            (
                Lang::Python,
                "raise unittest.SkipTest('no network')\n",
                SKIP,
                "unittest.SkipTest",
            ),
            (
                Lang::Python,
                "def test_a(self):\n    self.skipTest('slow')\n",
                SKIP,
                "self.skipTest",
            ),
            (
                Lang::Python,
                "@pytest.mark.xfail\ndef test_a():\n    pass\n",
                SKIP,
                "pytest.mark.xfail",
            ),
            (Lang::Python, "quit()\n", EXIT, "quit()"),
            (Lang::Python, "exit(0)\n", EXIT, "exit(0)"),
            (Lang::Python, "os._exit(3)\n", EXIT, "os._exit(3)"),
            (
                Lang::Python,
                "for x in xs:\n    try:\n        f(x)\n    except BaseException:\n        continue\n",
                SWALLOW,
                "except BaseException",
            ),
            (
                Lang::Python,
                "try:\n    f()\nexcept (ValueError, Exception) as e:\n    ...\n",
                SWALLOW,
                "except",
            ),
            (
                Lang::Python,
                "y = getattr(o, 'y', None)\n",
                GUARD,
                "getattr",
            ),
            (
                Lang::Python,
                "def f(o):\n    if not hasattr(o, 'y'):\n        return\n",
                GUARD,
                "hasattr",
            ),
            (
                Lang::Python,
                "def f(x):\n    if x is None or not isinstance(x, int):\n        return 0\n",
                GUARD,
                "isinstance",
            ),
            (Lang::Python, "x = 1  # noqa: E501\n", PRAGMA, "noqa"),
            (
                Lang::Python,
                "import os  # pylint: disable=unused-import\n",
                PRAGMA,
                "pylint",
            ),
            (
                Lang::Python,
                "def f():  # pragma: no cover\n    pass\n",
                PRAGMA,
                "pragma",
            ),
            (
                Lang::Python,
                "x = f()  # pyright: ignore\n",
                PRAGMA,
                "pyright",
            ),
            (
                Lang::Python,
                "if '_pytest' in sys.modules:\n    x = 1\n",
                SNIFF,
                "_pytest",
            ),
            (
                Lang::Python,
                "frame = sys._getframe(1)\n",
                SNIFF,
                "_getframe",
            ),
            (
                Lang::Python,
                "stack = traceback.extract_stack()\n",
                SNIFF,
                "extract_stack",
            ),
            (
                Lang::JavaScript,
                "describe.skip('x', () => {});\n",
                SKIP,
                "describe.skip",
            ),
            (Lang::JavaScript, "it.todo('later');\n", SKIP, "it.todo"),
            (
                Lang::JavaScript,
                "xdescribe('x', function () {});\n",
                SKIP,
                "xdescribe",
            ),
            (
                Lang::JavaScript,
                "if (process.env.VITEST) run();\n",
                SNIFF,
                "VITEST",
            ),
            (
                Lang::JavaScript,
                "const t = typeof describe === 'function';\n",
                SNIFF,
                "typeof describe",
            ),
            (
                Lang::JavaScript,
                "process.exit();\n",
                EXIT,
                "process.exit()",
            ),
            (
                Lang::TypeScript,
                "// @ts-expect-error\nconst x: number = 'a';\n",
                PRAGMA,
                "@ts-expect-error",
            ),
            (Lang::TypeScript, "// @ts-nocheck\n", PRAGMA, "@ts-nocheck"),
            (
                Lang::Tsx,
                "/* eslint-disable */\nconst a = <div />;\n",
                PRAGMA,
                "eslint-disable",
            ),
            (
                Lang::Tsx,
                "function f() { try { g(); } catch (e) { return undefined; } }\n",
                SWALLOW,
                "catch",
            ),
            (
                Lang::Rust,
                "fn f() { std::process::abort(); }\n",
                EXIT,
                "abort",
            ),
            (
                Lang::Rust,
                "fn f() { process::exit(0); }\n",
                EXIT,
                "process::exit(0)",
            ),
            (
                Lang::Rust,
                "#[expect(unused)]\nfn f() {}\n",
                PRAGMA,
                "expect(unused)",
            ),
            (
                Lang::Rust,
                "fn f(r: Result<(), E>) { match r { Ok(()) => {}, Err(_) => () } }\n",
                SWALLOW,
                "Err(_)",
            ),
            (
                Lang::Rust,
                "#[cfg(test)]\nmod tests {\n    #[tokio::test]\n    #[ignore]\n    async fn t() {}\n}\n",
                SKIP,
                "ignore",
            ),
            (
                Lang::Go,
                "package p\nfunc f() { runtime.Goexit() }\n",
                EXIT,
                "runtime.Goexit()",
            ),
            (
                Lang::Go,
                "package p\nfunc f() { if flag.Lookup(\"test.v\") != nil { g() } }\n",
                SNIFF,
                "flag.Lookup",
            ),
            (
                Lang::Go,
                "package p\nfunc f() {\n\tx := 1 //lint:ignore SA4006 reason\n}\n",
                PRAGMA,
                "lint:ignore",
            ),
            (
                Lang::Go,
                "package p\nfunc f() {\n\tg() // #nosec G104\n}\n",
                PRAGMA,
                "#nosec",
            ),
            (
                Lang::Go,
                "package p\nfunc f(x *T) {\n\tif x == nil {\n\t\treturn\n\t}\n}\n",
                GUARD,
                "x==nil",
            ),
            (
                Lang::Go,
                "package p\nfunc TestA(t *testing.T) {\n\tt.SkipNow()\n}\n",
                SKIP,
                "t.SkipNow",
            ),
            (
                Lang::Java,
                "class A { void f() { Runtime.getRuntime().halt(1); } }\n",
                EXIT,
                "halt",
            ),
            (
                Lang::Java,
                "class A { void f() { Runtime.getRuntime().exit(0); } }\n",
                EXIT,
                "exit(0)",
            ),
            (
                Lang::Java,
                "class A { String s = \"maven-Surefire-plugin\"; }\n",
                SNIFF,
                "Surefire",
            ),
            (
                Lang::Java,
                "class A { void f() {\n int x = 1; // CHECKSTYLE:OFF\n } }\n",
                PRAGMA,
                "CHECKSTYLE:OFF",
            ),
            (
                Lang::Java,
                "class A {\n //noinspection unchecked\n void f() {} }\n",
                PRAGMA,
                "noinspection",
            ),
            (
                Lang::Java,
                "class A { @Ignore @Test void t() {} }\n",
                SKIP,
                "Ignore",
            ),
            (
                Lang::Java,
                "class A { @Test void t() { assumeTrue(false); } }\n",
                SKIP,
                "assumeTrue",
            ),
            (
                Lang::Java,
                "class A { void f() { try { g(); } catch (Error e) { } } }\n",
                SWALLOW,
                "catch",
            ),
        ];
        for (lang, source, signal, key) in cases {
            assert!(
                has_mark(*lang, source, *signal, key),
                "{lang:?} {signal:?} {key:?} in {source:?}: {:#?}",
                facts_of(*lang, source).marks
            );
        }
    }

    #[test]
    fn near_misses_leave_no_mark() {
        let cases: &[(Lang, &str, Signal)] = &[
            (Lang::Python, "sys.exit(main())\n", EXIT),
            (Lang::Python, "sys.exit(1)\n", EXIT),
            (Lang::Python, "server.exit(0)\n", EXIT),
            (
                Lang::Python,
                "try:\n    f()\nexcept ValueError:\n    return None\n",
                SWALLOW,
            ),
            (
                Lang::Python,
                "try:\n    f()\nexcept Exception:\n    return False\n",
                SWALLOW,
            ),
            (
                Lang::Python,
                "def f(n):\n    if n == 0:\n        return 0\n",
                GUARD,
            ),
            (Lang::Python, "x = d.get(k)\n", GUARD),
            (Lang::JavaScript, "process.exit(1);\n", EXIT),
            (
                Lang::JavaScript,
                "function ok(s) { try { JSON.parse(s); return true; } catch (e) { return false; } }\n",
                SWALLOW,
            ),
            (
                Lang::JavaScript,
                "for (;;) { if (i >= len) break; }\n",
                GUARD,
            ),
            (Lang::Rust, "#[cfg(test)]\nmod tests {}\n", SNIFF),
            (
                Lang::Rust,
                "fn f(r: Result<(), E>) { match r { Ok(()) => {}, Err(e) => log(e) } }\n",
                SWALLOW,
            ),
            (
                Lang::Go,
                "package p\nfunc f() (int, error) {\n\tif err != nil {\n\t\treturn 0, err\n\t}\n}\n",
                SWALLOW,
            ),
            (
                Lang::Go,
                "package p\nfunc f() (n int, err error) {\n\tif err != nil {\n\t\treturn\n\t}\n}\n",
                SWALLOW,
            ),
            (
                Lang::Go,
                "package p\nfunc f() {\n\tif err != nil {\n\t\treturn\n\t}\n}\n",
                GUARD,
            ),
            (
                Lang::Java,
                "class A { void f() { try { g(); } catch (IOException e) { log(e); throw e; } } }\n",
                SWALLOW,
            ),
            (
                Lang::Java,
                "class A { void f() { System.exit(1); } }\n",
                EXIT,
            ),
        ];
        for (lang, source, signal) in cases {
            assert!(
                !facts_of(*lang, source)
                    .marks
                    .iter()
                    .any(|m| m.signal == *signal),
                "{lang:?} {signal:?} in {source:?}"
            );
        }
    }

    #[test]
    fn anonymous_tokens_named_like_literals_are_not_literals() {
        let facts = facts_of(Lang::TypeScript, "const s: string = \"x y\";\n");
        assert_eq!(facts.literals.iter().collect::<Vec<_>>(), ["x y"]);
        assert_eq!(facts.identifiers.get("string"), None);
    }

    fn definition<'f>(facts: &'f Facts, key: &str) -> &'f Definition {
        facts
            .definitions
            .iter()
            .find(|d| d.key == key)
            .unwrap_or_else(|| panic!("no {key} in {:#?}", facts.definitions))
    }

    #[test]
    fn definitions_know_tests_and_exemptions() {
        let rust = facts_of(
            Lang::Rust,
            "struct S;\nimpl Drop for S {\n    fn drop(&mut self) {}\n}\nimpl S {\n    fn new() -> S { S }\n}\n#[cfg(test)]\nmod tests {\n    fn helper() {}\n    #[tokio::test]\n    async fn runs() {\n        assert!(ok());\n        debug_assert_eq!(1, one());\n    }\n}\n",
        );
        assert!(definition(&rust, "S::drop").exempt);
        assert!(!definition(&rust, "S::new").exempt);
        let runs = definition(&rust, "tests::runs");
        assert_eq!(
            (runs.test, runs.in_test, runs.assertions),
            (TestKind::Marked, true, 2)
        );
        assert_eq!(definition(&rust, "tests::helper").test, TestKind::No);
        assert!(definition(&rust, "tests::helper").in_test);

        let python = facts_of(
            Lang::Python,
            "class TestParse:\n    def setup_method(self):\n        self.x = 1\n\n    def test_a(self):\n        assert f() == 1\n        self.assertEqual(g(), 2)\n\n\n@app.route('/')\ndef index():\n    return home()\n\n\n@staticmethod\ndef helper():\n    return 1\n\n\nassert CONFIG\n",
        );
        assert_eq!(
            definition(&python, "TestParse::setup_method").test,
            TestKind::ByName
        );
        assert_eq!(definition(&python, "TestParse::test_a").assertions, 2);
        assert!(definition(&python, "index").exempt);
        assert_eq!(
            definition(&python, "index").shape,
            Shape::Forward("home".into())
        );
        assert!(!definition(&python, "helper").exempt);
        assert_eq!(python.loose_assertions, 1);

        let js = facts_of(
            Lang::JavaScript,
            "describe('math', () => {\n  it('adds', () => {\n    expect(add(1, 2)).toBe(3);\n  });\n});\nconst api = { get() { return 1; } };\nclass Page extends Base { render() { return 1; } }\n",
        );
        let adds = definition(&js, "math::adds");
        assert_eq!(
            (adds.test, adds.assertions, adds.line),
            (TestKind::Marked, 1, 2)
        );
        assert!(definition(&js, "get").exempt);
        assert!(definition(&js, "Page::render").exempt);

        let go = facts_of(
            Lang::Go,
            "package p\n\nfunc (s *Stack) Len() int { return len(s.items) }\n\nfunc (s *Stack) grow() { s.items = nil }\n\nfunc TestLen(t *testing.T) {\n\tif got := (&Stack{}).Len(); got != 0 {\n\t\tt.Fatalf(\"got %d\", got)\n\t}\n}\n",
        );
        assert!(definition(&go, "Stack::Len").exempt);
        assert!(!definition(&go, "Stack::grow").exempt);
        assert_eq!(definition(&go, "TestLen").test, TestKind::Marked);
        assert_eq!(definition(&go, "TestLen").assertions, 1);

        let java = facts_of(
            Lang::Java,
            "class Cart {\n    Cart() {}\n    @Override\n    public String toString() { return \"\"; }\n    @Test\n    void empty() { assertThat(new Cart()).isNotNull(); }\n}\n",
        );
        assert!(definition(&java, "Cart::Cart").exempt);
        assert!(definition(&java, "Cart::toString").exempt);
        let empty = definition(&java, "Cart::empty");
        assert_eq!(
            (empty.test, empty.assertions, empty.line),
            (TestKind::Marked, 1, 6)
        );
    }

    #[test]
    fn shapes_of_bodies() {
        let python = facts_of(
            Lang::Python,
            "def a():\n    \"\"\"Doc.\"\"\"\n    ...\n\n\ndef b(x):\n    return g(x)\n\n\nclass M:\n    def __eq__(self, o):\n        return True\n",
        );
        assert_eq!(definition(&python, "a").shape, Shape::Stub("...".into()));
        assert_eq!(definition(&python, "b").shape, Shape::Forward("g".into()));
        assert_eq!(definition(&python, "M::__eq__").shape, Shape::ReturnsTrue);
        let rust = facts_of(
            Lang::Rust,
            "fn a() -> u8 { unimplemented!() }\nfn b() -> String { format!(\"{}\", 1) }\n",
        );
        assert!(matches!(definition(&rust, "a").shape, Shape::Stub(_)));
        assert_eq!(definition(&rust, "b").shape, Shape::Plain);
    }

    #[test]
    fn deep_and_broken_input_is_read_without_recursion_or_panics() {
        let deep = format!("x = {}1{}\n", "(".repeat(50_000), ")".repeat(50_000));
        assert!(facts_of(Lang::Python, &deep).literals.contains("1"));
        let nested_if = "if (a) {\n".repeat(5_000) + &"}\n".repeat(5_000);
        facts_of(Lang::JavaScript, &nested_if);
        for lang in Lang::ALL {
            facts_of(
                lang,
                "fn ( { [ \" ' if else try catch except }} )) é \u{0} ;;",
            );
        }
    }
}
