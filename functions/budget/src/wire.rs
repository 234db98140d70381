//! Request and response bodies: the wire shapes, separate from the domain types.

use agentrl_core::{
    FieldError,
    budget::{
        Action, AdaptiveConfig, Assessment, Budget, BudgetConfig, Complexity, Decision, Feature,
        Outcome, Report, Status, TaskDescription, TierConfig, Trigger, TriggerConfig,
    },
};
use agentrl_http::{ApiError, fingerprint};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::budgets::{NewBudget, NewReport};

/// Longest accepted task description, in characters (as JSON Schema counts a `maxLength`).
pub(crate) const MAX_DESCRIPTION_CHARS: usize = 16 * 1024;
/// Most hints accepted per list (files touched, tools available).
pub(crate) const MAX_HINTS: usize = 1_000;
/// Longest hint, in characters.
pub(crate) const MAX_HINT_CHARS: usize = 1_024;
/// Longest id (task id, report id) accepted.
pub(crate) const MAX_ID_CHARS: usize = 256;
/// Largest token count of one report.
pub(crate) const MAX_REPORT_TOKENS: u64 = 1 << 40;

/// The task a budget is for.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskBody {
    /// Free-text description, 1 to 16384 characters. White space alone is accepted: the
    /// assessment reads it as a description of no words, like any other short one.
    #[schema(min_length = 1, max_length = 16384)]
    pub description: String,
    /// Files the task is expected to touch: at most 1000, each 1 to 1024 characters.
    #[serde(default)]
    #[schema(max_items = 1000, min_length = 1, max_length = 1024)]
    pub files_touched: Vec<String>,
    /// Tools the agent may use: at most 1000, each 1 to 1024 characters.
    #[serde(default)]
    #[schema(max_items = 1000, min_length = 1, max_length = 1024)]
    pub tools_available: Vec<String>,
}

/// `POST /v1/budgets`.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateBudgetBody {
    /// The caller's task id (1 to 256 characters).
    #[schema(min_length = 1, max_length = 256)]
    pub task_id: String,
    /// The task.
    pub task: TaskBody,
    /// Skip the assessment and use this tier.
    pub complexity: Option<Complexity>,
}

fn id_ok(field: &str, v: &str) -> Result<(), ApiError> {
    if v.is_empty() || v.chars().count() > MAX_ID_CHARS {
        return Err(ApiError::invalid(
            field,
            format!("must be 1 to {MAX_ID_CHARS} characters"),
        ));
    }
    Ok(())
}

/// Sizes are checked here; the assessment itself accepts any text.
impl TryFrom<CreateBudgetBody> for NewBudget {
    type Error = ApiError;

    fn try_from(body: CreateBudgetBody) -> Result<Self, ApiError> {
        id_ok("task_id", &body.task_id)?;
        let d = &body.task.description;
        if d.is_empty() || d.chars().count() > MAX_DESCRIPTION_CHARS {
            return Err(ApiError::invalid(
                "task.description",
                format!("must be 1 to {MAX_DESCRIPTION_CHARS} characters"),
            ));
        }
        for (field, list) in [
            ("task.files_touched", &body.task.files_touched),
            ("task.tools_available", &body.task.tools_available),
        ] {
            let bad_hint = |h: &String| h.is_empty() || h.chars().count() > MAX_HINT_CHARS;
            if list.len() > MAX_HINTS || list.iter().any(bad_hint) {
                return Err(ApiError::invalid(
                    field,
                    format!("at most {MAX_HINTS} entries of 1 to {MAX_HINT_CHARS} characters"),
                ));
            }
        }
        Ok(Self {
            task_id: body.task_id,
            task: TaskDescription {
                description: body.task.description,
                files_touched: body.task.files_touched,
                tools_available: body.task.tools_available,
            },
            complexity: body.complexity,
        })
    }
}

