//! The f32 BLOOM block on CPU tensors (candle ops), for calibration and for evaluating
//! weights that are not in a file yet.
//!
//! Same math as Hugging Face's `BloomBlock` (and src/engine/model/bloom.rs): LayerNorm -> fused
//! QKV -> ALiBi causal attention (scores `q.k / sqrt(d) + slope * key_position`) -> dense
//! -> + residual -> LayerNorm -> dense_h_to_4h -> tanh-GELU -> dense_4h_to_h -> + residual.
//! Weights are in GGUF layout: the QKV rows are [Q; K; V] (llama.cpp's order), so a layer
//! loaded through the converter's `TensorSource` runs as is. Sequences here have no
//! padding (calibration blocks and evaluation prompts are whole).
//!
//! Why not the engine's forward: AWQ's search runs each block some hundred times over f32
//! weights it rescales and fake-quantizes between runs, and needs the input of every linear
//! (the activations it weighs channels by). The engine runs the weights as a GGUF mapping
//! holds them (packed ggml blocks on the CPU, f16 copies on a GPU) behind a KV cache, and
//! reports only logits; giving it mutable f32 weights and activation hooks would put
//! quantizer-only paths into inference. What the two share is the definition: tensor names
//! and keys ([`seqgpt_engine::arch`]), the ALiBi slopes (`model::bloom::alibi_slopes`), and
//! a test that holds them to each other (`simulation_matches_the_written_file`: this
//! forward's KL against f32 within 1% of the engine's on the written file).

use anyhow::Context;
use candle_core::{Device, Tensor, D};
use seqgpt_engine::arch::{self, Part};

/// The shape of a BLOOM model.
#[derive(Debug, Clone, Copy)]
pub struct Dims {
    pub hidden: usize,
    pub n_head: usize,
    pub eps: f64,
}

impl Dims {
    pub fn ffn(&self) -> usize {
        4 * self.hidden
    }
    pub fn head_dim(&self) -> usize {
        self.hidden / self.n_head
    }
}

/// One block's parameters, f32, GGUF layout.
#[derive(Debug, Clone)]
pub struct LayerWeights {
    pub attn_norm_w: Vec<f32>,
    pub attn_norm_b: Vec<f32>,
    pub qkv_w: Vec<f32>,
    pub qkv_b: Vec<f32>,
    pub out_w: Vec<f32>,
    pub out_b: Vec<f32>,
    pub ffn_norm_w: Vec<f32>,
    pub ffn_norm_b: Vec<f32>,
    pub up_w: Vec<f32>,
    pub up_b: Vec<f32>,
    pub down_w: Vec<f32>,
    pub down_b: Vec<f32>,
    /// AutoAWQ's `ScaledActivation`: the GELU outputs are divided by these before
    /// dense_4h_to_h (None: plain GELU).
    pub act_scale: Option<Vec<f32>>,
}

impl LayerWeights {
    /// Loads block `i` through `get(gguf_name)`, in file order ([`arch::BLOCK`], weight then
    /// bias).
    pub fn load(i: usize, mut get: impl FnMut(&str) -> anyhow::Result<Vec<f32>>) -> anyhow::Result<Self> {
        let mut v: Vec<Vec<f32>> = Vec::with_capacity(12);
        for t in arch::BLOCK {
            for &part in t.parts() {
                let name = t.name(i, part);
                v.push(get(&name).with_context(|| format!("loading {name}"))?);
            }
        }
        let mut it = v.into_iter();
        let mut next = || it.next().expect("12 tensors");
        Ok(Self {
            attn_norm_w: next(),
            attn_norm_b: next(),
            qkv_w: next(),
            qkv_b: next(),
            out_w: next(),
            out_b: next(),
            ffn_norm_w: next(),
            ffn_norm_b: next(),
            up_w: next(),
            up_b: next(),
            down_w: next(),
            down_b: next(),
            act_scale: None,
        })
    }

    /// One of the block's tensors (`None` for a tensor outside the blocks).
    pub fn tensor(&self, t: arch::Tensor, part: Part) -> Option<&[f32]> {
        use arch::Tensor as T;
        Some(match (t, part) {
            (T::AttnNorm, Part::Weight) => &self.attn_norm_w,
            (T::AttnNorm, Part::Bias) => &self.attn_norm_b,
            (T::AttnQkv, Part::Weight) => &self.qkv_w,
            (T::AttnQkv, Part::Bias) => &self.qkv_b,
            (T::AttnOutput, Part::Weight) => &self.out_w,
            (T::AttnOutput, Part::Bias) => &self.out_b,
            (T::FfnNorm, Part::Weight) => &self.ffn_norm_w,
            (T::FfnNorm, Part::Bias) => &self.ffn_norm_b,
            (T::FfnUp, Part::Weight) => &self.up_w,
            (T::FfnUp, Part::Bias) => &self.up_b,
            (T::FfnDown, Part::Weight) => &self.down_w,
            (T::FfnDown, Part::Bias) => &self.down_b,
            _ => return None,
        })
    }
}

