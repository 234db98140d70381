//! Sampling with a key/value cache shared by a batch of sequences of different lengths.
//!
//! Each decoding step feeds every sequence only the tokens it has not fed yet (its prompt
//! first, then one sampled token, or a tool observation and the token before it), so a step
//! costs the new tokens, not the whole prefix again. The batch's keys and values live in one
//! tensor per layer, `[rows, kv_heads, width, head_dim]`: a step appends its `N` columns
//! (`N` = the most tokens any row fed) to every row, and a row that fed fewer leaves holes a
//! per-row mask hides. Rows keep their own RoPE positions (tokens fed so far), so holes never
//! shift a position. Inference only: nothing here records a backward pass.

use std::sync::Arc;

use candle_core::Tensor;

use super::{Model, fused, ops};
use crate::error::Result;

/// Keys and values of the tokens a batch of sequences has fed so far.
#[derive(Debug)]
pub struct KvCache {
    /// Per layer: keys and values after RoPE, `[rows, kv_heads, width, head_dim]`.
    layers: Vec<(Tensor, Tensor)>,
    /// Per row: which of the `width` columns hold one of its tokens.
    valid: Vec<Vec<bool>>,
    /// Per row: tokens fed (the position of its next token).
    fed: Vec<usize>,
}

impl KvCache {
    /// An empty cache of `rows` sequences.
    #[must_use]
    pub fn new(rows: usize) -> Self {
        Self {
            layers: Vec::new(),
            valid: vec![Vec::new(); rows],
            fed: vec![0; rows],
        }
    }

    /// Sequences in the batch.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.fed.len()
    }

    /// Tokens row `i` has fed.
    #[must_use]
    pub fn fed(&self, i: usize) -> usize {
        self.fed[i]
    }

    /// Appends `n` empty rows (sequences joining the batch: each feeds its prompt next).
    ///
    /// # Errors
    /// Tensor failures.
    pub fn push_rows(&mut self, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        for (k, v) in &mut self.layers {
            let (_, kv, width, d) = k.dims4()?;
            let empty = Tensor::zeros((n, kv, width, d), k.dtype(), k.device())?;
            *k = Tensor::cat(&[&*k, &empty], 0)?;
            *v = Tensor::cat(&[&*v, &empty], 0)?;
        }
        let width = self.width();
        self.valid.extend((0..n).map(|_| vec![false; width]));
        self.fed.extend(std::iter::repeat_n(0, n));
        Ok(())
    }

    /// Moves every row's cached columns to the left, dropping the columns no row holds, once
    /// they are most of the width (rows that joined late, or left, leave such columns
    /// behind): positions are unchanged (a column's position is its rank among its row's).
    ///
    /// # Errors
    /// Tensor failures.
    pub fn compact(&mut self) -> Result<()> {
        let longest = self.fed.iter().copied().max().unwrap_or(0);
        let width = self.width();
        if width <= 2 * longest + 16 {
            return Ok(());
        }
        let rows = self.rows();
        let mut index = Vec::with_capacity(rows * longest);
        for valid in &self.valid {
            let held: Vec<u32> = valid
                .iter()
                .enumerate()
                .filter(|(_, v)| **v)
                .map(|(c, _)| c as u32)
                .collect();
            index.extend(&held);
            index.extend(std::iter::repeat_n(0, longest - held.len()));
        }
        if let Some((k, _)) = self.layers.first() {
            let (_, kv, _, d) = k.dims4()?;
            let index = Tensor::from_vec(index, (rows, 1, longest, 1), k.device())?
                .broadcast_as((rows, kv, longest, d))?
                .contiguous()?;
            for (k, v) in &mut self.layers {
                *k = k.contiguous()?.gather(&index, 2)?;
                *v = v.contiguous()?.gather(&index, 2)?;
            }
        }
        self.valid = self
            .fed
            .iter()
            .map(|&n| (0..longest).map(|c| c < n).collect())
            .collect();
        Ok(())
    }

    /// Keeps only the rows `keep` (in that order, repeats allowed): finished sequences leave
    /// the batch, a prompt prefilled once is copied to the samples that share it.
    ///
    /// # Errors
    /// Tensor failures.
    pub fn retain(&mut self, keep: &[usize]) -> Result<()> {
        if keep.len() == self.rows() && keep.iter().enumerate().all(|(i, &k)| i == k) {
            return Ok(());
        }
        if let Some((k, _)) = self.layers.first() {
            let index = Tensor::from_vec(
                keep.iter().map(|&i| i as u32).collect::<Vec<_>>(),
                keep.len(),
                k.device(),
            )?;
            for (k, v) in &mut self.layers {
                *k = k.index_select(&index, 0)?;
                *v = v.index_select(&index, 0)?;
            }
        }
        self.valid = keep.iter().map(|&i| self.valid[i].clone()).collect();
        self.fed = keep.iter().map(|&i| self.fed[i]).collect();
        Ok(())
    }

    fn width(&self) -> usize {
        self.valid.first().map_or(0, Vec::len)
    }

    /// The additive mask `[rows, 1, n, width + n]` of `n` new columns per row: a query sees
    /// its row's cached tokens and the new ones up to itself, within `window` positions of it.
    fn mask(
        &self,
        n: usize,
        window: Option<usize>,
        dtype: candle_core::DType,
        device: &candle_core::Device,
    ) -> candle_core::Result<Tensor> {
        let window = window.unwrap_or(usize::MAX);
        let rows = self.rows();
        let mut mask = Vec::with_capacity(rows * n * (self.width() + n));
        for (valid, &fed) in self.valid.iter().zip(&self.fed) {
            // The position of each cached column: its rank among the row's valid columns.
            let mut positions = Vec::with_capacity(valid.len());
            let mut next = 0;
            for &v in valid {
                positions.push(v.then_some(next));
                next += usize::from(v);
            }
            for j in 0..n {
                let query = fed + j;
                let sees = |key: usize| key <= query && query - key < window;
                mask.extend(
                    positions
                        .iter()
                        .map(|p| if p.is_some_and(sees) { 0.0f32 } else { -1e9 }),
                );
                mask.extend((0..n).map(|col| if sees(fed + col) { 0.0 } else { -1e9 }));
            }
        }
        Tensor::from_vec(mask, (rows, 1, n, self.width() + n), device)?.to_dtype(dtype)
    }
}

