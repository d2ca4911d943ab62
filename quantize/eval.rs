//! How far a quantized model is from the full-precision one: per next-token position, the
//! KL divergence `KL(p_ref || p_quant)` of the two softmax distributions, top-1 agreement
//! and the logits' absolute difference.
//!
//! Two drivers: [`compare_engines`] runs two GGUF files through this project's engine (the
//! real thing), and [`simulate`] quantizes a checkpoint in memory and runs reference and
//! quantized weights side by side with the calibration forward (quick what-ifs, and the
//! only way to judge settings no runtime supports yet, such as GELU activation scales).
//! For settings a file can hold the two agree: the simulated weights are the file's
//! decoded weights, and matmuls with Q4_0/Q4_1/Q8_0 weights round their inputs to 8 bits
//! per 32-value block as the engine (and llama.cpp) do.

use crate::activations::{gather_rows, Calibration};
use crate::awq::{quantize_layer, AwqConfig, LayerReport};
use crate::forward::{block_forward, fake_quant_activations, layer_norm, runs_with_8bit_activations, Dims, LayerTensors, LayerWeights};
use crate::progress::Progress;
use crate::rtn::GroupQuant;
use anyhow::Context;
use candle_core::{Device, Tensor};
use rayon::prelude::*;
use crate::convert::{bloom_plan, CheckpointSource, HfCheckpoint, TensorPlan, TensorSource};
use seqgpt_engine::engine::Engine;
use seqgpt_engine::arch::{Part, Tensor as ArchTensor};
use seqgpt_engine::gguf::GgmlType;
use seqgpt_engine::model::Logits;
use seqgpt_engine::quant::{dequantize_row, quantize_row};
use std::collections::HashMap;

/// Agreement of two models over many next-token positions.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Metrics {
    pub positions: usize,
    /// Mean and largest KL(p_ref || p_quant), nats.
    pub mean_kl: f64,
    pub max_kl: f64,
    /// Fraction of positions where both models' most likely token is the same.
    pub top1_agreement: f64,
    /// Largest and mean |logit_ref - logit_quant| over all positions and tokens.
    pub max_abs_diff: f64,
    pub mean_abs_diff: f64,
}

impl Metrics {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "positions": self.positions,
            "mean_kl": self.mean_kl,
            "max_kl": self.max_kl,
            "top1_agreement": self.top1_agreement,
            "max_abs_logit_diff": self.max_abs_diff,
            "mean_abs_logit_diff": self.mean_abs_diff,
        })
    }
}

/// Accumulates [`Metrics`] position by position.
#[derive(Debug, Default)]
pub struct MetricsAcc {
    positions: usize,
    kl_sum: f64,
    kl_max: f64,
    agree: usize,
    max_abs: f64,
    abs_sum: f64,
    values: usize,
}

fn log_softmax(v: &[f32]) -> Vec<f64> {
    let max = v.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x)) as f64;
    let lse = v.iter().map(|&x| (x as f64 - max).exp()).sum::<f64>().ln() + max;
    v.iter().map(|&x| x as f64 - lse).collect()
}

fn argmax(v: &[f32]) -> usize {
    v.iter().enumerate().fold((0, f32::NEG_INFINITY), |(bi, bv), (i, &x)| if x > bv { (i, x) } else { (bi, bv) }).0
}

impl MetricsAcc {
    /// One position's logits from both models.
    pub fn add(&mut self, reference: &[f32], quant: &[f32]) {
        assert_eq!(reference.len(), quant.len(), "logit rows differ in length");
        let (lp, lq) = (log_softmax(reference), log_softmax(quant));
        let kl: f64 = lp.iter().zip(&lq).map(|(p, q)| p.exp() * (p - q)).sum::<f64>().max(0.0);
        self.kl_sum += kl;
        self.kl_max = self.kl_max.max(kl);
        self.agree += usize::from(argmax(reference) == argmax(quant));
        for (a, b) in reference.iter().zip(quant) {
            let d = (*a as f64 - *b as f64).abs();
            self.max_abs = self.max_abs.max(d);
            self.abs_sum += d;
        }
        self.values += reference.len();
        self.positions += 1;
    }

