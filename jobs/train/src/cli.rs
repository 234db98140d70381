//! The `train` command line, shared by `agentrl train` and the Batch container's `train`
//! binary.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::advantage::Credit;
use crate::config::TrainConfig;
use crate::demo::{DemoOptions, DemoTask};
use crate::plan::{Target, Workload};
use crate::remote::{Location, stage, stage_model};
use crate::run::{RunOptions, bench, logprobs, run_dataset, run_prompts};

/// `train` subcommands.
#[derive(Debug, Subcommand)]
pub enum TrainCommand {
    /// Train a model: on a dataset (offline GRPO) or on verifiable prompts (online GRPO).
    Run(RunArgs),
    /// Print the log-probability of each response token, one JSON line per input line.
    Logprobs {
        /// Model directory (Hugging Face layout).
        #[arg(long)]
        model: PathBuf,
        /// JSON Lines of `{"prompt_ids": [...], "response_ids": [...]}`.
        #[arg(long)]
        input: PathBuf,
        /// What the forward computes in (`auto`: bf16 on a GPU, fp32 on the CPU).
        #[arg(long, value_enum, default_value = "auto")]
        dtype: DtypeArg,
    },
    /// Time forward + backward + AdamW on random ids; prints one JSON line.
    Bench {
        /// Model directory.
        #[arg(long)]
        model: PathBuf,
        /// Sequences per step.
        #[arg(long, default_value_t = 8)]
        batch: usize,
        /// Tokens per sequence.
        #[arg(long, default_value_t = 48)]
        seq: usize,
        /// LoRA rank on every linear layer (overrides the config's `lora`).
        #[arg(long)]
        lora: Option<usize>,
        /// Training config (JSON): `lora`, `micro_batch_tokens`, the optimizer.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Timed steps (after 2 warm-up steps); the median is reported.
        #[arg(long, default_value_t = 20)]
        iterations: usize,
    },
    /// Plan a run's memory from `config.json` and the training config alone (no weights are
    /// read); prints one JSON object: `peak_gb`, `parts`, `micro_batch_tokens`, `fits`.
    Plan {
        /// Model directory (only its `config.json` is read).
        #[arg(long)]
        model: PathBuf,
        /// Training config (JSON).
        #[arg(long)]
        config: Option<PathBuf>,
        /// The device to plan for (default: this build's).
        #[arg(long, value_enum)]
        device: Option<DeviceArg>,
        /// Memory to plan against, GiB (default: the GPU's, or the host's available memory).
        #[arg(long)]
        gpu_memory_gb: Option<f64>,
        /// `prompts`: online GRPO (rollouts keep a KV cache); `dataset`: offline.
        #[arg(long, value_enum, default_value = "prompts")]
        mode: PlanMode,
    },
    /// Show that an agent learns: a tiny model, a multi-turn tool-use task, SFT then GRPO.
    Demo {
        /// Time budget of the GRPO phase.
        #[arg(long, default_value_t = 15.0)]
        minutes: f64,
        /// Credit assignment.
        #[arg(long, value_enum, default_value = "broadcast")]
        credit: CreditArg,
        /// Seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Output directory.
        #[arg(long, default_value = "agentrl-train-demo")]
        out: PathBuf,
        /// The task.
        #[arg(long, value_enum, default_value = "calc")]
        task: DemoTask,
        /// Lookups per chain of the chain task (≥ 4 makes it a long-horizon task).
        #[arg(long, default_value_t = crate::demo::DEFAULT_HOPS)]
        hops: usize,
        /// DAPO dynamic sampling; `false` trains every step on the same number of rollouts.
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
        dynamic_sampling: bool,
        /// Held-out success that ends the GRPO phase early.
        #[arg(long, default_value_t = 0.95)]
        target: f64,
    },
    /// One federated round's aggregation (DP-FedAvg, fixed clipping): the next global adapter
    /// is global + the weighted mean of the locals' updates clipped to L2 norm C + Gaussian
    /// noise of σ = z·C·max w / Σ w per element (`docs/federated.md`).
    Federate(FederateArgs),
    /// Write fresh adapters for a model and the config's `lora` (A seeded by the config's
    /// `seed`, B zero): a federation's first global adapter.
    InitAdapter {
        /// Model directory (Hugging Face layout).
        #[arg(long)]
        model: PathBuf,
        /// Training config (JSON) with a `lora` section.
        #[arg(long)]
        config: PathBuf,
        /// Output directory (PEFT layout).
        #[arg(long)]
        out: PathBuf,
    },
}

