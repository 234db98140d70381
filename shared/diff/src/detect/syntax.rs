//! The per-language tables the one generic walker is driven by: which node kinds play which
//! role, and the names of assertions, skips, exits, probes and pragmas. JavaScript, TypeScript
//! and TSX share a table (the TypeScript kinds are a superset).

use std::sync::OnceLock;

use crate::lang::Lang;

use super::text::Pat::{self, Is, Last, Prefix, Quoted, Suffix};

/// The roles a node kind plays, as bits, so the walker tests a node with one table lookup.
pub(crate) mod role {
    pub const FUNCTION: u32 = 1;
    pub const TYPE: u32 = 1 << 1;
    pub const MODULE: u32 = 1 << 2;
    pub const CALL: u32 = 1 << 3;
    pub const CATCH: u32 = 1 << 4;
    pub const IF: u32 = 1 << 5;
    pub const CASE: u32 = 1 << 6;
    pub const CASE_PATTERN: u32 = 1 << 7;
    pub const COMPARISON: u32 = 1 << 8;
    pub const MEMBER: u32 = 1 << 9;
    pub const STRING: u32 = 1 << 10;
    pub const NUMBER: u32 = 1 << 11;
    pub const NULL: u32 = 1 << 12;
    pub const IDENTIFIER: u32 = 1 << 13;
    pub const DECORATOR: u32 = 1 << 14;
    pub const ASSERT: u32 = 1 << 15;
    pub const THROW: u32 = 1 << 16;
    pub const BLOCK: u32 = 1 << 17;
    pub const COMMENT: u32 = 1 << 18;
    /// Nodes small expressions are sniffed at.
    pub const PROBED: u32 = CALL | COMPARISON | MEMBER | STRING;
}

/// How a process-exit call is judged by its arguments.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ExitArgs {
    /// Any arguments: the call never reports failure (`os._exit`, `abort`).
    Any,
    /// No argument or `0`: a success exit; `exit(1)` on an error path is honest.
    Success,
}

/// Words that, all found in one small expression, sniff the test environment.
#[derive(Debug)]
pub(crate) struct Probe {
    pub all: &'static [Pat],
    pub what: &'static str,
}

/// One language's roles. Kind lists name tree-sitter node kinds; `Pat` lists match compact
/// callee or decorator text.
#[derive(Debug)]
pub(crate) struct Syntax {
    pub functions: &'static [&'static str],
    pub types: &'static [&'static str],
    /// Other named scopes: Rust modules and impl blocks.
    pub modules: &'static [&'static str],
    pub calls: &'static [&'static str],
    pub catches: &'static [&'static str],
    /// Nodes with a `condition` and a `consequence`.
    pub ifs: &'static [&'static str],
    pub cases: &'static [&'static str],
    /// Pattern wrappers under a case whose literal children are the case values.
    pub case_patterns: &'static [&'static str],
    pub comparisons: &'static [&'static str],
    pub members: &'static [&'static str],
    pub strings: &'static [&'static str],
    pub numbers: &'static [&'static str],
    pub nulls: &'static [&'static str],
    pub identifiers: &'static [&'static str],
    pub decorators: &'static [&'static str],
    pub assert_statements: &'static [&'static str],
    pub throws: &'static [&'static str],
    /// Statement containers (Go nests a `statement_list` in its blocks).
    pub blocks: &'static [&'static str],
    /// Field names or child kinds that give a class a base class or interface.
    pub heritage: &'static [&'static str],
    /// Assertion calls whose subject is checked for being a bare literal.
    pub assertions: &'static [Pat],
    /// Assertion calls without a subject (`t.Fatal`, `fail`).
    pub failures: &'static [Pat],
    /// Skip markers, as callees, decorators or raised exceptions.
    pub skips: &'static [Pat],
    pub exits: &'static [(&'static str, ExitArgs)],
    pub probes: &'static [Probe],
    /// Calls that are a type or null check in a condition.
    pub guard_calls: &'static [Pat],
    /// Lookups with a fallback: callee and its argument count.
    pub default_lookups: &'static [(Pat, usize)],
    /// Suppression comments, in compact form (`type:ignore`, see `text::compact`).
    pub pragma_comments: &'static [&'static str],
    pub pragma_decorators: &'static [&'static str],
    pub test_decorators: &'static [Pat],
    /// Decorators that do not register a function with a framework, so they do not exempt it
    /// from the reference count.
    pub inert_decorators: &'static [&'static str],
    pub broad_exceptions: &'static [&'static str],
    /// JS-style test suites and cases, by the first segment of the callee.
    pub test_groups: &'static [&'static str],
    pub test_cases: &'static [&'static str],
    /// Python collects `test*` functions and `Test*` classes by name.
    pub tests_by_name: bool,
    /// Go test functions: name prefixes, recognised with a `*testing.` parameter.
    pub test_signatures: &'static [&'static str],
    /// `not x` / `!x` on a bare name is a null guard (in Python and JS, not where `!` is boolean).
    pub truthiness_guards: bool,
    /// The test handle passed to Go assertions, ignored when judging their subject.
    pub handle: Option<&'static str>,
}