    pub fn finish(&self) -> Metrics {
        let n = self.positions.max(1) as f64;
        Metrics {
            positions: self.positions,
            mean_kl: self.kl_sum / n,
            max_kl: self.kl_max,
            top1_agreement: self.agree as f64 / n,
            max_abs_diff: self.max_abs,
            mean_abs_diff: self.abs_sum / self.values.max(1) as f64,
        }
    }
}

/// All positions' logits of `ids` through an engine: `[t][vocab]`.
pub fn engine_logits(e: &Engine, ids: &[u32]) -> anyhow::Result<Vec<Vec<f32>>> {
    let mut cache = e.model.new_cache(1, ids.len())?;
    let logits = e.model.forward(&[ids.to_vec()], &[vec![1u8; ids.len()]], &mut cache, Logits::All)?;
    Ok(logits.squeeze(0)?.to_vec2()?)
}

/// Every position of every prompt through both engines.
pub fn compare_engines(reference: &Engine, quant: &Engine, prompts: &[Vec<u32>], progress: Option<&Progress>) -> anyhow::Result<Metrics> {
    let mut acc = MetricsAcc::default();
    for ids in prompts {
        let (r, q) = (engine_logits(reference, ids)?, engine_logits(quant, ids)?);
        for (a, b) in r.iter().zip(&q) {
            acc.add(a, b);
        }
        if let Some(p) = progress {
            p.inc(1);
        }
    }
    Ok(acc.finish())
}

/// One line of llama.cpp's logits (tests/llamacpp/harness.cpp with `--all`).
#[derive(Debug, serde::Deserialize)]
pub struct LlamaCppLine {
    pub ids: Vec<u32>,
    pub logits_all: Vec<Vec<f32>>,
}

/// The engine's logits against llama.cpp's on the same file and the same token ids, one
/// harness JSON line at a time (`reader`): llama.cpp is the reference.
pub fn compare_with_llamacpp(e: &Engine, reader: impl std::io::BufRead, progress: Option<&Progress>) -> anyhow::Result<Metrics> {
    let mut acc = MetricsAcc::default();
    for (n, line) in reader.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let l: LlamaCppLine = serde_json::from_str(&line).with_context(|| format!("llama.cpp logits, line {}", n + 1))?;
        if l.logits_all.len() != l.ids.len() {
            anyhow::bail!("line {}: {} logit rows for {} tokens (run the harness with --all)", n + 1, l.logits_all.len(), l.ids.len());
        }
        let ours = engine_logits(e, &l.ids)?;
        for (theirs, mine) in l.logits_all.iter().zip(&ours) {
            acc.add(theirs, mine);
        }
        if let Some(p) = progress {
            p.inc(1);
        }
    }
    Ok(acc.finish())
}

/// What [`simulate`] quantizes and how.
#[derive(Debug, Clone, Copy)]
pub enum SimMethod {
    /// Block matrices left in f32 (to judge the embedding type alone).
    Full,
    /// Round to nearest.
    Rtn(GroupQuant),
    Awq(AwqConfig),
}

impl SimMethod {
    fn weights(&self) -> Option<GroupQuant> {
        match self {
            SimMethod::Full => None,
            SimMethod::Rtn(g) => Some(*g),
            SimMethod::Awq(c) => Some(c.weights),
        }
    }
}

/// The GGUF plans of a checkpoint by name.
pub fn plans_by_name(ckpt: &HfCheckpoint) -> HashMap<String, TensorPlan> {
    let separate_head = ckpt.has(&ArchTensor::Output.hf_name(0, Part::Weight)) && !ckpt.config.tie_word_embeddings;
    bloom_plan(&ckpt.config, separate_head).into_iter().map(|p| (p.name.clone(), p)).collect()
}

pub fn dims_of(ckpt: &HfCheckpoint) -> Dims {
    let c = &ckpt.config;
    Dims { hidden: c.hidden, n_head: c.n_head, eps: c.layer_norm_eps }
}

