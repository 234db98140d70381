//! Property-based fuzzing of every parser of untrusted input in the domain, with arbitrary
//! bytes and with arbitrary JSON documents: each one answers `Ok` or a described `Err`, never
//! panics. Bounded for CI (`PROPTEST_CASES` raises it for a long run; docs/reliability.md).

use agentrl_core::{
    attribution::{CoalitionTable, exact_shapley},
    budget::BudgetConfig,
    judge::{JudgeConfig, reply},
    learning::{Event, LearningConfig},
    trajectory::{Trajectory, TurnRewardWeights, schema},
    verify::{self, CodeAnalysis, Context, Request, VerifyConfig, junit},
};
use proptest::prelude::*;
use serde_json::Value;

/// Any JSON document: nulls, booleans, numbers, strings, arrays and objects, nested.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,24}".prop_map(Value::String),
        // The field names and values the parsers look for, so the fuzzer gets past the
        // first check.
        prop::sample::select(vec![
            "runs",
            "results",
            "level",
            "error",
            "warning",
            "invocations",
            "executionSuccessful",
            "tool",
            "driver",
            "type",
            "object",
            "properties",
            "required",
            "items",
            "enum",
            "minimum",
            "maxLength",
            "pattern",
            "role",
            "assistant",
            "user",
            "tool_call",
            "turns",
            "feedback.created",
        ])
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(5, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "version",
                    "runs",
                    "results",
                    "level",
                    "invocations",
                    "executionSuccessful",
                    "type",
                    "properties",
                    "required",
                    "items",
                    "enum",
                    "minimum",
                    "maximum",
                    "maxLength",
                    "pattern",
                    "trajectory_id",
                    "agent_id",
                    "turns",
                    "role",
                    "content",
                    "tool_call",
                    "name",
                    "arguments",
                    "event_id",
                    "value",
                    "occurred_at_ms",
                    "user_id",
                    "final_outcome",
                    // Config bodies.
                    "base_tokens",
                    "max_total_tokens",
                    "tiers",
                    "adaptive",
                    "hard_ceiling_tokens",
                    "policy",
                    "epsilon",
                    "update_threshold",
                    "trait_bounds",
                    "judge_min_confidence",
                    "business_metrics",
                    "examples",
                    "timeout_ms",
                    "max_retries",
                    "gates",
                    "prices",
                    "information_gain",
                    "format",
                    "progress",
                    "x",
                ])
                .prop_map(str::to_owned),
                inner,
                0..8,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// XML-looking text: tags, attributes and entities of JUnit reports, shuffled.
