//! BLOOM (and SeqGPT, which is BLOOM): ALiBi attention, fused QKV, tanh-GELU MLP,
//! LayerNorm after the embeddings, biases everywhere, LM head tied to the embeddings.
//!
//! Follows Hugging Face's `BloomForCausalLM`: ALiBi positions come from the attention
//! mask (so left-padded batches are exact), scores are `q.k / sqrt(d) + alibi`, softmax in
//! f32. The QKV weight is stored [Q; K; V] (llama.cpp's layout), not per-head interleaved.

use super::config::BloomConfig;
use super::fused::path::{block_path, BlockPath, Step};
use super::kv_cache::KvCache;
use super::layers::{LayerNorm, Linear};
use super::weights::{MappedTensor, WeightLoader};
use crate::arch::{self, Part};
use crate::gguf::{GgufError, GgufFile};
use candle_core::{DType, Device, Result, Tensor, D};

/// Where logits are wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logits {
    /// Only each row's last position (generation).
    Last,
    /// Every position (scoring, tests).
    All,
}

struct Block {
    attn_norm: LayerNorm,
    qkv: Linear,
    attn_out: Linear,
    ffn_norm: LayerNorm,
    ffn_up: Linear,
    ffn_down: Linear,
}

pub struct Bloom {
    pub cfg: BloomConfig,
    device: Device,
    dtype: DType,
    /// Element type of the key/value cache (`cpu_kv_dtype`; on a GPU the activations').
    kv_dtype: DType,
    token_embd: MappedTensor,
    embd_norm: LayerNorm,
    blocks: Vec<Block>,
    output_norm: LayerNorm,
    lm_head: Linear,
    alibi_slopes: Vec<f32>,
    /// The slopes on the GPU, for the fused attention kernel.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    device_slopes: Option<Tensor>,
    #[cfg(feature = "cuda")]
    staging: super::cuda::PinnedStaging,
}

/// Model-loading errors: the file's, or the device's.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    File(#[from] GgufError),
    #[error("placing weights on {device}: {source}")]
    Device {
        device: String,
        #[source]
        source: candle_core::Error,
    },
}

