//! The evaluation worker: takes a queued evaluation, runs its parts, records the verdict on
//! the execution and completes the report. Redelivery is harmless: a finished evaluation is
//! acknowledged as it is, judgments come from the cache (or the claim of the worker making
//! them) instead of a second provider call, and the verdict's verification id is the
//! evaluation's, so it is counted once.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::{Duration, Instant},
};

use agentrl_core::{
    TenantId,
    contracts::EvaluationJob,
    judge::{DiffFacts, JudgeKind, Judgment, Subject, Usage, artifact_checks, combine},
    verify::{self, AutomatedCheck, Context, Method, Outcome, Request, Status, VerifyConfig},
};
use agentrl_diff::{Lang, Scorer, Snapshot, Weights};
use agentrl_http::{
    consume::{self, Outcome as Delivery},
    sqs::Consumer,
};
use agentrl_judges::{Ask, Judges, Provider};
use agentrl_store::{
    MAX_RECEIVES,
    clock::now_ms,
    ports::{Message, Objects, Queue, Table},
    tenant_config::TenantConfig,
};
use futures::{StreamExt, stream::FuturesUnordered};

use super::{Evaluation, EvaluationReport, EvaluationStatus, EvaluationStore};
use crate::{
    executions::{self, VerifyError},
    repo::{RewardRepo, Verification},
};

/// How long one evaluation may take, judges included (the worker's Lambda timeout is 180 s).
const EVALUATION_DEADLINE: Duration = Duration::from_secs(120);

/// How long a received evaluation stays invisible to other workers: the deployed queue's
/// (`template.yaml`, six times the worker's 180 s timeout), so one worker has it at a time.
pub const VISIBILITY_TIMEOUT: Duration = Duration::from_secs(1080);

/// Runs queued evaluations. Cheap to clone.
#[derive(Clone)]
pub struct Evaluator {
    repo: RewardRepo,
    store: EvaluationStore,
    judges: Judges,
    scorer: Arc<Scorer>,
    weights: TenantConfig<Weights>,
    queue: Arc<dyn Queue>,
    kpis: agentrl_http::kpis::KpiLedger,
}

impl Evaluator {
    /// A worker over `table` and `objects`, dead-lettering through `queue` (the evaluation
    /// queue), calling `provider` for judgments and scoring changes with `scorer`.
    pub fn new(
        table: Arc<dyn Table>,
        objects: Arc<dyn Objects>,
        queue: Arc<dyn Queue>,
        provider: Arc<Provider>,
        scorer: Arc<Scorer>,
    ) -> Self {
        Self {
            repo: RewardRepo::new(table.clone()),
            store: EvaluationStore::new(table.clone(), objects),
            judges: Judges::new(table.clone(), provider),
            kpis: agentrl_http::kpis::KpiLedger::new(table.clone()),
            scorer,
            weights: TenantConfig::new(table, agentrl_diff::WEIGHTS_CONFIG),
            queue,
        }
    }

    /// Handles one message. A transient failure on the last delivery gives up instead of
    /// leaving the evaluation "running" for the queue to park.
    async fn handle(&self, message: &Message) -> Delivery {
        match self.evaluate_message(message).await.into() {
            Delivery::Retry(reason) if message.receive_count >= MAX_RECEIVES => {
                let reason = format!("gave up after {} attempts: {reason}", message.receive_count);
                self.give_up(message, reason).await
            }
            outcome => outcome,
        }
    }

