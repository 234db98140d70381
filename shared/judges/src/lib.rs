//! Model judges: ask a tenant's provider for one rubric's judgment of a subject, at most once
//! per (artifact, rubric version, model) while the cached judgment lives, and never a silent
//! 0: a judge that cannot answer abstains with the reason, or gives the tenant's rule-based
//! fallback marked as such.
//!
//! A library rather than a part of `functions/rewards`: the rewards function (evaluations,
//! gates, the judge settings and usage routes) and the ingest worker (turn rewards judged by
//! the critic model) both ask for judgments, and function crates never depend on each other.
//! The pure part (rubrics, prompts, reply parsing, settings) is `agentrl_core::judge`.

#![deny(missing_docs)]

mod client;
mod repo;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use agentrl_core::{
    TenantId,
    judge::{
        DiffFacts, Fallback, JudgeConfig, JudgeKind, Judgment, Rubric, Source, Subject, messages,
        repair, reply, rule_score,
    },
};
use agentrl_store::{StoreError, clock::now_ms, ports::Table, tenant_config::TenantConfig};
use sha2::{Digest, Sha256};

pub use client::Provider;
use client::{Call, Spent};
use repo::{JudgeRepo, UsageRecord};
pub use repo::{ModelUsage, UsageTotals};

/// How often a worker waiting on another's claim looks for the judgment.
const CLAIM_POLL: Duration = Duration::from_millis(200);

/// The judges of every tenant. Cheap to clone.
#[derive(Clone)]
pub struct Judges {
    provider: Arc<Provider>,
    repo: JudgeRepo,
}

/// Where a judgment to make stands against other workers making the same one.
enum Claim {
    /// A judgment is cached (made earlier, or by the worker that held the claim).
    Cached(Judgment),
    /// This worker holds the claim: it asks the model.
    Taken,
    /// Another worker held the claim past this one's deadline: this one asks the model too
    /// (rather than abstain), and leaves the other's claim alone.
    Outwaited,
}

/// One judgment to make.
pub struct Ask<'a> {
    /// What to judge on.
    pub rubric: &'static Rubric,
    /// What to judge.
    pub subject: Subject<'a>,
    /// What diff scoring found, for the rule-based fallback.
    pub diff: Option<&'a DiffFacts>,
    /// When the answer is needed by.
    pub deadline: Instant,
}

impl Judges {
    /// Judges over `table`, calling `provider`.
    pub fn new(table: Arc<dyn Table>, provider: Arc<Provider>) -> Self {
        Self {
            provider,
            repo: JudgeRepo::new(table),
        }
    }

    /// The tenants' judge settings (`tenant#config#judges`).
    pub fn configs(&self) -> TenantConfig<JudgeConfig> {
        self.repo.configs()
    }

    /// The judge settings of `t` (the defaults until it sets them).
    ///
    /// # Errors
    /// When the table fails.
    pub async fn config(&self, t: &TenantId) -> Result<JudgeConfig, StoreError> {
        self.repo.config(t).await
    }

    /// Usage by model and by purpose over `[from, to)`.
    ///
    /// # Errors
    /// When the table fails.
    pub async fn usage(&self, t: &TenantId, from: u64, to: u64) -> Result<UsageTotals, StoreError> {
        self.repo.usage(t, from, to).await
    }

    /// The judgment `ask` calls for, under the tenant's `config`.
    ///
    /// # Errors
    /// Only when the table fails; provider failures are abstentions (or the fallback).
    pub async fn judge(
        &self,
        t: &TenantId,
        config: &JudgeConfig,
        ask: &Ask<'_>,
    ) -> Result<Judgment, StoreError> {
        let started = Instant::now();
        let rubric = ask.rubric;
        let model = config.model(rubric.role);
        let Some(base_url) = self.provider.base_url(config.base_url.as_deref()) else {
            return Ok(fallback(
                config,
                ask,
                "no judge provider is configured",
                started,
            ));
        };
        let key = cache_key(rubric, base_url.trim_end_matches('/'), model, &ask.subject);
        let claimed = match self.wait_for_claim(t, &key, ask.deadline).await? {
            Claim::Cached(judgment) => return Ok(cached(judgment, started)),
            Claim::Taken => true,
            Claim::Outwaited => false,
        };
        let result = self
            .ask_model(t, config, ask, base_url, model, &key, started)
            .await;
        if claimed {
            self.repo.release(t, &key).await?;
        }
        result
    }