impl Bloom {
    /// Builds the model from a validated file. On the CPU nothing is copied: weights stay
    /// in the mapping. On a GPU, layers and the head are uploaded (activations in `dtype`).
    pub fn load(file: &GgufFile, device: &Device, dtype: DType, cpu_kv: CpuKv) -> std::result::Result<Self, LoadError> {
        let cfg = BloomConfig::from_gguf(file)?;
        let w = WeightLoader { file };
        let (h, ff, eps) = (cfg.hidden, cfg.ffn, cfg.layer_norm_eps);
        let dev_err = |source| LoadError::Device { device: format!("{device:?}"), source };
        // `block` is ignored for the tensors outside the blocks (arch::Tensor::name).
        let norm = |t: arch::Tensor, block: usize| -> std::result::Result<LayerNorm, LoadError> {
            let g = w.vector(&t.name(block, Part::Weight), h)?;
            let b = w.vector(&t.name(block, Part::Bias), h)?;
            LayerNorm::new(&g, &b, eps, device, dtype).map_err(dev_err)
        };
        let linear = |t: arch::Tensor, block: usize, out: usize, inp: usize| -> std::result::Result<Linear, LoadError> {
            let wt = w.get(&t.name(block, Part::Weight), &[out, inp])?;
            let b = w.vector(&t.name(block, Part::Bias), out)?;
            Linear::new(wt, Some(&b), device, dtype).map_err(dev_err)
        };
        let token_embd = w.get(&arch::Tensor::TokenEmbd.weight(), &[cfg.vocab, h])?;
        let embd_norm = norm(arch::Tensor::TokenEmbdNorm, 0)?;
        let mut blocks = Vec::with_capacity(cfg.n_layer);
        for i in 0..cfg.n_layer {
            blocks.push(Block {
                attn_norm: norm(arch::Tensor::AttnNorm, i)?,
                qkv: linear(arch::Tensor::AttnQkv, i, 3 * h, h)?,
                attn_out: linear(arch::Tensor::AttnOutput, i, h, h)?,
                ffn_norm: norm(arch::Tensor::FfnNorm, i)?,
                ffn_up: linear(arch::Tensor::FfnUp, i, ff, h)?,
                ffn_down: linear(arch::Tensor::FfnDown, i, h, ff)?,
            });
        }
        let output_norm = norm(arch::Tensor::OutputNorm, 0)?;
        // No `output` tensor: the head is tied to the token embeddings.
        let lm_head = match w.optional(&arch::Tensor::Output.weight(), &[cfg.vocab, h])? {
            Some(head) => Linear::new(head, None, device, dtype),
            None => Linear::tied_head(&token_embd, device, dtype),
        }
        .map_err(dev_err)?;
        let alibi_slopes = alibi_slopes(cfg.n_head);
        let device_slopes = match device {
            Device::Cpu => None,
            _ => Some(Tensor::from_slice(&alibi_slopes, cfg.n_head, device).map_err(dev_err)?),
        };
        let kv_dtype = cpu_kv_dtype(file, &cfg, device, dtype, cpu_kv);
        Ok(Self {
            cfg,
            device: device.clone(),
            dtype,
            kv_dtype,
            token_embd,
            embd_norm,
            blocks,
            output_norm,
            lm_head,
            alibi_slopes,
            device_slopes,
            #[cfg(feature = "cuda")]
            staging: Default::default(),
        })
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Element type of the key/value cache.
    pub fn kv_dtype(&self) -> DType {
        self.kv_dtype
    }

    /// An empty cache for `batch` rows with room for `capacity` positions.
    pub fn new_cache(&self, batch: usize, capacity: usize) -> Result<KvCache> {
        let c = &self.cfg;
        KvCache::new(c.n_layer, c.n_head, c.head_dim(), batch, capacity, &self.device, self.kv_dtype)
    }

    /// Gathers embedding rows for `ids` straight from the mapping (always on the CPU).
    pub fn embed_rows(&self, ids: &[u32]) -> Result<Vec<f32>> {
        let h = self.cfg.hidden;
        let view = self.token_embd.matrix();
        let mut out = vec![0f32; ids.len() * h];
        for (&id, row) in ids.iter().zip(out.chunks_exact_mut(h)) {
            if id as usize >= self.cfg.vocab {
                candle_core::bail!("token id {id} is outside the vocabulary of {}", self.cfg.vocab);
            }
            view.decode_row(id as usize, row);
        }
        Ok(out)
    }

    /// Runs `t` new tokens for each of the cache's rows (`ids` and `mask` are `batch x t`,
    /// mask 1 = real token, 0 = padding), appends them to the cache and returns logits:
    /// `[batch, vocab]` for `Logits::Last`, `[batch, t, vocab]` for `Logits::All`, in f32.
    pub fn forward(&self, ids: &[Vec<u32>], mask: &[Vec<u8>], cache: &mut KvCache, logits: Logits) -> Result<Tensor> {
        // On the CPU the whole pass runs on one of rayon's workers: each of its ~100 parallel
        // matmuls per token then splits through that worker's own queue, instead of being
        // injected from outside the pool and waking a worker, with the caller asleep until
        // it ends. Batch-1 decoding on the 2-core AVX2 VM: 55.8 -> 59.6 tok/s (medians of
        // four alternating rounds, docs/BENCHMARKS.md).
        if self.device.is_cpu() {
            return rayon::scope(|_| self.forward_here(ids, mask, cache, logits));
        }
        self.forward_here(ids, mask, cache, logits)
    }

    fn forward_here(&self, ids: &[Vec<u32>], mask: &[Vec<u8>], cache: &mut KvCache, logits: Logits) -> Result<Tensor> {
        let b = ids.len();
        let t = ids.first().map_or(0, Vec::len);
        if b == 0 || t == 0 || ids.iter().any(|r| r.len() != t) || mask.len() != b || mask.iter().any(|m| m.len() != t) {
            candle_core::bail!("forward: ids and mask must be batch x t with t > 0");
        }
        if b != cache.batch() {
            candle_core::bail!("forward: {b} rows, the cache has {}", cache.batch());
        }
        let flat: Vec<u32> = ids.iter().flatten().copied().collect();
        let rows = self.embed_rows(&flat)?;
        let x = match &self.device {
            #[cfg(feature = "cuda")]
            Device::Cuda(dev) => self.staging.upload(&rows, &[b, t, self.cfg.hidden], dev)?,
            _ => Tensor::from_vec(rows, (b, t, self.cfg.hidden), &Device::Cpu)?.to_device(&self.device)?,
        };
        let x = x.to_dtype(self.dtype)?;
        let mut x = self.embd_norm.forward(&x)?;

        cache.reserve(t)?;
        cache.push_mask(mask)?;
        match self.block_path(cache, t) {
            #[cfg(feature = "cuda")]
            BlockPath::CudaFused => {
                let masks = cache.key_masks();
                let kpos = Tensor::from_vec(key_positions(&masks), (masks.len(), masks[0].len()), &Device::Cpu)?
                    .to_device(&self.device)?;
                for (i, block) in self.blocks.iter().enumerate() {
                    x = self.block_forward_fused(block, i, &x, &kpos, cache)?;
                }
                cache.advance(t);
                self.head(&x, t, logits)
            }
            BlockPath::CpuKernels => {
                let kpos = key_positions(&cache.key_masks());
                // Padding positions skip the row-wise work (LayerNorms, matmuls, MLP): only the
                // attention sees the padded layout, where their keys are masked anyway.
                let real = RealRows::new(mask);
                let mut x = real.gather(&x)?;
                for (i, block) in self.blocks.iter().enumerate() {
                    x = self.block_forward_cpu(block, i, &x, &real, &kpos, cache)?;
                }
                cache.advance(t);
                self.head(&real.scatter(&x)?, t, logits)
            }
            // Without the cuda feature no device is CUDA, so the fused path is never chosen.
            _ => {
                let bias = self.attention_bias(&cache.key_masks(), cache.len(), t)?;
                for (i, block) in self.blocks.iter().enumerate() {
                    x = self.block_forward(block, i, &x, &bias, cache)?;
                }
                cache.advance(t);
                self.head(&x, t, logits)
            }
        }
    }

    /// The path this step's blocks take (`fused::path`), from the cache after the step's
    /// positions were reserved.
    fn block_path(&self, cache: &KvCache, t: usize) -> BlockPath {
        block_path(&Step {
            on_cpu: self.device.is_cpu(),
            on_cuda: self.device.is_cuda(),
            dtype: self.dtype,
            fused_enabled: super::fused_kernels_enabled(),
            shared_len: cache.shared_len(),
            total: cache.len() + t,
            head_dim: self.cfg.head_dim(),
        })
    }

    /// Final LayerNorm and LM head on the positions `logits` asks for.
    fn head(&self, x: &Tensor, t: usize, logits: Logits) -> Result<Tensor> {
        let x = match logits {
            Logits::Last => x.narrow(1, t - 1, 1)?,
            Logits::All => x.clone(),
        };
        let x = self.output_norm.forward(&x)?;
        let out = self.lm_head.forward(&x)?.to_dtype(DType::F32)?;
        match logits {
            Logits::Last => out.squeeze(1),
            Logits::All => Ok(out),
        }
    }

    fn block_forward(&self, blk: &Block, layer: usize, x: &Tensor, bias: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        let (b, t, h) = x.dims3()?;
        let (nh, hd) = (self.cfg.n_head, self.cfg.head_dim());
        let normed = blk.attn_norm.forward(x)?;
        let qkv = blk.qkv.forward(&normed)?;
        let split = |i: usize| -> Result<Tensor> {
            qkv.narrow(2, i * h, h)?.reshape((b, t, nh, hd))?.transpose(1, 2)?.contiguous()
        };
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
        let probs = softmax_last_dim(&scores)?.to_dtype(self.dtype)?;
        let ctx = match shared {
            Some((_, v_shared)) => {
                let p_len = v_shared.dim(2)?;
                let p_shared = probs.narrow(3, 0, p_len)?;
                let p_own = probs.narrow(3, p_len, probs.dim(3)? - p_len)?.contiguous()?;
                (rows_times_shared(&p_shared, v_shared)? + p_own.matmul(&v_own.to_dtype(self.dtype)?.contiguous()?)?)?
            }
            None => probs.matmul(&v_own.to_dtype(self.dtype)?.contiguous()?)?,
        };
        let ctx = ctx.transpose(1, 2)?.reshape((b, t, h))?;
        let attn = (blk.attn_out.forward(&ctx)? + x)?;

        let normed = blk.ffn_norm.forward(&attn)?;
        let up = super::layers::gelu(blk.ffn_up.forward(&normed)?)?;
        blk.ffn_down.forward(&up)? + attn
    }

    /// One block on the CPU: the QKV output feeds the cache and the attention kernel in
    /// place (no split, transpose or cache copies), then the MLP.
    ///
    /// `x` holds the real (non-padding) positions only, `[1, real, hidden]`; the QKV output is
    /// spread to the padded `[batch, t, 3 hidden]` layout for the cache and the attention.
    fn block_forward_cpu(&self, blk: &Block, layer: usize, x: &Tensor, real: &RealRows, kpos: &[f32], cache: &mut KvCache) -> Result<Tensor> {
        use super::cpu_attention::{AppendKv, Attention};
        use crate::kernels::attention::AttnShape;
        let (b, t) = (real.batch, real.t);
        let normed = blk.attn_norm.forward(x)?;
        let qkv = real.scatter(&blk.qkv.forward(&normed)?)?;
        let shape = AttnShape {
            batch: b,
            t,
            heads: self.cfg.n_head,
            head_dim: self.cfg.head_dim(),
            cap: cache.capacity(),
            past: cache.own_len(),
        };
        let (kc, vc) = cache.layer(layer);
        kc.inplace_op2(&qkv, &AppendKv { shape, part: 1 })?;
        vc.inplace_op2(&qkv, &AppendKv { shape, part: 2 })?;
        let attn = Attention {
            shape,
            kpos: kpos.to_vec(),
            slopes: self.alibi_slopes.clone(),
            scale: 1.0 / (self.cfg.head_dim() as f32).sqrt(),
        };
        let ctx = real.gather(&qkv.apply_op3_no_bwd(kc, vc, &attn)?)?;
        let h1 = (blk.attn_out.forward(&ctx)? + x)?;
        let normed = blk.ffn_norm.forward(&h1)?;
        let up = super::layers::gelu(blk.ffn_up.forward(&normed)?)?;
        blk.ffn_down.forward(&up)? + h1
    }

    /// One block with the fused kernels: LayerNorm, QKV matmul, K/V appended to the cache
    /// (bias added), attention, output matmul + bias + residual, LayerNorm, up matmul +
    /// bias + GELU, down matmul + bias + residual.
    #[cfg(feature = "cuda")]
    fn block_forward_fused(&self, blk: &Block, layer: usize, x: &Tensor, kpos: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        use super::cuda::{AttentionOp, BiasGeluOp, BiasResidualOp, KvAppendOp};
        use super::fused::params::QkvPart;
        use crate::kernels::attention::AttnShape;
        let (b, t, _) = x.dims3()?;
        let missing = || candle_core::Error::Msg("fused path without GPU weights".into());
        let normed = blk.attn_norm.forward(x)?;
        let qkv = blk.qkv.forward_no_bias(&normed)?.contiguous()?;
        let qkv_bias = blk.qkv.device_bias().ok_or_else(missing)?.clone();
        let dims = AttnShape {
            batch: b,
            t,
            heads: self.cfg.n_head,
            head_dim: self.cfg.head_dim(),
            cap: cache.capacity(),
            past: cache.own_len(),
        };
        let (kc, vc) = cache.layer(layer);
        kc.inplace_op2(&qkv, &KvAppendOp { dims, part: QkvPart::Key, bias: qkv_bias.clone() })?;
        vc.inplace_op2(&qkv, &KvAppendOp { dims, part: QkvPart::Value, bias: qkv_bias.clone() })?;
        let slopes = self.device_slopes.clone().ok_or_else(missing)?;
        let scale = 1.0 / (self.cfg.head_dim() as f32).sqrt();
        let attn = AttentionOp { dims, qkv_bias, kpos: kpos.clone(), slopes, scale };
        let ctx = qkv.apply_op3_no_bwd(kc, vc, &attn)?;
        let out_bias = blk.attn_out.device_bias().ok_or_else(missing)?;
        let h1 = blk.attn_out.forward_no_bias(&ctx)?.apply_op3_no_bwd(out_bias, x, &BiasResidualOp)?;
        let normed = blk.ffn_norm.forward(&h1)?;
        let up_bias = blk.ffn_up.device_bias().ok_or_else(missing)?;
        let up = blk.ffn_up.forward_no_bias(&normed)?.apply_op2_no_bwd(up_bias, &BiasGeluOp)?;
        let down_bias = blk.ffn_down.device_bias().ok_or_else(missing)?;
        blk.ffn_down.forward_no_bias(&up)?.apply_op3_no_bwd(down_bias, &h1, &BiasResidualOp)
    }

    /// ALiBi plus the causal and padding mask, `[batch, heads, t, total]` in f32, shared by
    /// all layers. `mask` already includes the `t` new positions.
    fn attention_bias(&self, mask: &[Vec<u8>], past: usize, t: usize) -> Result<Tensor> {
        let nh = self.cfg.n_head;
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
            for (hh, &slope) in self.alibi_slopes.iter().enumerate() {
                for i in 0..t {
                    let q_abs = past + i;
                    let out = &mut bias[((row * nh + hh) * t + i) * total..][..total];
                    for j in 0..total {
                        out[j] = if j > q_abs || m[j] == 0 { MASKED } else { slope * pos[j] };
                    }
                }
            }
        }
        Tensor::from_vec(bias, (b, nh, t, total), &Device::Cpu)?.to_device(&self.device)
    }
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

/// Added to masked scores: far below any real score, yet finite so that a row with every key
/// masked (a padding query) gives a uniform distribution instead of NaN.
const MASKED: f32 = -1e30;

fn softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    let max = x.max_keepdim(D::Minus1)?;
    let e = x.broadcast_sub(&max)?.exp()?;
    let sum = e.sum_keepdim(D::Minus1)?;
    e.broadcast_div(&sum)
}

