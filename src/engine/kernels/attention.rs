//! ALiBi attention over a KV cache, read in place (no copy of the cache per step).
//!
//! For each row, head and query `i` (absolute position `past + i`):
//! `score_j = q.k_j * scale + slope_h * kpos[j]` over keys `j <= past + i` that are not
//! padding (`kpos[j] >= 0`), softmax in f32, then the weighted sum of the values. This is what
//! transformers' BLOOM computes (`alibi + q.k / sqrt(d)`, masked, softmax in f32).

use super::SharedOut;
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

/// Queries per task: each key and value row is read once for all of them.
const QUERY_TILE: usize = 16;

/// Whether decoding reads an f16 cache without widening it first (the AVX-512 one-query
/// path, for head sizes that are a multiple of 16; on aarch64 the NEON one, for multiples of
/// 16 up to 128). Elsewhere an f16 cache is widened per tile, which costs more than reading
/// f32 (measured on x86: 24-26 against 29-31 tok/s).
pub fn reads_f16_directly(head_dim: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        head_dim % 16 == 0 && super::qdot::avx512_available()
    }
    #[cfg(target_arch = "aarch64")]
    {
        neon::fits(head_dim)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = head_dim;
        false
    }
}

/// A key or value cache, `[batch, heads, cap, head_dim]`: f32, or f16 (half the bytes to
/// keep and to read per step; a task widens its head's rows to f32 before using them).
#[derive(Clone, Copy)]
pub enum KvSlice<'a> {
    F32(&'a [f32]),
    F16(&'a [half::f16]),
}

impl KvSlice<'_> {
    fn len(&self) -> usize {
        match self {
            KvSlice::F32(x) => x.len(),
            KvSlice::F16(x) => x.len(),
        }
    }

    /// Elements `range` as f32: borrowed when f32, else widened into `buf`.
    fn f32_rows<'b>(&'b self, range: std::ops::Range<usize>, buf: &'b mut Vec<f32>) -> &'b [f32] {
        use half::slice::HalfFloatSliceExt;
        match self {
            KvSlice::F32(x) => &x[range],
            KvSlice::F16(x) => {
                buf.resize(range.len(), 0.0);
                x[range].convert_to_f32_slice(buf);
                buf
            }
        }
    }
}

/// `qkv`: `[batch, t, 3 * heads * head_dim]` ([Q; K; V], biases included); `k`, `v`:
/// `[batch, heads, cap, head_dim]` holding every position up to `past + t`; `kpos`:
/// `[batch, past + t]`; `slopes`: `[heads]`. Writes `out`: `[batch, t, heads * head_dim]`.
pub fn alibi_attention(
    s: AttnShape,
    qkv: &[f32],
    k: KvSlice<'_>,
    v: KvSlice<'_>,
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
    assert_eq!(slopes.len(), s.heads, "attention: slopes");
    let out_ptr = SharedOut::new(out);
    let tiles = s.t.div_ceil(QUERY_TILE);
    (0..s.batch * s.heads * tiles).into_par_iter().for_each_init(
        || (vec![0f32; QUERY_TILE * total], vec![0f32; QUERY_TILE * d], vec![0f32; QUERY_TILE * d], Vec::new(), Vec::new()),
        |(scores, acc, qt, kbuf, vbuf), task| {
            let tile = Tile { b: task / (s.heads * tiles), h: task / tiles % s.heads, i0: task % tiles * QUERY_TILE };
            // The head's keys and values up to the tile's last query.
            let base = (tile.b * s.heads + tile.h) * s.cap * d;
            let rows = base..base + (s.past + tile.i0 + QUERY_TILE.min(s.t - tile.i0)) * d;
            #[cfg(target_arch = "x86_64")]
            {
                // One or a few queries (decoding): AVX-512 one query at a time, reading an f16
                // cache as it is (a widening load per vector).
                let one_query_path = !(d % 64 == 0 && s.t - tile.i0 >= 4) && d % 16 == 0 && super::qdot::avx512_available();
                if one_query_path {
                    let args = TileArgs { s, qkv, k: &[], v: &[], kpos, slopes, scale };
                    match (k, v) {
                        // SAFETY: AVX-512F and FMA are present (checked above); d % 16 == 0;
                        // `rows` lies inside both caches (asserted above).
                        (KvSlice::F32(k), KvSlice::F32(v)) => unsafe {
                            avx512::attend_queries(&args, tile, k[rows.clone()].as_ptr(), v[rows].as_ptr(), scores, acc)
                        },
                        (KvSlice::F16(k), KvSlice::F16(v)) => unsafe {
                            avx512::attend_queries(&args, tile, k[rows.clone()].as_ptr(), v[rows].as_ptr(), scores, acc)
                        },
                        _ => unreachable!("keys and values share one cache type"),
                    }
                } else {
                    let (k, v) = (k.f32_rows(rows.clone(), kbuf), v.f32_rows(rows, vbuf));
                    let args = TileArgs { s, qkv, k, v, kpos, slopes, scale };
                    attend_tile_f32(&args, tile, scores, qt, acc);
                }
            }
            #[cfg(target_arch = "aarch64")]
            {
                let _ = qt; // the transposed-query scratch of the AVX-512 path
                // One or a few queries (decoding): NEON one query at a time, reading an f16
                // cache as it is (a widening `fcvtl` per 4 values), as the AVX-512 path.
                if s.t - tile.i0 < 4 && neon::fits(d) {
                    let args = TileArgs { s, qkv, k: &[], v: &[], kpos, slopes, scale };
                    match (k, v) {
                        // SAFETY: neon::fits(d); `rows` lies inside both caches (asserted above).
                        (KvSlice::F32(k), KvSlice::F32(v)) => unsafe {
                            neon::attend_queries(&args, tile, k[rows.clone()].as_ptr(), v[rows].as_ptr(), scores, acc)
                        },
                        (KvSlice::F16(k), KvSlice::F16(v)) => unsafe {
                            neon::attend_queries(&args, tile, k[rows.clone()].as_ptr(), v[rows].as_ptr(), scores, acc)
                        },
                        _ => unreachable!("keys and values share one cache type"),
                    }
                } else {
                    let (k, v) = (k.f32_rows(rows.clone(), kbuf), v.f32_rows(rows, vbuf));
                    attend_tile(&TileArgs { s, qkv, k, v, kpos, slopes, scale }, tile, scores, acc);
                }
            }
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            {
                let _ = qt; // the transposed-query scratch of the AVX-512 path
                let (k, v) = (k.f32_rows(rows.clone(), kbuf), v.f32_rows(rows, vbuf));
                attend_tile(&TileArgs { s, qkv, k, v, kpos, slopes, scale }, tile, scores, acc);
            }
            let n = QUERY_TILE.min(s.t - tile.i0);
            for q in 0..n {
                // SAFETY: (b, i0 + q, h) belongs to this task alone; the offset is inside
                // `out` (asserted above).
                unsafe {
                    std::ptr::copy_nonoverlapping(acc[q * d..].as_ptr(), out_ptr.get().add((tile.b * s.t + tile.i0 + q) * hd + tile.h * d), d);
                }
            }
        },
    );
}

