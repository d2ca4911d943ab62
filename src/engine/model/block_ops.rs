//! How the blocks of one forward step run: candle's ops, the CPU kernels or the fused CUDA
//! kernels (`fused::path` picks one from the step's facts). `Bloom`'s blocks have one
//! `forward` each; the work that differs by device lives here, behind three operations
//! every block uses: attend (QKV, the cache, attention), a linear layer followed by GELU, and
//! a linear layer followed by a residual add.
//!
//! What a path needs once per step (candle's attention bias, the CPU's compact rows, the
//! keys' ALiBi positions) is computed once in [`BlockOps::prepare`], not per layer.

use super::fused::path::{block_path, BlockPath, Step};
use super::kv_cache::KvCache;
use super::layers::{gelu, Linear};
use crate::kernels::attention::AttnShape;
use candle_core::{DType, Device, Result, Tensor, D};

/// The shape of the model's attention, and its ALiBi slopes.
pub(super) struct Heads<'a> {
    pub count: usize,
    pub dim: usize,
    /// The activations' type.
    pub dtype: DType,
    pub slopes: &'a [f32],
    /// The slopes on the GPU, for the fused attention kernel.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub device_slopes: Option<&'a Tensor>,
}

impl Heads<'_> {
    fn scale(&self) -> f32 {
        1.0 / (self.dim as f32).sqrt()
    }

    fn shape(&self, batch: usize, t: usize, cache: &KvCache) -> AttnShape {
        AttnShape { batch, t, heads: self.count, head_dim: self.dim, cap: cache.capacity(), past: cache.own_len() }
    }
}

/// One step's path, with what it prepared for every block.
enum Path {
    /// candle's ops: ALiBi plus the causal and padding mask, `[batch, heads, t, total]` in f32.
    Candle { bias: Tensor },
    /// The CPU kernels. Blocks see the real (non-padding) positions only, `[1, real, hidden]`:
    /// padding skips the row-wise work (LayerNorms, matmuls, MLP), and only the attention
    /// sees the padded layout, where their keys are masked anyway.
    Cpu { real: RealRows, kpos: Vec<f32> },
    /// kernels.cu: KV append with the bias, attention, bias + GELU, bias + residual.
    #[cfg(feature = "cuda")]
    CudaFused { kpos: Tensor },
}

/// The operations every block of one step runs.
pub(super) struct BlockOps<'a> {
    path: Path,
    heads: Heads<'a>,
    /// Rows and new positions of the step.
    batch: usize,
    t: usize,
}

impl<'a> BlockOps<'a> {
    /// Picks the step's path from the cache after its `t` positions were reserved and their
    /// mask pushed (`mask` is this step's, `batch x t`).
    pub fn prepare(heads: Heads<'a>, device: &Device, mask: &[Vec<u8>], cache: &KvCache) -> Result<Self> {
        let (batch, t) = (mask.len(), mask.first().map_or(0, Vec::len));
        let step = Step {
            on_cpu: device.is_cpu(),
            on_cuda: device.is_cuda(),
            dtype: heads.dtype,
            fused_enabled: super::fused_kernels_enabled(),
            shared_len: cache.shared_len(),
            total: cache.len() + t,
            head_dim: heads.dim,
        };
        let masks = cache.key_masks();
        let path = match block_path(&step) {
            #[cfg(feature = "cuda")]
            BlockPath::CudaFused => {
                let kpos = Tensor::from_vec(key_positions(&masks), (masks.len(), masks[0].len()), &Device::Cpu)?;
                Path::CudaFused { kpos: kpos.to_device(device)? }
            }
            BlockPath::CpuKernels => Path::Cpu { real: RealRows::new(mask), kpos: key_positions(&masks) },
            // Without the cuda feature no device is CUDA, so the fused path is never chosen.
            _ => Path::Candle { bias: attention_bias(&heads, &masks, cache.len(), t, device)? },
        };
        Ok(Self { path, heads, batch, t })
    }

    /// The embeddings `[batch, t, hidden]` in the layout the blocks work in.
    pub fn enter(&self, x: Tensor) -> Result<Tensor> {
        match &self.path {
            Path::Cpu { real, .. } => real.gather(&x),
            _ => Ok(x),
        }
    }

    /// The last block's output back in `[batch, t, hidden]` (zeros at padding on the CPU).
    pub fn leave(&self, x: Tensor) -> Result<Tensor> {
        match &self.path {
            Path::Cpu { real, .. } => real.scatter(&x),
            _ => Ok(x),
        }
    }

