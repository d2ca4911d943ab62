//! ALiBi attention over a KV cache, read in place (no copy of the cache per step).
//!
//! For each row, head and query `i` (absolute position `past + i`):
//! `score_j = q.k_j * scale + slope_h * kpos[j]` over keys `j <= past + i` that are not
//! padding (`kpos[j] >= 0`), softmax in f32, then the weighted sum of the values. This is what
//! transformers' BLOOM computes (`alibi + q.k / sqrt(d)`, masked, softmax in f32).

use super::dot::dot;
use rayon::prelude::*;

/// Shapes of one call.
#[derive(Clone, Copy, Debug)]
pub struct AttnShape {
    pub batch: usize,
    /// New queries per row.
    pub t: usize,
    pub heads: usize,
    pub head_dim: usize,
    /// Positions the cache has room for (its stride).
    pub cap: usize,
    /// Positions before the new ones.
    pub past: usize,
}

impl AttnShape {
    pub fn total(&self) -> usize {
        self.past + self.t
    }
}

struct OutPtr(*mut f32);
// SAFETY: each task writes its own (row, query, head) slice of the output.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}
impl OutPtr {
    fn get(&self) -> *mut f32 {
        self.0
    }
}

/// `qkv`: `[batch, t, 3 * heads * head_dim]` ([Q; K; V], biases included); `k`, `v`:
/// `[batch, heads, cap, head_dim]` holding every position up to `past + t`; `kpos`:
/// `[batch, past + t]`; `slopes`: `[heads]`. Writes `out`: `[batch, t, heads * head_dim]`.
pub fn alibi_attention(
    s: AttnShape,
    qkv: &[f32],
    k: &[f32],
    v: &[f32],
    kpos: &[f32],
    slopes: &[f32],
    scale: f32,
    out: &mut [f32],
) {
    let (hd, d, total) = (s.heads * s.head_dim, s.head_dim, s.total());
    assert_eq!(qkv.len(), s.batch * s.t * 3 * hd, "attention: qkv shape");
    assert_eq!(out.len(), s.batch * s.t * hd, "attention: output shape");
    assert!(k.len() >= s.batch * s.heads * s.cap * d && v.len() == k.len() && total <= s.cap, "attention: cache shape");
    assert_eq!(kpos.len(), s.batch * total, "attention: key positions");
    let out_ptr = OutPtr(out.as_mut_ptr());
    (0..s.batch * s.t * s.heads).into_par_iter().for_each_init(
        || (vec![0f32; total], vec![0f32; d]),
        |(scores, acc), task| {
            let h = task % s.heads;
            let i = (task / s.heads) % s.t;
            let b = task / (s.heads * s.t);
            let q = &qkv[(b * s.t + i) * 3 * hd + h * d..][..d];
            let kb = &k[(b * s.heads + h) * s.cap * d..];
            let vb = &v[(b * s.heads + h) * s.cap * d..];
            let kp = &kpos[b * total..(b + 1) * total];
            let visible = s.past + i + 1;
            let mut max = f32::NEG_INFINITY;
            for j in 0..visible {
                scores[j] = if kp[j] >= 0.0 {
                    dot(q, &kb[j * d..(j + 1) * d]) * scale + slopes[h] * kp[j]
                } else {
                    f32::NEG_INFINITY
                };
                max = max.max(scores[j]);
            }
            acc.iter_mut().for_each(|a| *a = 0.0);
            if max > f32::NEG_INFINITY {
                let mut sum = 0f32;
                for sc in scores[..visible].iter_mut() {
                    *sc = (*sc - max).exp();
                    sum += *sc;
                }
                let inv = 1.0 / sum;
                for (j, &p) in scores[..visible].iter().enumerate() {
                    if p != 0.0 {
                        let w = p * inv;
                        for (a, &x) in acc.iter_mut().zip(&vb[j * d..(j + 1) * d]) {
                            *a += w * x;
                        }
                    }
                }
            }
            // SAFETY: (b, i, h) is this task's alone; the offset is inside `out` (asserted).
            unsafe {
                std::ptr::copy_nonoverlapping(acc.as_ptr(), out_ptr.get().add((b * s.t + i) * hd + h * d), d);
            }
        },
    );
}

