//! `code_analysis`: static-analysis quality, from caller-digested scores or recounted from a
//! SARIF 2.1.0 log.
//!
//! SARIF scoring is penalty based: p = errors + 0.25·warnings + 0.05·notes and the value is
//! 1/(1 + p), so a clean log scores 1, one error 0.5, and more findings keep lowering the score
//! without ever reaching 0. A result's level is, in order: `none` when its `kind` is not
//! `fail`; its own `level`; its rule's `defaultConfiguration.level`; `warning` (the SARIF
//! default). Results whose `baselineState` is `absent` (fixed since the baseline) are skipped.
//! Suppressions are not honoured: an inline suppression is exactly what a policy learns to add.
//! Reference: <https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-v2.1.0.html>.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{InvalidInput, Outcome, unit};

const SCORES_VERSION: &str = "code_analysis/scores@1";
const SARIF_VERSION: &str = "code_analysis/sarif@1";
const SCORES_CONFIDENCE: f64 = 0.8;
const SARIF_CONFIDENCE: f64 = 0.9;
/// Weights of lint, complexity and security: security findings matter twice as much.
const SCORE_WEIGHTS: [(&str, f64); 3] = [("lint", 1.0), ("complexity", 1.0), ("security", 2.0)];
const WARNING_PENALTY: f64 = 0.25;
const NOTE_PENALTY: f64 = 0.05;
/// Rule ids listed in the evidence, most frequent first.
const TOP_RULES: usize = 10;

/// Scores in [0, 1] (1 = clean) for any of lint, complexity and security, or a SARIF log.
///
/// Evidence for scores: `{lint, complexity, security, weights}`. For SARIF: `{errors,
/// warnings, notes, none, baseline_absent, penalty, runs, rules: [{id, count}], tools}`, with
/// the ten most frequent rule ids.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeAnalysis {
    /// Linter score. At least one of the three scores, or `sarif`, not both.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1))]
    pub lint: Option<f64>,
    /// Complexity score. At least one of the three scores, or `sarif`, not both.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1))]
    pub complexity: Option<f64>,
    /// Security-scanner score. At least one of the three scores, or `sarif`, not both.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1))]
    pub security: Option<f64>,
    /// A SARIF 2.1.0 log object, instead of the scores.
    #[cfg_attr(feature = "openapi", schema(schema_with = sarif_schema))]
    pub sarif: Option<Value>,
    /// Marks the outcome as a safety violation.
    #[serde(default)]
    pub safety_violation: bool,
}

pub(super) fn verify(r: &CodeAnalysis) -> Result<Outcome, InvalidInput> {
    let scores = [r.lint, r.complexity, r.security];
    match (&r.sarif, scores.iter().any(Option::is_some)) {
        (Some(_), true) => Err(InvalidInput::new(
            "sarif",
            "give scores or a SARIF log, not both",
        )),
        (Some(log), false) => from_sarif(log),
        (None, true) => from_scores(scores),
        (None, false) => Err(InvalidInput::new(
            "lint",
            "give at least one of lint, complexity, security, or sarif",
        )),
    }
}

fn from_scores(scores: [Option<f64>; 3]) -> Result<Outcome, InvalidInput> {
    let (mut sum, mut weights) = (0.0, 0.0);
    for (score, (name, weight)) in scores.into_iter().zip(SCORE_WEIGHTS) {
        if let Some(score) = score {
            sum += weight * unit(name, score)?;
            weights += weight;
        }
    }
    let evidence = json!({
        "lint": scores[0],
        "complexity": scores[1],
        "security": scores[2],
        "weights": Map::from_iter(SCORE_WEIGHTS.map(|(name, w)| (name.to_owned(), json!(w)))),
    });
    let value = (sum / weights).clamp(0.0, 1.0);
    Ok(Outcome::ok(
        value,
        SCORES_CONFIDENCE,
        evidence,
        SCORES_VERSION,
    ))
}

#[derive(Debug, Default)]
struct Tally<'a> {
    errors: u64,
    warnings: u64,
    notes: u64,
    none: u64,
    baseline_absent: u64,
    rules: BTreeMap<&'a str, u64>,
    tools: Vec<String>,
    runs_with_results: usize,
    failed_invocations: Vec<String>,
}

