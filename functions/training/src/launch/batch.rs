//! The AWS Batch launcher: one `SubmitJob` per run on the template's GPU (or CPU) job queue,
//! tagged with the run's tenant and id so its *Job State Change* events find the run.

use agentrl_store::{
    aws::{AwsSettings, Deferred},
    required_env,
};
use async_trait::async_trait;

use super::{JobSpec, Launcher};

/// Submits training jobs to a Batch job queue.
pub struct BatchLauncher {
    /// Built by the first submission (see [`Deferred`]): most of the function's requests
    /// never submit a job.
    client: Deferred<aws_sdk_batch::Client>,
    job_queue: String,
    job_definition: String,
    bucket: String,
    instance_type: String,
}

/// Where and how jobs are submitted.
#[derive(Debug, Clone)]
pub struct BatchSettings {
    /// The job queue's name or ARN.
    pub job_queue: String,
    /// The job definition's name or ARN.
    pub job_definition: String,
    /// The bucket holding datasets, base models and run outputs.
    pub bucket: String,
    /// The instance type the compute environment launches (for the cost estimate).
    pub instance_type: String,
}

impl BatchLauncher {
    /// A launcher with `settings`, reaching AWS as `aws` says.
    pub fn new(aws: &AwsSettings, settings: BatchSettings) -> Self {
        Self {
            client: aws.deferred().client(aws_sdk_batch::Client::new),
            job_queue: settings.job_queue,
            job_definition: settings.job_definition,
            bucket: settings.bucket,
            instance_type: settings.instance_type,
        }
    }

    /// The launcher `template.yaml` configures: `AGENTRL_BATCH_JOB_QUEUE`,
    /// `AGENTRL_BATCH_JOB_DEFINITION`, `AGENTRL_BUCKET`, `AGENTRL_BATCH_INSTANCE_TYPE`
    /// (default `g6.xlarge`), `AWS_REGION` and optionally `AGENTRL_AWS_ENDPOINT`.
    ///
    /// # Errors
    /// A missing variable, named.
    pub fn from_env() -> anyhow::Result<Self> {
        let aws = AwsSettings::from_env()?;
        let settings = BatchSettings {
            job_queue: required_env("AGENTRL_BATCH_JOB_QUEUE")?,
            job_definition: required_env("AGENTRL_BATCH_JOB_DEFINITION")?,
            bucket: required_env("AGENTRL_BUCKET")?,
            instance_type: std::env::var("AGENTRL_BATCH_INSTANCE_TYPE")
                .unwrap_or_else(|_| "g6.xlarge".to_owned()),
        };
        Ok(Self::new(&aws, settings))
    }
}

#[async_trait]
impl Launcher for BatchLauncher {
    fn name(&self) -> &'static str {
        "batch"
    }

    fn instance_type(&self) -> &str {
        &self.instance_type
    }

    fn resumes_after_restart(&self) -> bool {
        true
    }

    async fn submit(&self, job: &JobSpec) -> anyhow::Result<String> {
        let bucket = &self.bucket;
        // The image holds `train` and `dataset`: the command names its program.
        let mut command = vec!["train".to_owned()];
        command.extend(job.args(|prefix| format!("s3://{bucket}/{prefix}")));
        let overrides = aws_sdk_batch::types::ContainerOverrides::builder()
            .set_command(Some(command))
            .build();
        let out = self
            .client
            .get()
            .await
            .submit_job()
            .job_name(&job.run_id)
            .job_queue(&self.job_queue)
            .job_definition(&self.job_definition)
            .container_overrides(overrides)
            .tags("agentrl_tenant", job.tenant.as_str())
            .tags("agentrl_run", &job.run_id)
            .parameters("agentrl_tenant", job.tenant.as_str())
            .parameters("agentrl_run", &job.run_id)
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

    async fn cancel(&self, job_id: &str, reason: &str) -> anyhow::Result<()> {
        self.client
            .get()
            .await
            .terminate_job()
            .job_id(job_id)
            .reason(reason)
            .send()
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "TerminateJob: {}",
                    aws_sdk_batch::error::DisplayErrorContext(e)
                )
            })?;
        Ok(())
    }
}