/// Copies part `part` (1 = K, 2 = V) of `qkv` into `cache` at positions `past..past + t`.
pub fn append_kv(s: AttnShape, qkv: &[f32], part: usize, cache: &mut [f32]) {
    let (hd, d) = (s.heads * s.head_dim, s.head_dim);
    assert!(s.past + s.t <= s.cap && cache.len() >= s.batch * s.heads * s.cap * d, "append_kv: cache too small");
    for b in 0..s.batch {
        for i in 0..s.t {
            let src = &qkv[(b * s.t + i) * 3 * hd + part * hd..][..hd];
            for h in 0..s.heads {
                let dst = ((b * s.heads + h) * s.cap + s.past + i) * d;
                cache[dst..dst + d].copy_from_slice(&src[h * d..(h + 1) * d]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Straightforward reference: explicit mask matrix, full softmax.
    #[allow(clippy::too_many_arguments)]
    fn reference(s: AttnShape, qkv: &[f32], k: &[f32], v: &[f32], kpos: &[f32], slopes: &[f32], scale: f32) -> Vec<f32> {
        let (hd, d, total) = (s.heads * s.head_dim, s.head_dim, s.total());
        let mut out = vec![0f32; s.batch * s.t * hd];
        for b in 0..s.batch {
            for i in 0..s.t {
                for h in 0..s.heads {
                    let q = &qkv[(b * s.t + i) * 3 * hd + h * d..][..d];
                    let mut sc: Vec<f64> = (0..total)
                        .map(|j| {
                            let kp = kpos[b * total + j];
                            if j > s.past + i || kp < 0.0 {
                                f64::NEG_INFINITY
                            } else {
                                let kr = &k[((b * s.heads + h) * s.cap + j) * d..][..d];
                                let qk: f64 = q.iter().zip(kr).map(|(a, b)| *a as f64 * *b as f64).sum();
                                qk * scale as f64 + slopes[h] as f64 * kp as f64
                            }
                        })
                        .collect();
                    let m = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let z: f64 = sc.iter().map(|x| (x - m).exp()).sum();
                    sc.iter_mut().for_each(|x| *x = (*x - m).exp() / z);
                    for dd in 0..d {
                        let val: f64 = (0..total).map(|j| sc[j] * v[((b * s.heads + h) * s.cap + j) * d + dd] as f64).sum();
                        out[(b * s.t + i) * hd + h * d + dd] = val as f32;
                    }
                }
            }
        }
        out
    }

    #[test]
    fn matches_reference_with_padding_and_cache() {
        let s = AttnShape { batch: 2, t: 3, heads: 3, head_dim: 8, cap: 9, past: 4 };
        let hd = s.heads * s.head_dim;
        let f = |n: usize, m: usize| (0..n).map(|i| (((i * m) % 97) as f32 - 48.0) / 31.0).collect::<Vec<_>>();
        let qkv = f(s.batch * s.t * 3 * hd, 7);
        let mut k = f(s.batch * s.heads * s.cap * s.head_dim, 11);
        let mut v = f(s.batch * s.heads * s.cap * s.head_dim, 13);
        append_kv(s, &qkv, 1, &mut k);
        append_kv(s, &qkv, 2, &mut v);
        // Row 1 is left-padded by two positions.
        let mut kpos = Vec::new();
        kpos.extend((0..7).map(|j| j as f32));
        kpos.extend([-1.0, -1.0]);
        kpos.extend((0..5).map(|j| j as f32));
        let slopes = [0.5f32, 0.25, 0.125];
        let want = reference(s, &qkv, &k, &v, &kpos, &slopes, 0.35);
        let mut got = vec![0f32; want.len()];
        alibi_attention(s, &qkv, &k, &v, &kpos, &slopes, 0.35, &mut got);
        for (a, b) in got.iter().zip(&want) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
    }
}