/// The CPU's key/value cache type (`cpu_kv_dtype`). A GPU always keeps the activations' f16.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuKv {
    /// f16 for files with quantized matrices where decoding reads f16 directly (x86 with
    /// AVX-512, aarch64), else f32; `SEQGPT_CPU_KV=f16` or `f32` in the environment decides instead.
    #[default]
    Auto,
    F16,
    F32,
}

/// f32 and f16 files are the exactness references (checked against transformers at 1e-4),
/// so by default they keep an f32 cache. A file with quantized matrices gets an f16 cache, as
/// llama.cpp gives every model: its weights already differ from the reference by far more
/// than f16 rounding of keys and values, and the cache then takes half the memory and half
/// the bytes read per decoding step (at a few hundred positions of context those reads rival
/// the weights'). That default needs a CPU whose decoding reads f16 directly
/// (`attention::reads_f16_directly`; widening first is slower than f32). Non-f32
/// activations keep their own type.
fn cpu_kv_dtype(file: &GgufFile, cfg: &BloomConfig, device: &Device, dtype: DType, choice: CpuKv) -> DType {
    if !device.is_cpu() || dtype != DType::F32 {
        return dtype;
    }
    let choice = match (choice, std::env::var("SEQGPT_CPU_KV").as_deref()) {
        (CpuKv::Auto, Ok("f16")) => CpuKv::F16,
        (CpuKv::Auto, Ok("f32")) => CpuKv::F32,
        (c, _) => c,
    };
    match choice {
        CpuKv::F16 => DType::F16,
        CpuKv::F32 => DType::F32,
        CpuKv::Auto => match file.tensor(&arch::Tensor::AttnQkv.name(0, Part::Weight)) {
            Some(t) if t.dtype.is_quantized() && crate::kernels::attention::reads_f16_directly(cfg.head_dim()) => DType::F16,
            _ => DType::F32,
        },
    }
}