/// `POST /v1/budgets/{id}/consumption`.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConsumptionBody {
    /// Idempotency key of the report: the same id counts once (1 to 256 characters).
    #[schema(min_length = 1, max_length = 256)]
    pub report_id: String,
    /// Tokens spent since the last report (at most 2^40).
    #[schema(maximum = 1_099_511_627_776_u64)]
    pub tokens: u64,
    /// The agent's confidence in [0, 1].
    #[schema(minimum = 0, maximum = 1)]
    pub confidence: Option<f64>,
    /// An explicit escalation trigger.
    pub trigger: Option<Trigger>,
    /// True when this report ends an orchestration loop that did not solve the task.
    #[serde(default)]
    pub loop_completed: bool,
}

impl TryFrom<ConsumptionBody> for NewReport {
    type Error = ApiError;

    fn try_from(body: ConsumptionBody) -> Result<Self, ApiError> {
        id_ok("report_id", &body.report_id)?;
        if body.tokens > MAX_REPORT_TOKENS {
            return Err(ApiError::invalid(
                "tokens",
                format!("must not exceed {MAX_REPORT_TOKENS}"),
            ));
        }
        if let Some(c) = body.confidence
            && !(0.0..=1.0).contains(&c)
        {
            return Err(ApiError::invalid("confidence", "must be between 0 and 1"));
        }
        Ok(Self {
            fingerprint: fingerprint(&body),
            report: Report {
                tokens: body.tokens,
                confidence: body.confidence,
                trigger: body.trigger,
                loop_completed: body.loop_completed,
            },
            report_id: body.report_id,
        })
    }
}

/// `POST /v1/budgets/{id}/complete`.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CompleteBody {
    /// How the task ended.
    pub outcome: Outcome,
}

/// A feature that decided the tier.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FeatureView {
    name: String,
    observed: String,
    weight: i32,
}

/// Why the budget got its tier.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AssessmentView {
    /// The additive score (absent when overridden).
    score: Option<i32>,
    /// True when the caller's `complexity` was used.
    overridden: bool,
    /// The features with a non-zero weight.
    features: Vec<FeatureView>,
}

impl From<&Assessment> for AssessmentView {
    fn from(a: &Assessment) -> Self {
        Self {
            score: a.score,
            overridden: a.overridden,
            features: a
                .features
                .iter()
                .map(
                    |Feature {
                         name,
                         observed,
                         weight,
                     }| FeatureView {
                        name: name.clone(),
                        observed: observed.clone(),
                        weight: *weight,
                    },
                )
                .collect(),
        }
    }
}

/// A granted escalation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EscalationView {
    trigger: Trigger,
    added_tokens: u64,
    at_ms: u64,
}

/// A budget.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct BudgetView {
    budget_id: String,
    task_id: String,
    complexity: Complexity,
    allocated_tokens: u64,
    consumed_tokens: u64,
    max_total_tokens: u64,
    /// Escalations granted, oldest first.
    escalations: Vec<EscalationView>,
    loops_completed: u32,
    status: Status,
    outcome: Option<Outcome>,
    assessment: AssessmentView,
    created_at_ms: u64,
    updated_at_ms: u64,
}

impl From<&Budget> for BudgetView {
    fn from(b: &Budget) -> Self {
        Self {
            budget_id: b.budget_id.clone(),
            task_id: b.task_id.clone(),
            complexity: b.complexity(),
            allocated_tokens: b.allocated_tokens,
            consumed_tokens: b.consumed_tokens,
            max_total_tokens: b.max_total_tokens,
            escalations: b
                .escalations
                .iter()
                .map(|e| EscalationView {
                    trigger: e.trigger,
                    added_tokens: e.added_tokens,
                    at_ms: e.at_ms,
                })
                .collect(),
            loops_completed: b.loops_completed,
            status: b.status,
            outcome: b.outcome,
            assessment: (&b.assessment).into(),
            created_at_ms: b.created_at_ms,
            updated_at_ms: b.updated_at_ms,
        }
    }
}

