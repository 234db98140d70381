//! The coverage-guided fuzz targets: one function per parser of untrusted input, taking the
//! raw bytes a client, a stored object or a model could send. Each answers whether the input
//! was accepted or refused with a described error; a panic, or a figure out of its range, is a
//! crash. `src/main.rs` hands them to AFL++ (`infra/scripts/fuzz.sh`); `tests/corpus.rs`
//! replays the seed corpus (`fuzz/corpus/<target>/`) and the inputs that once crashed a target
//! (`fuzz/regressions/<target>/`) through them in every test run.

use agentrl_core::{
    attribution::{CoalitionTable, exact_shapley},
    budget::BudgetConfig,
    judge::{JudgeConfig, reply},
    learning::{Event, LearningConfig},
    trajectory::{Trajectory, TurnRewardWeights, schema},
    verify::{self, Context, VerifyConfig, junit},
};
use agentrl_diff::{Lang, Limits, Request, Scorer, Snapshot};
use serde_json::Value;

/// What a target made of its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Parsed, validated and used.
    Accepted,
    /// Refused with an error, as it should be for malformed input.
    Refused,
}

impl From<bool> for Outcome {
    fn from(accepted: bool) -> Self {
        if accepted {
            Outcome::Accepted
        } else {
            Outcome::Refused
        }
    }
}

#[derive(Debug)]
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]) -> Outcome,
}

/// Every target, by the name `infra/scripts/fuzz.sh` and the corpus directories use.
pub const TARGETS: [Target; 10] = [
    Target {
        name: "junit",
        run: junit_report,
    },
    Target {
        name: "verification",
        run: verification,
    },
    Target {
        name: "trajectory",
        run: trajectory,
    },
    Target {
        name: "tool-schema",
        run: tool_schema,
    },
    Target {
        name: "event",
        run: event,
    },
    Target {
        name: "config",
        run: config,
    },
    Target {
        name: "coalitions",
        run: coalitions,
    },
    Target {
        name: "judge-reply",
        run: judge_reply,
    },
    Target {
        name: "diff",
        run: diff,
    },
    Target {
        name: "turns",
        run: turns,
    },
];

pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// The two parts of an input that holds two documents, split at its first NUL byte.
fn halves(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

fn unit(x: f64) -> bool {
    (0.0..=1.0).contains(&x)
}

/// A JUnit XML report, recounted as `test_execution` does with a `junit_xml` body.
pub fn junit_report(data: &[u8]) -> Outcome {
    match junit::count(data) {
        Ok(c) => {
            assert_eq!(
                c.passed + c.failed + c.errored + c.skipped,
                c.total,
                "{c:?}"
            );
            Outcome::Accepted
        }
        Err(_) => Outcome::Refused,
    }
}

/// A body of `POST /v1/executions/{id}/verifications`: any method (SARIF logs, JUnit reports,
/// regular expressions and JSON Schemas for answer matching, ratings…), run on a fixed output.
pub fn verification(data: &[u8]) -> Outcome {
    let Ok(request) = serde_json::from_slice::<verify::Request>(data) else {
        return Outcome::Refused;
    };
    let config = VerifyConfig::default();
    let context = Context {
        output: "The answer is {\"value\": 42}.",
        config: &config,
    };
    match verify::run(&request, &context) {
        Ok(outcome) => {
            assert!(outcome.value.is_none_or(unit), "{outcome:?}");
            Outcome::Accepted
        }
        Err(_) => Outcome::Refused,
    }
}

/// A body of `POST /v1/trajectories`.
pub fn trajectory(data: &[u8]) -> Outcome {
    serde_json::from_slice::<Trajectory>(data)
        .is_ok_and(|t| t.validate().is_ok())
        .into()
}

/// A tool's JSON Schema and a call's arguments, as a trajectory's tool calls are checked:
/// two JSON documents separated by a NUL byte.
pub fn tool_schema(data: &[u8]) -> Outcome {
    let (schema_doc, value) = halves(data);
    let (Ok(schema_doc), Ok(value)) = (
        serde_json::from_slice::<Value>(schema_doc),
        serde_json::from_slice::<Value>(value),
    ) else {
        return Outcome::Refused;
    };
    schema::check(&schema_doc, &value).is_ok().into()
}

/// A body of `POST /v1/events`: one event or an array of them.
pub fn event(data: &[u8]) -> Outcome {
    let valid = |item| serde_json::from_value::<Event>(item).is_ok_and(|e| e.validate().is_ok());
    match serde_json::from_slice::<Value>(data) {
        Ok(Value::Array(items)) => items.into_iter().all(valid).into(),
        Ok(item) => valid(item).into(),
        Err(_) => Outcome::Refused,
    }
}

/// A body of `PUT /v1/config/{kind}`, tried as every configuration it could be.
pub fn config(data: &[u8]) -> Outcome {
    let Ok(doc) = serde_json::from_slice::<Value>(data) else {
        return Outcome::Refused;
    };
    let budget =
        serde_json::from_value::<BudgetConfig>(doc.clone()).is_ok_and(|c| c.validate().is_ok());
    let learning =
        serde_json::from_value::<LearningConfig>(doc.clone()).is_ok_and(|c| c.validate().is_ok());
    let judge =
        serde_json::from_value::<JudgeConfig>(doc.clone()).is_ok_and(|c| c.validate().is_ok());
    let rewards =
        serde_json::from_value::<VerifyConfig>(doc.clone()).is_ok_and(|c| c.validate().is_ok());
    let weights =
        serde_json::from_value::<TurnRewardWeights>(doc).is_ok_and(|w| w.validate().is_ok());
    (budget || learning || judge || rewards || weights).into()
}

/// Agents in a coalition table, as `POST /v1/attributions` accepts it.
const MAX_TABLE_AGENTS: usize = 20;

/// A coalition table as `[agents, [[[member indices…], value], …]]`. A table that builds has
/// Shapley values that share out v(N) − v(∅), up to the rounding of sums of its values: the
/// error grows with the largest |v(S)|, not with v(N) (a table holding 1e20 and 0.25 cannot
/// share out 0.25 to the last digit in f64).
pub fn coalitions(data: &[u8]) -> Outcome {
    let Ok((n, entries)) = serde_json::from_slice::<(usize, Vec<(Vec<usize>, f64)>)>(data) else {
        return Outcome::Refused;
    };
    if n > MAX_TABLE_AGENTS {
        return Outcome::Refused;
    }
    let Ok(table) = CoalitionTable::from_members(n, entries) else {
        return Outcome::Refused;
    };
    let shares: f64 = exact_shapley(&table).shapley.iter().sum();
    let full = table.value_of((1u32 << n) - 1) - table.value_of(0);
    let largest = table.values().iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(
        (shares - full).abs() <= 1e-9 * (1.0 + largest),
        "{shares} vs {full}"
    );
    Outcome::Accepted
}

/// A judge model's reply, whatever the model wrote.
pub fn judge_reply(data: &[u8]) -> Outcome {
    match reply::parse(&String::from_utf8_lossy(data)) {
        Ok(r) => {
            assert!(
                (1.0..=10.0).contains(&r.score) && unit(r.confidence),
                "{r:?}"
            );
            Outcome::Accepted
        }
        Err(_) => Outcome::Refused,
    }
}

/// A change to one file, as `POST /v1/diffs/score` scores it: the first byte picks the grammar
/// (or none: line metrics only), the rest is the text before and after, split at a NUL byte.
pub fn diff(data: &[u8]) -> Outcome {
    let Some((&pick, rest)) = data.split_first() else {
        return Outcome::Refused;
    };
    let lang = Lang::ALL
        .get(usize::from(pick) % (Lang::ALL.len() + 1))
        .copied();
    let path = if lang.is_some() {
        "src/file"
    } else {
        "notes.txt"
    };
    let (before, after) = halves(rest);
    let side = |text: &[u8]| -> Snapshot {
        [(path.to_owned(), String::from_utf8_lossy(text).into_owned())].into()
    };
    let request = Request {
        lang,
        tests_passed: true,
        ..Request::default()
    };
    // A fresh scorer per input: a shared parse cache would make an input's outcome depend on
    // the inputs before it. Past the size limits a change is refused; within them it is scored.
    let Ok(report) = Scorer::new(Limits::default()).score(&side(before), &side(after), &request)
    else {
        return Outcome::Refused;
    };
    assert!(
        unit(report.ast_similarity)
            && unit(report.reward_multiplier)
            && unit(report.line_change_ratio),
        "{report:?}"
    );
    Outcome::Accepted
}

/// A turn-table object read back by the dataset job and the trainer, every row decoded.
pub fn turns(data: &[u8]) -> Outcome {
    match agentrl_turns::read_turns(bytes::Bytes::copy_from_slice(data)) {
        Ok(mut rows) => rows.all(|row| row.is_ok()).into(),
        Err(_) => Outcome::Refused,
    }
}
