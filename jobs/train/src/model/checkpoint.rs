//! Recomputation instead of storage: a function whose forward records no graph and whose
//! backward runs it again, with the graph, on the input it saw. The training step keeps one
//! input and one output tensor per use instead of every intermediate; the backward holds one
//! use's intermediates at a time.
//!
//! Two uses: a decoder layer (activation checkpointing, `gradient_checkpointing`; its
//! parameters' gradients go to a [`Sink`] the training step empties into its accumulator,
//! since an op's backward returns gradients of its inputs only), and attention off the CPU's
//! fused kernel, recomputed one sequence and one key/value group at a time so that no
//! `[B, H, T, T]` tensor exists ([`super::fused::attention`]).
//!
//! Everything is tensor ops on detached tensors, so it runs on every device: the op itself
//! only copies the precomputed output into place (`copy_strided_src`, which every backend
//! has) and lets it go, keeping the input alone for the backward.

use std::sync::{Arc, Mutex, PoisonError};

use candle_core::backend::{BackendDevice, BackendStorage};
use candle_core::{CpuStorage, CudaStorage, CustomOp1, Layout, Result, Shape, Storage, Tensor};

/// A function to checkpoint.
pub(crate) trait Recompute: Send + Sync {
    /// `f(x)`, recording no graph (`x` is detached).
    fn forward(&self, x: &Tensor) -> Result<Tensor>;
    /// `∂(Σ grad·f(x))/∂x`, recomputing `f` with its graph; parameter gradients go where the
    /// implementation keeps them.
    fn backward(&self, x: &Tensor, grad: &Tensor) -> Result<Tensor>;
}

/// `f(x)` with a backward that recomputes `f`.
///
/// # Errors
/// Whatever `f` fails with.
pub(crate) fn checkpoint(x: &Tensor, f: Arc<dyn Recompute>) -> Result<Tensor> {
    let y = f.forward(&x.detach())?;
    x.apply_op1(Checkpointed {
        f,
        y: Mutex::new(Some(y)),
    })
}

/// The op: its forward hands over `y` (taken, so that the graph does not keep it: the
/// backward needs the input alone).
struct Checkpointed {
    f: Arc<dyn Recompute>,
    y: Mutex<Option<Tensor>>,
}

impl Checkpointed {
    fn take(&self) -> Result<Tensor> {
        self.y
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| candle_core::Error::Msg("checkpoint: the forward ran twice".into()))
    }
}

/// A fresh storage holding the elements `layout` selects of `storage`.
fn copy_out<S>(storage: &S, layout: &Layout) -> Result<(S, Shape)>
where
    S: BackendStorage,
    S::Device: BackendDevice<Storage = S>,
{
    let mut out = storage
        .device()
        .zeros_impl(layout.shape(), storage.dtype())?;
    storage.copy_strided_src(&mut out, 0, layout)?;
    Ok((out, layout.shape().clone()))
}

impl CustomOp1 for Checkpointed {
    fn name(&self) -> &'static str {
        "checkpoint"
    }
    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout) -> Result<(CpuStorage, Shape)> {
        let y = self.take()?;
        let (storage, layout) = y.storage_and_layout();
        match &*storage {
            Storage::Cpu(s) => copy_out(s, layout),
            _ => candle_core::bail!("checkpoint: the output is not on the CPU"),
        }
    }
    fn cuda_fwd(&self, _: &CudaStorage, _: &Layout) -> Result<(CudaStorage, Shape)> {
        let y = self.take()?;
        let (storage, layout) = y.storage_and_layout();
        match &*storage {
            Storage::Cuda(s) => copy_out(s, layout),
            _ => candle_core::bail!("checkpoint: the output is not on the GPU"),
        }
    }
    fn bwd(&self, x: &Tensor, _: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(self.f.backward(x, grad)?))
    }
}

/// Parameter gradients computed inside a checkpoint's backward: `(index in the model's
/// variables, gradient)`, emptied by the training step after its backward.
#[derive(Debug, Clone, Default)]
pub struct Sink(Arc<Mutex<Vec<(usize, Tensor)>>>);

impl Sink {
    pub(crate) fn push(&self, var: usize, grad: Tensor) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((var, grad));
    }

    /// The gradients collected so far, leaving the sink empty.
    #[must_use]
    pub fn take(&self) -> Vec<(usize, Tensor)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}
