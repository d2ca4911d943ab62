//! Activation-aware weight quantization (Lin et al., MLSys 2024) for one BLOOM block,
//! following AutoAWQ's BLOOM recipe.
//!
//! Given the inputs each linear layer saw in the full-precision model ([`Captures`]):
//! 1. Scale search, per group of linears sharing an input: per input channel
//!    `s = mean|x|^alpha` (or AutoAWQ's "duo" form `mean|x|^alpha / mean|w|^(1-alpha)`),
//!    normalised by `sqrt(max(s) min(s))`, for alpha in 0, 1/n, ..., (n-1)/n; the weights
//!    become `Q(W diag(s)) diag(s)^-1` and the alpha with the smallest mean squared error
//!    of the output that matters is kept:
//!    - input_layernorm -> query_key_value: the attention sub-block's output
//!      (attention + dense), dense in full precision;
//!    - post_attention_layernorm -> dense_h_to_4h: the MLP's output, dense_4h_to_h in full
//!      precision;
//!    - GELU -> dense_4h_to_h (only with `scale_down`): that layer's output.
//!    alpha = 0 is plain round-to-nearest, so the search never does worse than RTN on the
//!    calibration data.
//! 2. Folding: `1/s` into the LayerNorm's gain and bias (exact), `s` into the weight
//!    columns. For GELU -> dense_4h_to_h no linear op precedes, so the scales stay as
//!    per-channel activation scales (AutoAWQ's `ScaledActivation`), which only a runtime
//!    that divides the GELU output by them can use (see docs/QUANTIZATION.md).
//! 3. Clipping search on every linear except query_key_value (q.k makes clipping hard to
//!    judge, as AutoAWQ notes): per output row and group, the weights are clamped to
//!    `max|w| * (1 - i/n)` for i < n/2, and the clamp whose quantized group output errs
//!    least on the calibration inputs wins. The error `E[(x_g . (Q(w_c) - w))^2]` is a
//!    quadratic form in the group's input Gram matrix, so every calibration token counts
//!    (AutoAWQ subsamples 512) at a fraction of the cost.
//! The result is f32 weights that the group quantizer then rounds: exactly what the
//! searches measured.

use crate::forward::{attn_sub, mlp_sub, Captures, Dims, LayerWeights, Lin};
use crate::rtn::GroupQuant;
use candle_core::Tensor;
use rayon::prelude::*;

#[derive(Debug, Clone, Copy)]
pub struct AwqConfig {
    pub weights: GroupQuant,
    /// Points of the alpha grid (AutoAWQ: 20).
    pub n_grid: usize,
    /// AutoAWQ's `duo_scaling`: divide by mean|w|^(1-alpha) too.
    pub duo_scaling: bool,
    /// Search activation scales for GELU -> dense_4h_to_h (the file then needs a runtime
    /// that applies them).
    pub scale_down: bool,
    /// Run the clipping search.
    pub clip: bool,
    /// Clipping grid (AutoAWQ: 20 points, shrinking at most to half).
    pub clip_grid: usize,
    pub max_shrink: f32,
}

impl AwqConfig {
    pub fn new(weights: GroupQuant) -> Self {
        Self { weights, n_grid: 20, duo_scaling: false, scale_down: false, clip: true, clip_grid: 20, max_shrink: 0.5 }
    }

    /// Progress units one layer takes (see [`quantize_layer`]'s `tick`).
    pub fn units_per_layer(&self) -> usize {
        let groups = if self.scale_down { 3 } else { 2 };
        groups * self.n_grid + if self.clip { 3 } else { 0 }
    }
}

/// What the scale search found for one group of linears.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScaleReport {
    pub alpha: f32,
    /// Output MSE with plain rounding (alpha = 0) and with the chosen scales.
    pub loss_rtn: f64,
    pub loss_best: f64,
}

/// What the clipping search did to one linear.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClipReport {
    /// Summed group output error before and after clipping.
    pub err_before: f64,
    pub err_after: f64,
    /// Fraction of (row, group) pairs that were clipped.
    pub clipped: f64,
}