fn from_sarif(log: &Value) -> Result<Outcome, InvalidInput> {
    let not_sarif = || {
        InvalidInput::new(
            "sarif",
            "not a SARIF log: expected an object with a runs array",
        )
    };
    let log = log.as_object().ok_or_else(not_sarif)?;
    if let Some(version) = log.get("version")
        && version != "2.1.0"
    {
        return Err(InvalidInput::new(
            "sarif.version",
            "only SARIF 2.1.0 is supported",
        ));
    }
    let runs = log
        .get("runs")
        .and_then(Value::as_array)
        .ok_or_else(not_sarif)?;
    let mut tally = Tally::default();
    for (i, run) in runs.iter().enumerate() {
        tally_run(&mut tally, run, &format!("sarif.runs[{i}]"))?;
    }
    let penalty = tally.errors as f64
        + WARNING_PENALTY * tally.warnings as f64
        + NOTE_PENALTY * tally.notes as f64;
    let evidence = sarif_evidence(&tally, penalty, runs.len());
    if let Some(failure) = tally.failed_invocations.first() {
        return Ok(Outcome::error(failure.clone(), evidence, SARIF_VERSION));
    }
    if runs.is_empty() {
        return Ok(Outcome::abstain(
            "the log has no runs",
            evidence,
            SARIF_VERSION,
        ));
    }
    if tally.runs_with_results == 0 {
        return Ok(Outcome::abstain(
            "no run reported results",
            evidence,
            SARIF_VERSION,
        ));
    }
    Ok(Outcome::ok(
        1.0 / (1.0 + penalty),
        SARIF_CONFIDENCE,
        evidence,
        SARIF_VERSION,
    )
    .with_raw(penalty))
}

fn tally_run<'a>(tally: &mut Tally<'a>, run: &'a Value, field: &str) -> Result<(), InvalidInput> {
    let run = run
        .as_object()
        .ok_or_else(|| InvalidInput::new(field, "must be a run object"))?;
    let driver = run.get("tool").and_then(|tool| tool.get("driver"));
    let tool_name = driver.and_then(|d| d.get("name")).and_then(Value::as_str);
    if let Some(name) = tool_name {
        let version = driver
            .and_then(|d| d.get("semanticVersion").or_else(|| d.get("version")))
            .and_then(Value::as_str);
        let tool = version.map_or_else(|| name.to_owned(), |v| format!("{name} {v}"));
        if !tally.tools.contains(&tool) {
            tally.tools.push(tool);
        }
    }
    let rules: &[Value] = driver
        .and_then(|d| d.get("rules"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    for invocation in run
        .get("invocations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if invocation.get("executionSuccessful") == Some(&Value::Bool(false)) {
            let message = invocation
                .get("toolExecutionNotifications")
                .and_then(|n| n.get(0))
                .and_then(|n| n.pointer("/message/text"))
                .and_then(Value::as_str)
                .unwrap_or("executionSuccessful is false");
            let tool = tool_name.unwrap_or("unnamed tool");
            tally
                .failed_invocations
                .push(format!("{field} ({tool}): analysis failed: {message}"));
        }
    }
    let results = match run.get("results") {
        // Absent or null: the tool produced no results at all, which is not a clean bill.
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(results)) => results,
        Some(_) => {
            return Err(InvalidInput::new(
                format!("{field}.results"),
                "must be an array",
            ));
        }
    };
    tally.runs_with_results += 1;
    for (j, result) in results.iter().enumerate() {
        let field = format!("{field}.results[{j}]");
        let result = result
            .as_object()
            .ok_or_else(|| InvalidInput::new(&field, "must be a result object"))?;
        if result.get("baselineState").and_then(Value::as_str) == Some("absent") {
            tally.baseline_absent += 1;
            continue;
        }
        let rule = result
            .get("ruleIndex")
            .and_then(Value::as_u64)
            .and_then(|i| rules.get(usize::try_from(i).ok()?));
        match level(result, rule, rules, &field)? {
            "error" => tally.errors += 1,
            "warning" => tally.warnings += 1,
            "note" => tally.notes += 1,
            _ => {
                tally.none += 1;
                continue;
            }
        }
        let id = result
            .get("ruleId")
            .or_else(|| result.get("rule").and_then(|r| r.get("id")))
            .or_else(|| rule.and_then(|r| r.get("id")))
            .and_then(Value::as_str);
        if let Some(id) = id {
            *tally.rules.entry(id).or_default() += 1;
        }
    }
    Ok(())
}

