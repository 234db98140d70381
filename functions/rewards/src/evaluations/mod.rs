//! Evaluations (source design: evaluation combining rules, minimal diff and judges): one call
//! that runs the rule checks, diff scoring when a change is given and the task type's judges,
//! combines them into one verdict and records it as a verification on the execution, so the
//! composite reward and the training example include it.
//!
//! Judges take seconds, so `POST /v1/evaluations` stores the request, queues it and answers
//! 202; the evaluation worker ([`Evaluator`]) does the work and `GET /v1/evaluations/{id}`
//! shows its progress and report.

mod run;
mod store;

use std::collections::BTreeMap;

use agentrl_core::{
    TenantId,
    contracts::EvaluationJob,
    judge::{Judgment, TaskType, Usage},
    verify::{self, Context, Outcome, Request, TestExecution, VerifyConfig},
};
use agentrl_diff::{InputError, Lang, Scorer, SnapshotBody};
use agentrl_store::{StoreError, clock::now_ms, ports::Queue};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

pub use run::{Evaluator, VISIBILITY_TIMEOUT};
pub(crate) use store::EvaluationStore;

use crate::executions::{self, ReadError};
use crate::repo::RewardRepo;

/// Most named checks one evaluation takes.
pub(crate) const MAX_CHECKS: usize = 100;

/// `POST /v1/evaluations`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EvaluationRequest {
    /// The execution the verdict is recorded on.
    pub execution_id: String,
    /// `code`, `text` or `design`: chooses the judges.
    pub task_type: TaskType,
    /// The task as the judges should read it; default: the execution's input.
    #[serde(default)]
    pub task: Option<String>,
    /// The work as text; default: the execution's output.
    #[serde(default)]
    pub output: Option<String>,
    /// The change the agent made, as `/v1/diffs/score` takes it: required when `task_type`
    /// is `code`.
    #[serde(default)]
    pub change: Option<ChangeBody>,
    /// Test results: `{tests_passed, tests_total}` or `{junit_xml}` (the `test_execution`
    /// verifier's parameters, with its rules).
    #[serde(default)]
    pub tests: Option<TestExecution>,
    /// Named pass/fail checks (the `automated_check` verifier's `checks`), at most 100.
    #[serde(default)]
    #[schema(schema_with = checks_schema)]
    pub checks: Option<BTreeMap<String, bool>>,
}

/// `checks`: booleans by name, at most [`MAX_CHECKS`].
fn checks_schema() -> utoipa::openapi::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .description(Some(
            "Named pass/fail checks (the `automated_check` verifier's `checks`), at most 100.",
        ))
        .additional_properties(Some(ObjectBuilder::new().schema_type(Type::Boolean)))
        .max_properties(Some(MAX_CHECKS))
        .into()
}

/// A change: both snapshots of the files it touches.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChangeBody {
    /// The files before the change; with `after`, at most 500 distinct paths (the diff
    /// scorer's limit).
    pub before: SnapshotBody,
    /// The files after the change; with `before`, at most 500 distinct paths.
    pub after: SnapshotBody,
    /// Parse every file as this language instead of by extension: a name or an extension
    /// of `typescript` (`ts`), `tsx`, `javascript` (`js`, `jsx`), `python` (`py`), `rust`
    /// (`rs`), `go` (`golang`) or `java`, in any case.
    #[serde(default)]
    #[schema(
        pattern = r"^(?:[Tt][Yy][Pp][Ee][Ss][Cc][Rr][Ii][Pp][Tt]|[Tt][Ss]|[Tt][Ss][Xx]|[Jj][Aa][Vv][Aa][Ss][Cc][Rr][Ii][Pp][Tt]|[Jj][Ss]|[Jj][Ss][Xx]|[Pp][Yy][Tt][Hh][Oo][Nn]|[Pp][Yy]|[Rr][Uu][Ss][Tt]|[Rr][Ss]|[Gg][Oo]|[Gg][Oo][Ll][Aa][Nn][Gg]|[Jj][Aa][Vv][Aa])$"
    )]
    pub language: Option<String>,
}

/// Where an evaluation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EvaluationStatus {
    /// Waiting for the worker.
    Queued,
    /// The worker is on it: `progress` counts the parts done.
    Running,
    /// The report is ready and the verdict is recorded on the execution.
    Completed,
    /// It could not be done: see `error`. Nothing was recorded on the execution, unless an
    /// earlier delivery recorded the verdict before the one that gave up.
    Failed,
}

/// Parts done of an evaluation's total (rule checks, tests, diff, each judge).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub(crate) struct Progress {
    pub done: u32,
    pub total: u32,
}

/// An evaluation, as stored and shown.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(as = WorkEvaluation)]
pub(crate) struct Evaluation {
    pub evaluation_id: String,
    pub execution_id: String,
    pub task_type: TaskType,
    pub status: EvaluationStatus,
    pub progress: Progress,
    /// Epoch ms.
    pub created_at_ms: u64,
    /// Epoch ms of the last change of status or progress.
    pub updated_at_ms: u64,
    /// Why it failed.
    pub error: Option<String>,
    /// The report, once completed.
    pub report: Option<EvaluationReport>,
}

