//! The queue worker of trajectories: a batch of trajectory messages in, Parquet objects out.
//! A trajectory larger than a queue message comes as a claim check on its object.
//!
//! Every message ends in exactly one place: its rows in a Parquet object (then it is
//! acknowledged), the dead-letter queue with the reason (malformed or invalid: retrying cannot
//! help), or back on the queue for a retry (a store failed). A redelivered batch rewrites the
//! same objects, because object names come from the message ids.
//!
//! A batch's messages are prepared concurrently: with judged turn rewards on, a trajectory
//! waits on its judges, and [`JUDGING_BUDGET`] bounds the whole batch's judging.
//!
//! Once an object is written, each of its trajectories is indexed (`repo`): a summary the
//! listing routes read, written once per trajectory however often it is delivered. A message
//! whose summary could not be written is retried; its rows then land in a later object too,
//! and the index keeps naming the first.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use agentrl_core::{
    TenantId,
    calendar::utc_date,
    envelope::Source,
    privacy::{Pseudonymizer, Scrubber, TENANT, anonymize},
    trajectory::{SourcedReward, turn_rewards},
};
use agentrl_http::{
    consume::{self, Outcome},
    sqs::Consumer,
};
use agentrl_judges::{Judges, Provider};
use agentrl_store::{
    claims,
    ports::{Message, Objects, Queue, Table},
    tenant_config::TenantConfig,
};
use agentrl_turns::{TurnRow, TurnWriter, WriterOptions};
use anyhow::Context;
use futures::StreamExt;

use crate::{
    Envelope,
    config::{CONFIG_NAME, IngestConfig},
    judged::judge_turns,
    ledger,
    paths::object_path,
    repo::{self, Summary},
    rows::{Provenance, rows},
};

/// How many trajectories of a batch are indexed at once (one table transaction each).
const INDEX_CONCURRENCY: usize = 16;

/// How long a batch's judges may take, from its start: the ingest Lambda runs for at most 60 s
/// and still has to encode and write the batch. A judgment not started by then abstains, and
/// its turn keeps the heuristic's value, marked.
pub const JUDGING_BUDGET: Duration = Duration::from_secs(30);

/// One message's rows, with the partition they go to.
struct Prepared {
    /// The tenant as authenticated: the index's keys.
    tenant_id: TenantId,
    /// Its keyed hash: the turn table's partition.
    tenant: String,
    date: String,
    message_id: String,
    source: Option<Source>,
    rows: Vec<TurnRow>,
}

/// The worker's dependencies. Cheap to clone.
#[derive(Clone)]
pub struct Ingest {
    table: Arc<dyn Table>,
    objects: Arc<dyn Objects>,
    queue: Arc<dyn Queue>,
    configs: TenantConfig<IngestConfig>,
    scrubber: Arc<Scrubber>,
    pseudonyms: Arc<Pseudonymizer>,
    judges: Judges,
}

impl Ingest {
    /// A worker reading tenant settings from `table`, writing to `objects`, dead-lettering
    /// through `queue` (the queue the messages came from), and asking `provider` for the
    /// judged turn rewards of the tenants that turn them on.
    pub fn new(
        table: Arc<dyn Table>,
        objects: Arc<dyn Objects>,
        queue: Arc<dyn Queue>,
        pseudonyms: Arc<Pseudonymizer>,
        provider: Arc<Provider>,
    ) -> Self {
        Self {
            configs: TenantConfig::new(table.clone(), CONFIG_NAME),
            judges: Judges::new(table.clone(), provider),
            table,
            objects,
            queue,
            scrubber: Arc::new(Scrubber::new()),
            pseudonyms,
        }
    }