/// What [`from_sarif`] requires of a log, as a JSON Schema: `runs` an array of objects whose
/// `results`, if not null, are objects; `version`, if given, `2.1.0`; and a result's `level`,
/// if given, one of [`level`]'s four, unless the result is skipped (a `baselineState` of
/// `absent`, or a `kind` other than `fail`).
#[cfg(feature = "openapi")]
fn sarif_schema() -> utoipa::openapi::Schema {
    use utoipa::openapi::schema::{AnyOfBuilder, ArrayBuilder, ObjectBuilder, SchemaType, Type};
    let object = || ObjectBuilder::new().schema_type(Type::Object);
    let one_of = |values: &[&str]| {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(values.to_vec()))
    };
    // Any string but `fail`, without lookahead (generators cannot draw from one).
    let not_fail =
        r"^(?:[\s\S]{0,3}|[\s\S]{5,}|[^f][\s\S]{3}|f[^a][\s\S]{2}|fa[^i][\s\S]|fai[^l])$";
    let result = AnyOfBuilder::new()
        .item(
            object()
                .property("baselineState", one_of(&["absent"]))
                .required("baselineState"),
        )
        .item(
            object()
                .property(
                    "kind",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .pattern(Some(not_fail)),
                )
                .required("kind"),
        )
        .item(object().property("level", one_of(&["error", "warning", "note", "none"])));
    let run = object().property(
        "results",
        ArrayBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
            .items(result),
    );
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .description(Some(
            "A SARIF 2.1.0 log object, instead of the scores (at least one of the three \
             scores, or `sarif`, not both).",
        ))
        .property("version", one_of(&["2.1.0"]))
        .property("runs", ArrayBuilder::new().items(run))
        .required("runs")
        .into()
}

/// The effective level of a result (see the module docs).
fn level<'a>(
    result: &'a Map<String, Value>,
    rule: Option<&'a Value>,
    rules: &'a [Value],
    field: &str,
) -> Result<&'a str, InvalidInput> {
    if result
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k != "fail")
    {
        return Ok("none");
    }
    if let Some(level) = result.get("level") {
        return match level.as_str() {
            Some(l @ ("error" | "warning" | "note" | "none")) => Ok(l),
            _ => Err(InvalidInput::new(
                format!("{field}.level"),
                "must be one of error, warning, note, none",
            )),
        };
    }
    let rule = rule.or_else(|| {
        let id = result.get("ruleId")?.as_str()?;
        rules
            .iter()
            .find(|r| r.get("id").and_then(Value::as_str) == Some(id))
    });
    let default = rule
        .and_then(|r| r.pointer("/defaultConfiguration/level"))
        .and_then(Value::as_str)
        .filter(|l| matches!(*l, "error" | "warning" | "note" | "none"));
    Ok(default.unwrap_or("warning"))
}