    /// Marks the message's evaluation failed, then dead-letters the message with `reason`;
    /// retried when the mark cannot be written (the queue's own redrive then parks it).
    async fn give_up(&self, message: &Message, reason: String) -> Delivery {
        tracing::error!(message_id = %message.id, %reason, "evaluation failed for good");
        let job = serde_json::from_str::<EvaluationJob>(&message.body).ok();
        let tenant = job.as_ref().and_then(|j| TenantId::parse(&j.tenant).ok());
        if let (Some(job), Some(tenant)) = (job, tenant) {
            let marked = match self.store.get(&tenant, &job.evaluation_id).await {
                Ok(Some((evaluation, _))) => {
                    self.fail(&tenant, evaluation, reason.clone()).await.is_ok()
                }
                Ok(None) => true,
                Err(_) => false,
            };
            if !marked {
                return Delivery::Retry(format!("the evaluation was not marked failed: {reason}"));
            }
        }
        Delivery::Poison(reason)
    }

    async fn evaluate_message(&self, message: &Message) -> Result<(), Delivery> {
        let job: EvaluationJob = consume::decode(&message.body, "an evaluation job")?;
        let tenant =
            TenantId::parse(&job.tenant).map_err(|e| Delivery::Poison(format!("tenant: {e}")))?;
        let Some((evaluation, _)) = self.store.get(&tenant, &job.evaluation_id).await? else {
            return Err(Delivery::Poison(format!(
                "no evaluation {} for tenant {tenant}",
                job.evaluation_id
            )));
        };
        if matches!(
            evaluation.status,
            EvaluationStatus::Completed | EvaluationStatus::Failed
        ) {
            return Ok(());
        }
        self.evaluate(&tenant, evaluation).await
    }

    async fn fail(
        &self,
        tenant: &TenantId,
        mut evaluation: Evaluation,
        error: String,
    ) -> Result<(), Delivery> {
        evaluation.status = EvaluationStatus::Failed;
        evaluation.error = Some(error);
        evaluation.updated_at_ms = now_ms();
        self.store.update(tenant, &evaluation).await?;
        Ok(())
    }

    async fn advance(
        &self,
        tenant: &TenantId,
        evaluation: &mut Evaluation,
    ) -> Result<(), Delivery> {
        evaluation.progress.done = (evaluation.progress.done + 1).min(evaluation.progress.total);
        evaluation.updated_at_ms = now_ms();
        self.store.update(tenant, evaluation).await?;
        Ok(())
    }