/// The paths over f32 keys and values (an f16 cache is widened first): AVX-512 tiles of
/// queries, or plain loops compiled for AVX2 or the baseline.
#[cfg(target_arch = "x86_64")]
fn attend_tile_f32(args: &TileArgs<'_>, tile: Tile, scores: &mut [f32], qt: &mut [f32], acc: &mut [f32]) {
    if args.s.head_dim % 64 == 0 && args.s.t - tile.i0 >= 4 && super::qdot::avx512_available() {
        // SAFETY: AVX-512F and FMA are present (checked above); head_dim % 64 == 0.
        unsafe { avx512::attend_tile(args, tile, scores, qt, acc) };
    } else if args.s.head_dim % 16 == 0 && args.s.t - tile.i0 >= 4 && super::dot::has_avx2_fma() {
        // SAFETY: AVX2 and FMA are present (checked above); head_dim % 16 == 0.
        unsafe { avx2::attend_tile(args, tile, scores, qt, acc) };
    } else if super::dot::has_avx2_fma() {
        // SAFETY: AVX2 and FMA are present (checked above).
        unsafe { attend_tile_avx2(args, tile, scores, acc) };
    } else {
        attend_tile(args, tile, scores, acc);
    }
}

struct TileArgs<'a> {
    s: AttnShape,
    qkv: &'a [f32],
    /// This tile's head: keys and values `0..past + i0 + queries`, `head_dim` apiece.
    k: &'a [f32],
    v: &'a [f32],
    kpos: &'a [f32],
    slopes: &'a [f32],
    scale: f32,
}

/// Row `b`, head `h`, queries `i0..i0 + QUERY_TILE` (or fewer at the end).
#[derive(Clone, Copy)]
struct Tile {
    b: usize,
    h: usize,
    i0: usize,
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn attend_tile_avx2(a: &TileArgs<'_>, tile: Tile, scores: &mut [f32], acc: &mut [f32]) {
    attend_tile(a, tile, scores, acc)
}

/// Scores, softmax and the weighted sum of values for one tile of queries; `acc` receives
/// `head_dim` outputs per query. Written as plain loops over slices so that the compiler
/// vectorizes them for the target features of the caller.
#[inline(always)]
fn attend_tile(a: &TileArgs<'_>, tile: Tile, scores: &mut [f32], acc: &mut [f32]) {
    let s = a.s;
    let (hd, d, total) = (s.heads * s.head_dim, s.head_dim, s.total());
    let n = QUERY_TILE.min(s.t - tile.i0);
    let (kb, vb) = (a.k, a.v);
    let kp = &a.kpos[tile.b * total..(tile.b + 1) * total];
    let slope = a.slopes[tile.h];
    // Causal: query i sees keys 0..=past + i.
    let visible = |q: usize| s.past + tile.i0 + q + 1;
    for q in 0..n {
        let i = tile.i0 + q;
        let qv = &a.qkv[(tile.b * s.t + i) * 3 * hd + tile.h * d..][..d];
        let sc = &mut scores[q * total..q * total + visible(q)];
        for (j, out) in sc.iter_mut().enumerate() {
            let kr = &kb[j * d..(j + 1) * d];
            *out = if kp[j] >= 0.0 { super::dot::dot_inline(qv, kr) * a.scale + slope * kp[j] } else { f32::NEG_INFINITY };
        }
        let max = sc.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
        if max == f32::NEG_INFINITY {
            // Every key is padding (a fully padded row): the output is zero.
            sc.fill(0.0);
            continue;
        }
        for x in sc.iter_mut() {
            *x = exp_nonpositive(*x - max);
        }
        let inv = 1.0 / sc.iter().sum::<f32>();
        sc.iter_mut().for_each(|x| *x *= inv);
    }
    let acc = &mut acc[..n * d];
    acc.fill(0.0);
    // Each value row is read once for the whole tile.
    for j in 0..visible(n - 1) {
        let vr = &vb[j * d..(j + 1) * d];
        let first = j.saturating_sub(s.past + tile.i0);
        for q in first..n {
            let p = scores[q * total + j];
            for (o, &x) in acc[q * d..(q + 1) * d].iter_mut().zip(vr) {
                *o = p.mul_add(x, *o);
            }
        }
    }
}

/// `e^x` for `x <= 0` (0 below f32's range), without a libm call so that loops of it
/// vectorize: `x = n ln2 + r`, `e^r` by Cephes' degree-7 polynomial (relative error about
/// 1e-7), times `2^n` put into the exponent bits.
#[inline(always)]
pub fn exp_nonpositive(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in two so that n * C1 is exact.
    const C1: f32 = 0.693_359_4;
    const C2: f32 = -2.121_944_4e-4;
    let xc = x.max(-87.0);
    let n = (xc * LOG2E + 0.5).floor();
    let r = xc - n * C1 - n * C2;
    let mut p = 1.987_569_1e-4f32;
    p = p.mul_add(r, 1.398_199_9e-3);
    p = p.mul_add(r, 8.333_452e-3);
    p = p.mul_add(r, 4.166_579_6e-2);
    p = p.mul_add(r, 1.666_666_5e-1);
    p = p.mul_add(r, 5.000_000_1e-1);
    let e = (p * r).mul_add(r, r) + 1.0;
    let two_n = f32::from_bits(((n as i32 + 127) << 23) as u32);
    if x < -87.0 {
        0.0
    } else {
        e * two_n
    }
}

/// Prefill tiles with AVX-512: scores and softmax vectorized over the tile's 16 queries
/// (one query per lane, so no horizontal sums), the weighted sum over 64 values of the head
/// at a time for 4 queries.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{Tile, TileArgs, QUERY_TILE};
    use std::arch::x86_64::*;

