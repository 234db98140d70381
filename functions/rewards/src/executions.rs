//! The reward use cases, one function per operation: record an execution, verify it (the
//! verifier, the composite reward and the example's class come from `agentrl_core::verify`),
//! read its reward. No HTTP here: each operation returns its own error.

use agentrl_core::{
    TenantId,
    verify::{self, Composite, Context, InvalidInput, Request, classify, composite},
};
use agentrl_store::{
    StoreError,
    clock::now_ms,
    retry::{Contended, optimistic},
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::repo::{
    Example, ExampleFilter, Execution, MAX_VERIFICATIONS, RecordError, RewardRepo, Verification,
};

/// How an execution ended, as the agent platform reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = ExecutionStatus)]
pub(crate) enum RunStatus {
    /// It finished.
    #[default]
    Success,
    /// It finished with a wrong or refused result.
    Failure,
    /// It crashed.
    Error,
    /// It ran out of time.
    Timeout,
}

/// An execution to record, as parsed from the request.
pub(crate) struct NewExecution {
    pub agent_id: String,
    pub agent_version: Option<String>,
    pub input: String,
    pub output: String,
    pub tokens_used: Option<u64>,
    pub cost: Option<f64>,
    pub status: RunStatus,
    pub latency_ms: Option<u64>,
}

/// Why an execution could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("no such execution")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a verification was not recorded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum VerifyError {
    #[error("no such execution")]
    NotFound,
    /// The verifier's input is malformed (nothing is recorded).
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
    #[error("an execution takes at most {MAX_VERIFICATIONS} verifications")]
    Full,
    #[error("the execution is being verified concurrently")]
    Contended,
    /// The verifier's worker thread died.
    #[error("the verifier failed: {0}")]
    Verifier(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Contended for VerifyError {
    fn is_contended(&self) -> bool {
        matches!(self, Self::Contended)
    }
}

impl From<ReadError> for VerifyError {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::NotFound => Self::NotFound,
            ReadError::Store(e) => Self::Store(e),
        }
    }
}

/// Records an execution, not yet verified.
pub(crate) async fn record(
    repo: &RewardRepo,
    tenant: &TenantId,
    new: NewExecution,
) -> Result<Execution, StoreError> {
    let execution = Execution {
        execution_id: uuid::Uuid::now_v7().to_string(),
        agent_id: new.agent_id,
        agent_version: new.agent_version,
        input: new.input,
        output: new.output,
        tokens_used: new.tokens_used,
        cost: new.cost,
        status: new.status,
        latency_ms: new.latency_ms,
        created_at_ms: now_ms(),
        verifications: 0,
        reward: None,
        example_type: None,
    };
    repo.create(tenant, &execution).await?;
    Ok(execution)
}

/// An execution of the tenant, with the version it was read at.
async fn read_versioned(
    repo: &RewardRepo,
    tenant: &TenantId,
    id: &str,
) -> Result<(Execution, u64), ReadError> {
    repo.execution(tenant, id).await?.ok_or(ReadError::NotFound)
}

/// An execution of the tenant.
pub(crate) async fn read(
    repo: &RewardRepo,
    tenant: &TenantId,
    id: &str,
) -> Result<Execution, ReadError> {
    Ok(read_versioned(repo, tenant, id).await?.0)
}

/// An execution, its composite reward and every verification behind it, oldest first.
pub(crate) async fn reward(
    repo: &RewardRepo,
    tenant: &TenantId,
    id: &str,
) -> Result<(Execution, Composite, Vec<Verification>), ReadError> {
    let execution = read(repo, tenant, id).await?;
    let verifications = repo.verifications(tenant, id).await?;
    let outcomes: Vec<_> = verifications.iter().map(|v| v.outcome.clone()).collect();
    Ok((execution, composite(&outcomes), verifications))
}