/// `train federate`.
#[derive(Debug, Args)]
pub struct FederateArgs {
    /// The round's global adapter (PEFT layout).
    #[arg(long)]
    pub global: PathBuf,
    /// Each participant's locally trained adapter (started from the global one).
    #[arg(long, num_args = 1.., required = true)]
    pub locals: Vec<PathBuf>,
    /// Where the next global adapter is written.
    #[arg(long)]
    pub out: PathBuf,
    /// C: the L2 norm every update is clipped to.
    #[arg(long)]
    pub clip: f64,
    /// z: the noise's standard deviation in units of the mean's sensitivity (0: no noise).
    #[arg(long)]
    pub noise_multiplier: f64,
    /// The noise's seed.
    #[arg(long)]
    pub seed: u64,
    /// Each participant's weight, in the order of --locals (default: uniform).
    #[arg(long, value_delimiter = ',')]
    pub weights: Option<Vec<f64>>,
    /// The locals were trained with `lora.freeze_a` (FFA-LoRA): their A factors must be the
    /// global's and are kept; the update, the clip and the noise cover B alone.
    #[arg(long)]
    pub frozen_a: bool,
}

/// `--dtype` of `train logprobs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DtypeArg {
    /// bf16 on a GPU, fp32 on the CPU.
    Auto,
    /// bf16.
    Bf16,
    /// fp32.
    Fp32,
}

impl From<DtypeArg> for crate::config::Precision {
    fn from(d: DtypeArg) -> Self {
        match d {
            DtypeArg::Auto => Self::Auto,
            DtypeArg::Bf16 => Self::Bf16,
            DtypeArg::Fp32 => Self::Fp32,
        }
    }
}

/// `--device` of `train plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceArg {
    /// A CUDA GPU.
    Cuda,
    /// The CPU.
    Cpu,
}

impl From<DeviceArg> for Target {
    fn from(d: DeviceArg) -> Self {
        match d {
            DeviceArg::Cuda => Self::Cuda,
            DeviceArg::Cpu => Self::Cpu,
        }
    }
}

/// `--mode` of `train plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlanMode {
    /// Online GRPO on prompts: rollouts between steps.
    Prompts,
    /// Offline GRPO on a dataset.
    Dataset,
}

/// `--credit` of the demo.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CreditArg {
    /// The episode advantage on every turn.
    Broadcast,
    /// Per-turn returns.
    Turn,
}

/// `train run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Base model directory (Hugging Face layout) or `s3://bucket/prefix`.
    #[arg(long)]
    pub model: String,
    /// A dataset written by `agentrl dataset build`: a directory or `s3://bucket/prefix`.
    #[arg(long, conflicts_with = "prompts", required_unless_present = "prompts")]
    pub dataset: Option<String>,
    /// Prompts for online GRPO (JSON Lines of prompt, answer, match).
    #[arg(long)]
    pub prompts: Option<PathBuf>,
    /// SFT examples to train first (JSON Lines of prompt, completion); with --prompts.
    #[arg(long, requires = "prompts")]
    pub sft: Option<PathBuf>,
    /// Output directory or `s3://bucket/prefix` (mirrored after every checkpoint).
    #[arg(long)]
    pub out: String,
    /// Training config (JSON).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Training config as inline JSON (what the launchers pass).
    #[arg(long, conflicts_with = "config")]
    pub config_json: Option<String>,
    /// GRPO optimizer steps (0: the SFT phase alone).
    #[arg(long)]
    pub steps: Option<u64>,
    /// Stop with a resumable checkpoint after this many optimizer steps (simulates a Spot
    /// interruption; rerun the same command to resume).
    #[arg(long, hide = true)]
    pub stop_after: Option<u64>,
    /// Start from this adapter (PEFT layout: a directory or `s3://bucket/prefix`) instead of
    /// fresh ones; its rank, α and target modules must be the config's `lora` (a federated
    /// round's global adapter, trained with `lora.freeze_a`).
    #[arg(long)]
    pub init_adapter: Option<String>,
}

/// The exit status of a run stopped by SIGTERM: `EX_TEMPFAIL`, which the Batch job
/// definitions retry (the checkpoint it wrote, or the last periodic one, is resumed), unlike a
/// cancelled job's (`TerminateJob` with an `agentrl:` reason, which they do not retry).
pub const EXIT_TERMINATED: u8 = 75;

/// The process's exit status for `error`: [`EXIT_TERMINATED`] for a SIGTERM stop, 1 otherwise.
#[must_use]
pub fn exit_code(error: &anyhow::Error) -> std::process::ExitCode {
    match error.downcast_ref::<crate::TrainError>() {
        Some(crate::TrainError::Terminated) => std::process::ExitCode::from(EXIT_TERMINATED),
        _ => std::process::ExitCode::FAILURE,
    }
}