/// What an evaluation found.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub(crate) struct EvaluationReport {
    /// The verdict in [0, 1]: the confidence-weighted combination of the parts; null when no
    /// part scored; 0 on a safety violation.
    pub reward: Option<f64>,
    /// Confidence of the verdict, in [0, 1].
    pub confidence: f64,
    /// A part found something unsafe (a failed safety check, a hard reward-hacking flag, a
    /// safety judge's score ≤ 2).
    pub safety_violation: bool,
    /// Each part's outcome, by name (`checks`, `tests`, `diff`, `judge:<kind>`).
    #[schema(value_type = Object)]
    pub parts: BTreeMap<String, Outcome>,
    /// The diff-score report of the change, when one was given.
    #[schema(value_type = Option<Object>)]
    pub diff: Option<Value>,
    /// Each judgment with its model, tokens, calls and latency.
    pub judgments: Vec<Judgment>,
    /// Tokens the judges used for this evaluation (cached judgments cost none).
    pub judge_usage: Usage,
    /// The verification recorded on the execution (its id is the evaluation's).
    pub verification_id: String,
}

/// Why an evaluation was not accepted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SubmitError {
    #[error("no such execution")]
    ExecutionNotFound,
    #[error(transparent)]
    Invalid(#[from] agentrl_core::FieldError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The queue refused the message; the evaluation is marked failed.
    #[error("the evaluation could not be queued: {0}")]
    Enqueue(StoreError),
}

impl From<ReadError> for SubmitError {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::NotFound => Self::ExecutionNotFound,
            ReadError::Store(e) => Self::Store(e),
        }
    }
}

/// The parts an evaluation of `request` has: rule checks, tests, diff, the judges.
fn parts(request: &EvaluationRequest) -> u32 {
    1 + u32::from(request.tests.is_some())
        + u32::from(request.change.is_some())
        + request.task_type.judges().len() as u32
}

/// Checks what can be checked before the work is queued, so a malformed request is a 400
/// now rather than a failed evaluation later.
fn check(
    request: &EvaluationRequest,
    scorer: &Scorer,
    config: &VerifyConfig,
) -> Result<(), agentrl_core::FieldError> {
    use agentrl_core::FieldError;
    if request.task_type == TaskType::Code && request.change.is_none() {
        return Err(FieldError::new("change", "is required for task_type code"));
    }
    if let Some(change) = &request.change {
        if let Some(name) = &change.language
            && Lang::from_name(name).is_none()
        {
            return Err(FieldError::new("change.language", Lang::NAMES));
        }
        scorer
            .check(&change.before.files, &change.after.files)
            .map_err(|e: InputError| FieldError::new("change", e.to_string()))?;
    }
    if request
        .checks
        .as_ref()
        .is_some_and(|c| c.len() > MAX_CHECKS)
    {
        return Err(FieldError::new(
            "checks",
            format!("at most {MAX_CHECKS} checks"),
        ));
    }
    if let Some(tests) = &request.tests {
        verify::run(
            &Request::TestExecution(tests.clone()),
            &Context { output: "", config },
        )
        .map_err(|e| e.within("tests"))?;
    }
    Ok(())
}

/// Accepts an evaluation: checks it, stores it and queues it for the worker.
pub(crate) async fn submit(
    repo: &RewardRepo,
    store: &EvaluationStore,
    queue: &dyn Queue,
    scorer: &Scorer,
    tenant: &TenantId,
    request: EvaluationRequest,
) -> Result<Evaluation, SubmitError> {
    executions::read(repo, tenant, &request.execution_id).await?;
    let config = repo.config(tenant).await?;
    check(&request, scorer, &config)?;
    let now = now_ms();
    let evaluation = Evaluation {
        evaluation_id: uuid::Uuid::now_v7().to_string(),
        execution_id: request.execution_id.clone(),
        task_type: request.task_type,
        status: EvaluationStatus::Queued,
        progress: Progress {
            done: 0,
            total: parts(&request),
        },
        created_at_ms: now,
        updated_at_ms: now,
        error: None,
        report: None,
    };
    store.create(tenant, &evaluation, &request).await?;
    let job = serde_json::to_string(&EvaluationJob::new(
        tenant.as_str(),
        &evaluation.evaluation_id,
    ))
    .map_err(|e| StoreError::Backend(e.into()))?;
    if let Err(e) = queue.send(&job).await {
        // Nothing will run it: say so on the record, so a client polling it is not left waiting.
        let failed = Evaluation {
            status: EvaluationStatus::Failed,
            error: Some(format!("could not be queued: {e}")),
            ..evaluation
        };
        store.update(tenant, &failed).await?;
        return Err(SubmitError::Enqueue(e));
    }
    Ok(evaluation)
}

/// An evaluation of the tenant.
pub(crate) async fn read(
    store: &EvaluationStore,
    tenant: &TenantId,
    id: &str,
) -> Result<Option<Evaluation>, StoreError> {
    Ok(store.get(tenant, id).await?.map(|(e, _)| e))
}

/// Why an evaluation's change is not shown.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChangeError {
    #[error("no such evaluation")]
    NotFound,
    #[error("the evaluation was asked without a change")]
    NoChange,
    #[error("the evaluation's request cannot be read: {0}")]
    Unreadable(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The change an evaluation was asked to judge, as it was sent.
pub(crate) async fn change(
    store: &EvaluationStore,
    tenant: &TenantId,
    id: &str,
) -> Result<ChangeBody, ChangeError> {
    if store.get(tenant, id).await?.is_none() {
        return Err(ChangeError::NotFound);
    }
    // The record is written after its request (`EvaluationStore::create`), so a record
    // without one means the request object was removed.
    let request = store
        .request(tenant, id)
        .await?
        .ok_or_else(|| ChangeError::Unreadable("its request object is gone".into()))?
        .map_err(|e| ChangeError::Unreadable(e.to_string()))?;
    request.change.ok_or(ChangeError::NoChange)
}
