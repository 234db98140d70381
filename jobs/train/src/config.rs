//! The training config ([`agentrl_core::training::config`]), read from a file and applied to
//! a device.

use std::path::Path;

pub use agentrl_core::training::config::{
    Aggregation, ByteSize, Credit, EvalConfig, GrpoConfig, KeepAfterFinish, LoraConfig,
    OptimizerConfig, Precision, Schedule, SftConfig, StdScaling, TrainConfig,
};
use agentrl_core::training::plan::Target;
use candle_core::{DType, Device};

use crate::error::{Result, TrainError};

/// Reads a config file: unknown keys and wrong types are errors naming their path.
///
/// # Errors
/// The file and the field.
pub fn load(path: &Path) -> Result<TrainConfig> {
    let text = std::fs::read_to_string(path).map_err(|e| TrainError::file(path, e))?;
    Ok(TrainConfig::parse(&text)?)
}

/// The plan's name for `device`.
#[must_use]
pub fn target_of(device: &Device) -> Target {
    if device.is_cpu() {
        Target::Cpu
    } else {
        Target::Cuda
    }
}

/// The dtype the forward computes in on `device`.
#[must_use]
pub fn compute(precision: Precision, device: &Device) -> DType {
    if precision.bf16_on(target_of(device)) {
        DType::BF16
    } else {
        DType::F32
    }
}