    /// 16 cache values widened to f32.
    pub trait Load16 {
        /// # Safety
        /// `p` points at 16 readable values; AVX-512F is present.
        unsafe fn load16(p: *const Self) -> __m512;
    }

    impl Load16 for f32 {
        #[inline(always)]
        unsafe fn load16(p: *const f32) -> __m512 {
            _mm512_loadu_ps(p)
        }
    }

    impl Load16 for half::f16 {
        #[inline(always)]
        unsafe fn load16(p: *const half::f16) -> __m512 {
            _mm512_cvtph_ps(_mm256_loadu_si256(p as *const __m256i))
        }
    }

    /// `e^x` lane-wise for `x <= 0` (as `exp_nonpositive`; `-inf` gives 0).
    #[inline(always)]
    unsafe fn exp(x: __m512) -> __m512 {
        let tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0), _CMP_LT_OQ);
        let xc = _mm512_max_ps(x, _mm512_set1_ps(-87.0));
        let n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(std::f32::consts::LOG2_E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.121_944_4e-4), _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693_359_4), xc));
        let mut p = _mm512_set1_ps(1.987_569_1e-4);
        for c in [1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 5.000_000_1e-1] {
            p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
        }
        let e = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0));
        _mm512_maskz_mov_ps(!tiny, _mm512_scalef_ps(e, n))
    }

    /// `st[j * 16 + q] += q_q . k_j` over 16 values of the head (`qreg`), for keys
    /// `j0..j0 + KEYS` (independent accumulators hide the FMA latency).
    #[inline(always)]
    unsafe fn score_keys<const KEYS: usize>(qreg: &[__m512; 16], kb: *const f32, d: usize, j0: usize, first: bool, st: *mut f32) {
        let mut acc = [_mm512_setzero_ps(); KEYS];
        if !first {
            for (u, a) in acc.iter_mut().enumerate() {
                *a = _mm512_loadu_ps(st.add((j0 + u) * 16));
            }
        }
        for (t, q) in qreg.iter().enumerate() {
            for (u, a) in acc.iter_mut().enumerate() {
                *a = _mm512_fmadd_ps(*q, _mm512_set1_ps(*kb.add((j0 + u) * d + t)), *a);
            }
        }
        for (u, a) in acc.iter().enumerate() {
            _mm512_storeu_ps(st.add((j0 + u) * 16), *a);
        }
    }

    /// The tile one query at a time (decoding: one or a few queries per row): a score is a
    /// dot product over the head in 16-value registers, the softmax runs 16 keys per
    /// register, the weighted sum keeps the output row in registers. `scores` is scratch
    /// (`QUERY_TILE * total`), `acc` gets `head_dim` values per query.
    #[target_feature(enable = "avx512f,fma,avx2")]
    pub unsafe fn attend_queries<T: Load16>(a: &TileArgs<'_>, tile: Tile, kb: *const T, vb: *const T, scores: &mut [f32], acc: &mut [f32]) {
        let s = a.s;
        let (hd, d, total) = (s.heads * s.head_dim, s.head_dim, s.total());
        let n = QUERY_TILE.min(s.t - tile.i0);
        let chunks = d / 16;
        assert!(d % 16 == 0 && chunks <= 8 && scores.len() >= total && acc.len() >= n * d);
        let kp = &a.kpos[tile.b * total..(tile.b + 1) * total];
        let slope = a.slopes[tile.h];
        let sc = scores.as_mut_ptr();
        for q in 0..n {
            let visible = s.past + tile.i0 + q + 1;
            let qp = a.qkv[(tile.b * s.t + tile.i0 + q) * 3 * hd + tile.h * d..].as_ptr();
            let mut max = f32::NEG_INFINITY;
            for (j, &pos) in kp[..visible].iter().enumerate() {
                let score = if pos >= 0.0 {
                    let kr = kb.add(j * d);
                    let mut sum = _mm512_mul_ps(_mm512_loadu_ps(qp), T::load16(kr));
                    for c in 1..chunks {
                        sum = _mm512_fmadd_ps(_mm512_loadu_ps(qp.add(16 * c)), T::load16(kr.add(16 * c)), sum);
                    }
                    _mm512_reduce_add_ps(sum) * a.scale + slope * pos
                } else {
                    f32::NEG_INFINITY
                };
                *sc.add(j) = score;
                max = max.max(score);
            }
            let out = acc.as_mut_ptr().add(q * d);
            if max == f32::NEG_INFINITY {
                // Only padding is visible: zeros.
                std::ptr::write_bytes(out, 0, d);
                continue;
            }
            let mut sum = _mm512_setzero_ps();
            let maxv = _mm512_set1_ps(max);
            for j0 in (0..visible).step_by(16) {
                let m: u16 = if visible - j0 >= 16 { !0 } else { (1u16 << (visible - j0)) - 1 };
                let e = exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, sc.add(j0)), maxv));
                let e = _mm512_maskz_mov_ps(m, e);
                _mm512_mask_storeu_ps(sc.add(j0), m, e);
                sum = _mm512_add_ps(sum, e);
            }
            let inv = 1.0 / _mm512_reduce_add_ps(sum);
            let mut o = [_mm512_setzero_ps(); 8];
            for j in 0..visible {
                let p = *sc.add(j);
                if p != 0.0 {
                    let (pv, vr) = (_mm512_set1_ps(p), vb.add(j * d));
                    for (c, o) in o.iter_mut().enumerate().take(chunks) {
                        *o = _mm512_fmadd_ps(pv, T::load16(vr.add(16 * c)), *o);
                    }
                }
            }
            for (c, o) in o.iter().enumerate().take(chunks) {
                _mm512_storeu_ps(out.add(16 * c), _mm512_mul_ps(*o, _mm512_set1_ps(inv)));
            }
        }
    }

    /// `acc` (16 x d) gets the tile's outputs; `st` (keys x 16) and `qt` (d x 16) are scratch.
    #[target_feature(enable = "avx512f,fma,avx2")]
    pub unsafe fn attend_tile(a: &TileArgs<'_>, tile: Tile, st: &mut [f32], qt: &mut [f32], acc: &mut [f32]) {
        let s = a.s;
        let (hd, d, total) = (s.heads * s.head_dim, s.head_dim, s.total());
        let n = QUERY_TILE.min(s.t - tile.i0);
        let keys = s.past + tile.i0 + n;
        let (kb, vb) = (a.k.as_ptr(), a.v.as_ptr());
        let kp = &a.kpos[tile.b * total..(tile.b + 1) * total];
        assert!(st.len() >= keys * 16 && qt.len() >= d * 16 && acc.len() >= QUERY_TILE * d);
        // Queries transposed (value-major, one query per lane), scaled.
        qt[..d * 16].fill(0.0);
        for q in 0..n {
            let row = &a.qkv[(tile.b * s.t + tile.i0 + q) * 3 * hd + tile.h * d..][..d];
            for (dd, &x) in row.iter().enumerate() {
                qt[dd * 16 + q] = x * a.scale;
            }
        }
        let stp = st.as_mut_ptr();
        for c in 0..d / 16 {
            let qreg: [__m512; 16] = std::array::from_fn(|t| _mm512_loadu_ps(qt.as_ptr().add((c * 16 + t) * 16)));
            let kc = kb.add(c * 16);
            let mut j = 0;
            while j + 8 <= keys {
                score_keys::<8>(&qreg, kc, d, j, c == 0, stp);
                j += 8;
            }
            while j < keys {
                score_keys::<1>(&qreg, kc, d, j, c == 0, stp);
                j += 1;
            }
        }
        // ALiBi, the causal and padding masks, and the softmax, lane-wise.
        let lanes: u16 = if n == 16 { !0 } else { (1u16 << n) - 1 };
        let slope = a.slopes[tile.h];
        let neg_inf = _mm512_set1_ps(f32::NEG_INFINITY);
        let mut max = neg_inf;
        for (j, &pos) in kp[..keys].iter().enumerate() {
            // Query q (absolute past + i0 + q) sees key j when j <= past + i0 + q.
            let causal = lanes & (!0u16).checked_shl(j.saturating_sub(s.past + tile.i0) as u32).unwrap_or(0);
            let visible = if pos >= 0.0 { causal } else { 0 };
            let v = _mm512_add_ps(_mm512_loadu_ps(stp.add(j * 16)), _mm512_set1_ps(slope * pos));
            let v = _mm512_mask_mov_ps(neg_inf, visible, v);
            _mm512_storeu_ps(stp.add(j * 16), v);
            max = _mm512_max_ps(max, v);
        }
        // Lanes with no visible key (padding rows, unused lanes) give zeros, not NaN.
        let empty = _mm512_cmp_ps_mask(max, neg_inf, _CMP_EQ_OQ);
        let max = _mm512_mask_mov_ps(max, empty, _mm512_setzero_ps());
        let mut sum = _mm512_setzero_ps();
        for j in 0..keys {
            let e = exp(_mm512_sub_ps(_mm512_loadu_ps(stp.add(j * 16)), max));
            _mm512_storeu_ps(stp.add(j * 16), e);
            sum = _mm512_add_ps(sum, e);
        }
        let has = _mm512_cmp_ps_mask(sum, _mm512_setzero_ps(), _CMP_GT_OQ);
        let inv = _mm512_maskz_div_ps(has, _mm512_set1_ps(1.0), sum);
        let mut inv_lanes = [0f32; 16];
        _mm512_storeu_ps(inv_lanes.as_mut_ptr(), inv);
        // Weighted sum of values: 4 queries x 64 values per pass, each value row loaded
        // once per pass.
        for q0 in (0..n).step_by(4) {
            let nq = 4.min(n - q0);
            for c in 0..d / 64 {
                let mut o = [[_mm512_setzero_ps(); 4]; 4];
                for j in 0..keys {
                    let vr = vb.add(j * d + c * 64);
                    let vv = [_mm512_loadu_ps(vr), _mm512_loadu_ps(vr.add(16)), _mm512_loadu_ps(vr.add(32)), _mm512_loadu_ps(vr.add(48))];
                    for (u, oq) in o.iter_mut().enumerate() {
                        let p = _mm512_set1_ps(*stp.add(j * 16 + q0 + u));
                        for (x, v) in oq.iter_mut().zip(&vv) {
                            *x = _mm512_fmadd_ps(p, *v, *x);
                        }
                    }
                }
                for (u, oq) in o.iter().enumerate().take(nq) {
                    let scale = _mm512_set1_ps(inv_lanes[q0 + u]);
                    for (w, x) in oq.iter().enumerate() {
                        _mm512_storeu_ps(acc.as_mut_ptr().add((q0 + u) * d + c * 64 + 16 * w), _mm512_mul_ps(*x, scale));
                    }
                }
            }
        }
    }
}

