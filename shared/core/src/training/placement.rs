//! Where a run trains on AWS Batch: the GPU classes a deployment offers (one job queue each,
//! `template.yaml`) and the one a run's plan picks — the first, in the deployment's order
//! (smallest GPU memory first), whose GPU holds the plan's peak and whose disk holds the run's
//! files — with the host memory the job asks for.
//!
//! The service plans with sequences of `max_seq_len` tokens (the model's context when unset),
//! where the trainer later plans with the dataset's longest: a run placed here fits on its
//! GPU, and the trainer picks the micro-batch for the data it finds.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::architecture::ModelConfig;
use super::config::TrainConfig;
use super::plan::{Plan, Target, Workload, parameters, plan, trained_parameters};

const GIB: f64 = (1u64 << 30) as f64;

/// One kind of GPU a deployment offers, as `AGENTRL_BATCH_GPU_CLASSES` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuClass {
    /// Its name (`gpu24`, `gpu48`, `a100`, `h100`).
    pub name: String,
    /// GPU memory a process can allocate, GiB (what the driver reports, not the label).
    pub gpu_memory_gb: f64,
    /// The instances' volume, GiB (the compute environment's launch template).
    pub disk_gb: f64,
    /// Most host memory a job may ask for, MiB (the smallest instance's, less what ECS keeps).
    pub host_memory_mib: u64,
    /// vCPUs a job asks for.
    pub vcpus: u32,
    /// The job queue its jobs go to.
    pub queue: String,
    /// The instance type the cost estimate prices (a share of it when it has several GPUs).
    pub instance_type: String,
}

/// What a run is given.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Placement {
    /// The class chosen.
    pub class: GpuClass,
    /// The run's plan on it.
    pub plan: Plan,
    /// Host memory the job asks for, MiB.
    pub host_memory_mib: u64,
    /// Disk the run's files need, GiB.
    pub disk_gb: f64,
}

/// No class holds the run: the largest class and the plan on it (none when the deployment
/// offers no class), and the disk the run needs.
#[derive(Debug, Clone, PartialEq)]
pub struct NoFit {
    /// The largest class and the run's plan on it.
    pub largest: Option<Box<(GpuClass, Plan)>>,
    /// Disk the run's files need, GiB.
    pub disk_gb: f64,
}

impl fmt::Display for NoFit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some((class, plan)) = self.largest.as_deref() else {
            return write!(f, "this deployment offers no GPU class");
        };
        write!(
            f,
            "the run fits no GPU class: on the largest, {} ({} GiB of GPU memory, {} GiB of disk), \
             it needs {:.2} GiB at its peak and {:.0} GiB of disk; use LoRA, a shorter \
             max_seq_len or a smaller micro_batch_tokens: {}",
            class.name,
            class.gpu_memory_gb,
            class.disk_gb,
            plan.peak_gb,
            self.disk_gb,
            serde_json::to_string(plan).unwrap_or_default()
        )
    }
}

/// Places a run of `config` on `model` on the first of `classes` that holds it.
///
/// # Errors
/// No class does.
pub fn place(
    model: &ModelConfig,
    config: &TrainConfig,
    classes: &[GpuClass],
) -> Result<Placement, NoFit> {
    let longest = config.seq_limit(model.max_position_embeddings);
    let workload = Workload::from_config(config, longest, false);
    let disk_gb = disk_gb(model, config);
    let host_memory_mib = host_memory_mib(model);
    let mut last = None;
    for class in classes {
        let p = plan(model, config, Target::Cuda, class.gpu_memory_gb, workload);
        if p.fits && disk_gb <= class.disk_gb && host_memory_mib <= class.host_memory_mib {
            return Ok(Placement {
                class: class.clone(),
                plan: p,
                host_memory_mib,
                disk_gb,
            });
        }
        last = Some(Box::new((class.clone(), p)));
    }
    Err(NoFit {
        largest: last,
        disk_gb,
    })
}

/// Bytes per weight of the base model's files (`dtype`, or `torch_dtype` before
/// transformers 5; bf16 when neither says).
fn stored_bytes(model: &ModelConfig) -> f64 {
    let json = model.to_json("bfloat16");
    let named = |key: &str| json.get(key).and_then(serde_json::Value::as_str);
    match named("dtype").or_else(|| named("torch_dtype")) {
        Some("float32") => 4.0,
        _ => 2.0,
    }
}

/// Disk a run's files take at their most, GiB: the base model, the outputs (merged weights
/// too when asked), the resumable checkpoints kept (fp32 masters of the trained weights and
/// AdamW's two moments, one more while a newer one is written), and room for the dataset,
/// logs and the image's layers.
#[must_use]
pub fn disk_gb(model: &ModelConfig, config: &TrainConfig) -> f64 {
    let base = parameters(model) * stored_bytes(model);
    let trained = trained_parameters(model, config);
    let outputs = if config.lora.is_none() || config.merge_lora {
        base
    } else {
        4.0 * trained
    };
    let checkpoints = (config.keep_checkpoints + 1) as f64;
    (base + outputs + checkpoints * 12.0 * trained) / GIB + 20.0
}

