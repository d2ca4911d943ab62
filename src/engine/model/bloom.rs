//! BLOOM (and SeqGPT, which is BLOOM): ALiBi attention, fused QKV, tanh-GELU MLP,
//! LayerNorm after the embeddings, biases everywhere, LM head tied to the embeddings.
//!
//! Follows Hugging Face's `BloomForCausalLM`: ALiBi positions come from the attention
//! mask (so left-padded batches are exact), scores are `q.k / sqrt(d) + alibi`, softmax in
//! f32. The QKV weight is stored [Q; K; V] (llama.cpp's layout), not per-head interleaved.
//!
//! Each part has one `forward`: the model, a block, its self-attention and its MLP. How a
//! step runs them on its device (candle's ops, the CPU kernels, the fused CUDA kernels) is
//! below them, in [`super::block_ops`].

use super::block_ops::{BlockOps, Heads};
use super::config::BloomConfig;
use super::kv_cache::KvCache;
use super::layers::{LayerNorm, Linear};
use super::weights::{MappedTensor, WeightLoader};
use crate::arch::{self, Part};
use crate::gguf::{GgufError, GgufFile};
use candle_core::{DType, Device, Result, Tensor};

/// Where logits are wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logits {
    /// Only each row's last position (generation).
    Last,
    /// Every position (scoring, tests).
    All,
}

/// One transformer block: pre-norm self-attention and a pre-norm MLP, each with a residual.
struct Block {
    attention: SelfAttention,
    mlp: Mlp,
}

struct SelfAttention {
    norm: LayerNorm,
    /// Q, K and V in one matrix, `[3 hidden, hidden]`.
    qkv: Linear,
    out: Linear,
}

struct Mlp {
    norm: LayerNorm,
    up: Linear,
    down: Linear,
}

impl Block {
    fn forward(&self, x: &Tensor, layer: usize, ops: &BlockOps, cache: &mut KvCache) -> Result<Tensor> {
        let x = self.attention.forward(x, layer, ops, cache)?;
        self.mlp.forward(&x, ops)
    }
}

impl SelfAttention {
    fn forward(&self, x: &Tensor, layer: usize, ops: &BlockOps, cache: &mut KvCache) -> Result<Tensor> {
        let ctx = ops.attend(&self.qkv, &self.norm.forward(x)?, layer, cache)?;
        ops.linear_residual(&self.out, &ctx, x)
    }
}

impl Mlp {
    fn forward(&self, x: &Tensor, ops: &BlockOps) -> Result<Tensor> {
        let up = ops.linear_gelu(&self.up, &self.norm.forward(x)?)?;
        ops.linear_residual(&self.down, &up, x)
    }
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
                attention: SelfAttention {
                    norm: norm(arch::Tensor::AttnNorm, i)?,
                    qkv: linear(arch::Tensor::AttnQkv, i, 3 * h, h)?,
                    out: linear(arch::Tensor::AttnOutput, i, h, h)?,
                },
                mlp: Mlp {
                    norm: norm(arch::Tensor::FfnNorm, i)?,
                    up: linear(arch::Tensor::FfnUp, i, ff, h)?,
                    down: linear(arch::Tensor::FfnDown, i, h, ff)?,
                },
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
        let x = self.embd_norm.forward(&x)?;

        cache.reserve(t)?;
        cache.push_mask(mask)?;
        let heads = Heads {
            count: self.cfg.n_head,
            dim: self.cfg.head_dim(),
            dtype: self.dtype,
            slopes: &self.alibi_slopes,
            device_slopes: self.device_slopes.as_ref(),
        };
        let ops = BlockOps::prepare(heads, &self.device, mask, cache)?;
        let mut x = ops.enter(x)?;
        for (i, block) in self.blocks.iter().enumerate() {
            x = block.forward(&x, i, &ops, cache)?;
        }
        cache.advance(t);
        self.head(&ops.leave(x)?, t, logits)
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
