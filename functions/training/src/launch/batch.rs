//! The AWS Batch launcher: one `SubmitJob` per run on the job queue of the GPU class its plan
//! chose (`AGENTRL_BATCH_GPU_CLASSES`, [`agentrl_core::training::placement`]), asking for the
//! host memory and vCPUs the class gives a job, tagged with the run's tenant and id so its
//! *Job State Change* events find the run.

use agentrl_core::training::{
    architecture::ModelConfig,
    config::TrainConfig,
    placement::{self, GpuClass, NoFit, Placement},
};
use agentrl_store::{
    aws::{AwsSettings, Deferred},
    required_env,
};
use async_trait::async_trait;
use aws_sdk_batch::types::{ContainerOverrides, ResourceRequirement, ResourceType};

use super::{JobSpec, Launcher, LogTail};

/// Submits training jobs to Batch job queues.
pub struct BatchLauncher {
    /// Built by the first submission (see [`Deferred`]): most of the function's requests
    /// never submit a job.
    client: Deferred<aws_sdk_batch::Client>,
    classes: Vec<GpuClass>,
    job_definition: String,
    bucket: String,
}

/// Where and how jobs are submitted.
#[derive(Debug, Clone)]
pub struct BatchSettings {
    /// The GPU classes, smallest GPU memory first: a run goes to the first that holds it.
    pub classes: Vec<GpuClass>,
    /// The job definition's name or ARN.
    pub job_definition: String,
    /// The bucket holding datasets, base models and run outputs.
    pub bucket: String,
}

impl BatchLauncher {
    /// A launcher with `settings`, reaching AWS as `aws` says.
    pub fn new(aws: &AwsSettings, settings: BatchSettings) -> Self {
        Self {
            client: aws.deferred().client(aws_sdk_batch::Client::new),
            classes: settings.classes,
            job_definition: settings.job_definition,
            bucket: settings.bucket,
        }
    }

    /// The launcher `template.yaml` configures: `AGENTRL_BATCH_GPU_CLASSES` (a JSON list of
    /// [`GpuClass`]), `AGENTRL_BATCH_JOB_DEFINITION`, `AGENTRL_BUCKET`, `AWS_REGION` and
    /// optionally `AGENTRL_AWS_ENDPOINT`.
    ///
    /// # Errors
    /// A missing variable, named; classes that are not such a list.
    pub fn from_env() -> anyhow::Result<Self> {
        let aws = AwsSettings::from_env()?;
        let classes = required_env("AGENTRL_BATCH_GPU_CLASSES")?;
        let classes: Vec<GpuClass> = serde_json::from_str(&classes)
            .map_err(|e| anyhow::anyhow!("AGENTRL_BATCH_GPU_CLASSES: {e}"))?;
        anyhow::ensure!(
            !classes.is_empty(),
            "AGENTRL_BATCH_GPU_CLASSES: lists no GPU class"
        );
        let settings = BatchSettings {
            classes,
            job_definition: required_env("AGENTRL_BATCH_JOB_DEFINITION")?,
            bucket: required_env("AGENTRL_BUCKET")?,
        };
        Ok(Self::new(&aws, settings))
    }
}

fn requirement(kind: ResourceType, value: impl ToString) -> ResourceRequirement {
    ResourceRequirement::builder()
        .r#type(kind)
        .value(value.to_string())
        .build()
}

#[async_trait]
impl Launcher for BatchLauncher {
    fn name(&self) -> &'static str {
        "batch"
    }

    fn place(&self, model: &ModelConfig, config: &TrainConfig) -> Result<Option<Placement>, NoFit> {
        placement::place(model, config, &self.classes).map(Some)
    }

    fn instance_type(&self, placement: Option<&Placement>) -> String {
        // Every Batch job has a class; without one there is no price to quote.
        placement
            .map(|p| p.class.instance_type.clone())
            .unwrap_or_default()
    }

    fn resumes_after_restart(&self) -> bool {
        true
    }

    async fn submit(&self, job: &JobSpec) -> anyhow::Result<String> {
        let placement = job
            .placement
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("a Batch job needs a GPU class"))?;
        let bucket = &self.bucket;
        // The image holds `train` and `dataset`: the command names its program.
        let mut command = vec!["train".to_owned()];
        command.extend(job.args(|prefix| format!("s3://{bucket}/{prefix}")));
        let overrides = ContainerOverrides::builder()
            .set_command(Some(command))
            .resource_requirements(requirement(ResourceType::Gpu, 1))
            .resource_requirements(requirement(ResourceType::Vcpu, placement.class.vcpus))
            .resource_requirements(requirement(ResourceType::Memory, placement.host_memory_mib))
            .build();
        let out = self
            .client
            .get()
            .await
            .submit_job()
            .job_name(&job.run_id)
            .job_queue(&placement.class.queue)
            .job_definition(&self.job_definition)
            .container_overrides(overrides)
            .tags("agentrl_tenant", job.tenant.as_str())
            .tags("agentrl_run", &job.run_id)
            .tags("agentrl_gpu_class", &placement.class.name)
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

    async fn log_tail(&self, job_id: &str, _lines: usize) -> anyhow::Result<LogTail> {
        // Batch sends a job's output to CloudWatch Logs, which this function does not read:
        // the answer names the stream.
        let jobs = self
            .client
            .get()
            .await
            .describe_jobs()
            .jobs(job_id)
            .send()
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "DescribeJobs: {}",
                    aws_sdk_batch::error::DisplayErrorContext(e)
                )
            })?;
        let stream = jobs
            .jobs()
            .first()
            .and_then(|j| j.container())
            .and_then(|c| c.log_stream_name());
        Ok(LogTail::Elsewhere(match stream {
            Some(stream) => format!("CloudWatch Logs, group /aws/batch/job, stream {stream}"),
            None => "CloudWatch Logs, group /aws/batch/job, once the job has started".into(),
        }))
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