/// Runs one verifier on an execution and folds its verdict into the execution's reward and
/// training example.
pub(crate) async fn verify(
    repo: &RewardRepo,
    tenant: &TenantId,
    id: &str,
    request: Request,
) -> Result<Verification, VerifyError> {
    let (execution, version) = read_versioned(repo, tenant, id).await?;
    let config = repo.config(tenant).await?;
    let method = request.method();
    // A JUnit report of tens of MB is milliseconds of CPU: keep it off the async workers.
    let outcome = tokio::task::spawn_blocking({
        let (output, config) = (execution.output.clone(), config.clone());
        move || {
            verify::run(
                &request,
                &Context {
                    output: &output,
                    config: &config,
                },
            )
        }
    })
    .await??;
    let verification = Verification {
        verification_id: uuid::Uuid::now_v7().to_string(),
        execution_id: id.to_owned(),
        method,
        outcome,
        created_at_ms: now_ms(),
    };
    fold(repo, tenant, verification, Some((execution, version))).await
}

/// Folds `verification` into its execution's reward and training example: the verification,
/// the execution (at the version its composite was computed from) and the example are written
/// together, so racing verifications never leave a stale reward. Recording a verification id
/// the execution already has changes nothing and returns the stored one: a redelivered
/// evaluation is counted once. `read` is the execution as the caller last read it, if it did.
pub(crate) async fn fold(
    repo: &RewardRepo,
    tenant: &TenantId,
    verification: Verification,
    read: Option<(Execution, u64)>,
) -> Result<Verification, VerifyError> {
    fold_once(repo, tenant, verification, read)
        .await
        .map(|(v, _)| v)
}

/// [`fold`], also saying whether this call recorded the verification (`false`: it was
/// recorded before, by an earlier delivery), for what must be counted once with it.
pub(crate) async fn fold_once(
    repo: &RewardRepo,
    tenant: &TenantId,
    verification: Verification,
    read: Option<(Execution, u64)>,
) -> Result<(Verification, bool), VerifyError> {
    let id = verification.execution_id.as_str();
    let config = &repo.config(tenant).await?;
    let verification = &verification;
    // The first attempt uses the caller's read; a lost race reads again.
    let mut first = read;
    optimistic(move || {
        let first = first.take();
        async move {
            let (mut execution, version) = match first {
                Some(read) => read,
                None => read_versioned(repo, tenant, id).await?,
            };
            let stored = repo.verifications(tenant, id).await?;
            if let Some(done) = stored
                .iter()
                .find(|v| v.verification_id == verification.verification_id)
            {
                return Ok((done.clone(), false));
            }
            if execution.verifications >= MAX_VERIFICATIONS {
                return Err(VerifyError::Full);
            }
            let mut outcomes: Vec<_> = stored.into_iter().map(|v| v.outcome).collect();
            outcomes.push(verification.outcome.clone());
            let c = composite(&outcomes);
            let previous = execution.example_type;
            execution.verifications += 1;
            execution.reward = c.reward;
            execution.example_type = c.reward.map(|r| classify(r, &config.examples));
            let example = c
                .reward
                .zip(execution.example_type)
                .map(|(reward, kind)| Example {
                    execution_id: execution.execution_id.clone(),
                    agent_id: execution.agent_id.clone(),
                    agent_version: execution.agent_version.clone(),
                    prompt: execution.input.clone(),
                    completion: execution.output.clone(),
                    reward,
                    confidence: c.confidence,
                    kind,
                    updated_at_ms: verification.created_at_ms,
                });
            match repo
                .record(
                    tenant,
                    (&execution, version),
                    previous,
                    verification,
                    example.as_ref(),
                )
                .await
            {
                Ok(()) => Ok((verification.clone(), true)),
                Err(RecordError::ExecutionChanged) => Err(VerifyError::Contended),
                Err(RecordError::Store(e)) => Err(e.into()),
            }
        }
    })
    .await
}

/// One page of the tenant's training examples and the next cursor.
///
/// # Errors
/// [`StoreError::Invalid`] for a cursor the store cannot use.
pub(crate) async fn examples(
    repo: &RewardRepo,
    tenant: &TenantId,
    filter: &ExampleFilter<'_>,
    limit: usize,
    cursor: Option<String>,
) -> Result<(Vec<Example>, Option<String>), StoreError> {
    repo.examples(tenant, filter, limit, cursor).await
}
