//! What each fused kernel of kernels.cu computes, on the CPU: the same indexing (block and
//! thread decomposition, grid-stride loops through `launch::grid_stride`), f16 in and out, f32
//! arithmetic, one f16 rounding per output as the kernel has. A change to a kernel changes
//! its twin here; the tests hold the twins to the CPU path's own kernels, so the index
//! arithmetic and the formulas are checked without a GPU (the device check then holds the
//! GPU to the CPU on real files).

use super::launch::grid_stride;
use super::params::{AttentionParams, BiasParams, KvAppendParams, LayerNormParams};
use half::f16;

fn f(x: f16) -> f32 {
    x.to_f32()
}

/// `sg_layer_norm`: per row (one block each), mean, then the biased variance of the centred
/// values, `y = (x - mean) * rsqrt(var + eps) * gamma + beta`.
pub fn layer_norm(p: &LayerNormParams, x: &[f16], gamma: &[f16], beta: &[f16]) -> Vec<f16> {
    let n = p.n;
    let mut y = vec![f16::ZERO; p.rows * n];
    for block in 0..p.launch().grid as usize {
        let (xr, yr) = (&x[block * n..][..n], &mut y[block * n..][..n]);
        let mean = xr.iter().map(|&v| f(v)).sum::<f32>() / n as f32;
        let var = xr.iter().map(|&v| (f(v) - mean) * (f(v) - mean)).sum::<f32>() / n as f32;
        let inv = 1.0 / (var + p.eps).sqrt();
        for i in 0..n {
            let d = (f(xr[i]) - mean) * inv;
            yr[i] = f16::from_f32(d * f(gamma[i]) + f(beta[i]));
        }
    }
    y
}

/// BLOOM's tanh-GELU with the kernel's constants.
fn gelu_tanh(v: f32) -> f32 {
    0.5 * v * (1.0 + (0.797_884_6_f32 * v * (1.0 + 0.044715 * v * v)).tanh())
}

/// `sg_bias_gelu`: `y = gelu_tanh(x + b)` over rows of the bias's length.
pub fn bias_gelu(p: &BiasParams, x: &[f16], b: &[f16]) -> Vec<f16> {
    let mut y = vec![f16::ZERO; p.total];
    grid_stride(p.launch(), p.total, |i| y[i] = f16::from_f32(gelu_tanh(f(x[i]) + f(b[i % p.n]))));
    y
}

/// `sg_bias_residual`: `y = x + b + r`.
pub fn bias_residual(p: &BiasParams, x: &[f16], b: &[f16], r: &[f16]) -> Vec<f16> {
    let mut y = vec![f16::ZERO; p.total];
    grid_stride(p.launch(), p.total, |i| y[i] = f16::from_f32(f(x[i]) + f(b[i % p.n]) + f(r[i])));
    y
}

/// `sg_kv_append`: part K or V of `qkv` (`[batch, t, 3 * heads * head_dim]`) plus its bias
/// into `cache` (`[batch, heads, cap, head_dim]`) at positions `past..past + t`.
pub fn kv_append(p: &KvAppendParams, qkv: &[f16], bias: &[f16], cache: &mut [f16]) {
    let s = &p.shape;
    let (hd, part) = (s.heads * s.head_dim, p.part as usize);
    grid_stride(p.launch(), p.elements(), |i| {
        let d = i % s.head_dim;
        let h = (i / s.head_dim) % s.heads;
        let ti = (i / hd) % s.t;
        let b = i / (hd * s.t);
        let src = (b * s.t + ti) * 3 * hd + part * hd + h * s.head_dim + d;
        let v = f(qkv[src]) + f(bias[part * hd + h * s.head_dim + d]);
        cache[((b * s.heads + h) * s.cap + s.past + ti) * s.head_dim + d] = f16::from_f32(v);
    });
}