#[derive(Debug, Clone, Default)]
pub struct LayerReport {
    pub qkv: ScaleReport,
    pub up: ScaleReport,
    pub down: Option<ScaleReport>,
    /// dense, dense_h_to_4h, dense_4h_to_h
    pub clip: Option<[ClipReport; 3]>,
}

/// Per-channel mean |x| of `x [n, c]`.
fn mean_abs(x: &Tensor) -> candle_core::Result<Vec<f32>> {
    x.abs()?.mean(0)?.to_vec1()
}

/// Per input channel, the mean over rows of |w| relative to its group's max |w|
/// (AutoAWQ's `w_mean`).
fn weight_mean(ws: &[(&[f32], usize)], group: usize) -> Vec<f32> {
    let cols = ws[0].1;
    let mut sum = vec![0f64; cols];
    let mut rows = 0usize;
    for &(w, c) in ws {
        for row in w.chunks_exact(c) {
            for (g, chunk) in row.chunks_exact(group).enumerate() {
                let amax = chunk.iter().fold(0f32, |m, v| m.max(v.abs())) + 1e-6;
                for (j, v) in chunk.iter().enumerate() {
                    sum[g * group + j] += (v.abs() / amax) as f64;
                }
            }
            rows += 1;
        }
    }
    sum.iter().map(|s| (s / rows as f64) as f32).collect()
}

/// The scales for one alpha.
fn scales_for(alpha: f32, x_mean: &[f32], w_mean: Option<&[f32]>) -> Vec<f32> {
    let mut s: Vec<f32> = match w_mean {
        Some(wm) => x_mean.iter().zip(wm).map(|(x, w)| (x.powf(alpha) / (w.powf(1.0 - alpha) + 1e-4)).max(1e-4)).collect(),
        None => x_mean.iter().map(|x| x.powf(alpha).max(1e-4)).collect(),
    };
    let (lo, hi) = s.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let norm = (hi * lo).sqrt();
    for v in &mut s {
        *v /= norm;
        if !v.is_finite() {
            *v = 1.0;
        }
    }
    s
}

/// `Q(W diag(s)) diag(s)^-1` for `w [rows, cols]`.
fn scaled_fake_quant(gq: &GroupQuant, w: &[f32], cols: usize, s: &[f32]) -> Vec<f32> {
    let mut scaled = w.to_vec();
    scaled.par_chunks_mut(cols).for_each(|row| row.iter_mut().zip(s).for_each(|(v, s)| *v *= s));
    let mut q = gq.fake_quant(&scaled, cols);
    q.par_chunks_mut(cols).for_each(|row| row.iter_mut().zip(s).for_each(|(v, s)| *v /= s));
    q
}

/// Tries every alpha; `eval(w_q)` is the output loss with the weights `w_q`.
fn search_scales(
    cfg: &AwqConfig,
    w: &[f32],
    cols: usize,
    x_mean: &[f32],
    mut eval: impl FnMut(Vec<f32>) -> anyhow::Result<f64>,
    tick: &mut dyn FnMut(),
) -> anyhow::Result<(Vec<f32>, ScaleReport)> {
    let w_mean = cfg.duo_scaling.then(|| weight_mean(&[(w, cols)], cfg.weights.group));
    let mut best: Option<(f64, f32, Vec<f32>)> = None;
    let mut loss_rtn = f64::NAN;
    for k in 0..cfg.n_grid {
        let alpha = k as f32 / cfg.n_grid as f32;
        let s = scales_for(alpha, x_mean, w_mean.as_deref());
        let loss = eval(scaled_fake_quant(&cfg.weights, w, cols, &s))?;
        if k == 0 {
            loss_rtn = loss;
        }
        if best.as_ref().is_none_or(|(l, _, _)| loss < *l) {
            best = Some((loss, alpha, s));
        }
        tick();
    }
    let (loss_best, alpha, s) = best.expect("n_grid >= 1");
    Ok((s, ScaleReport { alpha, loss_rtn, loss_best }))
}