    /// Takes the claim on `key`, or waits for its holder's judgment.
    async fn wait_for_claim(
        &self,
        t: &TenantId,
        key: &str,
        deadline: Instant,
    ) -> Result<Claim, StoreError> {
        let claim_until = now_ms() / 1000 + deadline_seconds(deadline) + 1;
        loop {
            if let Some(judgment) = self.repo.cached(t, key).await? {
                return Ok(Claim::Cached(judgment));
            }
            if self.repo.claim(t, key, claim_until).await? {
                return Ok(Claim::Taken);
            }
            if Instant::now() + CLAIM_POLL >= deadline {
                return Ok(Claim::Outwaited);
            }
            tokio::time::sleep(CLAIM_POLL).await;
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn ask_model(
        &self,
        t: &TenantId,
        config: &JudgeConfig,
        ask: &Ask<'_>,
        base_url: &str,
        model: &str,
        key: &str,
        started: Instant,
    ) -> Result<Judgment, StoreError> {
        let rubric = ask.rubric;
        let first = messages(rubric, &ask.subject);
        let mut call = Call {
            base_url,
            model,
            messages: &first,
            timeout: Duration::from_millis(config.timeout_ms),
            max_retries: config.max_retries,
            max_concurrency: config.max_concurrency,
            deadline: ask.deadline,
        };
        let (answer, mut spent) = self.provider.complete(t, &call).await;
        let outcome = match answer {
            Err(e) => Err(e.to_string()),
            Ok(answer) => match reply::parse(&answer.content) {
                Ok(r) => Ok(r),
                Err(problem) => {
                    // One repair: the model sees its reply and what is wrong with it.
                    let second = repair(&first, &answer.content, &problem);
                    call.messages = &second;
                    let (again, more) = self.provider.complete(t, &call).await;
                    spent = Spent {
                        calls: spent.calls + more.calls,
                        usage: spent.usage.plus(more.usage),
                    };
                    match again {
                        Err(e) => Err(format!("invalid reply ({problem}), then {e}")),
                        Ok(a) => reply::parse(&a.content)
                            .map_err(|again| format!("invalid reply twice: {problem}; {again}")),
                    }
                }
            },
        };
        // Every judgment that reached the provider is counted, tokens reported or not.
        if spent.calls > 0 {
            self.repo
                .record_usage(
                    t,
                    &UsageRecord {
                        at_ms: now_ms(),
                        model: model.to_owned(),
                        kind: rubric.name.to_owned(),
                        calls: spent.calls,
                        usage: spent.usage,
                        cost: spent.usage.cost(config.prices.get(model)),
                    },
                )
                .await?;
        }
        let reply = match outcome {
            Ok(reply) => reply,
            Err(reason) => {
                let mut judgment = fallback(config, ask, &reason, started);
                judgment.model = Some(model.to_owned());
                judgment.usage = spent.usage;
                judgment.calls = spent.calls;
                return Ok(judgment);
            }
        };
        let judgment = Judgment {
            kind: rubric.name.to_owned(),
            rubric_version: rubric.version.to_owned(),
            source: Source::Model,
            model: Some(model.to_owned()),
            score: Some(reply.score),
            reasoning: Some(reply.reasoning),
            confidence: Some(reply.confidence),
            reason: None,
            usage: spent.usage,
            calls: spent.calls,
            latency_ms: started.elapsed().as_millis() as u64,
            cached: false,
        };
        self.repo
            .cache(
                t,
                key,
                &judgment,
                now_ms() / 1000 + config.cache_ttl_seconds,
            )
            .await?;
        Ok(judgment)
    }
}

/// A cached judgment as served now: nothing spent on it.
fn cached(judgment: Judgment, started: Instant) -> Judgment {
    Judgment {
        cached: true,
        usage: Default::default(),
        calls: 0,
        latency_ms: started.elapsed().as_millis() as u64,
        ..judgment
    }
}

/// What a judge that cannot answer gives: the rule-based score when the tenant asks for it
/// and the kind has one (marked `source: rules`), else an abstention with `reason`.
fn fallback(config: &JudgeConfig, ask: &Ask<'_>, reason: &str, started: Instant) -> Judgment {
    let rubric = ask.rubric;
    let mut judgment = Judgment::abstained(rubric.name, rubric.version, reason);
    judgment.latency_ms = started.elapsed().as_millis() as u64;
    let kind = JudgeKind::ALL
        .into_iter()
        .find(|k| k.as_str() == rubric.name);
    if config.fallback == Fallback::Rules
        && let Some((score, confidence, reasoning)) =
            kind.and_then(|k| rule_score(k, ask.subject.task, ask.subject.output, ask.diff))
    {
        judgment.source = Source::Rules;
        judgment.score = Some(score);
        judgment.confidence = Some(confidence);
        judgment.reasoning = Some(reasoning);
    }
    judgment
}

fn deadline_seconds(deadline: Instant) -> u64 {
    deadline.saturating_duration_since(Instant::now()).as_secs()
}

/// The cache key of a judgment: the artifact (each part length-prefixed, so parts cannot run
/// into each other), the rubric version, the provider and the model, hashed.
fn cache_key(rubric: &Rubric, base_url: &str, model: &str, subject: &Subject<'_>) -> String {
    let mut hash = Sha256::new();
    for part in [
        Some(rubric.version),
        Some(base_url),
        Some(model),
        Some(subject.task),
        subject.output,
        subject.change,
    ] {
        match part {
            Some(text) => {
                hash.update((text.len() as u64 + 1).to_le_bytes());
                hash.update(text.as_bytes());
            }
            None => hash.update(0u64.to_le_bytes()),
        }
    }
    hex::encode(hash.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_key_changes_with_every_part_and_only_with_them() {
        let rubric = JudgeKind::Relevance.rubric();
        let subject = Subject {
            task: "t",
            output: Some("o"),
            change: None,
        };
        let base = cache_key(rubric, "u", "m", &subject);
        assert_eq!(base, cache_key(rubric, "u", "m", &subject.clone()));
        let variants = [
            cache_key(JudgeKind::Safety.rubric(), "u", "m", &subject),
            cache_key(rubric, "u2", "m", &subject),
            cache_key(rubric, "u", "m2", &subject),
            cache_key(
                rubric,
                "u",
                "m",
                &Subject {
                    task: "t2",
                    ..subject.clone()
                },
            ),
            cache_key(
                rubric,
                "u",
                "m",
                &Subject {
                    output: None,
                    ..subject.clone()
                },
            ),
            cache_key(
                rubric,
                "u",
                "m",
                &Subject {
                    output: Some(""),
                    ..subject.clone()
                },
            ),
            cache_key(
                rubric,
                "u",
                "m",
                &Subject {
                    change: Some("o"),
                    output: None,
                    ..subject.clone()
                },
            ),
        ];
        let mut all: std::collections::BTreeSet<_> = variants.into_iter().collect();
        all.insert(base);
        assert_eq!(all.len(), 8);
    }
}