    async fn evaluate(&self, t: &TenantId, mut evaluation: Evaluation) -> Result<(), Delivery> {
        let id = evaluation.evaluation_id.clone();
        let request = match self.store.request(t, &id).await? {
            Some(Ok(request)) => request,
            Some(Err(e)) => {
                return self
                    .fail(t, evaluation, format!("unreadable request: {e}"))
                    .await;
            }
            None => {
                return self
                    .fail(t, evaluation, "the request is gone".to_owned())
                    .await;
            }
        };
        let Some((execution, _)) = self.repo.execution(t, &request.execution_id).await? else {
            return self
                .fail(t, evaluation, "the execution no longer exists".to_owned())
                .await;
        };
        let deadline = Instant::now() + EVALUATION_DEADLINE;
        evaluation.status = EvaluationStatus::Running;
        evaluation.progress.done = 0;
        evaluation.updated_at_ms = now_ms();
        self.store.update(t, &evaluation).await?;

        let verify_config = self.repo.config(t).await?;
        let task = request.task.as_deref().unwrap_or(&execution.input);
        let output = request
            .output
            .as_deref()
            .or(Some(execution.output.as_str()))
            .filter(|o| !o.trim().is_empty());
        let mut parts: BTreeMap<String, Outcome> = BTreeMap::new();

        let changed = request
            .change
            .as_ref()
            .is_some_and(|c| c.before.files != c.after.files);
        // The computed checks come last: a client cannot vouch for them.
        let mut checks = request.checks.clone().unwrap_or_default();
        checks.extend(artifact_checks(request.task_type, output, changed));
        let check = Request::AutomatedCheck(AutomatedCheck {
            checks,
            safety_violation: false,
        });
        parts.insert("checks".to_owned(), run(&check, &verify_config));
        self.advance(t, &mut evaluation).await?;

        let tests = request.tests.clone().map(|tests| {
            let outcome = run(&Request::TestExecution(tests), &verify_config);
            parts.insert("tests".to_owned(), outcome.clone());
            outcome
        });
        if tests.is_some() {
            self.advance(t, &mut evaluation).await?;
        }

        let (mut facts, mut diff, mut unified, mut flagged) = (None, None, None, None);
        if let Some(change) = &request.change {
            let weights = self.weights.get(t).await?;
            let tests_passed = tests
                .as_ref()
                .is_some_and(|o| o.status == Status::Ok && o.value == Some(1.0));
            let scored = self
                .score(
                    change.before.files.clone(),
                    change.after.files.clone(),
                    change.language.as_deref(),
                    tests_passed,
                    weights.clone(),
                )
                .await;
            let report = match scored {
                Ok(report) => report,
                Err(reason) => return self.fail(t, evaluation, reason).await,
            };
            let hard_flags: BTreeSet<String> = report
                .flags
                .iter()
                .filter(|f| weights.hard_flags.contains(&f.kind))
                .map(|f| {
                    serde_json::to_value(f.kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                })
                .collect();
            flagged = Some(!report.flags.is_empty());
            let found = DiffFacts {
                minimality_score: report.minimality_score,
                exact: report.exact,
                hard_flags: hard_flags.into_iter().collect(),
            };
            parts.insert("diff".to_owned(), found.outcome());
            facts = Some(found);
            diff = serde_json::to_value(&report).ok();
            unified = Some(unified_diff(&change.before.files, &change.after.files));
            self.advance(t, &mut evaluation).await?;
        }

        let judge_config = self.judges.config(t).await?;
        let subject = Subject {
            task,
            output,
            change: unified.as_deref(),
        };
        let kinds = request.task_type.judges();
        let mut pending: FuturesUnordered<_> = kinds
            .iter()
            .map(|kind| {
                let ask = Ask {
                    rubric: kind.rubric(),
                    subject: subject.clone(),
                    diff: facts.as_ref(),
                    deadline,
                };
                let judges = &self.judges;
                let judge_config = &judge_config;
                async move { (*kind, judges.judge(t, judge_config, &ask).await) }
            })
            .collect();
        let mut judgments: Vec<(JudgeKind, Judgment)> = Vec::new();
        while let Some((kind, judgment)) = pending.next().await {
            let judgment = judgment?;
            parts.insert(
                format!("judge:{}", kind.as_str()),
                judgment.outcome(&verify_config),
            );
            judgments.push((kind, judgment));
            self.advance(t, &mut evaluation).await?;
        }
        drop(pending);
        judgments.sort_by_key(|(kind, _)| kinds.iter().position(|k| k == kind));

        let named: Vec<(String, Outcome)> = parts.clone().into_iter().collect();
        let verdict = combine(&named);
        let verification = Verification {
            verification_id: id.clone(),
            execution_id: request.execution_id.clone(),
            method: Method::Evaluation,
            outcome: verdict,
            created_at_ms: now_ms(),
        };
        // A re-run after a crash finds the verdict it recorded then: the report shows that one.
        let recorded = match executions::fold_once(&self.repo, t, verification, None).await {
            Ok((recorded, first)) => {
                // A change the evaluation scored counts in the KPIs as one scored through
                // `POST /v1/diffs/score` does, once, with the verdict that records it.
                if first && let Some(flagged) = flagged {
                    let counts = agentrl_core::kpi::KpiCounts {
                        diffs_scored: 1,
                        reward_hacking_flagged: u64::from(flagged),
                        ..Default::default()
                    };
                    self.kpis.record(t, now_ms(), &counts).await;
                }
                recorded.outcome
            }
            Err(VerifyError::Contended) => {
                return Err(Delivery::Retry("the execution is contended".to_owned()));
            }
            Err(VerifyError::Store(e)) => return Err(e.into()),
            Err(e) => {
                return self
                    .fail(t, evaluation, format!("the verdict was not recorded: {e}"))
                    .await;
            }
        };
        let judge_usage = judgments
            .iter()
            .fold(Usage::default(), |sum, (_, j)| sum.plus(j.usage));
        evaluation.report = Some(EvaluationReport {
            reward: recorded.value,
            confidence: recorded.confidence,
            safety_violation: recorded.safety_violation,
            parts,
            diff,
            judgments: judgments.into_iter().map(|(_, j)| j).collect(),
            judge_usage,
            verification_id: id,
        });
        evaluation.status = EvaluationStatus::Completed;
        evaluation.progress.done = evaluation.progress.total;
        evaluation.updated_at_ms = now_ms();
        self.store.update(t, &evaluation).await?;
        Ok(())
    }

    /// The diff-score report of a change, off the async workers.
    async fn score(
        &self,
        before: Snapshot,
        after: Snapshot,
        language: Option<&str>,
        tests_passed: bool,
        weights: Weights,
    ) -> Result<agentrl_diff::Report, String> {
        let request = agentrl_diff::Request {
            lang: language.and_then(Lang::from_name),
            tests_passed,
            weights,
        };
        let scorer = self.scorer.clone();
        tokio::task::spawn_blocking(move || scorer.score(&before, &after, &request))
            .await
            .map_err(|e| format!("the scorer failed: {e}"))?
            .map_err(|e| format!("change: {e}"))
    }
}

impl Consumer for Evaluator {
    /// Every message of the batch at once: an evaluation mostly waits on its judges.
    async fn process(&self, messages: &[Message]) -> Vec<String> {
        consume::each(self.queue.as_ref(), messages, messages.len(), |m| {
            self.handle(m)
        })
        .await
    }
}

/// A verifier's outcome; a malformed request (checked at submission) as an error outcome.
fn run(request: &Request, config: &VerifyConfig) -> Outcome {
    verify::run(request, &Context { output: "", config })
        .unwrap_or_else(|e| Outcome::error(e.to_string(), serde_json::json!({}), "evaluation@1"))
}

/// The change as the unified diff a judge reads, file by file in path order.
fn unified_diff(before: &Snapshot, after: &Snapshot) -> String {
    let paths: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut text = String::new();
    for path in paths {
        let (old, new) = (before.get(path), after.get(path));
        if old == new {
            continue;
        }
        let diff = similar::TextDiff::from_lines(
            old.map_or("", String::as_str),
            new.map_or("", String::as_str),
        );
        let (a, b) = (
            old.map_or_else(|| "/dev/null".to_owned(), |_| format!("a/{path}")),
            new.map_or_else(|| "/dev/null".to_owned(), |_| format!("b/{path}")),
        );
        text.push_str(
            &diff
                .unified_diff()
                .context_radius(3)
                .header(&a, &b)
                .to_string(),
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unified_diff_shows_each_changed_file_once() {
        let before: Snapshot = [
            ("a.py".to_owned(), "x = 1\ny = 2\n".to_owned()),
            ("same.py".to_owned(), "z\n".to_owned()),
            ("gone.py".to_owned(), "old\n".to_owned()),
        ]
        .into();
        let after: Snapshot = [
            ("a.py".to_owned(), "x = 1\ny = 3\n".to_owned()),
            ("same.py".to_owned(), "z\n".to_owned()),
            ("new.py".to_owned(), "fresh\n".to_owned()),
        ]
        .into();
        let text = unified_diff(&before, &after);
        assert!(text.contains("--- a/a.py\n+++ b/a.py\n"), "{text}");
        assert!(text.contains("-y = 2\n+y = 3\n"));
        assert!(text.contains("--- a/gone.py\n+++ /dev/null\n"));
        assert!(text.contains("--- /dev/null\n+++ b/new.py\n"));
        assert!(!text.contains("same.py"));
    }
}