    /// Self-attention of `layer` on the normalized input: the QKV projection, its keys and
    /// values appended to the cache, attention over the cache. Returns the heads' context,
    /// before the output projection, in the blocks' layout.
    pub fn attend(&self, qkv: &Linear, x: &Tensor, layer: usize, cache: &mut KvCache) -> Result<Tensor> {
        match &self.path {
            Path::Candle { bias } => attend_candle(&self.heads, qkv, x, bias, layer, cache),
            Path::Cpu { real, kpos } => {
                use super::cpu_attention::{AppendKv, Attention};
                let qkv = real.scatter(&qkv.forward(x)?)?;
                let shape = self.heads.shape(self.batch, self.t, cache);
                let (kc, vc) = cache.layer(layer);
                kc.inplace_op2(&qkv, &AppendKv { shape, part: 1 })?;
                vc.inplace_op2(&qkv, &AppendKv { shape, part: 2 })?;
                let attn = Attention { shape, kpos: kpos.clone(), slopes: self.heads.slopes.to_vec(), scale: self.heads.scale() };
                real.gather(&qkv.apply_op3_no_bwd(kc, vc, &attn)?)
            }
            #[cfg(feature = "cuda")]
            Path::CudaFused { kpos } => {
                use super::cuda::{AttentionOp, KvAppendOp};
                use super::fused::params::QkvPart;
                let qkv_out = qkv.forward_no_bias(x)?.contiguous()?;
                let bias = device_bias(qkv)?.clone();
                let dims = self.heads.shape(self.batch, self.t, cache);
                let (kc, vc) = cache.layer(layer);
                kc.inplace_op2(&qkv_out, &KvAppendOp { dims, part: QkvPart::Key, bias: bias.clone() })?;
                vc.inplace_op2(&qkv_out, &KvAppendOp { dims, part: QkvPart::Value, bias: bias.clone() })?;
                let slopes = self.heads.device_slopes.ok_or_else(|| missing("the ALiBi slopes"))?.clone();
                let attn = AttentionOp { dims, qkv_bias: bias, kpos: kpos.clone(), slopes, scale: self.heads.scale() };
                qkv_out.apply_op3_no_bwd(kc, vc, &attn)
            }
        }
    }

    /// `gelu(x W^T + b)`.
    pub fn linear_gelu(&self, lin: &Linear, x: &Tensor) -> Result<Tensor> {
        match &self.path {
            #[cfg(feature = "cuda")]
            Path::CudaFused { .. } => lin.forward_no_bias(x)?.apply_op2_no_bwd(device_bias(lin)?, &super::cuda::BiasGeluOp),
            _ => gelu(lin.forward(x)?),
        }
    }

    /// `x W^T + b + residual`.
    pub fn linear_residual(&self, lin: &Linear, x: &Tensor, residual: &Tensor) -> Result<Tensor> {
        match &self.path {
            #[cfg(feature = "cuda")]
            Path::CudaFused { .. } => {
                lin.forward_no_bias(x)?.apply_op3_no_bwd(device_bias(lin)?, residual, &super::cuda::BiasResidualOp)
            }
            _ => lin.forward(x)? + residual,
        }
    }
}

#[cfg(feature = "cuda")]
fn missing(what: &str) -> candle_core::Error {
    candle_core::Error::Msg(format!("fused path without {what} on the GPU"))
}

#[cfg(feature = "cuda")]
fn device_bias(lin: &Linear) -> Result<&Tensor> {
    lin.device_bias().ok_or_else(|| missing("a bias"))
}

/// Attention with candle's ops, on any device and type, including a prompt prefix shared by
/// all rows (beam search): `softmax(q.k / sqrt(d) + bias) v`, scores and softmax in f32.
fn attend_candle(heads: &Heads, qkv: &Linear, x: &Tensor, bias: &Tensor, layer: usize, cache: &mut KvCache) -> Result<Tensor> {
    let (b, t, h) = x.dims3()?;
    let (nh, hd) = (heads.count, heads.dim);
    let qkv = qkv.forward(x)?;
    let split = |i: usize| -> Result<Tensor> { qkv.narrow(2, i * h, h)?.reshape((b, t, nh, hd))?.transpose(1, 2)?.contiguous() };
    let (q, k, v) = (split(0)?, split(1)?, split(2)?);
    let (k_own, v_own) = cache.write(layer, &k, &v)?;
    let scale = 1.0 / (hd as f64).sqrt();
    let q32 = q.to_dtype(DType::F32)?;
    let own_scores = q32.matmul(&k_own.to_dtype(DType::F32)?.t()?)?;
    let shared = cache.shared_kv(layer);
    let scores = match shared {
        Some((k_shared, _)) => {
            let s = rows_times_shared(&q32, &k_shared.to_dtype(DType::F32)?.t()?)?;
            Tensor::cat(&[&s, &own_scores], 3)?
        }
        None => own_scores,
    };
    let scores = (scores * scale)?.broadcast_add(bias)?;
    let probs = softmax_last_dim(&scores)?.to_dtype(heads.dtype)?;
    let ctx = match shared {
        Some((_, v_shared)) => {
            let p_len = v_shared.dim(2)?;
            let p_shared = probs.narrow(3, 0, p_len)?;
            let p_own = probs.narrow(3, p_len, probs.dim(3)? - p_len)?.contiguous()?;
            (rows_times_shared(&p_shared, v_shared)? + p_own.matmul(&v_own.to_dtype(heads.dtype)?.contiguous()?)?)?
        }
        None => probs.matmul(&v_own.to_dtype(heads.dtype)?.contiguous()?)?,
    };
    ctx.transpose(1, 2)?.reshape((b, t, h))
}