/// Whether the runtimes quantize a matmul's activations to 8 bits for weights of `dtype`:
/// this engine and llama.cpp's CPU backend both run Q4_0, Q4_1 and Q8_0 weights as
/// integer dot products against activations quantized per 32-value block.
pub fn runs_with_8bit_activations(dtype: seqgpt_engine::gguf::GgmlType) -> bool {
    use seqgpt_engine::gguf::GgmlType as G;
    matches!(dtype, G::Q4_0 | G::Q4_1 | G::Q8_0)
}

/// `x [n, cols]` rounded as the runtimes quantize activations: per 32-value block,
/// `d = max|x| / 127`, `x -> round(x / d) * d`.
pub fn fake_quant_activations(x: &Tensor) -> candle_core::Result<Tensor> {
    use rayon::prelude::*;
    let shape = x.shape().clone();
    let mut v = x.flatten_all()?.to_vec1::<f32>()?;
    v.par_chunks_mut(32).for_each(|b| {
        let amax = b.iter().fold(0f32, |m, x| m.max(x.abs()));
        let d = amax / 127.0;
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        b.iter_mut().for_each(|x| *x = (*x * id).round() * d);
    });
    Tensor::from_vec(v, shape, &Device::Cpu)
}

/// A weight matrix `[out, in]` and its bias as tensors.
pub struct Lin {
    pub w: Tensor,
    pub b: Tensor,
    /// Round the inputs to 8 bits first, as the runtimes do for 4/8-bit weights.
    pub act_q8: bool,
}

impl Lin {
    pub fn new(w: &[f32], b: &[f32], out: usize, inp: usize) -> candle_core::Result<Self> {
        Ok(Self { w: Tensor::from_slice(w, (out, inp), &Device::Cpu)?, b: Tensor::from_slice(b, out, &Device::Cpu)?, act_q8: false })
    }

    /// `x [n, in] -> [n, out]`.
    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let x = if self.act_q8 { fake_quant_activations(x)? } else { x.clone() };
        x.matmul(&self.w.t()?)?.broadcast_add(&self.b)
    }
}

/// A block's parameters as tensors.
pub struct LayerTensors {
    pub attn_norm: (Tensor, Tensor),
    pub qkv: Lin,
    pub out: Lin,
    pub ffn_norm: (Tensor, Tensor),
    pub up: Lin,
    pub down: Lin,
    pub act_scale: Option<Tensor>,
}

fn vector(v: &[f32]) -> candle_core::Result<Tensor> {
    Tensor::from_slice(v, v.len(), &Device::Cpu)
}

impl LayerTensors {
    pub fn new(w: &LayerWeights, d: Dims) -> candle_core::Result<Self> {
        let (h, ff) = (d.hidden, d.ffn());
        Ok(Self {
            attn_norm: (vector(&w.attn_norm_w)?, vector(&w.attn_norm_b)?),
            qkv: Lin::new(&w.qkv_w, &w.qkv_b, 3 * h, h)?,
            out: Lin::new(&w.out_w, &w.out_b, h, h)?,
            ffn_norm: (vector(&w.ffn_norm_w)?, vector(&w.ffn_norm_b)?),
            up: Lin::new(&w.up_w, &w.up_b, ff, h)?,
            down: Lin::new(&w.down_w, &w.down_b, h, ff)?,
            act_scale: w.act_scale.as_deref().map(vector).transpose()?,
        })
    }

    /// Rounds the four linear layers' inputs to 8 bits (see [`fake_quant_activations`]).
    pub fn with_8bit_activations(mut self, on: bool) -> Self {
        for l in [&mut self.qkv, &mut self.out, &mut self.up, &mut self.down] {
            l.act_q8 = on;
        }
        self
    }
}

/// LayerNorm over the last dimension of `x [n, h]`.
pub fn layer_norm(x: &Tensor, g: &Tensor, b: &Tensor, eps: f64) -> candle_core::Result<Tensor> {
    let mean = x.mean_keepdim(D::Minus1)?;
    let centred = x.broadcast_sub(&mean)?;
    let var = centred.sqr()?.mean_keepdim(D::Minus1)?;
    centred.broadcast_div(&(var + eps)?.sqrt()?)?.broadcast_mul(g)?.broadcast_add(b)
}

fn softmax_last_dim(x: &Tensor) -> candle_core::Result<Tensor> {
    let max = x.max_keepdim(D::Minus1)?;
    let e = x.broadcast_sub(&max)?.exp()?;
    let sum = e.sum_keepdim(D::Minus1)?;
    e.broadcast_div(&sum)
}