/// Runs a `train` subcommand.
///
/// # Errors
/// Whatever the command reports, naming the file or field at fault.
pub fn run(command: TrainCommand) -> anyhow::Result<()> {
    match command {
        TrainCommand::Run(a) => {
            crate::process::watch_termination()?;
            let config = match (&a.config, &a.config_json) {
                (Some(path), _) => crate::config::load(path)?,
                (None, Some(json)) => TrainConfig::parse(json)?,
                (None, None) => TrainConfig::default(),
            };
            let model = stage_model(&Location::parse(&a.model)?)?;
            let out = stage(&Location::parse(&a.out)?, false)?;
            let init = match &a.init_adapter {
                Some(at) => Some(stage(&Location::parse(at)?, true)?),
                None => None,
            };
            let o = RunOptions {
                model: model.dir.clone(),
                out: out.dir.clone(),
                config,
                steps: a.steps,
                stop_after: a.stop_after,
                mirror: out.remote.clone(),
                weights: model.remote.clone(),
                init_adapter: init.as_ref().map(|staged| staged.dir.clone()),
            };
            let outcome = match (&a.dataset, &a.prompts) {
                (Some(d), _) => run_dataset(&o, &stage(&Location::parse(d)?, true)?.dir)?,
                (None, Some(p)) => run_prompts(&o, p, a.sft.as_deref())?,
                (None, None) => anyhow::bail!("one of --dataset or --prompts is required"),
            };
            match outcome {
                Some(run) => println!("{}", serde_json::to_string(&run)?),
                None => eprintln!(
                    "stopped with a checkpoint in {}; run the same command to resume",
                    a.out
                ),
            }
        }
        TrainCommand::Logprobs {
            model,
            input,
            dtype,
        } => {
            let stdout = std::io::stdout();
            logprobs(&model, &input, dtype.into(), &mut stdout.lock())?;
        }
        TrainCommand::Bench {
            model,
            batch,
            seq,
            lora,
            config,
            iterations,
        } => {
            anyhow::ensure!(
                batch > 0 && seq > 1 && iterations > 0,
                "--batch ≥ 1, --seq ≥ 2, --iterations ≥ 1"
            );
            let mut config = match config {
                Some(path) => crate::config::load(&path)?,
                None => TrainConfig::default(),
            };
            if let Some(rank) = lora {
                config.lora = Some(crate::model::LoraConfig {
                    rank,
                    alpha: 2.0 * rank as f64,
                    dropout: 0.0,
                    target_modules: crate::model::lora::LORA_MODULES.map(String::from).to_vec(),
                    freeze_a: false,
                });
            }
            println!("{}", bench(&model, batch, seq, &config, iterations)?);
        }
        TrainCommand::Plan {
            model,
            config,
            device,
            gpu_memory_gb,
            mode,
        } => {
            let config = match config {
                Some(path) => crate::config::load(&path)?,
                None => TrainConfig::default(),
            };
            let model = crate::model::config::load(&model)?;
            let device = device.map_or_else(crate::run::target, Target::from);
            let memory = match gpu_memory_gb {
                Some(gb) => {
                    anyhow::ensure!(
                        gb > 0.0 && gb.is_finite(),
                        "--gpu-memory-gb must be positive"
                    );
                    gb
                }
                None => crate::run::device_memory(device)?,
            };
            let longest = config.seq_limit(model.max_position_embeddings);
            let workload = Workload::from_config(&config, longest, mode == PlanMode::Prompts);
            let plan = crate::plan::plan(&model, &config, device, memory, workload);
            println!("{}", serde_json::to_string(&plan)?);
        }
        TrainCommand::Demo {
            minutes,
            credit,
            seed,
            out,
            task,
            hops,
            dynamic_sampling,
            target,
        } => {
            anyhow::ensure!(
                minutes > 0.0 && minutes.is_finite(),
                "--minutes must be positive"
            );
            let credit = match credit {
                CreditArg::Broadcast => Credit::Broadcast,
                CreditArg::Turn => Credit::Turn,
            };
            anyhow::ensure!((0.0..=1.0).contains(&target), "--target must be in [0, 1]");
            anyhow::ensure!((1..=16).contains(&hops), "--hops must be in 1..=16");
            let mut options = DemoOptions::new(task, credit, seed, minutes, out);
            options.target = target;
            options.hops = hops;
            options.dynamic_sampling = dynamic_sampling;
            let run = crate::demo::run(&options)?;
            println!("{}", serde_json::to_string_pretty(&run)?);
        }
        TrainCommand::Federate(a) => {
            let report = crate::federate::aggregate(&crate::federate::Aggregation {
                global: a.global,
                locals: a.locals,
                out: a.out,
                clip: a.clip,
                noise_multiplier: a.noise_multiplier,
                seed: a.seed,
                weights: a.weights,
                frozen_a: a.frozen_a,
            })?;
            println!("{}", serde_json::to_string(&report)?);
        }
        TrainCommand::InitAdapter { model, config, out } => {
            let config = crate::config::load(&config)?;
            let lora = config.lora.as_ref().ok_or_else(|| {
                crate::TrainError::config("lora", "an adapter needs the config's lora section")
            })?;
            let mut m = crate::run::load_weights(&model, &config)?;
            m.make_trainable(Some(lora), config.seed)?;
            m.save_adapter(&out, &model.display().to_string())?;
            println!("{}", out.display());
        }
    }
    Ok(())
}
