//! The full-precision model run over the calibration samples one block at a time,
//! collecting each block's linear-layer inputs.
//!
//! Only the hidden states of the calibration tokens (`[samples * len, hidden]`) and one
//! block's weights and captures live at once, so memory is bounded by one layer whatever
//! the depth. As in AutoAWQ, block `i + 1` sees block `i`'s full-precision output (the
//! quantization error of earlier blocks does not feed into later searches).

use crate::forward::{attention_bias, block_forward, layer_norm, Captures, Dims, LayerTensors, LayerWeights};
use anyhow::{bail, Context};
use candle_core::{Device, Tensor};
use seqgpt_engine::arch::{self, Part};

/// Hidden states of the calibration samples, advanced block by block.
pub struct Calibration {
    pub dims: Dims,
    /// Samples and tokens per sample.
    pub s: usize,
    pub t: usize,
    ids: Vec<u32>,
    x: Option<Tensor>,
    pub bias: Tensor,
    emb_rows: Option<Vec<f32>>,
    emb_norm_w: Option<Vec<f32>>,
    emb_norm_b: Option<Vec<f32>>,
}

impl Calibration {
    /// `samples`: token ids, all of the same length.
    pub fn new(dims: Dims, samples: &[Vec<u32>]) -> anyhow::Result<Self> {
        let t = samples.first().map_or(0, Vec::len);
        if t == 0 || samples.iter().any(|s| s.len() != t) {
            bail!("calibration samples must be non-empty and of one length");
        }
        Ok(Self {
            dims,
            s: samples.len(),
            t,
            ids: samples.concat(),
            x: None,
            bias: attention_bias(dims.n_head, t)?,
            emb_rows: None,
            emb_norm_w: None,
            emb_norm_b: None,
        })
    }

    /// Tokens in all samples.
    pub fn tokens(&self) -> usize {
        self.s * self.t
    }

    /// Takes what it needs from tensors as they stream past (the token embedding and its
    /// LayerNorm), so the 1 GB embedding of a 560M model is not read twice.
    pub fn observe(&mut self, gguf_name: &str, data: &[f32]) {
        match arch::parse(gguf_name) {
            Some((arch::Tensor::TokenEmbd, _, Part::Weight)) => self.emb_rows = Some(gather_rows(data, self.dims.hidden, &self.ids)),
            Some((arch::Tensor::TokenEmbdNorm, _, Part::Weight)) => self.emb_norm_w = Some(data.to_vec()),
            Some((arch::Tensor::TokenEmbdNorm, _, Part::Bias)) => self.emb_norm_b = Some(data.to_vec()),
            _ => {}
        }
    }

    /// Computes the first block's input (loading through `get` what was not observed).
    pub fn ensure_started(&mut self, mut get: impl FnMut(&str) -> anyhow::Result<Vec<f32>>) -> anyhow::Result<()> {
        if self.x.is_some() {
            return Ok(());
        }
        let h = self.dims.hidden;
        let rows = match self.emb_rows.take() {
            Some(r) => r,
            None => gather_rows(&get(&arch::Tensor::TokenEmbd.weight())?, h, &self.ids),
        };
        let g = match self.emb_norm_w.take() {
            Some(v) => v,
            None => get(&arch::Tensor::TokenEmbdNorm.weight())?,
        };
        let b = match self.emb_norm_b.take() {
            Some(v) => v,
            None => get(&arch::Tensor::TokenEmbdNorm.name(0, Part::Bias))?,
        };
        let x = Tensor::from_vec(rows, (self.tokens(), h), &Device::Cpu)?;
        let g = Tensor::from_vec(g, h, &Device::Cpu)?;
        let b = Tensor::from_vec(b, h, &Device::Cpu)?;
        self.x = Some(layer_norm(&x, &g, &b, self.dims.eps)?);
        Ok(())
    }

    /// Runs the full-precision block `w` over the samples: returns its linear layers'
    /// inputs and moves the hidden states to its output.
    pub fn layer(&mut self, w: &LayerWeights) -> anyhow::Result<Captures> {
        let x = self.x.as_ref().context("calibration not started")?;
        let lt = LayerTensors::new(w, self.dims)?;
        let (out, caps) = block_forward(&lt, x, self.s, self.t, self.dims, &self.bias, true)?;
        self.x = Some(out);
        Ok(caps.expect("captured"))
    }
}

/// Rows `ids` of a `[vocab, h]` matrix.
pub fn gather_rows(table: &[f32], h: usize, ids: &[u32]) -> Vec<f32> {
    let mut out = Vec::with_capacity(ids.len() * h);
    for &id in ids {
        let r = id as usize * h;
        out.extend_from_slice(&table[r..r + h]);
    }
    out
}