/// Prefill tiles with AVX2: the AVX-512 tile's scheme on 8 lanes, the tile's 16 queries as
/// two halves of 8 (one query per lane, no horizontal sums). The plain loops compiled for
/// AVX2 took a quarter of a 512-token prefill on an AVX2-only CPU (`perf`), mostly in
/// the per-key dot products' horizontal sums.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Tile, TileArgs, QUERY_TILE};
    use std::arch::x86_64::*;

    /// `e^x` lane-wise for `x <= 0` (as `exp_nonpositive`; `-inf` gives 0).
    #[inline(always)]
    unsafe fn exp(x: __m256) -> __m256 {
        let tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0), _CMP_LT_OQ);
        let xc = _mm256_max_ps(x, _mm256_set1_ps(-87.0));
        let n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(std::f32::consts::LOG2_E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.121_944_4e-4), _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693_359_4), xc));
        let mut p = _mm256_set1_ps(1.987_569_1e-4);
        for c in [1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 5.000_000_1e-1] {
            p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
        }
        let e = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r), _mm256_set1_ps(1.0));
        // 2^n through the exponent bits (n >= -126 here, so no denormals).
        let two_n = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
        _mm256_andnot_ps(tiny, _mm256_mul_ps(e, two_n))
    }

    /// `st[j * 8 + q] (+)= q_q . k_j` over 8 values of the head (`qreg`), for keys
    /// `j0..j0 + KEYS` (independent accumulators hide the FMA latency).
    #[inline(always)]
    unsafe fn score_keys<const KEYS: usize>(qreg: &[__m256; 8], kb: *const f32, d: usize, j0: usize, first: bool, st: *mut f32) {
        let mut acc = [_mm256_setzero_ps(); KEYS];
        if !first {
            for (u, a) in acc.iter_mut().enumerate() {
                *a = _mm256_loadu_ps(st.add((j0 + u) * 8));
            }
        }
        for (t, q) in qreg.iter().enumerate() {
            for (u, a) in acc.iter_mut().enumerate() {
                *a = _mm256_fmadd_ps(*q, _mm256_set1_ps(*kb.add((j0 + u) * d + t)), *a);
            }
        }
        for (u, a) in acc.iter().enumerate() {
            _mm256_storeu_ps(st.add((j0 + u) * 8), *a);
        }
    }

    /// `acc` (16 x d) gets the tile's outputs; `st` (keys x 16) and `qt` (d x 16) are
    /// scratch, used as keys x 8 and d x 8 per half. `head_dim % 16 == 0`.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn attend_tile(a: &TileArgs<'_>, tile: Tile, st: &mut [f32], qt: &mut [f32], acc: &mut [f32]) {
        let s = a.s;
        let (hd, d, total) = (s.heads * s.head_dim, s.head_dim, s.total());
        let n_tile = QUERY_TILE.min(s.t - tile.i0);
        let (kb, vb) = (a.k.as_ptr(), a.v.as_ptr());
        let kp = &a.kpos[tile.b * total..(tile.b + 1) * total];
        assert!(d % 16 == 0 && st.len() >= (s.past + tile.i0 + n_tile) * 8 && qt.len() >= d * 8 && acc.len() >= QUERY_TILE * d);
        let slope = a.slopes[tile.h];
        let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let neg_inf = _mm256_set1_ps(f32::NEG_INFINITY);
        for q0 in (0..n_tile).step_by(8) {
            let n = 8.min(n_tile - q0);
            // This half's first query is at absolute position `base`; it sees keys 0..=base.
            let base = s.past + tile.i0 + q0;
            let keys = base + n;
            // Queries transposed (value-major, one query per lane), scaled.
            qt[..d * 8].fill(0.0);
            for q in 0..n {
                let row = &a.qkv[(tile.b * s.t + tile.i0 + q0 + q) * 3 * hd + tile.h * d..][..d];
                for (dd, &x) in row.iter().enumerate() {
                    qt[dd * 8 + q] = x * a.scale;
                }
            }
            let stp = st.as_mut_ptr();
            for c in 0..d / 8 {
                let qreg: [__m256; 8] = std::array::from_fn(|t| _mm256_loadu_ps(qt.as_ptr().add((c * 8 + t) * 8)));
                let kc = kb.add(c * 8);
                let mut j = 0;
                while j + 4 <= keys {
                    score_keys::<4>(&qreg, kc, d, j, c == 0, stp);
                    j += 4;
                }
                while j < keys {
                    score_keys::<1>(&qreg, kc, d, j, c == 0, stp);
                    j += 1;
                }
            }
            // ALiBi, the causal and padding masks, and the softmax, lane-wise.
            let used = _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), lane);
            let mut max = neg_inf;
            for (j, &pos) in kp[..keys].iter().enumerate() {
                // Lane q (absolute base + q) sees key j when j <= base + q.
                let causal = _mm256_cmpgt_epi32(lane, _mm256_set1_epi32(j as i32 - base as i32 - 1));
                let visible = if pos >= 0.0 { _mm256_castsi256_ps(_mm256_and_si256(causal, used)) } else { _mm256_setzero_ps() };
                let v = _mm256_add_ps(_mm256_loadu_ps(stp.add(j * 8)), _mm256_set1_ps(slope * pos));
                let v = _mm256_blendv_ps(neg_inf, v, visible);
                _mm256_storeu_ps(stp.add(j * 8), v);
                max = _mm256_max_ps(max, v);
            }
            // Lanes with no visible key (padding rows, unused lanes) give zeros, not NaN.
            let empty = _mm256_cmp_ps(max, neg_inf, _CMP_EQ_OQ);
            let max = _mm256_blendv_ps(max, _mm256_setzero_ps(), empty);
            let mut sum = _mm256_setzero_ps();
            for j in 0..keys {
                let e = exp(_mm256_sub_ps(_mm256_loadu_ps(stp.add(j * 8)), max));
                _mm256_storeu_ps(stp.add(j * 8), e);
                sum = _mm256_add_ps(sum, e);
            }
            let has = _mm256_cmp_ps(sum, _mm256_setzero_ps(), _CMP_GT_OQ);
            let inv = _mm256_and_ps(has, _mm256_div_ps(_mm256_set1_ps(1.0), sum));
            let mut inv_lanes = [0f32; 8];
            _mm256_storeu_ps(inv_lanes.as_mut_ptr(), inv);
            // Weighted sum of values: 4 queries x 16 values per pass, each value row piece
            // loaded once per pass.
            for q1 in (0..n).step_by(4) {
                let nq = 4.min(n - q1);
                for c in 0..d / 16 {
                    let mut o = [[_mm256_setzero_ps(); 2]; 4];
                    for j in 0..keys {
                        let vr = vb.add(j * d + c * 16);
                        let vv = [_mm256_loadu_ps(vr), _mm256_loadu_ps(vr.add(8))];
                        for (u, oq) in o.iter_mut().enumerate() {
                            let p = _mm256_set1_ps(*stp.add(j * 8 + q1 + u));
                            for (x, v) in oq.iter_mut().zip(&vv) {
                                *x = _mm256_fmadd_ps(p, *v, *x);
                            }
                        }
                    }
                    for (u, oq) in o.iter().enumerate().take(nq) {
                        let scale = _mm256_set1_ps(inv_lanes[q1 + u]);
                        for (w, x) in oq.iter().enumerate() {
                            _mm256_storeu_ps(acc.as_mut_ptr().add((q0 + q1 + u) * d + c * 16 + 8 * w), _mm256_mul_ps(*x, scale));
                        }
                    }
                }
            }
        }
    }
}