/// A matrix `[rows, cols]` through `dtype`'s reference encoder and back (f32: unchanged).
pub fn fake_quant_matrix(dtype: GgmlType, w: &[f32], cols: usize) -> anyhow::Result<Vec<f32>> {
    if dtype == GgmlType::F32 {
        return Ok(w.to_vec());
    }
    if cols % dtype.block_elems() != 0 {
        anyhow::bail!("rows of {cols} are not whole {dtype} blocks");
    }
    let mut out = vec![0f32; w.len()];
    out.par_chunks_mut(cols).zip(w.par_chunks(cols)).for_each_init(Vec::new, |buf, (o, r)| {
        buf.clear();
        quantize_row(dtype, r, buf).expect("whole blocks");
        dequantize_row(dtype, buf, o).expect("whole blocks");
    });
    Ok(out)
}

/// Quantizes `ckpt` in memory with `method` (matrices) and `embd_type` (token embedding,
/// which is also the tied head), and compares it with the full-precision model on
/// `prompts`, block by block. AWQ calibrates on `calib` (samples of one length).
pub fn simulate(
    ckpt: &HfCheckpoint,
    method: SimMethod,
    embd_type: GgmlType,
    calib: &[Vec<u32>],
    prompts: &[Vec<u32>],
    progress: &Progress,
) -> anyhow::Result<(Metrics, Vec<LayerReport>)> {
    let plans = plans_by_name(ckpt);
    let d = dims_of(ckpt);
    let cfg = &ckpt.config;
    let mut src = CheckpointSource { ckpt };
    let mut get = |name: &str| -> anyhow::Result<Vec<f32>> {
        let plan = plans.get(name).with_context(|| format!("no tensor {name} in the plan"))?;
        Ok(src.tensor(plan)?)
    };
    for ids in prompts.iter().chain(calib) {
        if let Some(&bad) = ids.iter().find(|&&id| id as usize >= cfg.vocab_size) {
            anyhow::bail!("token id {bad} is outside the model's vocabulary of {}", cfg.vocab_size);
        }
    }
    let h = d.hidden;
    let emb = get(&ArchTensor::TokenEmbd.weight())?;
    let emb_q = fake_quant_matrix(embd_type, &emb, h)?;
    let norm_w = get(&ArchTensor::TokenEmbdNorm.weight())?;
    let norm_b = get(&ArchTensor::TokenEmbdNorm.name(0, Part::Bias))?;
    let vec_t = |v: &[f32]| Tensor::from_slice(v, v.len(), &Device::Cpu);
    let (gw, gb) = (vec_t(&norm_w)?, vec_t(&norm_b)?);
    let embed = |table: &[f32], ids: &[u32]| -> anyhow::Result<Tensor> {
        let x = Tensor::from_vec(gather_rows(table, h, ids), (ids.len(), h), &Device::Cpu)?;
        Ok(layer_norm(&x, &gw, &gb, d.eps)?)
    };
    let mut x_ref: Vec<Tensor> = prompts.iter().map(|p| embed(&emb, p)).collect::<anyhow::Result<_>>()?;
    let mut x_q: Vec<Tensor> = prompts.iter().map(|p| embed(&emb_q, p)).collect::<anyhow::Result<_>>()?;
    let mut calibration = match method {
        SimMethod::Awq(_) => {
            let mut c = Calibration::new(d, calib)?;
            c.observe(&ArchTensor::TokenEmbd.weight(), &emb);
            c.observe(&ArchTensor::TokenEmbdNorm.weight(), &norm_w);
            c.observe(&ArchTensor::TokenEmbdNorm.name(0, Part::Bias), &norm_b);
            c.ensure_started(&mut get)?;
            Some(c)
        }
        SimMethod::Rtn(_) | SimMethod::Full => None,
    };
    let mut reports = Vec::new();
    let per_layer = match method {
        SimMethod::Awq(c) => c.units_per_layer() as u64,
        SimMethod::Rtn(_) | SimMethod::Full => 0,
    };
    for i in 0..cfg.n_layer {
        progress.set_message(format!("layer {}/{}", i + 1, cfg.n_layer));
        let w = LayerWeights::load(i, &mut get)?;
        let mut wq = w.clone();
        if let (SimMethod::Awq(acfg), Some(c)) = (&method, calibration.as_mut()) {
            let caps = c.layer(&w)?;
            let mut tick = || progress.inc(1);
            reports.push(quantize_layer(acfg, d, &mut wq, &caps, c.s, c.t, &c.bias, &mut tick)?);
        }
        if let Some(gq) = method.weights() {
            wq.qkv_w = gq.fake_quant(&wq.qkv_w, h);
            wq.out_w = gq.fake_quant(&wq.out_w, h);
            wq.up_w = gq.fake_quant(&wq.up_w, h);
            wq.down_w = gq.fake_quant(&wq.down_w, d.ffn());
        }
        let a8 = method.weights().is_some_and(|g| runs_with_8bit_activations(g.dtype));
        let (lr, lq) = (LayerTensors::new(&w, d)?, LayerTensors::new(&wq, d)?.with_8bit_activations(a8));
        for (p, (xr, xq)) in prompts.iter().zip(x_ref.iter_mut().zip(x_q.iter_mut())) {
            let bias = crate::forward::attention_bias(d.n_head, p.len())?;
            *xr = block_forward(&lr, xr, 1, p.len(), d, &bias, false)?.0;
            *xq = block_forward(&lq, xq, 1, p.len(), d, &bias, false)?.0;
        }
        if per_layer == 0 {
            progress.inc(1);
        }
    }
    progress.set_message("logits");
    let (fw, fb) = (vec_t(&get(&ArchTensor::OutputNorm.weight())?)?, vec_t(&get(&ArchTensor::OutputNorm.name(0, Part::Bias))?)?);
    let (head, head_q) = match plans.get(&ArchTensor::Output.weight()) {
        Some(p) => {
            let w = src_tensor(ckpt, p)?;
            let wq = fake_quant_matrix(embd_type, &w, h)?;
            (w, wq)
        }
        None => (emb, emb_q),
    };
    let vocab = head.len() / h;
    let head_t = Tensor::from_vec(head, (vocab, h), &Device::Cpu)?;
    let head_qt = Tensor::from_vec(head_q, (vocab, h), &Device::Cpu)?;
    let mut acc = MetricsAcc::default();
    for (xr, xq) in x_ref.iter().zip(&x_q) {
        let lr: Vec<Vec<f32>> = layer_norm(xr, &fw, &fb, d.eps)?.matmul(&head_t.t()?)?.to_vec2()?;
        let mut hq = layer_norm(xq, &fw, &fb, d.eps)?;
        if runs_with_8bit_activations(embd_type) {
            hq = fake_quant_activations(&hq)?;
        }
        let lq: Vec<Vec<f32>> = hq.matmul(&head_qt.t()?)?.to_vec2()?;
        for (a, b) in lr.iter().zip(&lq) {
            acc.add(a, b);
        }
    }
    Ok((acc.finish(), reports))
}