fn scale_columns(w: &mut [f32], cols: usize, s: &[f32]) {
    w.par_chunks_mut(cols).for_each(|row| row.iter_mut().zip(s).for_each(|(v, s)| *v *= s));
}

fn divide(v: &mut [f32], s: &[f32]) {
    v.iter_mut().zip(s).for_each(|(v, s)| *v /= s);
}

/// Runs the AWQ searches for one block and rewrites `w` in place: scales folded, weights
/// clipped (and `w.act_scale` set with `scale_down`). `caps` are the block's inputs in the
/// full-precision model over `s` sequences of `t` tokens; `bias` is the attention bias for
/// `t`. `tick` is called [`AwqConfig::units_per_layer`] times.
pub fn quantize_layer(
    cfg: &AwqConfig,
    d: Dims,
    w: &mut LayerWeights,
    caps: &Captures,
    s: usize,
    t: usize,
    bias: &Tensor,
    tick: &mut dyn FnMut(),
) -> anyhow::Result<LayerReport> {
    let (h, ff) = (d.hidden, d.ffn());
    let mut report = LayerReport::default();

    // 1. input_layernorm -> query_key_value, judged on the attention sub-block's output.
    {
        let out = Lin::new(&w.out_w, &w.out_b, h, h)?;
        let reference = attn_sub(&caps.qkv_in, &Lin::new(&w.qkv_w, &w.qkv_b, 3 * h, h)?, &out, s, t, d, bias)?;
        let x_mean = mean_abs(&caps.qkv_in)?;
        let (sc, rep) = search_scales(
            cfg,
            &w.qkv_w,
            h,
            &x_mean,
            |wq| {
                let got = attn_sub(&caps.qkv_in, &Lin::new(&wq, &w.qkv_b, 3 * h, h)?, &out, s, t, d, bias)?;
                Ok(crate::forward::mse(&got, &reference)?)
            },
            tick,
        )?;
        divide(&mut w.attn_norm_w, &sc);
        divide(&mut w.attn_norm_b, &sc);
        scale_columns(&mut w.qkv_w, h, &sc);
        report.qkv = rep;
    }

    // 2. post_attention_layernorm -> dense_h_to_4h, judged on the MLP's output.
    let up_scales = {
        let down = Lin::new(&w.down_w, &w.down_b, h, ff)?;
        let reference = mlp_sub(&caps.up_in, &Lin::new(&w.up_w, &w.up_b, ff, h)?, &down, None)?;
        let x_mean = mean_abs(&caps.up_in)?;
        let (sc, rep) = search_scales(
            cfg,
            &w.up_w,
            h,
            &x_mean,
            |wq| {
                let got = mlp_sub(&caps.up_in, &Lin::new(&wq, &w.up_b, ff, h)?, &down, None)?;
                Ok(crate::forward::mse(&got, &reference)?)
            },
            tick,
        )?;
        divide(&mut w.ffn_norm_w, &sc);
        divide(&mut w.ffn_norm_b, &sc);
        scale_columns(&mut w.up_w, h, &sc);
        report.up = rep;
        sc
    };

    // 3. GELU -> dense_4h_to_h (activation scales), judged on its own output.
    let down_scales = if cfg.scale_down {
        let reference = Lin::new(&w.down_w, &w.down_b, h, ff)?.forward(&caps.down_in)?;
        let x_mean = mean_abs(&caps.down_in)?;
        let (sc, rep) = search_scales(
            cfg,
            &w.down_w,
            ff,
            &x_mean,
            |wq| {
                let got = Lin::new(&wq, &w.down_b, h, ff)?.forward(&caps.down_in)?;
                Ok(crate::forward::mse(&got, &reference)?)
            },
            tick,
        )?;
        scale_columns(&mut w.down_w, ff, &sc);
        w.act_scale = Some(sc.clone());
        report.down = Some(rep);
        Some(sc)
    } else {
        None
    };

    // 4. Clipping (not query_key_value), on the inputs as the scaled weights see them.
    if cfg.clip {
        let up_in = caps.up_in.broadcast_div(&Tensor::from_slice(&up_scales, h, caps.up_in.device())?)?;
        let down_in = match &down_scales {
            Some(sc) => caps.down_in.broadcast_div(&Tensor::from_slice(sc, ff, caps.down_in.device())?)?,
            None => caps.down_in.clone(),
        };
        let a = clip_linear(cfg, &mut w.out_w, h, &caps.dense_in)?;
        tick();
        let b = clip_linear(cfg, &mut w.up_w, h, &up_in)?;
        tick();
        let c = clip_linear(cfg, &mut w.down_w, ff, &down_in)?;
        tick();
        report.clip = Some([a, b, c]);
    }
    Ok(report)
}