/// ALiBi plus the causal and padding mask, `[batch, heads, t, total]` in f32, shared by all
/// layers. `mask` already includes the `t` new positions.
fn attention_bias(heads: &Heads, mask: &[Vec<u8>], past: usize, t: usize, device: &Device) -> Result<Tensor> {
    let nh = heads.count;
    let total = past + t;
    let b = mask.len();
    let mut bias = vec![0f32; b * nh * t * total];
    for (row, m) in mask.iter().enumerate() {
        // transformers: position = (cumsum(mask) - 1) * mask.
        let mut pos = vec![0f32; total];
        let mut count = 0i64;
        for (j, &bit) in m.iter().enumerate() {
            count += bit as i64;
            pos[j] = if bit != 0 { (count - 1) as f32 } else { 0.0 };
        }
        for (hh, &slope) in heads.slopes.iter().enumerate() {
            for i in 0..t {
                let q_abs = past + i;
                let out = &mut bias[((row * nh + hh) * t + i) * total..][..total];
                for j in 0..total {
                    out[j] = if j > q_abs || m[j] == 0 { MASKED } else { slope * pos[j] };
                }
            }
        }
    }
    Tensor::from_vec(bias, (b, nh, t, total), &Device::Cpu)?.to_device(device)
}

/// `x [b, heads, t, n] @ shared[0] [heads, n, m]` -> `[b, heads, t, m]`: every row against one
/// shared matrix per head, as one matmul per head over all rows (no copy of `shared`).
fn rows_times_shared(x: &Tensor, shared: &Tensor) -> Result<Tensor> {
    let (b, nh, t, n) = x.dims4()?;
    let m = shared.dim(3)?;
    let x = x.transpose(0, 1)?.contiguous()?.reshape((nh, b * t, n))?;
    let y = x.matmul(&shared.squeeze(0)?.to_dtype(x.dtype())?)?;
    y.reshape((nh, b, t, m))?.transpose(0, 1)?.contiguous()
}

/// Added to masked scores: far below any real score, yet finite so that a row with every key
/// masked (a padding query) gives a uniform distribution instead of NaN.
const MASKED: f32 = -1e30;

fn softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    let max = x.max_keepdim(D::Minus1)?;
    let e = x.broadcast_sub(&max)?.exp()?;
    let sum = e.sum_keepdim(D::Minus1)?;
    e.broadcast_div(&sum)
}

/// The real (mask 1) positions of a `batch x t` step, for moving activations between the
/// padded layout `[batch, t, d]` and the compact one `[1, real, d]`. With no padding both are
/// the same tensor and nothing is copied.
struct RealRows {
    batch: usize,
    t: usize,
    /// Flat indices `row * t + i` of the real positions, in order.
    index: Vec<usize>,
}

impl RealRows {
    fn new(mask: &[Vec<u8>]) -> Self {
        let t = mask.first().map_or(0, Vec::len);
        let index = mask.iter().flatten().enumerate().filter(|(_, &m)| m != 0).map(|(i, _)| i).collect();
        Self { batch: mask.len(), t, index }
    }

    fn all_real(&self) -> bool {
        self.index.len() == self.batch * self.t
    }

    /// `[batch, t, d]` -> `[1, real, d]`.
    fn gather(&self, x: &Tensor) -> Result<Tensor> {
        let d = x.dim(D::Minus1)?;
        if self.all_real() {
            return x.reshape((1, self.batch * self.t, d));
        }
        let all = x.flatten_all()?.to_vec1::<f32>()?;
        let mut out = Vec::with_capacity(self.index.len() * d);
        for &i in &self.index {
            out.extend_from_slice(&all[i * d..(i + 1) * d]);
        }
        Tensor::from_vec(out, (1, self.index.len(), d), x.device())
    }

    /// `[1, real, d]` -> `[batch, t, d]`, zeros at padding positions.
    fn scatter(&self, x: &Tensor) -> Result<Tensor> {
        let d = x.dim(D::Minus1)?;
        if self.all_real() {
            return x.reshape((self.batch, self.t, d));
        }
        let real = x.flatten_all()?.to_vec1::<f32>()?;
        let mut out = vec![0f32; self.batch * self.t * d];
        for (k, &i) in self.index.iter().enumerate() {
            out[i * d..(i + 1) * d].copy_from_slice(&real[k * d..(k + 1) * d]);
        }
        Tensor::from_vec(out, (self.batch, self.t, d), x.device())
    }
}

/// Per row, each key's ALiBi position (`(cumsum(mask) - 1) * mask`, as transformers), or -1
/// for padding: `[batch, total]`, flattened.
fn key_positions(masks: &[Vec<u8>]) -> Vec<f32> {
    let mut kpos = Vec::with_capacity(masks.iter().map(Vec::len).sum());
    for m in masks {
        let mut count = 0f32;
        for &bit in m {
            if bit != 0 {
                kpos.push(count);
                count += 1.0;
            } else {
                kpos.push(-1.0);
            }
        }
    }
    kpos
}