/// A mutable key or value cache for `append_kv`.
pub enum KvSliceMut<'a> {
    F32(&'a mut [f32]),
    F16(&'a mut [half::f16]),
}

/// Copies part `part` (1 = K, 2 = V) of `qkv` into `cache` at positions `past..past + t`
/// (rounded to the nearest f16 for an f16 cache).
pub fn append_kv(s: AttnShape, qkv: &[f32], part: usize, cache: KvSliceMut<'_>) {
    use half::slice::HalfFloatSliceExt;
    let (hd, d) = (s.heads * s.head_dim, s.head_dim);
    let len = match &cache {
        KvSliceMut::F32(c) => c.len(),
        KvSliceMut::F16(c) => c.len(),
    };
    assert!(s.past + s.t <= s.cap && len >= s.batch * s.heads * s.cap * d, "append_kv: cache too small");
    let mut cache = cache;
    for b in 0..s.batch {
        for i in 0..s.t {
            let src = &qkv[(b * s.t + i) * 3 * hd + part * hd..][..hd];
            for h in 0..s.heads {
                let dst = ((b * s.heads + h) * s.cap + s.past + i) * d;
                let src = &src[h * d..(h + 1) * d];
                match &mut cache {
                    KvSliceMut::F32(c) => c[dst..dst + d].copy_from_slice(src),
                    KvSliceMut::F16(c) => c[dst..dst + d].convert_from_f32_slice(src),
                }
            }
        }
    }
}

/// Decoding on aarch64: one query at a time over keys and values read as they are stored
/// (f32, or f16 widened by `fcvtl` 4 values at a time), 4-lane NEON for the dot products and
/// the weighted sum, the softmax's exponentials in scalar. The same arithmetic for both cache
/// types, so an f16 cache gives exactly what the f32 path gives on the rounded values.
#[cfg(target_arch = "aarch64")]
mod neon {
    use super::{exp_nonpositive, Tile, TileArgs, QUERY_TILE};
    use std::arch::aarch64::*;

    /// Most 4-value chunks of a head (the accumulators live in registers).
    const MAX_CHUNKS: usize = 32;

    /// Head sizes this path takes: a multiple of 16, at most 128.
    pub fn fits(d: usize) -> bool {
        d % 16 == 0 && d / 4 <= MAX_CHUNKS
    }

    pub trait Load4 {
        /// The 4 values at `p` as f32.
        unsafe fn load4(p: *const Self) -> float32x4_t;
    }

    impl Load4 for f32 {
        #[inline(always)]
        unsafe fn load4(p: *const f32) -> float32x4_t {
            vld1q_f32(p)
        }
    }

    impl Load4 for half::f16 {
        #[inline(always)]
        unsafe fn load4(p: *const half::f16) -> float32x4_t {
            let h = vld1_u16(p as *const u16);
            let r: float32x4_t;
            // fcvtl: base ARMv8 (stable Rust has no f16 vector intrinsic).
            std::arch::asm!("fcvtl {r:v}.4s, {h:v}.4h", r = out(vreg) r, h = in(vreg) h, options(pure, nomem, nostack));
            r
        }
    }

    /// `acc` (queries x d) gets the tile's outputs; `scores` (keys) is scratch. `kb`, `vb`:
    /// the head's keys and values from position 0, `d` apiece; `fits(d)` holds.
    pub unsafe fn attend_queries<T: Load4>(a: &TileArgs<'_>, tile: Tile, kb: *const T, vb: *const T, scores: &mut [f32], acc: &mut [f32]) {
        let s = a.s;
        let (hd, d, total) = (s.heads * s.head_dim, s.head_dim, s.total());
        let n = QUERY_TILE.min(s.t - tile.i0);
        let chunks = d / 4;
        assert!(fits(d) && scores.len() >= total && acc.len() >= n * d);
        let kp = &a.kpos[tile.b * total..(tile.b + 1) * total];
        let slope = a.slopes[tile.h];
        for q in 0..n {
            let visible = s.past + tile.i0 + q + 1;
            let qp = a.qkv[(tile.b * s.t + tile.i0 + q) * 3 * hd + tile.h * d..].as_ptr();
            let mut max = f32::NEG_INFINITY;
            for (j, &pos) in kp[..visible].iter().enumerate() {
                let score = if pos >= 0.0 {
                    let kr = kb.add(j * d);
                    // Four sums over interleaved chunks: independent FMA chains.
                    let mut sum = [vdupq_n_f32(0.0); 4];
                    for c in 0..chunks {
                        sum[c % 4] = vfmaq_f32(sum[c % 4], vld1q_f32(qp.add(4 * c)), T::load4(kr.add(4 * c)));
                    }
                    vaddvq_f32(vaddq_f32(vaddq_f32(sum[0], sum[1]), vaddq_f32(sum[2], sum[3]))) * a.scale + slope * pos
                } else {
                    f32::NEG_INFINITY
                };
                *scores.get_unchecked_mut(j) = score;
                max = max.max(score);
            }
            let out = acc.as_mut_ptr().add(q * d);
            if max == f32::NEG_INFINITY {
                // Only padding is visible: zeros.
                std::ptr::write_bytes(out, 0, d);
                continue;
            }
            let mut total_p = 0f32;
            for x in scores[..visible].iter_mut() {
                *x = exp_nonpositive(*x - max);
                total_p += *x;
            }
            let inv = 1.0 / total_p;
            let mut o = [vdupq_n_f32(0.0); MAX_CHUNKS];
            for j in 0..visible {
                let p = *scores.get_unchecked(j);
                if p != 0.0 {
                    let vr = vb.add(j * d);
                    for (c, o) in o.iter_mut().enumerate().take(chunks) {
                        *o = vfmaq_n_f32(*o, T::load4(vr.add(4 * c)), p);
                    }
                }
            }
            for (c, o) in o.iter().enumerate().take(chunks) {
                vst1q_f32(out.add(4 * c), vmulq_n_f32(*o, inv));
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
    fn exp_matches_libm() {
        for i in 0..=20000 {
            let x = -(i as f32) * 0.0045;
            let (got, want) = (exp_nonpositive(x), x.exp());
            assert!((got - want).abs() <= 2e-7 * want + 2e-38, "exp({x}): {got} vs {want}");
        }
        assert_eq!(exp_nonpositive(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_nonpositive(-200.0), 0.0);
    }

    #[test]
    fn long_prefill_matches_reference() {
        // More queries than one tile, with a cache before them; head_dim 64 and 128 take
        // the AVX-512 tile path where the CPU has it, with a tail tile of 5 and of 2 queries.
        check(AttnShape { batch: 1, t: 37, heads: 2, head_dim: 16, cap: 45, past: 5 }, 0);
        check(AttnShape { batch: 2, t: 37, heads: 2, head_dim: 64, cap: 45, past: 5 }, 0);
        check(AttnShape { batch: 1, t: 34, heads: 1, head_dim: 128, cap: 34, past: 0 }, 0);
        // Row 1 left-padded by 20 positions: its first tile has queries that see no key.
        check(AttnShape { batch: 2, t: 37, heads: 2, head_dim: 64, cap: 40, past: 0 }, 20);
        // Decoding: one query per row after a cache (the one-query path), padded row too.
        check(AttnShape { batch: 2, t: 1, heads: 3, head_dim: 64, cap: 40, past: 39 }, 20);
        check(AttnShape { batch: 2, t: 2, heads: 3, head_dim: 32, cap: 40, past: 38 }, 5);
        check(AttnShape { batch: 1, t: 3, heads: 1, head_dim: 128, cap: 21, past: 18 }, 0);
        // Row 1 entirely padding (its output: zeros).
        check(AttnShape { batch: 2, t: 1, heads: 1, head_dim: 64, cap: 5, past: 4 }, 5);
    }

    #[test]
    fn fully_padded_queries_give_zeros() {
        let s = AttnShape { batch: 1, t: 8, heads: 1, head_dim: 64, cap: 8, past: 0 };
        let qkv = vec![0.5f32; 8 * 3 * 64];
        let (mut k, mut v) = (vec![0f32; 8 * 64], vec![0f32; 8 * 64]);
        append_kv(s, &qkv, 1, KvSliceMut::F32(&mut k));
        append_kv(s, &qkv, 2, KvSliceMut::F32(&mut v));
        let kpos = vec![-1f32; 8];
        let mut out = vec![f32::NAN; 8 * 64];
        alibi_attention(s, &qkv, KvSlice::F32(&k), KvSlice::F32(&v), &kpos, &[0.5], 0.125, &mut out);
        assert!(out.iter().all(|&x| x == 0.0));
    }

    /// Row 1 (if any) has its first `pad` positions padded.
    fn check(s: AttnShape, pad: usize) {
        let hd = s.heads * s.head_dim;
        let f = |n: usize, m: usize| (0..n).map(|i| (((i * m) % 97) as f32 - 48.0) / 31.0).collect::<Vec<_>>();
        let qkv = f(s.batch * s.t * 3 * hd, 7);
        let mut k = f(s.batch * s.heads * s.cap * s.head_dim, 11);
        let mut v = f(s.batch * s.heads * s.cap * s.head_dim, 13);
        let mut k16: Vec<half::f16> = k.iter().map(|&x| half::f16::from_f32(x)).collect();
        let mut v16: Vec<half::f16> = v.iter().map(|&x| half::f16::from_f32(x)).collect();
        append_kv(s, &qkv, 1, KvSliceMut::F32(&mut k));
        append_kv(s, &qkv, 2, KvSliceMut::F32(&mut v));
        append_kv(s, &qkv, 1, KvSliceMut::F16(&mut k16));
        append_kv(s, &qkv, 2, KvSliceMut::F16(&mut v16));
        let kpos: Vec<f32> = (0..s.batch * s.total())
            .map(|j| {
                let (b, p) = (j / s.total(), j % s.total());
                if b == 1 {
                    p as f32 - pad as f32
                } else {
                    p as f32
                }
            })
            .map(|p| if p < 0.0 { -1.0 } else { p })
            .collect();
        let slopes: Vec<f32> = (0..s.heads).map(|h| 0.5f32.powi(h as i32 + 1)).collect();
        let want = reference(s, &qkv, &k, &v, &kpos, &slopes, 0.35);
        let mut got = vec![0f32; want.len()];
        alibi_attention(s, &qkv, KvSlice::F32(&k), KvSlice::F32(&v), &kpos, &slopes, 0.35, &mut got);
        for (a, b) in got.iter().zip(&want) {
            // A query that sees only padding: the reference's softmax is NaN, ours zeros.
            assert!(if b.is_nan() { *a == 0.0 } else { (a - b).abs() < 1e-5 }, "{a} vs {b}");
        }
        // An f16 cache: exactly the f32 kernels on the rounded keys and values.
        let (kw, vw): (Vec<f32>, Vec<f32>) = (k16.iter().map(|x| x.to_f32()).collect(), v16.iter().map(|x| x.to_f32()).collect());
        assert!(kw.iter().zip(&k).all(|(a, b)| (a - b).abs() <= 1e-3 * b.abs().max(1.0)), "append_kv rounds to f16");
        let mut wide = vec![0f32; want.len()];
        alibi_attention(s, &qkv, KvSlice::F32(&kw), KvSlice::F32(&vw), &kpos, &slopes, 0.35, &mut wide);
        let mut half_got = vec![0f32; want.len()];
        alibi_attention(s, &qkv, KvSlice::F16(&k16), KvSlice::F16(&v16), &kpos, &slopes, 0.35, &mut half_got);
        assert_eq!(half_got, wide, "f16 cache {s:?}");
    }

    /// The AVX2 prefill tile against the plain loops, tile by tile, whatever path
    /// `alibi_attention` takes on this CPU (AVX-512 machines take their own tile there).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_tile_matches_plain_loops() {
        if !super::super::dot::has_avx2_fma() {
            return;
        }
        for (s, pad) in [
            (AttnShape { batch: 2, t: 37, heads: 2, head_dim: 64, cap: 45, past: 5 }, 20),
            (AttnShape { batch: 1, t: 21, heads: 1, head_dim: 16, cap: 21, past: 0 }, 0),
            (AttnShape { batch: 2, t: 12, heads: 2, head_dim: 32, cap: 30, past: 18 }, 25),
        ] {
            let (hd, total) = (s.heads * s.head_dim, s.total());
            let f = |n: usize, m: usize| (0..n).map(|i| (((i * m) % 97) as f32 - 48.0) / 31.0).collect::<Vec<_>>();
            let qkv = f(s.batch * s.t * 3 * hd, 7);
            let (k, v) = (f(s.batch * s.heads * s.cap * s.head_dim, 11), f(s.batch * s.heads * s.cap * s.head_dim, 13));
            let kpos: Vec<f32> = (0..s.batch * total).map(|j| if j / total == 1 { (j % total) as f32 - pad as f32 } else { (j % total) as f32 }).map(|p| p.max(-1.0)).collect();
            let slopes: Vec<f32> = (0..s.heads).map(|h| 0.5f32.powi(h as i32 + 1)).collect();
            for b in 0..s.batch {
                for h in 0..s.heads {
                    let base = (b * s.heads + h) * s.cap * s.head_dim;
                    let args = TileArgs { s, qkv: &qkv, k: &k[base..], v: &v[base..], kpos: &kpos, slopes: &slopes, scale: 0.35 };
                    for i0 in (0..s.t).step_by(QUERY_TILE).filter(|i0| s.t - i0 >= 4) {
                        let tile = Tile { b, h, i0 };
                        let (mut sc, mut qt) = (vec![0f32; QUERY_TILE * total], vec![0f32; QUERY_TILE * s.head_dim]);
                        let (mut want, mut got) = (vec![0f32; QUERY_TILE * s.head_dim], vec![0f32; QUERY_TILE * s.head_dim]);
                        attend_tile(&args, tile, &mut sc, &mut want);
                        // SAFETY: AVX2 and FMA are present (checked above); head_dim % 16 == 0.
                        unsafe { avx2::attend_tile(&args, tile, &mut sc, &mut qt, &mut got) };
                        let n = QUERY_TILE.min(s.t - i0) * s.head_dim;
                        for (x, y) in got[..n].iter().zip(&want[..n]) {
                            assert!((x - y).abs() < 1e-5, "{s:?} tile {b} {h} {i0}: {x} vs {y}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn matches_reference_with_padding_and_cache() {
        // Row 1 is left-padded by two positions.
        check(AttnShape { batch: 2, t: 3, heads: 3, head_dim: 8, cap: 9, past: 4 }, 2);
    }
}