/// Per group, `E[x_g x_g^T]` over the rows of `x [n, cols]`: `[groups][group * group]`.
fn group_grams(x: &Tensor, group: usize) -> candle_core::Result<Vec<f32>> {
    let (n, cols) = x.dims2()?;
    let ng = cols / group;
    let xg = x.reshape((n, ng, group))?.transpose(0, 1)?.contiguous()?; // [ng, n, group]
    let gram = xg.t()?.contiguous()?.matmul(&xg)?; // [ng, group, group]
    (gram / n as f64)?.flatten_all()?.to_vec1()
}

/// The clipping search for one weight `[rows, cols]` given its inputs `x [n, cols]`;
/// clamps `w` in place.
pub fn clip_linear(cfg: &AwqConfig, w: &mut [f32], cols: usize, x: &Tensor) -> anyhow::Result<ClipReport> {
    let gq = cfg.weights;
    let g = gq.group;
    let grams = group_grams(x, g)?;
    let steps = ((cfg.max_shrink * cfg.clip_grid as f32) as usize).max(1);
    let quad = |gram: &[f32], delta: &[f32]| -> f64 {
        let mut acc = 0f64;
        for (i, di) in delta.iter().enumerate() {
            let row = &gram[i * g..(i + 1) * g];
            let dot: f32 = row.iter().zip(delta).map(|(a, b)| a * b).sum();
            acc += (*di * dot) as f64;
        }
        acc
    };
    let per_row: Vec<(f64, f64, usize)> = w
        .par_chunks_mut(cols)
        .map_init(
            || (vec![0f32; g], vec![0f32; g], vec![0f32; g], Vec::new()),
            |(clamped, q, delta, scratch), row| {
                let (mut before, mut after, mut clipped) = (0f64, 0f64, 0usize);
                for (gi, wg) in row.chunks_exact_mut(g).enumerate() {
                    let gram = &grams[gi * g * g..(gi + 1) * g * g];
                    let amax = wg.iter().fold(0f32, |m, v| m.max(v.abs()));
                    let mut best = (f64::INFINITY, amax);
                    for i in 0..steps {
                        let mx = amax * (1.0 - i as f32 / cfg.clip_grid as f32);
                        for (c, v) in clamped.iter_mut().zip(wg.iter()) {
                            *c = v.clamp(-mx, mx);
                        }
                        gq.fake_quant_row(clamped, q, scratch);
                        for ((dl, qv), v) in delta.iter_mut().zip(q.iter()).zip(wg.iter()) {
                            *dl = qv - v;
                        }
                        let err = quad(gram, delta);
                        if i == 0 {
                            before += err;
                        }
                        if err < best.0 {
                            best = (err, mx);
                        }
                    }
                    after += best.0;
                    if best.1 < amax {
                        clipped += 1;
                        for v in wg.iter_mut() {
                            *v = v.clamp(-best.1, best.1);
                        }
                    }
                }
                (before, after, clipped)
            },
        )
        .collect();
    let groups = (w.len() / g).max(1);
    let (before, after, clipped) = per_row.iter().fold((0f64, 0f64, 0usize), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
    Ok(ClipReport { err_before: before, err_after: after, clipped: clipped as f64 / groups as f64 })
}

/// Largest / median channel mean |x|: how strong an input's outlier channels are.
pub fn outlier_ratio(x: &Tensor) -> anyhow::Result<f32> {
    let mut m = mean_abs(x)?;
    m.sort_by(f32::total_cmp);
    Ok(m[m.len() - 1] / m[m.len() / 2].max(1e-12))
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;
    use seqgpt_engine::gguf::GgmlType;

    #[test]
    fn scales_normalise_and_alpha_zero_is_identity() {
        let xm = [0.5f32, 2.0, 8.0, 0.0];
        assert!(scales_for(0.0, &xm, None).iter().all(|&s| s == 1.0));
        let s = scales_for(0.5, &xm, None);
        let (lo, hi) = s.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        assert!((lo * hi - 1.0).abs() < 1e-5, "{s:?}");
        assert!(s[2] > s[1] && s[1] > s[0] && s[0] > s[3]);
    }

    /// One salient input channel 50x larger than the rest, whose weights are 50x smaller:
    /// scaling protects it; the search must pick alpha > 0 and beat RTN clearly.
    #[test]
    fn scale_search_protects_a_salient_channel() {
        let (n, cols, rows) = (256, 64, 32);
        let mut x = vec![0f32; n * cols];
        for (i, v) in x.iter_mut().enumerate() {
            let c = i % cols;
            let base = (((i as u32).wrapping_mul(2654435761) >> 9) % 1000) as f32 / 500.0 - 1.0;
            *v = if c == 5 { base * 50.0 } else { base };
        }
        let mut w = vec![0f32; rows * cols];
        for (i, v) in w.iter_mut().enumerate() {
            let c = i % cols;
            let base = (((i as u32).wrapping_mul(2246822519) >> 9) % 1000) as f32 / 500.0 - 1.0;
            *v = if c == 5 { base / 50.0 } else { base };
        }
        let xt = Tensor::from_slice(&x, (n, cols), &Device::Cpu).unwrap();
        let lin = |w: &[f32]| Lin::new(w, &vec![0.0; rows], rows, cols).unwrap();
        let reference = lin(&w).forward(&xt).unwrap();
        let cfg = AwqConfig::new(GroupQuant::new(GgmlType::Q4_1, 32).unwrap());
        let x_mean = mean_abs(&xt).unwrap();
        let (s, rep) = search_scales(
            &cfg,
            &w,
            cols,
            &x_mean,
            |wq| Ok(crate::forward::mse(&lin(&wq).forward(&xt)?, &reference)?),
            &mut || {},
        )
        .unwrap();
        assert!(rep.alpha > 0.0, "{rep:?}");
        assert!(rep.loss_best < 0.5 * rep.loss_rtn, "{rep:?}");
        assert!(s[5] > 3.0 * s[0], "{:?}", &s[..8]);
    }

    #[test]
    fn clipping_never_increases_the_group_error() {
        let (n, cols, rows) = (128, 64, 16);
        let x: Vec<f32> = (0..n * cols).map(|i| (((i as u32).wrapping_mul(2654435761) >> 9) % 1000) as f32 / 500.0 - 1.0).collect();
        // Heavy-tailed weights: a few large values per row make clipping pay.
        let mut w: Vec<f32> = (0..rows * cols).map(|i| (((i as u32).wrapping_mul(2246822519) >> 9) % 1000) as f32 / 5000.0 - 0.1).collect();
        for r in 0..rows {
            w[r * cols + (r * 7) % cols] = 1.0;
        }
        let xt = Tensor::from_slice(&x, (n, cols), &Device::Cpu).unwrap();
        let cfg = AwqConfig::new(GroupQuant::new(GgmlType::Q4_0, 32).unwrap());
        let rep = clip_linear(&cfg, &mut w, cols, &xt).unwrap();
        assert!(rep.err_after <= rep.err_before, "{rep:?}");
        // Clipping only ever shrinks weights.
        for r in 0..rows {
            assert!(w[r * cols + (r * 7) % cols] <= 1.0);
        }
    }
}
