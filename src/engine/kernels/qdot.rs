//! Integer dot products of quantized weight rows with activations quantized to 8 bits.
//!
//! As in llama.cpp, activations are quantized per 32-value block (`d = max|x| / 127`,
//! `q = round(x / d)`) so that a weight block and an activation block multiply as integers:
//! - q8_0: `sum(w_q * x_q) * d_w * d_x`
//! - q4_0: `sum(n * x_q) * d_w * d_x - 8 * d_w * (d_x * sum(x_q))`, with `n` the 0..15 nibbles
//! - q4_1: `sum(n * x_q) * d_w * d_x + m_w * (d_x * sum(x_q))`
//! (`d_x * sum(x_q)` is computed once per activation block, when quantizing).
//!
//! The nibble form keeps the weights unsigned, which is what x86's `maddubs` (u8 x i8)
//! wants, and NEON's `sdot` takes after a shift. AVX2 (x86_64) and dot-product NEON
//! (aarch64) paths are chosen at run time; the scalar path is the reference in the tests.

use half::f16;

pub const QK: usize = 32;

/// One activation row quantized to 8 bits in blocks of 32.
#[derive(Default, Clone)]
pub struct Q8Row {
    pub q: Vec<i8>,
    /// Per block: the scale.
    pub d: Vec<f32>,
    /// Per block: `d * sum(q)`, what the offset terms of q4_0 and q4_1 multiply.
    pub ds: Vec<f32>,
    /// `d` and `ds` with each block's value repeated 8 times: the AVX-512 kernels take a
    /// pair of blocks' scales as one 16-lane load.
    pub d8: Vec<f32>,
    pub ds8: Vec<f32>,
    /// Per block: `-8 * d * sum(q)`, q4_0's offset term for the packed kernels.
    pub q4_offset: Vec<f32>,
    /// Per 16 values: `-32 * d * sum(q)`, Q6_K's offset term for the packed kernels.
    pub q6_offset: Vec<f32>,
    /// `q` offset by 128 as unsigned bytes (`q ^ 0x80`): the unsigned operand of the packed
    /// q8_0 kernel.
    pub qu: Vec<u8>,
}

