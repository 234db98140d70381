//! Property-based fuzzing of every parser of untrusted input in the domain, with arbitrary
//! bytes and with arbitrary JSON documents: each one answers `Ok` or a described `Err`, never
//! panics. Bounded for CI (`PROPTEST_CASES` raises it for a long run; docs/reliability.md).

use agentrl_core::{
    judge::reply,
    learning::Event,
    trajectory::{Trajectory, schema},
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
    fn judge_replies(text in ".{0,200}", doc in json()) {
        let _ = reply::parse(&text);
        if let Ok(r) = reply::parse(&doc.to_string()) {
            prop_assert!((1.0..=10.0).contains(&r.score) && (0.0..=1.0).contains(&r.confidence));
        }
    }
}