/// The LM head alone: the full-precision model's final hidden states on `prompts`, then
/// logits through the f32 head and through the head quantized to each of `types`. Unlike
/// whole-model numbers (which a random model's chaotic depth amplifies), this isolates
/// what the head's type does to the next-token distribution. Also returns, per type, the
/// relative RMS error of the embedding rows (what the input lookup sees).
pub fn head_sweep(ckpt: &HfCheckpoint, types: &[GgmlType], prompts: &[Vec<u32>], progress: &Progress) -> anyhow::Result<Vec<(GgmlType, Metrics, f64)>> {
    let plans = plans_by_name(ckpt);
    let d = dims_of(ckpt);
    let h = d.hidden;
    let mut src = CheckpointSource { ckpt };
    let mut get = |name: &str| -> anyhow::Result<Vec<f32>> {
        let plan = plans.get(name).with_context(|| format!("no tensor {name} in the plan"))?;
        Ok(src.tensor(plan)?)
    };
    let emb = get(&ArchTensor::TokenEmbd.weight())?;
    let vec_t = |v: &[f32]| Tensor::from_slice(v, v.len(), &Device::Cpu);
    let (gw, gb) = (vec_t(&get(&ArchTensor::TokenEmbdNorm.weight())?)?, vec_t(&get(&ArchTensor::TokenEmbdNorm.name(0, Part::Bias))?)?);
    let mut xs: Vec<Tensor> = prompts
        .iter()
        .map(|p| -> anyhow::Result<Tensor> {
            let x = Tensor::from_vec(gather_rows(&emb, h, p), (p.len(), h), &Device::Cpu)?;
            Ok(layer_norm(&x, &gw, &gb, d.eps)?)
        })
        .collect::<anyhow::Result<_>>()?;
    for i in 0..ckpt.config.n_layer {
        progress.set_message(format!("layer {}/{}", i + 1, ckpt.config.n_layer));
        let lt = LayerTensors::new(&LayerWeights::load(i, &mut get)?, d)?;
        for (p, x) in prompts.iter().zip(xs.iter_mut()) {
            let bias = crate::forward::attention_bias(d.n_head, p.len())?;
            *x = block_forward(&lt, x, 1, p.len(), d, &bias, false)?.0;
        }
        progress.inc(1);
    }
    let (fw, fb) = (vec_t(&get(&ArchTensor::OutputNorm.weight())?)?, vec_t(&get(&ArchTensor::OutputNorm.name(0, Part::Bias))?)?);
    let finals: Vec<Tensor> = xs.iter().map(|x| layer_norm(x, &fw, &fb, d.eps)).collect::<candle_core::Result<_>>()?;
    let head = match plans.get(&ArchTensor::Output.weight()) {
        Some(p) => src_tensor(ckpt, p)?,
        None => emb,
    };
    let vocab = head.len() / h;
    let head_t = Tensor::from_slice(&head, (vocab, h), &Device::Cpu)?;
    let reference: Vec<Vec<Vec<f32>>> = finals.iter().map(|x| x.matmul(&head_t.t()?)?.to_vec2()).collect::<candle_core::Result<_>>()?;
    drop(head_t);
    let norm2: f64 = head.iter().map(|&v| (v as f64) * (v as f64)).sum();
    let mut out = Vec::new();
    for &t in types {
        progress.set_message(format!("head in {t}"));
        let q = fake_quant_matrix(t, &head, h)?;
        let err2: f64 = q.iter().zip(&head).map(|(a, b)| ((a - b) as f64).powi(2)).sum();
        let qt = Tensor::from_vec(q, (vocab, h), &Device::Cpu)?;
        let mut acc = MetricsAcc::default();
        for (x, r) in finals.iter().zip(&reference) {
            let l: Vec<Vec<f32>> = x.matmul(&qt.t()?)?.to_vec2()?;
            for (a, b) in r.iter().zip(&l) {
                acc.add(a, b);
            }
        }
        out.push((t, acc.finish(), (err2 / norm2).sqrt()));
        progress.inc(1);
    }
    Ok(out)
}