impl Model {
    /// Feeds `new[i]` (at least one token) to row `i` of `cache` and returns the logits
    /// `[rows, vocab]` of the next token after each row's last one; the cache grows by the
    /// tokens fed.
    ///
    /// # Errors
    /// A row with no new token, ids out of the vocabulary, tensor failures.
    pub fn decode(&self, cache: &mut KvCache, new: &[Vec<u32>]) -> Result<Tensor> {
        let (hidden, last) = self.decode_hidden(cache, new)?;
        Ok(self
            .logits_at(&hidden, &last)?
            .to_dtype(candle_core::DType::F32)?)
    }

    /// The decoder's hidden states of the new tokens, and the row of each sequence's last one.
    fn decode_hidden(
        &self,
        cache: &mut KvCache,
        new: &[Vec<u32>],
    ) -> candle_core::Result<(Tensor, Tensor)> {
        let c = &self.config;
        let rows = cache.rows();
        if new.len() != rows || new.iter().any(Vec::is_empty) {
            candle_core::bail!("decode: one non-empty run of new tokens per cached row");
        }
        let n = new.iter().map(Vec::len).max().unwrap_or(1);
        let (heads, kv_heads, head_dim) = (c.num_attention_heads, c.num_kv_heads(), c.head_dim());
        let device = &self.device;

        let mut ids = Vec::with_capacity(rows * n);
        let mut positions = Vec::with_capacity(rows * n);
        for (i, tokens) in new.iter().enumerate() {
            ids.extend_from_slice(tokens);
            ids.extend(std::iter::repeat_n(0, n - tokens.len()));
            positions.extend(cache.fed[i]..cache.fed[i] + n);
        }
        let ids = Tensor::from_vec(ids, (rows, n), device)?;
        // Only the positions being fed: a table up to the longest row would redo every
        // earlier position's trigonometry on each token.
        let (cos, sin) = super::rope::tables(
            &c.rope,
            positions.into_iter(),
            head_dim,
            self.compute,
            device,
        )?;
        let (cos, sin) = (
            cos.reshape((rows, 1, n, head_dim))?,
            sin.reshape((rows, 1, n, head_dim))?,
        );
        let scale = 1.0 / (head_dim as f64).sqrt();
        // One mask per distinct window among the layers (full attention: `None`).
        let mut masks: Vec<(Option<usize>, Tensor)> = Vec::new();
        for &window in &c.windows {
            if !masks.iter().any(|(w, _)| *w == window) {
                masks.push((window, cache.mask(n, window, self.compute, device)?));
            }
        }

        let mut grown = Vec::with_capacity(c.num_hidden_layers);
        let lengths: Arc<[usize]> = vec![n; rows].into();
        let hidden = self.decoder(&ids, None, &mut |layer, qkv| {
            let shape = self.attention_shape(&lengths, layer);
            let mask = &masks
                .iter()
                .find(|(w, _)| *w == shape.window)
                .ok_or_else(|| candle_core::Error::Msg("decode: no mask for a window".into()))?
                .1;
            let (q, k, v) = ops::split_heads(&qkv, (rows, n), &shape)?;
            let q = ops::rope(&q, &cos, &sin)?;
            let k = ops::rope(&k, &cos, &sin)?;
            let (k, v) = match cache.layers.get(layer) {
                Some((past_k, past_v)) => (
                    Tensor::cat(&[past_k, &k], 2)?,
                    Tensor::cat(&[past_v, &v], 2)?,
                ),
                None => (k, v),
            };
            let keys = ops::repeat_kv(&k, heads / kv_heads)?;
            let values = ops::repeat_kv(&v, heads / kv_heads)?;
            grown.push((k, v));
            let scores =
                (ops::matmul(&q, &keys.t()?.contiguous()?)? * scale)?.broadcast_add(mask)?;
            ops::merge_heads(&ops::matmul(&fused::softmax(&scores)?, &values)?)
        })?;
        cache.layers = grown;
        for (i, tokens) in new.iter().enumerate() {
            cache.valid[i].extend((0..n).map(|j| j < tokens.len()));
            cache.fed[i] += tokens.len();
        }
        let last: Vec<u32> = new
            .iter()
            .enumerate()
            .map(|(i, t)| (i * n + t.len() - 1) as u32)
            .collect();
        Ok((hidden, Tensor::from_vec(last, rows, device)?))
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device};
    use serde_json::json;