/// ALiBi slopes plus the causal mask for `t` positions: `[heads, t, t]`.
pub fn attention_bias(n_head: usize, t: usize) -> candle_core::Result<Tensor> {
    let slopes = seqgpt_engine::model::bloom::alibi_slopes(n_head);
    let mut bias = vec![0f32; n_head * t * t];
    for (h, &slope) in slopes.iter().enumerate() {
        for i in 0..t {
            let row = &mut bias[(h * t + i) * t..(h * t + i + 1) * t];
            for (j, b) in row.iter_mut().enumerate() {
                *b = if j > i { -1e30 } else { slope * j as f32 };
            }
        }
    }
    Tensor::from_vec(bias, (n_head, t, t), &Device::Cpu)
}

/// Bytes of attention scores allowed at once; samples are processed in chunks below it.
const SCORE_BUDGET: usize = 64 << 20;

/// Causal ALiBi attention of `s` sequences of `t` positions: `qkv [s*t, 3h] -> [s*t, h]`
/// (before the dense projection). `bias` is [`attention_bias`] for `t`.
pub fn attention(qkv: &Tensor, s: usize, t: usize, d: Dims, bias: &Tensor) -> candle_core::Result<Tensor> {
    let (nh, hd, h) = (d.n_head, d.head_dim(), d.hidden);
    let scale = 1.0 / (hd as f64).sqrt();
    let chunk = (SCORE_BUDGET / (nh * t * t * 4).max(1)).clamp(1, s.max(1));
    let mut outs = Vec::new();
    let mut s0 = 0;
    while s0 < s {
        let sc = chunk.min(s - s0);
        let part = qkv.narrow(0, s0 * t, sc * t)?.reshape((sc, t, 3, nh, hd))?;
        let take = |i: usize| -> candle_core::Result<Tensor> { part.narrow(2, i, 1)?.squeeze(2)?.transpose(1, 2)?.contiguous() };
        let (q, k, v) = (take(0)?, take(1)?, take(2)?);
        let scores = (q.matmul(&k.t()?.contiguous()?)? * scale)?.broadcast_add(bias)?;
        let ctx = softmax_last_dim(&scores)?.matmul(&v)?;
        outs.push(ctx.transpose(1, 2)?.contiguous()?.reshape((sc * t, h))?);
        s0 += sc;
    }
    Tensor::cat(&outs, 0)
}

/// The attention sub-block without the residual: `dense(attention(qkv(x_ln)))`.
pub fn attn_sub(x_ln: &Tensor, qkv: &Lin, out: &Lin, s: usize, t: usize, d: Dims, bias: &Tensor) -> candle_core::Result<Tensor> {
    out.forward(&attention(&qkv.forward(x_ln)?, s, t, d, bias)?)
}

/// GELU (tanh form, as BLOOM) of `up(x_ln)`, divided by the activation scales if any.
pub fn gelu_up(x_ln: &Tensor, up: &Lin, act_scale: Option<&Tensor>) -> candle_core::Result<Tensor> {
    let g = up.forward(x_ln)?.gelu()?;
    match act_scale {
        Some(a) => g.broadcast_div(a),
        None => Ok(g),
    }
}

/// The MLP without the residual.
pub fn mlp_sub(x_ln: &Tensor, up: &Lin, down: &Lin, act_scale: Option<&Tensor>) -> candle_core::Result<Tensor> {
    down.forward(&gelu_up(x_ln, up, act_scale)?)
}

/// The inputs of a block's four linear layers, `[s*t, in]` each.
pub struct Captures {
    /// input_layernorm output -> query_key_value
    pub qkv_in: Tensor,
    /// attention context -> dense
    pub dense_in: Tensor,
    /// post_attention_layernorm output -> dense_h_to_4h
    pub up_in: Tensor,
    /// GELU output -> dense_4h_to_h
    pub down_in: Tensor,
}

/// One block on `x [s*t, h]`; with `capture`, also the linear layers' inputs.
pub fn block_forward(
    w: &LayerTensors,
    x: &Tensor,
    s: usize,
    t: usize,
    d: Dims,
    bias: &Tensor,
    capture: bool,
) -> candle_core::Result<(Tensor, Option<Captures>)> {
    let a = layer_norm(x, &w.attn_norm.0, &w.attn_norm.1, d.eps)?;
    let ctx = attention(&w.qkv.forward(&a)?, s, t, d, bias)?;
    let h1 = (w.out.forward(&ctx)? + x)?;
    let c = layer_norm(&h1, &w.ffn_norm.0, &w.ffn_norm.1, d.eps)?;
    let g = gelu_up(&c, &w.up, w.act_scale.as_ref())?;
    let out = (w.down.forward(&g)? + &h1)?;
    let caps = capture.then_some(Captures { qkv_in: a, dense_in: ctx, up_in: c, down_in: g });
    Ok((out, caps))
}

/// Mean squared difference of two tensors of the same shape (f64 accumulation).
pub fn mse(a: &Tensor, b: &Tensor) -> candle_core::Result<f64> {
    let d = (a - b)?.sqr()?.flatten_all()?.to_vec1::<f32>()?;
    Ok(d.iter().map(|&v| v as f64).sum::<f64>() / d.len().max(1) as f64)
}