fn sarif_evidence(tally: &Tally<'_>, penalty: f64, runs: usize) -> Value {
    let mut rules: Vec<(&str, u64)> = tally.rules.iter().map(|(id, n)| (*id, *n)).collect();
    // Stable on the BTreeMap's id order, so ties list alphabetically.
    rules.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    let rules: Vec<Value> = rules
        .into_iter()
        .take(TOP_RULES)
        .map(|(id, count)| json!({ "id": id, "count": count }))
        .collect();
    json!({
        "errors": tally.errors,
        "warnings": tally.warnings,
        "notes": tally.notes,
        "none": tally.none,
        "baseline_absent": tally.baseline_absent,
        "penalty": penalty,
        "runs": runs,
        "rules": rules,
        "tools": tally.tools,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Status;
    use super::*;

    fn scores(lint: Option<f64>, complexity: Option<f64>, security: Option<f64>) -> CodeAnalysis {
        CodeAnalysis {
            lint,
            complexity,
            security,
            ..CodeAnalysis::default()
        }
    }

    fn sarif(log: Value) -> Result<Outcome, InvalidInput> {
        verify(&CodeAnalysis {
            sarif: Some(log),
            ..CodeAnalysis::default()
        })
    }

    #[test]
    fn scores_table() {
        let table = [
            (scores(Some(1.0), None, None), 1.0),
            (scores(Some(0.5), Some(1.0), None), 0.75),
            (scores(Some(1.0), Some(1.0), Some(0.0)), 0.5),
            (scores(None, None, Some(0.25)), 0.25),
        ];
        for (r, value) in table {
            let o = verify(&r).expect("valid");
            assert_eq!((o.status, o.value), (Status::Ok, Some(value)), "{r:?}");
            assert_eq!(o.confidence, SCORES_CONFIDENCE);
        }
    }

    #[test]
    fn invalid_scores_name_the_field() {
        let table = [
            (scores(Some(1.5), None, None), "lint"),
            (scores(None, Some(f64::NAN), None), "complexity"),
            (scores(Some(1.0), None, Some(-0.1)), "security"),
            (scores(None, None, None), "lint"),
        ];
        for (r, field) in table {
            assert_eq!(verify(&r).expect_err("invalid").field, field, "{r:?}");
        }
        let mut both = scores(Some(1.0), None, None);
        both.sarif = Some(json!({"version": "2.1.0", "runs": []}));
        assert_eq!(verify(&both).expect_err("invalid").field, "sarif");
    }

    fn log(results: Value) -> Value {
        json!({
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {
                    "name": "clippy", "version": "0.1.95",
                    "rules": [
                        {"id": "R0"},
                        {"id": "R1", "defaultConfiguration": {"level": "error"}},
                    ],
                }},
                "results": results,
            }],
        })
    }

    #[test]
    fn sarif_levels_and_penalty() {
        let o = sarif(log(json!([
            {"ruleId": "R0", "level": "error", "message": {"text": "x"}},
            {"ruleId": "R0"},
            {"ruleId": "R0", "level": "warning"},
            {"ruleId": "R1"},
            {"ruleIndex": 1},
            {"ruleId": "R2", "level": "note"},
            {"ruleId": "R2", "level": "none"},
            {"ruleId": "R0", "kind": "pass"},
            {"ruleId": "R0", "level": "error", "baselineState": "absent"},
        ])))
        .expect("valid");
        assert_eq!(o.status, Status::Ok);
        // 3 errors (explicit, R1 by id, R1 by index), 2 warnings, 1 note.
        let penalty = 3.0 + 0.5 + 0.05;
        assert_eq!(o.raw_value, Some(penalty));
        assert_eq!(o.value, Some(1.0 / (1.0 + penalty)));
        assert_eq!(o.confidence, SARIF_CONFIDENCE);
        let e = &o.evidence;
        assert_eq!(
            (
                e["errors"].as_u64(),
                e["warnings"].as_u64(),
                e["notes"].as_u64()
            ),
            (Some(3), Some(2), Some(1))
        );
        assert_eq!(e["none"], 2);
        assert_eq!(e["baseline_absent"], 1);
        assert_eq!(
            e["rules"],
            json!([{"id": "R0", "count": 3}, {"id": "R1", "count": 2}, {"id": "R2", "count": 1}])
        );
        assert_eq!(e["tools"], json!(["clippy 0.1.95"]));
    }

    #[test]
    fn clean_logs_score_one_and_missing_results_abstain() {
        let o = sarif(log(json!([]))).expect("valid");
        assert_eq!((o.value, o.raw_value), (Some(1.0), Some(0.0)));
        let o = sarif(log(Value::Null)).expect("valid");
        assert_eq!(o.status, Status::Abstain);
        let o = sarif(json!({"runs": []})).expect("valid");
        assert_eq!(o.status, Status::Abstain);
    }

    #[test]
    fn failed_invocations_are_errors() {
        let mut l = log(json!([]));
        l["runs"][0]["invocations"] = json!([{
            "executionSuccessful": false,
            "toolExecutionNotifications": [{"message": {"text": "could not compile"}}],
        }]);
        let o = sarif(l).expect("valid");
        assert_eq!((o.status, o.value), (Status::Error, None));
        let reason = o.reason.expect("reason");
        assert!(
            reason.contains("could not compile") && reason.contains("clippy"),
            "{reason}"
        );
    }

    #[test]
    fn malformed_logs_name_the_field() {
        let table = [
            (json!([]), "sarif"),
            (json!({"version": "2.1.0"}), "sarif"),
            (json!({"version": "1.0.0", "runs": []}), "sarif.version"),
            (json!({"runs": [1]}), "sarif.runs[0]"),
            (json!({"runs": [{"results": {}}]}), "sarif.runs[0].results"),
            (
                json!({"runs": [{"results": [1]}]}),
                "sarif.runs[0].results[0]",
            ),
            (
                json!({"runs": [{"results": [{"level": "fatal"}]}]}),
                "sarif.runs[0].results[0].level",
            ),
        ];
        for (l, field) in table {
            assert_eq!(sarif(l.clone()).expect_err("invalid").field, field, "{l}");
        }
    }
}