impl Q8Row {
    /// Quantizes `x` (a whole number of blocks) into this row, reusing its buffers. Rounds
    /// half to even, as llama.cpp's SIMD paths do.
    pub fn quantize(&mut self, x: &[f32]) {
        #[cfg(target_arch = "x86_64")]
        {
            if avx512::available() {
                self.resize(x.len() / QK);
                // SAFETY: the AVX-512 features are present (checked above); buffers sized.
                return unsafe { avx512::quantize(self, x) };
            }
            if super::dot::has_avx2_fma() {
                // SAFETY: AVX2 and FMA are present (checked above).
                return unsafe { self.quantize_avx2(x) };
            }
        }
        self.quantize_body(x)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn quantize_avx2(&mut self, x: &[f32]) {
        self.quantize_body(x)
    }

    fn resize(&mut self, nb: usize) {
        self.q.resize(nb * QK, 0);
        self.d.resize(nb, 0.0);
        self.ds.resize(nb, 0.0);
        self.d8.resize(nb * 8, 0.0);
        self.ds8.resize(nb * 8, 0.0);
        self.q4_offset.resize(nb, 0.0);
        self.q6_offset.resize(nb * 2, 0.0);
        self.qu.resize(nb * QK, 0);
    }

    /// Stores block `b`'s scale and the sums derived from it (`halves`: the sums of its
    /// two 16-value halves of q).
    #[inline(always)]
    fn set_block(&mut self, b: usize, d: f32, halves: [i32; 2]) {
        let s = halves[0] + halves[1];
        self.d[b] = d;
        self.ds[b] = d * s as f32;
        self.d8[b * 8..b * 8 + 8].fill(d);
        self.ds8[b * 8..b * 8 + 8].fill(d * s as f32);
        self.q4_offset[b] = -8.0 * d * s as f32;
        self.q6_offset[2 * b] = -32.0 * d * halves[0] as f32;
        self.q6_offset[2 * b + 1] = -32.0 * d * halves[1] as f32;
    }

    #[inline(always)]
    fn quantize_body(&mut self, x: &[f32]) {
        self.resize(x.len() / QK);
        for (b, xs) in x.chunks_exact(QK).enumerate() {
            let amax = xs.iter().fold(0f32, |m, v| m.max(v.abs()));
            let d = amax / 127.0;
            let id = if d > 0.0 { 1.0 / d } else { 0.0 };
            let q = &mut self.q[b * QK..(b + 1) * QK];
            for (q, &v) in q.iter_mut().zip(xs) {
                *q = (v * id).round_ties_even() as i8;
            }
            let half = |h: usize| q[16 * h..16 * h + 16].iter().map(|&v| v as i32).sum::<i32>();
            let halves = [half(0), half(1)];
            for i in b * QK..(b + 1) * QK {
                self.qu[i] = self.q[i] as u8 ^ 0x80;
            }
            self.set_block(b, d, halves);
        }
    }

    pub fn blocks(&self) -> usize {
        self.d.len()
    }
}

#[inline]
#[allow(dead_code)] // the x86 path converts with F16C; scalar and NEON use this
fn f16_at(b: &[u8], i: usize) -> f32 {
    f16::from_le_bytes([b[i], b[i + 1]]).to_f32()
}

/// Dot product of a weight row in `kind` (q4_0, q4_1 or q8_0 blocks) with `x`.
#[inline]
pub fn dot(kind: QKind, w: &[u8], x: &Q8Row) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if avx512::available() {
            // SAFETY: the AVX-512 features are present (checked above); slices hold whole blocks.
            return unsafe { avx512::dot(kind, w, x) };
        }
        if avx2::has_vnni() {
            // SAFETY: AVX-VNNI (which implies AVX2) and F16C are present; slices hold whole blocks.
            return unsafe { avx2::dot_vnni(kind, w, x) };
        }
        if has_avx2_f16c() {
            // SAFETY: AVX2, FMA and F16C are present (checked above); slices hold whole blocks.
            return unsafe { avx2::dot(kind, w, x) };
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if neon::has_dotprod() {
            // SAFETY: the CPU has the dot-product extension (checked above).
            return unsafe { neon::dot(kind, w, x) };
        }
    }
    scalar_dot(kind, w, x)
}

/// One weight row against four activation rows at once (`dot` four times, with the weight
/// row read and unpacked once): the prefill kernel.
#[inline]
pub fn dot4(kind: QKind, w: &[u8], xs: [&Q8Row; 4]) -> [f32; 4] {
    #[cfg(target_arch = "x86_64")]
    {
        if avx512::available() {
            // SAFETY: as in `dot`.
            return unsafe { avx512::dot4(kind, w, xs) };
        }
        if avx2::has_vnni() {
            // SAFETY: as in `dot`.
            return unsafe { avx2::dot4_vnni(kind, w, xs) };
        }
        if has_avx2_f16c() {
            // SAFETY: as in `dot`.
            return unsafe { avx2::dot4(kind, w, xs) };
        }
    }
    xs.map(|x| dot(kind, w, x))
}

/// Two weight rows against four activation rows: `[dot4(w[0], xs), dot4(w[1], xs)]`, with
/// each activation block loaded once where the CPU has AVX-512.
#[inline]
pub fn dot4x2(kind: QKind, w: [&[u8]; 2], xs: [&Q8Row; 4]) -> [[f32; 4]; 2] {
    #[cfg(target_arch = "x86_64")]
    {
        if avx512::available() {
            // SAFETY: as in `dot`.
            return unsafe { avx512::dot4x2(kind, w, xs) };
        }
    }
    w.map(|w| dot4(kind, w, xs))
}

/// Whether this CPU has the AVX-512 VNNI kernels (here and in `packed`).
#[cfg(target_arch = "x86_64")]
pub fn avx512_available() -> bool {
    avx512::available()
}

#[cfg(target_arch = "x86_64")]
fn has_avx2_f16c() -> bool {
    use std::sync::OnceLock;
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| super::dot::has_avx2_fma() && is_x86_feature_detected!("f16c"))
}

/// The weight block types with integer kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QKind {
    Q4_0,
    Q4_1,
    Q8_0,
}

impl QKind {
    pub fn block_bytes(self) -> usize {
        match self {
            QKind::Q4_0 => 18,
            QKind::Q4_1 => 20,
            QKind::Q8_0 => 34,
        }
    }
}