fn src_tensor(ckpt: &HfCheckpoint, plan: &TensorPlan) -> anyhow::Result<Vec<f32>> {
    Ok(CheckpointSource { ckpt }.tensor(plan)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_logits_have_zero_divergence() {
        let mut acc = MetricsAcc::default();
        acc.add(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]);
        let m = acc.finish();
        assert_eq!(m.positions, 1);
        assert!(m.mean_kl.abs() < 1e-12 && m.max_abs_diff == 0.0 && m.top1_agreement == 1.0);
    }

    #[test]
    fn kl_matches_a_hand_computation() {
        // p = softmax(0, ln 3) = (1/4, 3/4); q = uniform.
        let mut acc = MetricsAcc::default();
        acc.add(&[0.0, 3f32.ln()], &[0.0, 0.0]);
        let want = 0.25 * (0.25f64 / 0.5).ln() + 0.75 * (0.75f64 / 0.5).ln();
        let m = acc.finish();
        assert!((m.mean_kl - want).abs() < 1e-7, "{} vs {want}", m.mean_kl);
        assert_eq!(m.top1_agreement, 0.0); // argmax 1 vs the first of a tie, 0
        // A shift of every logit changes nothing but the absolute difference.
        let mut acc = MetricsAcc::default();
        acc.add(&[0.5, 1.5, -2.0], &[1.5, 2.5, -1.0]);
        let m = acc.finish();
        assert!(m.mean_kl < 1e-12 && (m.max_abs_diff - 1.0).abs() < 1e-9 && m.top1_agreement == 1.0);
    }
}