impl Syntax {
    fn roles_of(&self, lang: Lang, kind: &str) -> u32 {
        let lists = [
            (self.functions, role::FUNCTION),
            (self.types, role::TYPE),
            (self.modules, role::MODULE),
            (self.calls, role::CALL),
            (self.catches, role::CATCH),
            (self.ifs, role::IF),
            (self.cases, role::CASE),
            (self.case_patterns, role::CASE_PATTERN),
            (self.comparisons, role::COMPARISON),
            (self.members, role::MEMBER),
            (self.strings, role::STRING),
            (self.numbers, role::NUMBER),
            (self.nulls, role::NULL),
            (self.identifiers, role::IDENTIFIER),
            (self.decorators, role::DECORATOR),
            (self.assert_statements, role::ASSERT),
            (self.throws, role::THROW),
            (self.blocks, role::BLOCK),
        ];
        let comment = if lang.is_comment(kind) {
            role::COMMENT
        } else {
            0
        };
        lists
            .iter()
            .filter(|(kinds, _)| kinds.contains(&kind))
            .fold(comment, |bits, (_, r)| bits | r)
    }
}

/// Roles by node kind id. Only named kinds get roles: an anonymous token can share a name with
/// a named kind (TypeScript's `string` type keyword and its `string` literal).
pub(crate) fn roles(lang: Lang) -> &'static [u32] {
    static TABLES: [OnceLock<Vec<u32>>; Lang::ALL.len()] =
        [const { OnceLock::new() }; Lang::ALL.len()];
    let index = Lang::ALL
        .iter()
        .position(|l| *l == lang)
        .unwrap_or_default();
    TABLES[index].get_or_init(|| {
        let language = lang.grammar();
        let syntax = of(lang);
        (0..language.node_kind_count())
            .map(|id| {
                let id = u16::try_from(id).unwrap_or(u16::MAX);
                match language.node_kind_for_id(id) {
                    Some(kind) if language.node_kind_is_named(id) => syntax.roles_of(lang, kind),
                    _ => 0,
                }
            })
            .collect()
    })
}

pub(crate) fn of(lang: Lang) -> &'static Syntax {
    match lang {
        Lang::TypeScript | Lang::Tsx | Lang::JavaScript => &JS,
        Lang::Python => &PYTHON,
        Lang::Rust => &RUST,
        Lang::Go => &GO,
        Lang::Java => &JAVA,
    }
}

/// Names of equality methods; one that only returns true makes every comparison pass.
pub(crate) const EQUALITY_METHODS: &[&str] =
    &["__eq__", "equals", "eq", "Equal", "Equals", "isEqual"];

/// Decorators under which a body of `...` or `raise NotImplementedError` is a declaration.
pub(crate) const DECLARATION_DECORATORS: &[&str] = &[
    "abstractmethod",
    "abc.abstractmethod",
    "overload",
    "typing.overload",
];

/// Definitions a runtime or framework calls by convention, never by a visible name.
pub(crate) const ENTRY_POINTS: &[&str] = &["main", "constructor", "init"];