/// A page of budgets, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct BudgetPage {
    pub budgets: Vec<BudgetView>,
    /// Present while more may follow: pass it as `cursor`.
    pub next_cursor: Option<String>,
}

/// The answer to a consumption report.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DecisionView {
    action: Action,
    accepted_tokens: u64,
    consumed_tokens: u64,
    allocated_tokens: u64,
    max_total_tokens: u64,
    loops_completed: u32,
    /// Why a requested escalation was refused, when it was.
    escalation_refused: Option<String>,
}

impl From<&Decision> for DecisionView {
    fn from(d: &Decision) -> Self {
        Self {
            action: d.action,
            accepted_tokens: d.accepted_tokens,
            consumed_tokens: d.consumed_tokens,
            allocated_tokens: d.allocated_tokens,
            max_total_tokens: d.max_total_tokens,
            loops_completed: d.loops_completed,
            escalation_refused: d.escalation_refused.clone(),
        }
    }
}

/// One tier's settings; omitted fields keep the defaults.
#[derive(Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TierBody {
    /// Tokens allocated when a budget opens: at least 1, and at most this tier's
    /// `max_total_tokens` (its default when omitted).
    #[schema(minimum = 1, maximum = 1_099_511_627_776_u64)]
    base_tokens: Option<u64>,
    /// The tier's ceiling: at least its `base_tokens` and at most `hard_ceiling_tokens` (their
    /// defaults when omitted).
    #[schema(minimum = 1, maximum = 1_099_511_627_776_u64)]
    max_total_tokens: Option<u64>,
    /// The triggers that may escalate a budget of this tier, each listed once.
    #[schema(value_type = Option<BTreeSet<Trigger>>)]
    allowed_triggers: Option<Vec<Trigger>>,
}

/// The three tiers.
#[derive(Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TiersBody {
    trivial: Option<TierBody>,
    standard: Option<TierBody>,
    complex: Option<TierBody>,
}

/// One trigger's settings.
#[derive(Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TriggerBody {
    /// Tokens one escalation adds (at most 2^40).
    #[schema(maximum = 1_099_511_627_776_u64)]
    additional_tokens: Option<u64>,
    /// Minimum time between two escalations by this trigger on one budget (at most a day).
    #[schema(maximum = 86_400)]
    cooldown_seconds: Option<u64>,
}

/// The three triggers, by their wire names.
#[derive(Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TriggersBody {
    #[serde(rename = "low-confidence")]
    low_confidence: Option<TriggerBody>,
    #[serde(rename = "partial-success")]
    partial_success: Option<TriggerBody>,
    #[serde(rename = "verifier-rejection")]
    verifier_rejection: Option<TriggerBody>,
}

/// Adaptive allocation settings.
#[derive(Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AdaptiveBody {
    enabled: Option<bool>,
    /// Share (0–100) of the tenant's tasks that get adaptive allocation (default 100).
    #[schema(minimum = 0, maximum = 100)]
    percent: Option<f64>,
    /// The quantile of successful consumption to allocate, in (0, 1].
    #[schema(exclusive_minimum = 0, maximum = 1)]
    quantile: Option<f64>,
    /// Extra room on top of the quantile, as a fraction in [0, 10].
    #[schema(minimum = 0, maximum = 10)]
    headroom: Option<f64>,
    /// Successful budgets needed before the learned value is used: at least 1, and at most
    /// `window` (its default, 200, when omitted).
    #[schema(minimum = 1, maximum = 10_000)]
    min_samples: Option<usize>,
    /// Recent successful budgets remembered per tier: 1 to 10000, and at least `min_samples`
    /// (its default, 20, when omitted).
    #[schema(minimum = 1, maximum = 10_000)]
    window: Option<usize>,
    /// The learned allocation never goes below this many tokens (at most 2^40).
    #[schema(maximum = 1_099_511_627_776_u64)]
    floor_tokens: Option<u64>,
}