    use super::*;
    use crate::model::ModelConfig;

    fn full_forward_logits(model: &Model, seq: &[u32]) -> Vec<f32> {
        let tokens = crate::model::Tokens::packed([seq], &Device::Cpu).unwrap();
        let hidden = model.hidden(&tokens, None).unwrap();
        let last = Tensor::from_vec(vec![(seq.len() - 1) as u32], 1, &Device::Cpu).unwrap();
        model
            .logits_at(&hidden, &last)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap()
    }

    #[test]
    fn cached_decoding_matches_the_full_forward_on_ragged_rows() {
        let plain = ModelConfig::tiny_qwen2(23, 32, 2, 4, 2).unwrap();
        // Qwen3's head norms, and a window of 3 on the second layer that the rows outgrow.
        let qwen3 = plain
            .with(&[
                ("model_type", json!("qwen3")),
                ("architectures", json!(["Qwen3ForCausalLM"])),
                ("head_dim", json!(8)),
                ("use_sliding_window", json!(true)),
                ("sliding_window", json!(3)),
                ("max_window_layers", json!(1)),
            ])
            .unwrap();
        for config in [plain, qwen3] {
            decode_against_full_forward(config);
        }
    }

    fn decode_against_full_forward(config: ModelConfig) {
        let mut model = Model::init(config, 7, DType::F32, &Device::Cpu).unwrap();
        // Initial weights (σ 0.02) give near-uniform logits that a wrong mask hardly moves.
        for t in model.tensors.values_mut() {
            *t = (&*t * 25.0).unwrap();
        }
        let mut seqs: Vec<Vec<u32>> = vec![Vec::new(); 3];
        let mut rows: Vec<usize> = vec![0, 1, 2];
        let mut cache = KvCache::new(3);
        let mut next = 1u32;
        // Ragged prompts, single tokens, an observation of three tokens on one row, then the
        // second row finishes and the other two change places.
        let plan: [(&[usize], &[usize]); 5] = [
            (&[0, 1, 2], &[5, 2, 3]),
            (&[0, 1, 2], &[1, 1, 1]),
            (&[0, 1, 2], &[3, 1, 2]),
            (&[2, 0], &[1, 4]),
            (&[2, 0], &[1, 1]),
        ];
        for (keep, feed) in plan {
            let keep_rows: Vec<usize> = keep
                .iter()
                .map(|s| rows.iter().position(|r| r == s).unwrap())
                .collect();
            cache.retain(&keep_rows).unwrap();
            rows = keep.to_vec();
            let new: Vec<Vec<u32>> = feed
                .iter()
                .map(|&n| {
                    (0..n)
                        .map(|_| {
                            next = next % 22 + 1;
                            next
                        })
                        .collect()
                })
                .collect();
            for (&s, tokens) in rows.iter().zip(&new) {
                seqs[s].extend(tokens);
            }
            let logits = model
                .decode(&mut cache, &new)
                .unwrap()
                .to_vec2::<f32>()
                .unwrap();
            for (r, &s) in rows.iter().enumerate() {
                assert_eq!(cache.fed(r), seqs[s].len());
                let full = full_forward_logits(&model, &seqs[s]);
                let err = full
                    .iter()
                    .zip(&logits[r])
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0f32, f32::max);
                // Logits reach the hundreds here: a few dozen fp32 ulps of them (the two
                // paths multiply matrices of other shapes, which the AVX2 and AVX-512 kernels
                // block, and so sum, differently), where a wrong mask or position moves them
                // by whole units.
                let size = full.iter().fold(100.0f32, |m, v| m.max(v.abs()));
                assert!(
                    err < 1e-5 * size,
                    "sequence {s} of {} tokens: {err} (logits up to {size})",
                    seqs[s].len()
                );
            }
        }
    }
}