const PYTHON: Syntax = Syntax {
    functions: &["function_definition"],
    types: &["class_definition"],
    modules: &[],
    calls: &["call"],
    catches: &["except_clause"],
    ifs: &["if_statement", "elif_clause"],
    cases: &["case_clause"],
    case_patterns: &["case_pattern"],
    comparisons: &["comparison_operator"],
    members: &["attribute", "subscript"],
    strings: &["string"],
    numbers: &["integer", "float"],
    nulls: &["none"],
    identifiers: &["identifier"],
    decorators: &["decorator"],
    assert_statements: &["assert_statement"],
    throws: &["raise_statement"],
    blocks: &["block"],
    heritage: &["superclasses"],
    assertions: &[Prefix("self.assert"), Is("pytest.raises")],
    failures: &[Is("pytest.fail"), Is("self.fail")],
    skips: &[
        Prefix("pytest.mark.skip"),
        Is("pytest.mark.xfail"),
        Prefix("unittest.skip"),
        Is("unittest.expectedFailure"),
        Is("skip"),
        Prefix("skipIf"),
        Prefix("skipUnless"),
        Is("pytest.skip"),
        Is("pytest.importorskip"),
        Is("self.skipTest"),
        Suffix("SkipTest"),
    ],
    exits: &[
        ("sys.exit", ExitArgs::Success),
        ("exit", ExitArgs::Success),
        ("quit", ExitArgs::Success),
        ("os._exit", ExitArgs::Any),
    ],
    probes: &[
        Probe {
            all: &[Is("PYTEST_CURRENT_TEST")],
            what: "PYTEST_CURRENT_TEST",
        },
        Probe {
            all: &[Is("pytest"), Is("modules")],
            what: "pytest in sys.modules",
        },
        Probe {
            all: &[Is("_pytest")],
            what: "_pytest",
        },
        Probe {
            all: &[Is("inspect"), Is("stack")],
            what: "inspect.stack",
        },
        Probe {
            all: &[Is("sys"), Is("_getframe")],
            what: "sys._getframe",
        },
        Probe {
            all: &[Is("traceback"), Is("extract_stack")],
            what: "traceback.extract_stack",
        },
    ],
    guard_calls: &[Is("isinstance"), Is("hasattr")],
    default_lookups: &[(Suffix(".get"), 2), (Is("getattr"), 3)],
    pragma_comments: &[
        "type:ignore",
        "noqa",
        "pylint:disable",
        "pragma:no cover",
        "pyright:ignore",
    ],
    pragma_decorators: &[],
    test_decorators: &[],
    inert_decorators: &[
        "staticmethod",
        "classmethod",
        "property",
        "dataclass",
        "dataclasses.dataclass",
        "functools.cache",
        "functools.lru_cache",
        "functools.cached_property",
        "cache",
        "lru_cache",
        "cached_property",
    ],
    broad_exceptions: &["Exception", "BaseException"],
    test_groups: &[],
    test_cases: &[],
    tests_by_name: true,
    test_signatures: &[],
    truthiness_guards: true,
    handle: None,
};