/// ALiBi slopes for any head count, as in transformers' `build_alibi_tensor`: geometric for
/// the largest power of two, then every other slope of the next power's sequence.
pub fn alibi_slopes(n_head: usize) -> Vec<f32> {
    let closest = 1usize << (usize::BITS - 1 - n_head.leading_zeros());
    let base = 2f32.powf(-(2f32.powf(-((closest as f32).log2() - 3.0))));
    let mut slopes: Vec<f32> = (1..=closest as i32).map(|p| base.powi(p)).collect();
    if closest != n_head {
        let extra_base = 2f32.powf(-(2f32.powf(-((2 * closest) as f32).log2() + 3.0)));
        let remaining = (n_head - closest).min(closest);
        slopes.extend((0..remaining).map(|i| extra_base.powi(1 + 2 * i as i32)));
    }
    slopes
}

#[cfg(test)]
mod tests {
    use super::alibi_slopes;

    #[test]
    fn alibi_slopes_match_transformers() {
        // transformers.models.bloom.modeling_bloom.build_alibi_tensor slopes.
        let s8 = alibi_slopes(8);
        let want8 = [0.5f32, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625];
        for (a, b) in s8.iter().zip(want8) {
            assert!((a - b).abs() < 1e-7);
        }
        let s6 = alibi_slopes(6);
        // 4 heads: 2^-2 ... 2^-8; extra from base 2^-1: powers 1, 3.
        let want6 = [0.25f32, 0.0625, 0.015625, 0.00390625, 0.5, 0.125];
        assert_eq!(s6.len(), 6);
        for (a, b) in s6.iter().zip(want6) {
            assert!((a - b).abs() < 1e-7, "{s6:?}");
        }
    }
}