/// Host memory the job asks for, MiB: the process and its transfers (a few GiB), and the
/// largest tensor twice (a checkpoint's write copies one tensor at a time off the GPU and
/// converts it), at least 8 GiB.
#[must_use]
pub fn host_memory_mib(model: &ModelConfig) -> u64 {
    let largest = 4.0 * (model.vocab_size * model.hidden_size) as f64;
    let bytes = (4.0 * GIB + 2.0 * largest).max(8.0 * GIB);
    (bytes / f64::from(1u32 << 20)).ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::training::config::{LORA_MODULES, LoraConfig};
    use crate::training::plan::tests::qwen25;

    /// The template's classes, smallest GPU first.
    fn classes() -> Vec<GpuClass> {
        [
            ("gpu24", 22.0, 200.0, 60_000, "g6.xlarge"),
            ("a100", 39.0, 500.0, 140_000, "p4d.24xlarge"),
            ("gpu48", 44.0, 300.0, 60_000, "g6e.xlarge"),
            ("h100", 79.0, 500.0, 240_000, "p5.48xlarge"),
        ]
        .map(|(name, gpu, disk, host, instance)| GpuClass {
            name: name.into(),
            gpu_memory_gb: gpu,
            disk_gb: disk,
            host_memory_mib: host,
            vcpus: 8,
            queue: format!("agentrl-train-{name}"),
            instance_type: instance.into(),
        })
        .to_vec()
    }

    fn config(lora: bool, max_seq_len: usize) -> TrainConfig {
        TrainConfig {
            max_seq_len: Some(max_seq_len),
            lora: lora.then(|| LoraConfig {
                rank: 16,
                alpha: 32.0,
                dropout: 0.0,
                target_modules: LORA_MODULES.map(String::from).to_vec(),
                freeze_a: false,
            }),
            ..TrainConfig::default()
        }
    }

    #[test]
    fn the_smallest_gpu_that_holds_the_run_is_chosen() {
        let small = qwen25(896, 24, 14, 2, 4864);
        let mid = qwen25(1536, 28, 12, 2, 8960);
        let seven = qwen25(3584, 28, 28, 4, 18_944);
        let class = |model: &ModelConfig, config: &TrainConfig| {
            place(model, config, &classes()).map(|p| p.class.name)
        };
        assert_eq!(class(&small, &config(false, 4096)).unwrap(), "gpu24");
        // A 7B model's bf16 base is 14 GiB: LoRA fits 24 GB with 2k-token sequences, not 4k.
        assert_eq!(class(&seven, &config(true, 2048)).unwrap(), "gpu24");
        assert_eq!(class(&seven, &config(true, 4096)).unwrap(), "a100");
        // 1.5B parameters at 16 bytes each are 23 GiB before any activation.
        assert_eq!(class(&mid, &config(false, 4096)).unwrap(), "a100");
        // The whole 32k context of one sequence per micro-batch asks for more.
        let long = class(&seven, &config(true, 32_768)).unwrap();
        assert_ne!(long, "gpu24");
        let p = place(&small, &config(false, 4096), &classes()).unwrap();
        assert!(p.plan.fits && p.plan.peak_gb <= 22.0 * 0.9, "{p:?}");
        assert!(p.host_memory_mib >= 8 * 1024 && p.disk_gb > 20.0, "{p:?}");
    }

    #[test]
    fn a_run_no_gpu_holds_is_refused_with_the_largest_plan() {
        let seven = qwen25(3584, 28, 28, 4, 18_944);
        let e = place(&seven, &config(false, 4096), &classes()).unwrap_err();
        let (class, plan) = e.largest.as_deref().unwrap();
        assert_eq!(class.name, "h100");
        let peak = plan.peak_gb;
        assert!(peak > 100.0, "{peak}");
        let message = e.to_string();
        assert!(
            message.contains("h100") && message.contains("\"parts\""),
            "{message}"
        );
        assert!(place(&seven, &config(true, 4096), &[]).is_err());
    }

    #[test]
    fn disk_counts_the_checkpoints_kept() {
        let seven = qwen25(3584, 28, 28, 4, 18_944);
        let two = disk_gb(&seven, &config(false, 4096));
        let five = disk_gb(
            &seven,
            &TrainConfig {
                keep_checkpoints: 5,
                ..config(false, 4096)
            },
        );
        // Each checkpoint of a 7.6B full fine-tune: fp32 masters and two moments, 85 GiB.
        assert!((five - two - 3.0 * 85.2).abs() < 1.0, "{two} {five}");
        assert!(disk_gb(&seven, &config(true, 4096)) < 60.0);
    }
}