/// A tenant's budget configuration. `PUT` replaces it: omitted fields take the defaults, and
/// the result is checked as a whole (a tier's `base_tokens` ≤ its `max_total_tokens` ≤
/// `hard_ceiling_tokens`; `adaptive.min_samples` ≤ `adaptive.window`).
#[derive(Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BudgetConfigBody {
    tiers: Option<TiersBody>,
    triggers: Option<TriggersBody>,
    /// A reported confidence below this fires the low-confidence trigger; in [0, 1].
    #[schema(minimum = 0, maximum = 1)]
    low_confidence_threshold: Option<f64>,
    /// No tier may allocate more: 1 to 2^40, and at least every tier's `max_total_tokens`
    /// (their defaults, up to 16000, when omitted).
    #[schema(minimum = 1, maximum = 1_099_511_627_776_u64)]
    hard_ceiling_tokens: Option<u64>,
    /// Escalations allowed per budget (at most 100).
    #[schema(maximum = 100)]
    max_escalations: Option<u32>,
    /// Orchestration loops allowed before the task goes to a human (1 to 100).
    #[schema(minimum = 1, maximum = 100)]
    max_loops: Option<u32>,
    adaptive: Option<AdaptiveBody>,
}

fn merge_tier(into: &mut TierConfig, body: Option<TierBody>) {
    let Some(b) = body else { return };
    into.base_tokens = b.base_tokens.unwrap_or(into.base_tokens);
    into.max_total_tokens = b.max_total_tokens.unwrap_or(into.max_total_tokens);
    if let Some(t) = b.allowed_triggers {
        into.allowed_triggers = t;
    }
}

fn merge_trigger(into: &mut TriggerConfig, body: Option<TriggerBody>) {
    let Some(b) = body else { return };
    into.additional_tokens = b.additional_tokens.unwrap_or(into.additional_tokens);
    into.cooldown_seconds = b.cooldown_seconds.unwrap_or(into.cooldown_seconds);
}

impl BudgetConfigBody {
    /// The defaults overridden by the body, validated.
    pub(crate) fn into_domain(self) -> Result<BudgetConfig, FieldError> {
        let mut c = BudgetConfig::default();
        let tiers = self.tiers.unwrap_or_default();
        merge_tier(&mut c.trivial, tiers.trivial);
        merge_tier(&mut c.standard, tiers.standard);
        merge_tier(&mut c.complex, tiers.complex);
        let triggers = self.triggers.unwrap_or_default();
        merge_trigger(&mut c.low_confidence, triggers.low_confidence);
        merge_trigger(&mut c.partial_success, triggers.partial_success);
        merge_trigger(&mut c.verifier_rejection, triggers.verifier_rejection);
        c.low_confidence_threshold = self
            .low_confidence_threshold
            .unwrap_or(c.low_confidence_threshold);
        c.hard_ceiling_tokens = self.hard_ceiling_tokens.unwrap_or(c.hard_ceiling_tokens);
        c.max_escalations = self.max_escalations.unwrap_or(c.max_escalations);
        c.max_loops = self.max_loops.unwrap_or(c.max_loops);
        if let Some(a) = self.adaptive {
            let d = &mut c.adaptive;
            d.enabled = a.enabled.unwrap_or(d.enabled);
            d.percent = a.percent.unwrap_or(d.percent);
            d.quantile = a.quantile.unwrap_or(d.quantile);
            d.headroom = a.headroom.unwrap_or(d.headroom);
            d.min_samples = a.min_samples.unwrap_or(d.min_samples);
            d.window = a.window.unwrap_or(d.window);
            d.floor_tokens = a.floor_tokens.unwrap_or(d.floor_tokens);
        }
        c.validate()
            .map_err(|e| FieldError::new(wire_field(&e.field), e.reason))?;
        Ok(c)
    }