const JS: Syntax = Syntax {
    functions: &[
        "function_declaration",
        "generator_function_declaration",
        "function_expression",
        "arrow_function",
        "method_definition",
    ],
    types: &[
        "class_declaration",
        "abstract_class_declaration",
        "interface_declaration",
        "enum_declaration",
    ],
    modules: &[],
    calls: &["call_expression"],
    catches: &["catch_clause"],
    ifs: &["if_statement", "ternary_expression"],
    cases: &["switch_case"],
    case_patterns: &[],
    comparisons: &["binary_expression"],
    members: &["member_expression", "subscript_expression"],
    strings: &["string"],
    numbers: &["number"],
    nulls: &["null", "undefined"],
    identifiers: &[
        "identifier",
        "property_identifier",
        "type_identifier",
        "shorthand_property_identifier",
        "shorthand_property_identifier_pattern",
    ],
    decorators: &["decorator"],
    assert_statements: &[],
    throws: &["throw_statement"],
    blocks: &["statement_block"],
    heritage: &["class_heritage"],
    assertions: &[Is("expect"), Prefix("assert")],
    failures: &[Is("fail"), Is("assert.fail")],
    skips: &[
        Is("it.skip"),
        Is("test.skip"),
        Is("describe.skip"),
        Is("context.skip"),
        Is("xit"),
        Is("xtest"),
        Is("xdescribe"),
        Is("it.todo"),
        Is("test.todo"),
        Is("this.skip"),
    ],
    exits: &[("process.exit", ExitArgs::Success)],
    probes: &[
        Probe {
            all: &[Is("NODE_ENV"), Is("test")],
            what: "NODE_ENV compared with \"test\"",
        },
        Probe {
            all: &[Is("JEST_WORKER_ID")],
            what: "JEST_WORKER_ID",
        },
        Probe {
            all: &[Is("VITEST")],
            what: "VITEST",
        },
        Probe {
            all: &[Is("typeof"), Is("jest")],
            what: "typeof jest",
        },
        Probe {
            all: &[Is("typeof"), Is("describe")],
            what: "typeof describe",
        },
        Probe {
            all: &[Is("new"), Is("Error"), Is("stack")],
            what: "new Error().stack",
        },
    ],
    guard_calls: &[Is("Array.isArray")],
    default_lookups: &[],
    pragma_comments: &[
        "@ts-ignore",
        "@ts-expect-error",
        "@ts-nocheck",
        "eslint-disable",
    ],
    pragma_decorators: &[],
    test_decorators: &[],
    inert_decorators: &[],
    broad_exceptions: &[],
    test_groups: &["describe", "context", "suite", "xdescribe", "fdescribe"],
    test_cases: &["it", "test", "xit", "xtest", "fit", "specify"],
    tests_by_name: false,
    test_signatures: &[],
    truthiness_guards: true,
    handle: None,
};

const RUST: Syntax = Syntax {
    functions: &["function_item"],
    types: &["struct_item", "enum_item", "union_item", "trait_item"],
    modules: &["mod_item", "impl_item"],
    calls: &["call_expression", "macro_invocation"],
    catches: &["match_arm", "let_declaration"],
    ifs: &["if_expression"],
    cases: &["match_arm"],
    case_patterns: &["match_pattern"],
    comparisons: &["binary_expression"],
    members: &["field_expression", "scoped_identifier"],
    strings: &["string_literal", "raw_string_literal"],
    numbers: &["integer_literal", "float_literal"],
    nulls: &["unit_expression"],
    identifiers: &["identifier", "type_identifier", "field_identifier"],
    decorators: &["attribute_item", "inner_attribute_item"],
    assert_statements: &[],
    throws: &[],
    blocks: &["block"],
    heritage: &["trait"],
    assertions: &[
        Prefix("assert"),
        Prefix("debug_assert"),
        Prefix("prop_assert"),
    ],
    failures: &[],
    skips: &[Is("ignore")],
    exits: &[
        ("std::process::exit", ExitArgs::Success),
        ("process::exit", ExitArgs::Success),
        ("exit", ExitArgs::Success),
        ("std::process::abort", ExitArgs::Any),
        ("process::abort", ExitArgs::Any),
    ],
    probes: &[
        Probe {
            all: &[Is("cfg"), Is("test")],
            what: "cfg!(test)",
        },
        Probe {
            all: &[Is("RUST_TEST_THREADS")],
            what: "RUST_TEST_THREADS",
        },
    ],
    guard_calls: &[Suffix(".is_none"), Suffix(".is_null")],
    default_lookups: &[],
    pragma_comments: &[],
    pragma_decorators: &["allow", "expect"],
    test_decorators: &[
        Is("test"),
        Suffix("::test"),
        Is("rstest"),
        Prefix("test_case"),
    ],
    inert_decorators: &[
        "inline",
        "must_use",
        "allow",
        "expect",
        "warn",
        "deny",
        "doc",
        "cfg",
        "deprecated",
        "track_caller",
        "cold",
        "derive",
    ],
    broad_exceptions: &[],
    test_groups: &[],
    test_cases: &[],
    tests_by_name: false,
    test_signatures: &[],
    truthiness_guards: false,
    handle: None,
};

