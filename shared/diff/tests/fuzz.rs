//! Property-based fuzzing of the diff inputs: source text of every grammar, arbitrary bytes
//! and code-like token soup, scored as a change from one text to an edit of it. The scorer
//! answers a report (or a described input error), never panics, and its figures stay in
//! their ranges. Bounded for CI; `PROPTEST_CASES` raises it (docs/reliability.md).

use agentrl_diff::{Lang, Limits, Request, Scorer, Snapshot};
use proptest::prelude::*;

/// Text a parser meets in agents' edits: keywords, brackets, strings, comments, broken
/// nesting, across the seven grammars.
fn code() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "fn ",
            "def ",
            "function ",
            "class ",
            "if ",
            "else ",
            "return ",
            "for ",
            "while ",
            "import ",
            "from ",
            "pub ",
            "let ",
            "const ",
            "var ",
            "func ",
            "package main\n",
            "public ",
            "static ",
            "void ",
            "=> ",
            "(",
            ")",
            "{",
            "}",
            "[",
            "]",
            "<",
            ">",
            ";",
            ":",
            ",",
            ".",
            "=",
            "==",
            "+",
            "-",
            "*",
            "/",
            "\"s\"",
            "'c'",
            "`t${x}`",
            "// c\n",
            "# c\n",
            "/* c */",
            "x",
            "y1",
            "self",
            "this",
            "42",
            "3.5",
            "\n",
            "    ",
            "\t",
            "@pytest.mark.skip\n",
            "assert x == 1\n",
            "sys.exit(0)\n",
            "é",
            "\u{0}",
            "\\",
        ]),
        0..80,
    )
    .prop_map(|parts| parts.concat())
}

/// `text` with a slice replaced: the shape of an edit.
fn edited(text: String) -> impl Strategy<Value = (String, String)> {
    let len = text.chars().count();
    (0..=len, 0..=len, code()).prop_map(move |(a, b, insert)| {
        let (from, to) = (a.min(b), a.max(b));
        let chars: Vec<char> = text.chars().collect();
        let after: String = chars[..from]
            .iter()
            .chain(insert.chars().collect::<Vec<_>>().iter())
            .chain(chars[to..].iter())
            .collect();
        (text.clone(), after)
    })
}

fn check(
    scorer: &Scorer,
    path: &str,
    lang: Option<Lang>,
    before: String,
    after: String,
) -> Result<(), TestCaseError> {
    let before: Snapshot = [(path.to_owned(), before)].into();
    let after: Snapshot = [(path.to_owned(), after)].into();
    let request = Request {
        lang,
        tests_passed: true,
        ..Request::default()
    };
    let report = scorer
        .score(&before, &after, &request)
        .expect("one file is valid input");
    prop_assert!((0.0..=1.0).contains(&report.ast_similarity), "{report:?}");
    prop_assert!(
        (0.0..=1.0).contains(&report.reward_multiplier),
        "{report:?}"
    );
    prop_assert!(
        (0.0..=1.0).contains(&report.line_change_ratio),
        "{report:?}"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: agentrl_testkit::proptest_cases(96), ..ProptestConfig::default() })]

    #[test]
    fn every_grammar_scores_code_like_edits(
        lang in prop::sample::select(Lang::ALL.to_vec()),
        (before, after) in code().prop_flat_map(edited),
    ) {
        let scorer = Scorer::new(Limits::default());
        check(&scorer, "src/file", Some(lang), before, after)?;
    }

    #[test]
    fn arbitrary_bytes_score_as_text(
        before in prop::collection::vec(any::<u8>(), 0..400),
        after in prop::collection::vec(any::<u8>(), 0..400),
        path in prop::sample::select(vec!["a.py", "a.rs", "a.ts", "a.tsx", "a.js", "a.go", "A.java", "a.txt"]),
    ) {
        let scorer = Scorer::new(Limits::default());
        let (before, after) = (String::from_utf8_lossy(&before).into_owned(), String::from_utf8_lossy(&after).into_owned());
        check(&scorer, path, None, before, after)?;
    }

    #[test]
    fn file_maps_with_odd_paths_are_refused_or_scored(
        paths in prop::collection::vec(".{0,40}", 0..6),
    ) {
        let scorer = Scorer::new(Limits::default());
        let before: Snapshot = paths.iter().map(|p| (p.clone(), "x = 1\n".to_owned())).collect();
        let after: Snapshot = paths.iter().map(|p| (p.clone(), "x = 2\n".to_owned())).collect();
        let _ = scorer.score(&before, &after, &Request::default());
    }
}