fn xmlish() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "<testsuites>",
            "</testsuites>",
            "<testsuite name=\"s\" tests=\"3\">",
            "</testsuite>",
            "<testcase name=\"t\" classname=\"c\">",
            "</testcase>",
            "<testcase name=\"x\"/>",
            "<failure message=\"m\"/>",
            "<error/>",
            "<skipped/>",
            "<![CDATA[",
            "]]>",
            "&amp;",
            "&#x1F600;",
            "&bogus;",
            "<?xml version=\"1.0\"?>",
            "<!DOCTYPE x [<!ENTITY a \"b\">]>",
            "\u{0}",
            "é",
            " ",
            "<",
            ">",
            "\"",
        ]),
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: agentrl_testkit::proptest_cases(256), ..ProptestConfig::default() })]

    #[test]
    fn junit_reports(bytes in prop::collection::vec(any::<u8>(), 0..512), xml in xmlish()) {
        let _ = junit::count(&bytes);
        let _ = junit::count(xml.as_bytes());
    }

    #[test]
    fn sarif_logs(log in json()) {
        let request = Request::CodeAnalysis(CodeAnalysis { sarif: Some(log), ..CodeAnalysis::default() });
        let config = VerifyConfig::default();
        if let Ok(outcome) = verify::run(&request, &Context { output: "", config: &config }) {
            prop_assert!(outcome.value.is_none_or(|v| (0.0..=1.0).contains(&v)));
        }
    }

    #[test]
    fn trajectories(doc in json(), bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(t) = serde_json::from_value::<Trajectory>(doc) {
            let _ = t.validate();
        }
        if let Ok(t) = serde_json::from_slice::<Trajectory>(&bytes) {
            let _ = t.validate();
        }
    }

    #[test]
    fn tool_schemas(schema_doc in json(), value in json()) {
        let _ = schema::check(&schema_doc, &value);
    }

    #[test]
    fn learning_events(doc in json()) {
        if let Ok(e) = serde_json::from_value::<Event>(doc) {
            let _ = e.validate();
        }
    }

    #[test]
    fn config_bodies(doc in json()) {
        if let Ok(c) = serde_json::from_value::<BudgetConfig>(doc.clone()) {
            let _ = c.validate();
        }
        if let Ok(c) = serde_json::from_value::<LearningConfig>(doc.clone()) {
            let _ = c.validate();
        }
        if let Ok(c) = serde_json::from_value::<JudgeConfig>(doc.clone()) {
            let _ = c.validate();
        }
        if let Ok(c) = serde_json::from_value::<VerifyConfig>(doc.clone()) {
            let _ = c.validate();
        }
        if let Ok(w) = serde_json::from_value::<TurnRewardWeights>(doc) {
            let _ = w.validate();
        }
    }

    /// Coalition tables as callers list them: members by index (out of range, repeated, any
    /// order), coalitions missing or given twice. A table that builds has Shapley values that
    /// share out exactly v(N) − v(∅).
    #[test]
    fn coalition_tables(
        n in 0usize..7,
        entries in prop::collection::vec(
            (prop::collection::vec(0usize..8, 0..7), -1e6f64..1e6),
            0..140,
        ),
    ) {
        if let Ok(table) = CoalitionTable::from_members(n, entries) {
            let shares: f64 = exact_shapley(&table).shapley.iter().sum();
            let full = table.value_of((1u32 << n) - 1) - table.value_of(0);
            prop_assert!((shares - full).abs() <= 1e-6 * (1.0 + full.abs()), "{shares} vs {full}");
        }
    }

    /// Complete tables listed in any order, members in any order, then maybe damaged: an
    /// entry dropped (an incomplete table is refused) or repeated (refused as given twice).
    #[test]
    fn complete_coalition_tables(
        n in 1usize..7,
        values in prop::collection::vec(-1e6f64..1e6, 64),
        order in any::<u64>(),
        damage in 0u8..3,
    ) {
        use rand::{SeedableRng, seq::SliceRandom};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(order);
        let mut entries: Vec<(Vec<usize>, f64)> = (1u32..1 << n)
            .map(|mask| {
                let mut members: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
                members.shuffle(&mut rng);
                (members, values[mask as usize])
            })
            .collect();
        entries.shuffle(&mut rng);
        match damage {
            0 => {
                let table = CoalitionTable::from_members(n, entries.clone());
                prop_assert!(table.is_ok(), "{table:?}");
                let table = table.unwrap();
                let shares: f64 = exact_shapley(&table).shapley.iter().sum();
                let full = values[(1usize << n) - 1];
                prop_assert!((shares - full).abs() <= 1e-6 * (1.0 + full.abs()), "{shares} vs {full}");
            }
            1 => {
                entries.pop();
                prop_assert!(CoalitionTable::from_members(n, entries).is_err());
            }
            _ => {
                let again = entries[0].clone();
                entries.push(again);
                prop_assert!(CoalitionTable::from_members(n, entries).is_err());
            }
        }
    }

    #[test]
    fn judge_replies(text in ".{0,200}", doc in json()) {
        let _ = reply::parse(&text);
        if let Ok(r) = reply::parse(&doc.to_string()) {
            prop_assert!((1.0..=10.0).contains(&r.score) && (0.0..=1.0).contains(&r.confidence));
        }
    }
}