const GO: Syntax = Syntax {
    functions: &["function_declaration", "method_declaration"],
    types: &["type_spec"],
    modules: &[],
    calls: &["call_expression"],
    catches: &["if_statement", "expression_statement"],
    ifs: &["if_statement"],
    cases: &["expression_case"],
    case_patterns: &["expression_list"],
    comparisons: &["binary_expression"],
    members: &["selector_expression"],
    strings: &["interpreted_string_literal", "raw_string_literal"],
    numbers: &["int_literal", "float_literal"],
    nulls: &["nil"],
    identifiers: &[
        "identifier",
        "field_identifier",
        "type_identifier",
        "package_identifier",
    ],
    decorators: &[],
    assert_statements: &[],
    throws: &[],
    blocks: &["block", "statement_list"],
    heritage: &[],
    assertions: &[Prefix("assert."), Prefix("require.")],
    failures: &[Prefix("t.Error"), Prefix("t.Fatal"), Prefix("t.Fail")],
    skips: &[Prefix("t.Skip")],
    exits: &[
        ("os.Exit", ExitArgs::Success),
        ("runtime.Goexit", ExitArgs::Any),
    ],
    probes: &[
        Probe {
            all: &[Is("testing"), Is("Testing")],
            what: "testing.Testing()",
        },
        Probe {
            all: &[Is("Lookup"), Is("test.v")],
            what: "flag.Lookup(\"test.v\")",
        },
        Probe {
            all: &[Is("Args"), Suffix(".test")],
            what: "os.Args checked for .test",
        },
    ],
    guard_calls: &[],
    default_lookups: &[],
    pragma_comments: &["nolint", "lint:ignore", "#nosec"],
    pragma_decorators: &[],
    test_decorators: &[],
    inert_decorators: &[],
    broad_exceptions: &[],
    test_groups: &[],
    test_cases: &[],
    tests_by_name: false,
    test_signatures: &["Test", "Benchmark", "Fuzz"],
    truthiness_guards: false,
    handle: Some("t"),
};

const JAVA: Syntax = Syntax {
    functions: &["method_declaration", "constructor_declaration"],
    types: &[
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
    ],
    modules: &[],
    calls: &["method_invocation"],
    catches: &["catch_clause"],
    ifs: &["if_statement", "ternary_expression"],
    cases: &["switch_label"],
    case_patterns: &[],
    comparisons: &["binary_expression"],
    members: &["field_access"],
    strings: &["string_literal"],
    numbers: &[
        "decimal_integer_literal",
        "decimal_floating_point_literal",
        "hex_integer_literal",
    ],
    nulls: &["null_literal"],
    identifiers: &["identifier", "type_identifier"],
    decorators: &["annotation", "marker_annotation"],
    assert_statements: &["assert_statement"],
    throws: &[],
    blocks: &["block", "constructor_body"],
    heritage: &["superclass", "interfaces"],
    assertions: &[Last("assert")],
    failures: &[Last("fail")],
    skips: &[
        Prefix("Disabled"),
        Is("Ignore"),
        Prefix("Assumptions.assume"),
        Prefix("Assume.assume"),
        Prefix("assume"),
    ],
    exits: &[
        ("System.exit", ExitArgs::Success),
        ("Runtime.getRuntime().exit", ExitArgs::Success),
        ("Runtime.getRuntime().halt", ExitArgs::Any),
    ],
    probes: &[
        Probe {
            all: &[Is("getStackTrace")],
            what: "getStackTrace()",
        },
        Probe {
            all: &[Quoted("junit")],
            what: "a string naming junit",
        },
        Probe {
            all: &[Quoted("surefire")],
            what: "a string naming surefire",
        },
    ],
    guard_calls: &[Is("Objects.isNull"), Is("Objects.nonNull")],
    default_lookups: &[],
    pragma_comments: &["NOPMD", "CHECKSTYLE:OFF", "noinspection"],
    pragma_decorators: &["SuppressWarnings"],
    test_decorators: &[
        Is("Test"),
        Is("ParameterizedTest"),
        Is("RepeatedTest"),
        Is("TestFactory"),
        Is("TestTemplate"),
        Suffix(".Test"),
    ],
    inert_decorators: &["Deprecated"],
    broad_exceptions: &["Exception", "Throwable", "RuntimeException", "Error"],
    test_groups: &[],
    test_cases: &[],
    tests_by_name: false,
    test_signatures: &[],
    truthiness_guards: false,
    handle: None,
};