    /// The full configuration, every field present.
    pub(crate) fn from_domain(c: &BudgetConfig) -> Self {
        let tier = |t: &TierConfig| TierBody {
            base_tokens: Some(t.base_tokens),
            max_total_tokens: Some(t.max_total_tokens),
            allowed_triggers: Some(t.allowed_triggers.clone()),
        };
        let trigger = |t: &TriggerConfig| TriggerBody {
            additional_tokens: Some(t.additional_tokens),
            cooldown_seconds: Some(t.cooldown_seconds),
        };
        let AdaptiveConfig {
            enabled,
            percent,
            quantile,
            headroom,
            min_samples,
            window,
            floor_tokens,
        } = c.adaptive;
        Self {
            tiers: Some(TiersBody {
                trivial: Some(tier(&c.trivial)),
                standard: Some(tier(&c.standard)),
                complex: Some(tier(&c.complex)),
            }),
            triggers: Some(TriggersBody {
                low_confidence: Some(trigger(&c.low_confidence)),
                partial_success: Some(trigger(&c.partial_success)),
                verifier_rejection: Some(trigger(&c.verifier_rejection)),
            }),
            low_confidence_threshold: Some(c.low_confidence_threshold),
            hard_ceiling_tokens: Some(c.hard_ceiling_tokens),
            max_escalations: Some(c.max_escalations),
            max_loops: Some(c.max_loops),
            adaptive: Some(AdaptiveBody {
                enabled: Some(enabled),
                percent: Some(percent),
                quantile: Some(quantile),
                headroom: Some(headroom),
                min_samples: Some(min_samples),
                window: Some(window),
                floor_tokens: Some(floor_tokens),
            }),
        }
    }
}