/// `sg_attention`: per block (row, head, query `i`), Q plus its bias from the QKV output,
/// `score_j = q.k_j * scale + slope_h * kpos[j]` over keys `j <= past + i` with `kpos >= 0`,
/// softmax in f32 (a query with no visible key gives zeros), then the weighted sum of the
/// values. Output `[batch, t, heads * head_dim]`.
#[allow(clippy::too_many_arguments)]
pub fn attention(p: &AttentionParams, qkv: &[f16], bias: &[f16], kc: &[f16], vc: &[f16], kpos: &[f32], slopes: &[f32]) -> Vec<f16> {
    let s = &p.shape;
    let (hd, d, total) = (s.heads * s.head_dim, s.head_dim, s.total());
    let mut out = vec![f16::ZERO; s.batch * s.t * hd];
    let (mut q, mut sc) = (vec![0f32; d], vec![0f32; total]);
    for block in 0..p.launch().grid as usize {
        let i = block % s.t;
        let h = (block / s.t) % s.heads;
        let b = block / (s.t * s.heads);
        let qsrc = (b * s.t + i) * 3 * hd + h * d;
        for (k, qk) in q.iter_mut().enumerate() {
            *qk = f(qkv[qsrc + k]) + f(bias[h * d + k]);
        }
        let head = (b * s.heads + h) * s.cap * d;
        let kp = &kpos[b * total..][..total];
        let qpos = s.past + i;
        let mut m = f32::NEG_INFINITY;
        for j in 0..total {
            sc[j] = if j <= qpos && kp[j] >= 0.0 {
                let kr = &kc[head + j * d..][..d];
                let acc: f32 = q.iter().zip(kr).map(|(&a, &k)| a * f(k)).sum();
                acc * p.scale + slopes[h] * kp[j]
            } else {
                f32::NEG_INFINITY
            };
            m = m.max(sc[j]);
        }
        let mut l = 0f32;
        for v in sc.iter_mut() {
            *v = if m == f32::NEG_INFINITY { 0.0 } else { (*v - m).exp() };
            l += *v;
        }
        let inv = if l > 0.0 { 1.0 / l } else { 0.0 };
        let o = (b * s.t + i) * hd + h * d;
        for k in 0..d {
            let acc: f32 = (0..total).filter(|&j| sc[j] != 0.0).map(|j| sc[j] * f(vc[head + j * d + k])).sum();
            out[o + k] = f16::from_f32(acc * inv);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::params::{QkvPart, BIAS_GELU, BIAS_RESIDUAL};
    use super::*;
    use crate::kernels::attention::{alibi_attention, append_kv, AttnShape, KvSlice, KvSliceMut};

    /// Deterministic values in [-scale, scale), rounded to f16 (what the GPU holds).
    fn values(n: usize, seed: u64, scale: f32) -> Vec<f16> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                f16::from_f32(((x >> 11) as f32 / (1u64 << 53) as f32 * 2.0 - 1.0) * scale)
            })
            .collect()
    }

    fn widen(x: &[f16]) -> Vec<f32> {
        x.iter().map(|v| v.to_f32()).collect()
    }

    /// Within one f16 rounding of the output (plus f32 summation order).
    fn assert_close(got: &[f16], want: &[f32], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            let tol = 2e-3 * w.abs().max(1e-2) + 1e-4;
            assert!((g.to_f32() - w).abs() <= tol, "{what}[{i}]: {} against {w}", g.to_f32());
        }
    }

    #[test]
    fn layer_norm_matches_the_cpu_kernel() {
        let (rows, n) = (5, 96);
        let x = values(rows * n, 1, 3.0);
        let gamma: Vec<f16> = values(n, 2, 0.2).iter().map(|g| f16::from_f32(1.0 + g.to_f32())).collect();
        let beta = values(n, 3, 0.5);
        let p = LayerNormParams::new(&[1, rows, n], [n, n], 1e-5).unwrap();
        let mut want = vec![0f32; rows * n];
        crate::kernels::layer_norm_rows(&widen(&x), &widen(&gamma), &widen(&beta), 1e-5, &mut want);
        assert_close(&layer_norm(&p, &x, &gamma, &beta), &want, "layer norm");
    }

    #[test]
    fn bias_gelu_matches_the_cpu_kernel() {
        // Past one block and not a whole number of blocks: the grid-stride tail.
        let (rows, n) = (3, 384);
        let (x, b) = (values(rows * n, 4, 4.0), values(n, 5, 1.0));
        let p = BiasParams::new(&BIAS_GELU, rows * n, n, None).unwrap();
        let want: Vec<f32> = (0..rows * n).map(|i| crate::kernels::gelu::gelu(x[i].to_f32() + b[i % n].to_f32())).collect();
        assert_close(&bias_gelu(&p, &x, &b), &want, "bias + gelu");
    }

    #[test]
    fn bias_residual_adds_both() {
        let (rows, n) = (7, 96);
        let (x, b, r) = (values(rows * n, 6, 2.0), values(n, 7, 1.0), values(rows * n, 8, 5.0));
        let p = BiasParams::new(&BIAS_RESIDUAL, rows * n, n, Some(rows * n)).unwrap();
        let want: Vec<f32> = (0..rows * n).map(|i| x[i].to_f32() + b[i % n].to_f32() + r[i].to_f32()).collect();
        assert_close(&bias_residual(&p, &x, &b, &r), &want, "bias + residual");
    }

    /// A step of `s.t` new positions after `s.past`: random past keys and values, the new
    /// ones appended by the reference kernel from a random QKV output and bias.
    struct Step {
        qkv: Vec<f16>,
        bias: Vec<f16>,
        k: Vec<f16>,
        v: Vec<f16>,
    }

    fn step(s: AttnShape, seed: u64) -> Step {
        let hd = s.heads * s.head_dim;
        let cache_len = s.batch * s.heads * s.cap * s.head_dim;
        let (qkv, bias) = (values(s.batch * s.t * 3 * hd, seed, 1.5), values(3 * hd, seed + 1, 0.5));
        let (mut k, mut v) = (values(cache_len, seed + 2, 1.5), values(cache_len, seed + 3, 1.5));
        let dims = [s.batch, s.heads, s.cap, s.head_dim];
        for (part, cache) in [(QkvPart::Key, &mut k), (QkvPart::Value, &mut v)] {
            let p = KvAppendParams::new(s, part, &dims, qkv.len(), bias.len()).unwrap();
            kv_append(&p, &qkv, &bias, cache);
        }
        Step { qkv, bias, k, v }
    }

    /// The QKV output with its bias added (the CPU path's matmul adds it).
    fn biased(st: &Step) -> Vec<f32> {
        let n = st.bias.len();
        st.qkv.iter().enumerate().map(|(i, &x)| x.to_f32() + st.bias[i % n].to_f32()).collect()
    }

    #[test]
    fn kv_append_matches_the_cpu_kernel() {
        let s = AttnShape { batch: 2, t: 3, heads: 4, head_dim: 16, cap: 12, past: 5 };
        let st = step(s, 11);
        let qkv = biased(&st);
        for (part, got) in [(1, &st.k), (2, &st.v)] {
            // The CPU append over the same past, into an f32 cache: the reference must differ
            // only by the f16 rounding of the new positions.
            let mut want = widen(got);
            let before = want.clone();
            append_kv(s, &qkv, part, KvSliceMut::F32(&mut want));
            assert_close(got, &want, if part == 1 { "keys" } else { "values" });
            // Nothing outside past..past + t moved.
            for (i, (&a, &b)) in want.iter().zip(&before).enumerate() {
                let pos = i / s.head_dim % s.cap;
                if pos < s.past || pos >= s.total() {
                    assert_eq!(a, b, "position {pos} changed");
                }
            }
        }
    }

    fn attention_matches_cpu(s: AttnShape, kpos: Vec<f32>, seed: u64) {
        let st = step(s, seed);
        let slopes = crate::model::bloom::alibi_slopes(s.heads);
        let scale = 1.0 / (s.head_dim as f32).sqrt();
        let dims = [s.batch, s.heads, s.cap, s.head_dim];
        let p = AttentionParams::new(s, scale, [&dims, &dims], st.qkv.len(), st.bias.len(), kpos.len(), slopes.len()).unwrap();
        let got = attention(&p, &st.qkv, &st.bias, &st.k, &st.v, &kpos, &slopes);
        let mut want = vec![0f32; got.len()];
        let qkv = biased(&st);
        alibi_attention(s, &qkv, KvSlice::F16(&st.k), KvSlice::F16(&st.v), &kpos, &slopes, scale, &mut want);
        assert_close(&got, &want, "attention");
    }

    /// ALiBi positions of a row whose first `pad` keys are padding (-1).
    fn positions(total: usize, pad: usize) -> Vec<f32> {
        (0..total).map(|j| if j < pad { -1.0 } else { (j - pad) as f32 }).collect()
    }

    #[test]
    fn attention_matches_the_cpu_kernel_when_decoding_with_padding() {
        // Two rows, the second left-padded by 2; 3 new queries after 5 cached positions.
        let s = AttnShape { batch: 2, t: 3, heads: 4, head_dim: 16, cap: 12, past: 5 };
        let kpos = [positions(8, 0), positions(8, 2)].concat();
        attention_matches_cpu(s, kpos, 21);
    }

    #[test]
    fn attention_matches_the_cpu_kernel_on_a_prefill() {
        // Causal masking inside the step; more queries than one CPU tile (16).
        let s = AttnShape { batch: 1, t: 19, heads: 6, head_dim: 16, cap: 24, past: 0 };
        attention_matches_cpu(s, positions(19, 0), 31);
    }

    #[test]
    fn attention_of_a_query_that_sees_no_key_is_zero() {
        // A padding query in a left-padded prefill: its only visible key is padding.
        let s = AttnShape { batch: 1, t: 3, heads: 2, head_dim: 16, cap: 3, past: 0 };
        let st = step(s, 41);
        let dims = [1, 2, 3, 16];
        let kpos = positions(3, 1);
        let p = AttentionParams::new(s, 0.25, [&dims, &dims], st.qkv.len(), st.bias.len(), 3, 2).unwrap();
        let out = attention(&p, &st.qkv, &st.bias, &st.k, &st.v, &kpos, &[0.5, 0.25]);
        let hd = 2 * 16;
        assert!(out[..hd].iter().all(|v| v.to_f32() == 0.0), "query 0 sees only padding");
        assert!(out[hd..].iter().any(|v| v.to_f32() != 0.0));
    }
}
