//! Where a tenant's build runs: in this process (`agentrl serve`, the CLI, the dataset Lambda)
//! or, when the tenant's turn table is larger than one Lambda handles, as an AWS Batch job on
//! the CPU job queue running this crate's binary (`dataset --tenant P [--requests JSON]`).
//! The choice is made from the sizes of the source objects, listed before anything is read.

use std::sync::Arc;

use agentrl_core::dataset::{Request, Rules, Selection};
use agentrl_store::{
    aws::AwsSettings,
    ports::{ObjectMeta, Objects, Queue},
    required_env,
};
use serde::Serialize;

use agentrl_core::contracts::Manifest;

use crate::build::{Announce, build_tenant, turn_table, turn_tables};

/// The largest turn table (bytes of Parquet) built inside the Lambda by default: measured in
/// docs/training-pipeline.md ("Dataset job limits") with a safety factor of two.
pub const DEFAULT_LAMBDA_MAX_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// Builds submitted to AWS Batch: the CPU job queue and the dataset job definition.
pub struct BatchDatasets {
    client: aws_sdk_batch::Client,
    job_queue: String,
    job_definition: String,
    max_bytes: u64,
}

impl BatchDatasets {
    /// What `template.yaml` configures: `AGENTRL_DATASET_JOB_QUEUE`,
    /// `AGENTRL_DATASET_JOB_DEFINITION`, `AGENTRL_DATASET_LAMBDA_MAX_BYTES` (default
    /// [`DEFAULT_LAMBDA_MAX_BYTES`]), `AWS_REGION` and optionally `AGENTRL_AWS_ENDPOINT`.
    /// `None` when no job queue is configured: every build runs in the function.
    ///
    /// # Errors
    /// A missing or invalid variable, named.
    pub async fn from_env() -> anyhow::Result<Option<Self>> {
        let Ok(job_queue) = std::env::var("AGENTRL_DATASET_JOB_QUEUE") else {
            return Ok(None);
        };
        let max_bytes = match std::env::var("AGENTRL_DATASET_LAMBDA_MAX_BYTES") {
            Ok(v) => v.parse().map_err(|e| {
                anyhow::anyhow!("AGENTRL_DATASET_LAMBDA_MAX_BYTES: {e} (bytes expected)")
            })?,
            Err(_) => DEFAULT_LAMBDA_MAX_BYTES,
        };
        Ok(Some(
            Self::new(
                &AwsSettings::from_env()?,
                job_queue,
                required_env("AGENTRL_DATASET_JOB_DEFINITION")?,
                max_bytes,
            )
            .await,
        ))
    }

    /// Submits to `job_queue` with `job_definition` the builds of tables past `max_bytes`.
    pub async fn new(
        aws: &AwsSettings,
        job_queue: String,
        job_definition: String,
        max_bytes: u64,
    ) -> Self {
        Self {
            client: aws_sdk_batch::Client::new(&aws.load().await),
            job_queue,
            job_definition,
            max_bytes,
        }
    }

    async fn submit(
        &self,
        tenant: &str,
        selection: &Selection,
        now_ms: i64,
    ) -> anyhow::Result<String> {
        let command = BatchJob::of(tenant, selection, now_ms)?;
        let overrides = aws_sdk_batch::types::ContainerOverrides::builder()
            .set_command(Some(command))
            .build();
        // Job names allow 128 letters, digits, hyphens and underscores.
        let name: String = format!("dataset-{tenant}")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .take(128)
            .collect();
        let out = self
            .client
            .submit_job()
            .job_name(name)
            .job_queue(&self.job_queue)
            .job_definition(&self.job_definition)
            .container_overrides(overrides)
            .tags("agentrl_kind", "dataset")
            .tags("agentrl_tenant_partition", tenant)
            .propagate_tags(true)
            .send()
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "SubmitJob: {}",
                    aws_sdk_batch::error::DisplayErrorContext(e)
                )
            })?;
        out.job_id
            .ok_or_else(|| anyhow::anyhow!("SubmitJob answered without a job id"))
    }
}

/// The command line of a build handed to AWS Batch (`dataset --tenant P [--requests JSON]
/// [--now-ms MS]`): what [`BatchDatasets`] submits and the binary runs.
#[derive(Debug, clap::Parser)]
#[command(name = "dataset", about = "Builds one tenant partition's dataset")]
pub struct BatchJob {
    /// The tenant partition (`tenant=<partition>` in the turn table's paths).
    #[arg(long)]
    pub tenant: String,
    /// The learning service's requests (JSON array of {agent_id, positive_count,
    /// high_quality}); absent: agents by the rules.
    #[arg(long)]
    pub requests: Option<String>,
    /// The build's clock (epoch ms), so a retried job builds the same dataset.
    #[arg(long)]
    pub now_ms: Option<i64>,
}

impl BatchJob {
    fn of(tenant: &str, selection: &Selection, now_ms: i64) -> anyhow::Result<Vec<String>> {
        let mut command = vec!["dataset".to_owned(), "--tenant".into(), tenant.into()];
        if let Selection::Requested(requests) = selection {
            command.push("--requests".into());
            command.push(serde_json::to_string(requests)?);
        }
        command.push("--now-ms".into());
        command.push(now_ms.to_string());
        Ok(command)
    }