/// Maps a domain field path (`trivial.base_tokens`) to the wire path (`tiers.trivial.base_tokens`).
fn wire_field(domain: &str) -> String {
    let (head, rest) = domain.split_once('.').unwrap_or((domain, ""));
    let prefixed = |group: &str, name: &str| {
        if rest.is_empty() {
            format!("{group}.{name}")
        } else {
            format!("{group}.{name}.{rest}")
        }
    };
    match head {
        "trivial" | "standard" | "complex" => prefixed("tiers", head),
        "low_confidence" | "partial_success" | "verifier_rejection" => {
            prefixed("triggers", &head.replace('_', "-"))
        }
        _ => domain.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use utoipa::PartialSchema;

    use super::*;
    use agentrl_testkit::schema::bounds_hold;

    /// `T`'s schema as the document serves it.
    fn schema<T: PartialSchema>() -> Value {
        serde_json::to_value(T::schema()).unwrap()
    }

    #[test]
    fn request_schemas_state_the_checked_limits() {
        let task = &schema::<TaskBody>()["properties"];
        assert_eq!(task["description"]["maxLength"], MAX_DESCRIPTION_CHARS);
        for list in ["files_touched", "tools_available"] {
            assert_eq!(task[list]["maxItems"], MAX_HINTS);
            assert_eq!(task[list]["items"]["maxLength"], MAX_HINT_CHARS);
        }
        let create = &schema::<CreateBudgetBody>()["properties"];
        assert_eq!(create["task_id"]["maxLength"], MAX_ID_CHARS);
        let consumption = &schema::<ConsumptionBody>()["properties"];
        assert_eq!(consumption["report_id"]["maxLength"], MAX_ID_CHARS);
        assert_eq!(consumption["tokens"]["maximum"], MAX_REPORT_TOKENS);
    }

    /// Lengths are in characters, as the schema's `maxLength` counts them.
    #[test]
    fn text_limits_count_characters() {
        let body = |description: String, hint: String| CreateBudgetBody {
            task_id: "t".to_owned(),
            task: TaskBody {
                description,
                files_touched: vec![hint],
                tools_available: Vec::new(),
            },
            complexity: None,
        };
        let (longest, hint) = (
            "é".repeat(MAX_DESCRIPTION_CHARS),
            "é".repeat(MAX_HINT_CHARS),
        );
        let refused =
            |b: CreateBudgetBody| NewBudget::try_from(b).err().and_then(|e| e.problem().field);
        assert_eq!(refused(body(longest.clone(), hint.clone())), None);
        assert_eq!(refused(body(" ".to_owned(), hint.clone())), None);
        assert_eq!(
            refused(body(longest + "é", hint.clone())).as_deref(),
            Some("task.description")
        );
        assert_eq!(
            refused(body("x".to_owned(), hint + "é")).as_deref(),
            Some("task.files_touched")
        );
    }

    /// Each numeric bound the configuration's schema declares is the one `into_domain`
    /// checks: the bound is accepted and the next value past it refused.
    #[test]
    fn config_schema_bounds_are_the_checked_ones() {
        let top = MAX_REPORT_TOKENS;
        let tier = |base: u64, max: u64| json!({"base_tokens": base, "max_total_tokens": max});
        // Tiers of one token under the highest ceiling, one sample in the widest window: each
        // bound is then reachable without breaking a cross-field rule.
        let small = json!({
            "hard_ceiling_tokens": top,
            "tiers": {"trivial": tier(1, 1), "standard": tier(1, 1), "complex": tier(1, 1)},
            "adaptive": {"min_samples": 1, "window": 10_000},
        });
        let mut wide = small.clone();
        wide["tiers"]["trivial"] = tier(1, top);
        let (config, tiers, triggers, adaptive) = (
            schema::<BudgetConfigBody>(),
            schema::<TierBody>(),
            schema::<TriggerBody>(),
            schema::<AdaptiveBody>(),
        );
        let cases: [(&Value, &[&str], &Value); 14] = [
            (&small, &["hard_ceiling_tokens"], &config),
            (&small, &["low_confidence_threshold"], &config),
            (&small, &["max_escalations"], &config),
            (&small, &["max_loops"], &config),
            (&wide, &["tiers", "trivial", "base_tokens"], &tiers),
            (&small, &["tiers", "trivial", "max_total_tokens"], &tiers),
            (
                &small,
                &["triggers", "low-confidence", "additional_tokens"],
                &triggers,
            ),
            (
                &small,
                &["triggers", "low-confidence", "cooldown_seconds"],
                &triggers,
            ),
            (&small, &["adaptive", "percent"], &adaptive),
            (&small, &["adaptive", "quantile"], &adaptive),
            (&small, &["adaptive", "headroom"], &adaptive),
            (&small, &["adaptive", "min_samples"], &adaptive),
            (&small, &["adaptive", "window"], &adaptive),
            (&small, &["adaptive", "floor_tokens"], &adaptive),
        ];
        let accepted = |body: &Value, path: &[&str], value: Value| {
            let mut body = body.clone();
            let mut at = &mut body;
            for key in path {
                at = &mut at[*key];
            }
            *at = value;
            serde_json::from_value::<BudgetConfigBody>(body)
                .ok()
                .is_some_and(|b| b.into_domain().is_ok())
        };
        for (body, path, schema) in cases {
            bounds_hold(schema, path.last().unwrap(), |v| accepted(body, path, v));
        }
    }

    #[test]
    fn config_round_trips_and_errors_use_wire_paths() {
        let full = BudgetConfigBody::from_domain(&BudgetConfig::default());
        let json = serde_json::to_string(&full).unwrap();
        let back: BudgetConfigBody = serde_json::from_str(&json).unwrap();
        assert_eq!(back.into_domain().unwrap(), BudgetConfig::default());

        let bad: BudgetConfigBody =
            serde_json::from_str(r#"{"tiers": {"trivial": {"base_tokens": 5000}}}"#).unwrap();
        let e = bad.into_domain().unwrap_err();
        assert_eq!(e.field, "tiers.trivial.base_tokens");

        let bad: BudgetConfigBody = serde_json::from_str(
            r#"{"triggers": {"low-confidence": {"cooldown_seconds": 999999}}}"#,
        )
        .unwrap();
        let e = bad.into_domain().unwrap_err();
        assert_eq!(e.field, "triggers.low-confidence.cooldown_seconds");
    }
}