/// Reference implementation (also the fallback).
pub fn scalar_dot(kind: QKind, w: &[u8], x: &Q8Row) -> f32 {
    let bb = kind.block_bytes();
    (0..x.blocks()).map(|b| scalar_block(kind, &w[b * bb..(b + 1) * bb], x, b)).sum()
}

/// One weight block `wb` against block `b` of `x`.
fn scalar_block(kind: QKind, wb: &[u8], x: &Q8Row, b: usize) -> f32 {
    let mut acc = 0f32;
    {
        let xq = &x.q[b * QK..(b + 1) * QK];
        let dx = x.d[b];
        match kind {
            QKind::Q8_0 => {
                let s: i32 = wb[2..].iter().zip(xq).map(|(&w, &x)| w as i8 as i32 * x as i32).sum();
                acc += s as f32 * f16_at(wb, 0) * dx;
            }
            QKind::Q4_0 | QKind::Q4_1 => {
                let nib = if kind == QKind::Q4_0 { &wb[2..] } else { &wb[4..] };
                let mut s = 0i32;
                for j in 0..QK / 2 {
                    s += (nib[j] & 0x0f) as i32 * xq[j] as i32 + (nib[j] >> 4) as i32 * xq[j + QK / 2] as i32;
                }
                let dw = f16_at(wb, 0);
                if kind == QKind::Q4_0 {
                    acc += s as f32 * dw * dx - 8.0 * dw * x.ds[b];
                } else {
                    acc += s as f32 * dw * dx + f16_at(wb, 2) * x.ds[b];
                }
            }
        }
    }
    acc
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! One body, compiled twice: with AVX2 `maddubs`+`madd`, and with AVX-VNNI `dpbusd`
    //! (one instruction, no 16-bit saturation) where the CPU has it.
    use super::{QKind, Q8Row, QK};
    use std::arch::x86_64::*;

    pub fn has_vnni() -> bool {
        use std::sync::OnceLock;
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| is_x86_feature_detected!("avxvnni") && is_x86_feature_detected!("f16c"))
    }

    #[inline(always)]
    unsafe fn hsum(v: __m256) -> f32 {
        let lo = _mm256_castps256_ps128(v);
        let hi = _mm256_extractf128_ps(v, 1);
        let s = _mm_add_ps(lo, hi);
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }

    /// An f16 at `p` as f32, in hardware (F16C).
    #[inline(always)]
    unsafe fn f16_at(p: *const u8) -> f32 {
        let bits = u16::from_le_bytes([*p, *p.add(1)]);
        _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32)))
    }

    /// 16 bytes of nibbles -> 32 bytes 0..15: low nibbles (values 0..16) then high.
    #[inline(always)]
    unsafe fn unpack_nibbles(p: *const u8) -> __m256i {
        let b = _mm_loadu_si128(p as *const __m128i);
        let lo = _mm_and_si128(b, _mm_set1_epi8(0x0f));
        let hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0f));
        _mm256_set_m128i(hi, lo)
    }

    /// u8 x i8 products summed into 8 i32 lanes, as f32.
    #[inline(always)]
    unsafe fn dot_u8_i8<const VNNI: bool>(u: __m256i, s: __m256i) -> __m256 {
        if VNNI {
            _mm256_cvtepi32_ps(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s))
        } else {
            let p16 = _mm256_maddubs_epi16(u, s);
            _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)))
        }
    }

    /// The weight block at `wb` as 32 unsigned bytes (nibbles, or |w| for q8_0), with its
    /// scale and offset (q4_1's m; 0 otherwise).
    #[inline(always)]
    unsafe fn load_block(kind: QKind, wb: *const u8) -> (__m256i, f32, f32) {
        match kind {
            QKind::Q8_0 => {
                let wv = _mm256_loadu_si256(wb.add(2) as *const __m256i);
                (wv, f16_at(wb), 0.0)
            }
            QKind::Q4_0 => (unpack_nibbles(wb.add(2)), f16_at(wb), 0.0),
            QKind::Q4_1 => (unpack_nibbles(wb.add(4)), f16_at(wb), f16_at(wb.add(2))),
        }
    }

    /// Accumulates one block product: `w` from load_block, `xv` the activation bytes.
    #[inline(always)]
    unsafe fn block<const VNNI: bool>(kind: QKind, w: __m256i, dw: f32, mw: f32, xv: __m256i, dx: f32, ds: f32, acc: &mut __m256, corr: &mut f32) {
        match kind {
            QKind::Q8_0 => {
                // |w| x sign(x, w): the unsigned operand must be the first.
                let aw = _mm256_sign_epi8(w, w);
                let sxv = _mm256_sign_epi8(xv, w);
                *acc = _mm256_fmadd_ps(dot_u8_i8::<VNNI>(aw, sxv), _mm256_set1_ps(dw * dx), *acc);
            }
            QKind::Q4_0 => {
                *acc = _mm256_fmadd_ps(dot_u8_i8::<VNNI>(w, xv), _mm256_set1_ps(dw * dx), *acc);
                *corr -= 8.0 * dw * ds;
            }
            QKind::Q4_1 => {
                *acc = _mm256_fmadd_ps(dot_u8_i8::<VNNI>(w, xv), _mm256_set1_ps(dw * dx), *acc);
                *corr += mw * ds;
            }
        }
    }

    #[inline(always)]
    unsafe fn dot_body<const VNNI: bool>(kind: QKind, w: &[u8], x: &Q8Row) -> f32 {
        let bb = kind.block_bytes();
        let nb = x.blocks();
        debug_assert!(w.len() >= nb * bb && x.q.len() >= nb * QK);
        let (wp, xp) = (w.as_ptr(), x.q.as_ptr());
        let mut acc = _mm256_setzero_ps();
        let mut corr = 0f32;
        for b in 0..nb {
            let (wv, dw, mw) = load_block(kind, wp.add(b * bb));
            let xv = _mm256_loadu_si256(xp.add(b * QK) as *const __m256i);
            block::<VNNI>(kind, wv, dw, mw, xv, *x.d.get_unchecked(b), *x.ds.get_unchecked(b), &mut acc, &mut corr);
        }
        hsum(acc) + corr
    }

    /// One weight row against four activation rows: each weight block is loaded and
    /// unpacked once for all four.
    #[inline(always)]
    unsafe fn dot4_body<const VNNI: bool>(kind: QKind, w: &[u8], xs: [&Q8Row; 4]) -> [f32; 4] {
        let bb = kind.block_bytes();
        let nb = xs[0].blocks();
        let wp = w.as_ptr();
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut corr = [0f32; 4];
        for b in 0..nb {
            let (wv, dw, mw) = load_block(kind, wp.add(b * bb));
            for r in 0..4 {
                let x = xs[r];
                let xv = _mm256_loadu_si256(x.q.as_ptr().add(b * QK) as *const __m256i);
                block::<VNNI>(kind, wv, dw, mw, xv, *x.d.get_unchecked(b), *x.ds.get_unchecked(b), &mut acc[r], &mut corr[r]);
            }
        }
        [hsum(acc[0]) + corr[0], hsum(acc[1]) + corr[1], hsum(acc[2]) + corr[2], hsum(acc[3]) + corr[3]]
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn dot(kind: QKind, w: &[u8], x: &Q8Row) -> f32 {
        dot_body::<false>(kind, w, x)
    }

    #[target_feature(enable = "avx2,fma,f16c,avxvnni")]
    pub unsafe fn dot_vnni(kind: QKind, w: &[u8], x: &Q8Row) -> f32 {
        dot_body::<true>(kind, w, x)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn dot4(kind: QKind, w: &[u8], xs: [&Q8Row; 4]) -> [f32; 4] {
        dot4_body::<false>(kind, w, xs)
    }

    #[target_feature(enable = "avx2,fma,f16c,avxvnni")]
    pub unsafe fn dot4_vnni(kind: QKind, w: &[u8], xs: [&Q8Row; 4]) -> [f32; 4] {
        dot4_body::<true>(kind, w, xs)
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    //! AVX-512 with VNNI: two 32-value blocks per 512-bit `dpbusd`.
    use super::{QKind, Q8Row, QK};
    use std::arch::x86_64::*;

    pub fn available() -> bool {
        use std::sync::OnceLock;
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| {
            is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512vl")
                && is_x86_feature_detected!("avx512dq")
                && is_x86_feature_detected!("avx512vnni")
                && is_x86_feature_detected!("f16c")
                && is_x86_feature_detected!("fma")
        })
    }

    #[inline(always)]
    unsafe fn f16_at(p: *const u8) -> f32 {
        let bits = u16::from_le_bytes([*p, *p.add(1)]);
        _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32)))
    }

    /// `Q8Row::quantize` (buffers already sized): one 16-value half per register, rounding
    /// half to even (the default rounding mode), saturating conversion to i8.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma,avx2")]
    pub unsafe fn quantize(row: &mut Q8Row, x: &[f32]) {
        let nb = x.len() / QK;
        for b in 0..nb {
            let p = x.as_ptr().add(b * QK);
            let v = [_mm512_loadu_ps(p), _mm512_loadu_ps(p.add(16))];
            let amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v[0]), _mm512_abs_ps(v[1])));
            let d = amax / 127.0;
            let id = _mm512_set1_ps(if d > 0.0 { 1.0 / d } else { 0.0 });
            let mut halves = [0i32; 2];
            for h in 0..2 {
                let q = _mm512_cvtps_epi32(_mm512_mul_ps(v[h], id));
                halves[h] = _mm512_reduce_add_epi32(q);
                let bytes = _mm512_cvtsepi32_epi8(q);
                _mm_storeu_si128(row.q.as_mut_ptr().add(b * QK + 16 * h) as *mut __m128i, bytes);
                _mm_storeu_si128(row.qu.as_mut_ptr().add(b * QK + 16 * h) as *mut __m128i, _mm_xor_si128(bytes, _mm_set1_epi8(-128)));
            }
            row.set_block(b, d, halves);
        }
    }

    /// Two blocks' values as 16 lanes (8 each).
    #[inline(always)]
    unsafe fn lanes2(v: [f32; 2]) -> __m512 {
        _mm512_insertf32x8(_mm512_set1_ps(v[0]), _mm256_set1_ps(v[1]), 1)
    }

    /// Weight blocks `b` and `b + 1` (at `wb`) as 64 unsigned bytes in activation order,
    /// their scales and offsets, and (q8_0) the mask of negative weights.
    #[inline(always)]
    unsafe fn load2(kind: QKind, wb: *const u8) -> (__m512i, [f32; 2], [f32; 2], __mmask64) {
        let bb = kind.block_bytes();
        match kind {
            QKind::Q8_0 => {
                let w0 = _mm256_loadu_si256(wb.add(2) as *const __m256i);
                let w1 = _mm256_loadu_si256(wb.add(bb + 2) as *const __m256i);
                let z = _mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1);
                (_mm512_abs_epi8(z), [f16_at(wb), f16_at(wb.add(bb))], [0.0; 2], _mm512_movepi8_mask(z))
            }
            QKind::Q4_0 | QKind::Q4_1 => {
                let off = if kind == QKind::Q4_0 { 2 } else { 4 };
                let q0 = _mm_loadu_si128(wb.add(off) as *const __m128i);
                let q1 = _mm_loadu_si128(wb.add(bb + off) as *const __m128i);
                let v = _mm256_set_m128i(q1, q0);
                let lo = _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
                let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f));
                // [q0 lo, q1 lo, q0 hi, q1 hi] -> [q0 lo, q0 hi, q1 lo, q1 hi]
                let z = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
                let z = _mm512_shuffle_i64x2(z, z, 0b11_01_10_00);
                let m = if kind == QKind::Q4_1 { [f16_at(wb.add(2)), f16_at(wb.add(bb + 2))] } else { [0.0; 2] };
                (z, [f16_at(wb), f16_at(wb.add(bb))], m, 0)
            }
        }
    }

    /// Accumulates blocks `b`, `b + 1` of `x` against the loaded weight pair (`dwv`, `mwv`:
    /// its scales and offsets as lanes). The offset terms go to `corr` lane-wise; see
    /// [`finish`].
    #[inline(always)]
    unsafe fn pair(kind: QKind, w: __m512i, dwv: __m512, mwv: __m512, neg: __mmask64, x: &Q8Row, b: usize, acc: &mut __m512, corr: &mut __m512) {
        let xv = _mm512_loadu_si512(x.q.as_ptr().add(b * QK) as *const __m512i);
        let dxv = _mm512_loadu_ps(x.d8.as_ptr().add(b * 8));
        let dsv = if kind == QKind::Q8_0 { _mm512_setzero_ps() } else { _mm512_loadu_ps(x.ds8.as_ptr().add(b * 8)) };
        pair_x(kind, w, dwv, mwv, neg, xv, dxv, dsv, acc, corr);
    }

    /// `pair` with the activation pair already loaded: its bytes, scales and `d * sum(q)` as
    /// lanes.
    #[inline(always)]
    unsafe fn pair_x(kind: QKind, w: __m512i, dwv: __m512, mwv: __m512, neg: __mmask64, xv: __m512i, dxv: __m512, dsv: __m512, acc: &mut __m512, corr: &mut __m512) {
        let xv = if kind == QKind::Q8_0 { _mm512_mask_sub_epi8(xv, neg, _mm512_setzero_si512(), xv) } else { xv };
        let prod = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w, xv));
        *acc = _mm512_fmadd_ps(prod, _mm512_mul_ps(dwv, dxv), *acc);
        match kind {
            QKind::Q8_0 => {}
            QKind::Q4_0 => *corr = _mm512_fmadd_ps(dwv, dsv, *corr),
            QKind::Q4_1 => *corr = _mm512_fmadd_ps(mwv, dsv, *corr),
        }
    }

    /// The dot product from the accumulators: each block's offset term sits in 8 lanes, so
    /// the lane sum is 8 times it (q4_0: `-8 dw ds` per block; q4_1: `m ds`).
    #[inline(always)]
    unsafe fn finish(kind: QKind, acc: __m512, corr: __m512) -> f32 {
        let c = match kind {
            QKind::Q8_0 => 0.0,
            QKind::Q4_0 => -_mm512_reduce_add_ps(corr),
            QKind::Q4_1 => _mm512_reduce_add_ps(corr) / 8.0,
        };
        _mm512_reduce_add_ps(acc) + c
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma,avx2")]
    pub unsafe fn dot(kind: QKind, w: &[u8], x: &Q8Row) -> f32 {
        let bb = kind.block_bytes();
        let nb = x.blocks();
        let mut acc = _mm512_setzero_ps();
        let mut corr = _mm512_setzero_ps();
        let mut b = 0;
        while b + 2 <= nb {
            let (wv, dw, mw, neg) = load2(kind, w.as_ptr().add(b * bb));
            pair(kind, wv, lanes2(dw), lanes2(mw), neg, x, b, &mut acc, &mut corr);
            b += 2;
        }
        let tail = if b < nb { super::scalar_block(kind, &w[b * bb..(b + 1) * bb], x, b) } else { 0.0 };
        finish(kind, acc, corr) + tail
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma,avx2")]
    pub unsafe fn dot4(kind: QKind, w: &[u8], xs: [&Q8Row; 4]) -> [f32; 4] {
        let bb = kind.block_bytes();
        let nb = xs[0].blocks();
        let mut acc = [_mm512_setzero_ps(); 4];
        let mut corr = [_mm512_setzero_ps(); 4];
        let mut b = 0;
        while b + 2 <= nb {
            let (wv, dw, mw, neg) = load2(kind, w.as_ptr().add(b * bb));
            let (dwv, mwv) = (lanes2(dw), lanes2(mw));
            for r in 0..4 {
                pair(kind, wv, dwv, mwv, neg, xs[r], b, &mut acc[r], &mut corr[r]);
            }
            b += 2;
        }
        let mut out = [0f32; 4];
        for r in 0..4 {
            let tail = if b < nb { super::scalar_block(kind, &w[b * bb..(b + 1) * bb], xs[r], b) } else { 0.0 };
            out[r] = finish(kind, acc[r], corr[r]) + tail;
        }
        out
    }

    /// Two weight rows against four activation rows: each activation pair is loaded once
    /// for both weight rows (the prefill and batch tile).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma,avx2")]
    pub unsafe fn dot4x2(kind: QKind, w: [&[u8]; 2], xs: [&Q8Row; 4]) -> [[f32; 4]; 2] {
        let bb = kind.block_bytes();
        let nb = xs[0].blocks();
        let mut acc = [[_mm512_setzero_ps(); 4]; 2];
        let mut corr = [[_mm512_setzero_ps(); 4]; 2];
        let mut b = 0;
        while b + 2 <= nb {
            let (wv0, dw0, mw0, neg0) = load2(kind, w[0].as_ptr().add(b * bb));
            let (wv1, dw1, mw1, neg1) = load2(kind, w[1].as_ptr().add(b * bb));
            let (dwv0, mwv0, dwv1, mwv1) = (lanes2(dw0), lanes2(mw0), lanes2(dw1), lanes2(mw1));
            for r in 0..4 {
                let x = xs[r];
                let xv = _mm512_loadu_si512(x.q.as_ptr().add(b * QK) as *const __m512i);
                let dxv = _mm512_loadu_ps(x.d8.as_ptr().add(b * 8));
                let dsv = if kind == QKind::Q8_0 { _mm512_setzero_ps() } else { _mm512_loadu_ps(x.ds8.as_ptr().add(b * 8)) };
                pair_x(kind, wv0, dwv0, mwv0, neg0, xv, dxv, dsv, &mut acc[0][r], &mut corr[0][r]);
                pair_x(kind, wv1, dwv1, mwv1, neg1, xv, dxv, dsv, &mut acc[1][r], &mut corr[1][r]);
            }
            b += 2;
        }
        let mut out = [[0f32; 4]; 2];
        for j in 0..2 {
            for r in 0..4 {
                let tail = if b < nb { super::scalar_block(kind, &w[j][b * bb..(b + 1) * bb], xs[r], b) } else { 0.0 };
                out[j][r] = finish(kind, acc[j][r], corr[j][r]) + tail;
            }
        }
        out
    }
}

#[cfg(target_arch = "aarch64")]
mod neon {
    use super::{f16_at, QKind, Q8Row, QK};
    use std::arch::aarch64::*;

    pub fn has_dotprod() -> bool {
        use std::sync::OnceLock;
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| std::arch::is_aarch64_feature_detected!("dotprod"))
    }

    /// `sdot` through inline assembly: stable Rust has no intrinsic for it yet.
    #[inline]
    #[target_feature(enable = "neon,dotprod")]
    unsafe fn sdot(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
        let mut r = acc;
        std::arch::asm!("sdot {r:v}.4s, {a:v}.16b, {b:v}.16b", r = inout(vreg) r, a = in(vreg) a, b = in(vreg) b, options(pure, nomem, nostack));
        r
    }

    #[target_feature(enable = "neon,dotprod")]
    pub unsafe fn dot(kind: QKind, w: &[u8], x: &Q8Row) -> f32 {
        let bb = kind.block_bytes();
        let nb = x.blocks();
        let wp = w.as_ptr();
        let xp = x.q.as_ptr();
        let mut acc = vdupq_n_f32(0.0);
        let mut corr = 0f32;
        for b in 0..nb {
            let wb = wp.add(b * bb);
            let x0 = vld1q_s8(xp.add(b * QK));
            let x1 = vld1q_s8(xp.add(b * QK + 16));
            let dx = *x.d.get_unchecked(b);
            let hdr = std::slice::from_raw_parts(wb, 4);
            let dw = f16_at(hdr, 0);
            let zero = vdupq_n_s32(0);
            let s = match kind {
                QKind::Q8_0 => {
                    let w0 = vld1q_s8(wb.add(2) as *const i8);
                    let w1 = vld1q_s8(wb.add(18) as *const i8);
                    sdot(sdot(zero, w0, x0), w1, x1)
                }
                QKind::Q4_0 | QKind::Q4_1 => {
                    let nib = vld1q_u8(wb.add(if kind == QKind::Q4_0 { 2 } else { 4 }));
                    let lo = vreinterpretq_s8_u8(vandq_u8(nib, vdupq_n_u8(0x0f)));
                    let hi = vreinterpretq_s8_u8(vshrq_n_u8(nib, 4));
                    sdot(sdot(zero, lo, x0), hi, x1)
                }
            };
            let sf = vcvtq_f32_s32(s);
            acc = vfmaq_n_f32(acc, sf, dw * dx);
            match kind {
                QKind::Q8_0 => {}
                QKind::Q4_0 => corr -= 8.0 * dw * *x.ds.get_unchecked(b),
                QKind::Q4_1 => corr += f16_at(hdr, 2) * *x.ds.get_unchecked(b),
            }
        }
        vaddvq_f32(acc) + corr
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::GgmlType;
    use crate::quant::{dequantize_row, quantize_row};

    #[test]
    fn quantize_paths_agree() {
        let x: Vec<f32> = (0..256).map(|i| ((i * 53 % 97) as f32 - 48.0) / 5.0 + if i < 32 { 0.0 } else { 0.013 }).collect();
        let mut plain = Q8Row::default();
        plain.quantize_body(&x);
        let mut fast = Q8Row::default();
        fast.quantize(&x);
        assert_eq!(plain.q, fast.q);
        assert_eq!(plain.d, fast.d);
        assert_eq!(plain.q6_offset, fast.q6_offset);
        assert_eq!(plain.q4_offset, fast.q4_offset);
        assert_eq!(plain.qu, fast.qu);
        // All zeros: scale 0, no NaN.
        fast.quantize(&[0.0; 64]);
        assert!(fast.q.iter().all(|&q| q == 0) && fast.d.iter().all(|&d| d == 0.0));
    }

    #[test]
    fn simd_matches_scalar_and_dequantized_reference() {
        for k in [256, 96] {
            check_all_paths(k);
        }
    }

    fn check_all_paths(k: usize) {
        let w: Vec<f32> = (0..k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 13.0).collect();
        let x: Vec<f32> = (0..k).map(|i| ((i * 11 % 53) as f32 - 26.0) / 7.0).collect();
        let mut xq = Q8Row::default();
        xq.quantize(&x);
        // x as the kernels see it (8-bit), to check the integer arithmetic exactly.
        let xd: Vec<f32> = (0..k).map(|i| xq.q[i] as f32 * xq.d[i / QK]).collect();
        for (gt, kind) in [(GgmlType::Q8_0, QKind::Q8_0), (GgmlType::Q4_0, QKind::Q4_0), (GgmlType::Q4_1, QKind::Q4_1)] {
            let mut bytes = Vec::new();
            quantize_row(gt, &w, &mut bytes).unwrap();
            let mut wd = vec![0f32; k];
            dequantize_row(gt, &bytes, &mut wd).unwrap();
            let want: f64 = wd.iter().zip(&xd).map(|(a, b)| *a as f64 * *b as f64).sum();
            let s = scalar_dot(kind, &bytes, &xq) as f64;
            let f = dot(kind, &bytes, &xq) as f64;
            let tol = 1e-3 * (1.0 + want.abs());
            assert!((s - want).abs() < tol, "{kind:?} scalar {s} vs {want}");
            assert!((f - want).abs() < tol, "{kind:?} simd {f} vs {want}");
            for v in dot4(kind, &bytes, [&xq, &xq, &xq, &xq]) {
                assert!((v as f64 - want).abs() < tol, "{kind:?} dot4 {v} vs {want}");
            }
            for v in dot4x2(kind, [&bytes, &bytes], [&xq, &xq, &xq, &xq]).into_iter().flatten() {
                assert!((v as f64 - want).abs() < tol, "{kind:?} dot4x2 {v} vs {want}");
            }
            // Every x86 path this CPU can run, whatever `dot` picks.
            #[cfg(target_arch = "x86_64")]
            {
                let mut paths: Vec<(&str, f64)> = Vec::new();
                if has_avx2_f16c() {
                    paths.push(("avx2", unsafe { avx2::dot(kind, &bytes, &xq) } as f64));
                    paths.push(("avx2 x4", unsafe { avx2::dot4(kind, &bytes, [&xq, &xq, &xq, &xq]) }[3] as f64));
                }
                if avx2::has_vnni() {
                    paths.push(("vnni", unsafe { avx2::dot_vnni(kind, &bytes, &xq) } as f64));
                }
                if avx512::available() {
                    paths.push(("avx512", unsafe { avx512::dot(kind, &bytes, &xq) } as f64));
                    paths.push(("avx512 x4", unsafe { avx512::dot4(kind, &bytes, [&xq, &xq, &xq, &xq]) }[2] as f64));
                }
                for (name, g) in paths {
                    assert!((g - want).abs() < tol, "{kind:?} {name} {g} vs {want}");
                }
            }
        }
    }
}