    /// Builds the job's tenant here with `datasets`, whatever the table's size.
    ///
    /// # Errors
    /// Invalid `--requests`, or what [`Datasets::here`] fails with.
    pub async fn run(&self, datasets: &Datasets) -> anyhow::Result<Outcome> {
        let selection = match &self.requests {
            Some(json) => Selection::Requested(
                serde_json::from_str::<Vec<Request>>(json)
                    .map_err(|e| anyhow::anyhow!("--requests: {e}"))?,
            ),
            None => Selection::Rules,
        };
        let now = self.now_ms.unwrap_or_else(agentrl_store::clock::now_ms_i64);
        datasets.here(&self.tenant, &selection, now).await
    }
}

/// What became of one tenant's build.
#[derive(Debug, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Built here and announced.
    Built(Box<Manifest>),
    /// No agent was taken (or the tenant has no turn table): nothing written.
    Nothing {
        /// The tenant partition.
        tenant: String,
    },
    /// Past the Lambda's limit: handed to AWS Batch.
    Submitted {
        /// The tenant partition.
        tenant: String,
        /// Bytes of Parquet in its turn table.
        table_bytes: u64,
        /// The Batch job.
        job_id: String,
    },
}

/// The dataset job's entry: the stores it reads and announces on, its rules, and where large
/// tables go.
#[derive(Clone)]
pub struct Datasets {
    objects: Arc<dyn Objects>,
    events: Arc<dyn Queue>,
    training: Arc<dyn Queue>,
    rules: Rules,
    batch: Option<Arc<BatchDatasets>>,
}

impl Datasets {
    /// Builds every tenant's datasets in this process.
    pub fn new(
        objects: Arc<dyn Objects>,
        events: Arc<dyn Queue>,
        training: Arc<dyn Queue>,
        rules: Rules,
    ) -> Self {
        Self {
            objects,
            events,
            training,
            rules,
            batch: None,
        }
    }

    /// The same, handing tables past `batch`'s limit to AWS Batch.
    #[must_use]
    pub fn with_batch(mut self, batch: Option<BatchDatasets>) -> Self {
        self.batch = batch.map(Arc::new);
        self
    }

    /// The scheduled build: every tenant, agents by the rules.
    ///
    /// # Errors
    /// Invalid rules, an unreadable object, a failing store or Batch.
    pub async fn scheduled(&self, now_ms: i64) -> anyhow::Result<Vec<Outcome>> {
        let mut outcomes = Vec::new();
        for (tenant, metas) in turn_tables(self.objects.as_ref()).await? {
            outcomes.push(
                self.place(&tenant, metas, &Selection::Rules, now_ms)
                    .await?,
            );
        }
        Ok(outcomes)
    }

    /// One tenant partition's build of the agents `selection` takes, here or on Batch.
    ///
    /// # Errors
    /// Invalid rules, an unreadable object, a failing store or Batch.
    pub async fn tenant(
        &self,
        tenant: &str,
        selection: &Selection,
        now_ms: i64,
    ) -> anyhow::Result<Outcome> {
        let metas = turn_table(self.objects.as_ref(), tenant).await?;
        self.place(tenant, metas, selection, now_ms).await
    }

    /// Builds `tenant` from its objects `metas` here, or hands it to Batch when they are past
    /// the Lambda's limit.
    async fn place(
        &self,
        tenant: &str,
        metas: Vec<ObjectMeta>,
        selection: &Selection,
        now_ms: i64,
    ) -> anyhow::Result<Outcome> {
        let table_bytes: u64 = metas.iter().map(|m| m.size).sum();
        if let Some(batch) = &self.batch
            && table_bytes > batch.max_bytes
        {
            let job_id = batch.submit(tenant, selection, now_ms).await?;
            tracing::info!(%tenant, table_bytes, %job_id, "dataset build submitted to Batch");
            return Ok(Outcome::Submitted {
                tenant: tenant.to_owned(),
                table_bytes,
                job_id,
            });
        }
        let paths: Vec<String> = metas.into_iter().map(|m| m.path).collect();
        self.build(tenant, selection, now_ms, &paths).await
    }

    /// One tenant partition's build in this process, whatever its size (the Batch job's own
    /// entry).
    ///
    /// # Errors
    /// Invalid rules, an unreadable object, a failing store.
    pub async fn here(
        &self,
        tenant: &str,
        selection: &Selection,
        now_ms: i64,
    ) -> anyhow::Result<Outcome> {
        let paths: Vec<String> = turn_table(self.objects.as_ref(), tenant)
            .await?
            .into_iter()
            .map(|m| m.path)
            .collect();
        self.build(tenant, selection, now_ms, &paths).await
    }

    async fn build(
        &self,
        tenant: &str,
        selection: &Selection,
        now_ms: i64,
        paths: &[String],
    ) -> anyhow::Result<Outcome> {
        let announce = Announce {
            events: self.events.as_ref(),
            training: self.training.as_ref(),
        };
        let built = build_tenant(
            self.objects.as_ref(),
            announce,
            &self.rules,
            selection,
            now_ms,
            tenant,
            paths,
        )
        .await?;
        Ok(match built {
            Some(manifest) => Outcome::Built(Box::new(manifest)),
            None => Outcome::Nothing {
                tenant: tenant.to_owned(),
            },
        })
    }
}