    /// Processes a batch of trajectory messages; returns the ids of the messages to retry.
    /// Poison messages are dead-lettered here, with their reason.
    pub async fn process<'a>(
        &self,
        messages: impl IntoIterator<Item = &'a Message>,
    ) -> Vec<String> {
        let deadline = Instant::now() + JUDGING_BUDGET;
        consume::grouped(
            self.queue.as_ref(),
            messages,
            1,
            |message| async move {
                let p = self.prepare(message, deadline).await?;
                Ok::<_, Outcome>(((p.tenant.clone(), p.date.clone()), p))
            },
            |(tenant, date), prepared| self.write_partition(tenant, date, prepared),
        )
        .await
    }

    /// Writes one partition's rows as one object, then indexes its trajectories: one outcome
    /// per message, in order.
    async fn write_partition(
        &self,
        tenant: String,
        date: String,
        prepared: Vec<Prepared>,
    ) -> Vec<Outcome> {
        let ids: Vec<&str> = prepared.iter().map(|p| p.message_id.as_str()).collect();
        let path = object_path(&tenant, &date, &ids);
        let count = ids.len();
        let summaries: Vec<(TenantId, String, Option<Summary>)> = prepared
            .iter()
            .map(|p| {
                let summary = Summary::of(&p.rows, p.source, &path);
                (p.tenant_id.clone(), p.message_id.clone(), summary)
            })
            .collect();
        let rows: Vec<TurnRow> = prepared.into_iter().flat_map(|p| p.rows).collect();
        match self.write(&path, rows).await {
            Ok(written) => {
                tracing::info!(object = %path, rows = written, messages = count, "turns written");
                self.index(summaries).await
            }
            Err(e) => {
                let reason = format!("writing {path}: {e:#}");
                vec![Outcome::Retry(reason); count]
            }
        }
    }

    async fn prepare(&self, message: &Message, deadline: Instant) -> Result<Prepared, Outcome> {
        let body = claims::open(self.objects.as_ref(), &message.body)
            .await
            .map_err(|e| match e {
                claims::OpenError::Unusable { .. } => Outcome::Poison(e.to_string()),
                claims::OpenError::Store(e) => e.into(),
            })?;
        let envelope: Envelope = consume::decode(&body, "a trajectory message")?;
        let tenant = TenantId::parse(&envelope.tenant)
            .map_err(|e| Outcome::Poison(format!("tenant: {e}")))?;
        let mut t = envelope.trajectory;
        t.validate().map_err(|e| {
            Outcome::Poison(format!("invalid trajectory: {}: {}", e.field, e.reason))
        })?;
        let config = self.configs.get(&tenant).await?;
        // Rewards see the raw text (the safety rule looks for leaked secrets); nothing raw
        // is written.
        let mut rewards =
            SourcedReward::heuristic(&t, turn_rewards(&t, &config.rewards, &self.scrubber));
        let episode = t.final_outcome.as_ref().and_then(|o| o.reward);
        let (episode_reward, dp_epsilon) = match (episode, &config.differential_privacy) {
            (Some(reward), Some(dp)) => {
                // Keyed by the raw trajectory id (before anonymisation may rewrite it), so a
                // redelivery finds its charge.
                let charge_id = self
                    .pseudonyms
                    .pseudonym("trajectory", &format!("{tenant}\0{}", t.trajectory_id));
                let seed = self.pseudonyms.keyed_digest("dp-seed", &charge_id);
                let released =
                    ledger::release(&self.table, &tenant, &charge_id, reward, dp, seed).await?;
                (released, released.map(|_| dp.epsilon))
            }
            (reward, _) => (reward, None),
        };
        let anonymized = anonymize(&mut t, &self.scrubber, &self.pseudonyms);
        if config.judge_turn_rewards {
            judge_turns(
                &self.judges,
                &tenant,
                &t,
                &mut rewards,
                &config.rewards,
                deadline,
            )
            .await?;
        }
        let provenance = Provenance {
            message_id: &message.id,
            received_at_ms: envelope.received_at_ms,
            pii_replacements: anonymized.found.values().sum(),
            episode_reward,
            dp_epsilon,
        };
        Ok(Prepared {
            tenant: self.pseudonyms.pseudonym(TENANT, tenant.as_str()),
            tenant_id: tenant,
            date: utc_date(envelope.received_at_ms),
            message_id: message.id.clone(),
            source: envelope.source,
            rows: rows(&t, &rewards, &provenance),
        })
    }

    /// Indexes the trajectories of a written object: one outcome per trajectory, in order (a
    /// summary that could not be written is retried).
    async fn index(&self, summaries: Vec<(TenantId, String, Option<Summary>)>) -> Vec<Outcome> {
        let table = self.table.as_ref();
        futures::stream::iter(summaries)
            .map(|(tenant, message_id, summary)| async move {
                // A trajectory has at least one turn, so it always has a summary.
                let Some(summary) = summary else {
                    return Outcome::Done;
                };
                match repo::index(table, &tenant, &summary).await {
                    Ok(_) => Outcome::Done,
                    Err(e) => Outcome::Retry(format!("indexing {message_id}: {e}")),
                }
            })
            .buffered(INDEX_CONCURRENCY)
            .collect()
            .await
    }

    /// Encodes `rows` as one Parquet object at `path` (replacing any earlier copy).
    async fn write(&self, path: &str, rows: Vec<TurnRow>) -> anyhow::Result<usize> {
        let count = rows.len();
        // Encoding is CPU-bound: keep it off the async workers.
        let bytes = tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<u8>> {
            let mut writer = TurnWriter::new(Vec::new(), &WriterOptions::default())?;
            for row in &rows {
                writer.write(row)?;
            }
            Ok(writer.finish()?)
        })
        .await
        .context("the Parquet encoder panicked")??;
        self.objects.put(path, bytes.into()).await?;
        Ok(count)
    }
}

impl Consumer for Ingest {
    async fn process(&self, messages: &[Message]) -> Vec<String> {
        Ingest::process(self, messages).await
    }
}
