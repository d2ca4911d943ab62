//! Integer dot product of a Q6_K weight row with an activation row quantized to 8 bits.
//!
//! Q6_K is what the tied LM head (250880 x 1024, half the weights) is stored in next to
//! 4-bit layers, as llama.cpp does: decoding it to f32 row by row made decoding twice as
//! slow as a q4_0 head. Here each 32-value activation block meets the matching 32 weights
//! as integers: `sum_j d * sc[j] * dx * sum_16((q - 32) * x_q)` over the two 16-value
//! sub-blocks `j` of the block, with `q` the unsigned 6-bit values.
//!
//! Block layout (ggml's `block_q6_K`, 256 values, 210 bytes): `ql[128]` (low 4 bits),
//! `qh[64]` (high 2 bits), `scales[16]` (i8, one per 16 values), `d` (f16). Within each half
//! of 128 values, value `32 g + l` (g < 4, l < 32) takes its low bits from
//! `ql[64 h + l + 32 (g & 1)]` (low nibble for g < 2, high for g >= 2) and its high bits from
//! bits `2 g, 2 g + 1` of `qh[32 h + l]`; its scale is `scales[(128 h + 32 g + l) / 16]`.

use super::qdot::{Q8Row, QK};
use half::f16;

pub const QK_K: usize = 256;
pub const BLOCK_BYTES: usize = 210;

/// The 32 unsigned 6-bit values of activation block `g` (0..4) of half `h` of a superblock.
#[inline(always)]
pub(crate) fn values(sb: &[u8], h: usize, g: usize) -> [u8; 32] {
    let ql = &sb[64 * h + 32 * (g & 1)..][..32];
    let qh = &sb[128 + 32 * h..][..32];
    let shift = if g >= 2 { 4 } else { 0 };
    std::array::from_fn(|l| ((ql[l] >> shift) & 0x0f) | (((qh[l] >> (2 * g)) & 3) << 4))
}

/// Reference implementation (also the fallback off x86).
pub fn scalar_dot(w: &[u8], x: &Q8Row) -> f32 {
    let mut total = 0f32;
    for (s, sb) in w.chunks_exact(BLOCK_BYTES).enumerate() {
        let d = f16::from_le_bytes([sb[208], sb[209]]).to_f32();
        for h in 0..2 {
            for g in 0..4 {
                let b = s * (QK_K / QK) + 4 * h + g;
                let q = values(sb, h, g);
                let xq = &x.q[b * QK..(b + 1) * QK];
                let mut acc = 0i32;
                for half in 0..2 {
                    let sc = sb[192 + 8 * h + 2 * g + half] as i8 as i32;
                    let part: i32 = (0..16).map(|i| (q[16 * half + i] as i32 - 32) * xq[16 * half + i] as i32).sum();
                    acc += sc * part;
                }
                total += d * x.d[b] * acc as f32;
            }
        }
    }
    total
}

/// Dot product of a Q6_K row (whole superblocks) with `x` (as many 32-value blocks).
#[inline]
pub fn dot(w: &[u8], x: &Q8Row) -> f32 {
    debug_assert_eq!(w.len() / BLOCK_BYTES * (QK_K / QK), x.blocks());
    #[cfg(target_arch = "x86_64")]
    {
        if avx2::available() {
            // SAFETY: AVX2, FMA and F16C are present (checked above); `w` holds whole
            // superblocks and `x` the matching number of blocks.
            return unsafe { avx2::dot_n(w, [x]) }[0];
        }
    }
    scalar_dot(w, x)
}

/// One Q6_K row against four activation rows, the weights unpacked once (batches, prefill).
#[inline]
pub fn dot4(w: &[u8], xs: [&Q8Row; 4]) -> [f32; 4] {
    #[cfg(target_arch = "x86_64")]
    {
        if avx2::available() {
            // SAFETY: as in `dot`.
            return unsafe { avx2::dot_n(w, xs) };
        }
    }
    xs.map(|x| scalar_dot(w, x))
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Q8Row, BLOCK_BYTES, QK, QK_K};
    use std::arch::x86_64::*;

    pub fn available() -> bool {
        use std::sync::OnceLock;
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| super::super::dot::has_avx2_fma() && is_x86_feature_detected!("f16c"))
    }

    #[inline(always)]
    unsafe fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)))
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn dot_n<const N: usize>(w: &[u8], xs: [&Q8Row; N]) -> [f32; N] {
        let m4 = _mm256_set1_epi8(0x0f);
        let m3 = _mm256_set1_epi8(3);
        let m32 = _mm256_set1_epi8(32);
        let mut acc = [_mm256_setzero_ps(); N];
        for (s, sb) in w.chunks_exact(BLOCK_BYTES).enumerate() {
            let p = sb.as_ptr();
            let bits = u16::from_le_bytes([sb[208], sb[209]]);
            let d = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32)));
            for h in 0..2 {
                let qh = _mm256_loadu_si256(p.add(128 + 32 * h) as *const __m256i);
                let ql0 = _mm256_loadu_si256(p.add(64 * h) as *const __m256i);
                let ql1 = _mm256_loadu_si256(p.add(64 * h + 32) as *const __m256i);
                let lows = [
                    _mm256_and_si256(ql0, m4),
                    _mm256_and_si256(ql1, m4),
                    _mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                    _mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                ];
                let highs = [
                    qh,
                    _mm256_srli_epi16(qh, 2),
                    _mm256_srli_epi16(qh, 4),
                    _mm256_srli_epi16(qh, 6),
                ];
                for g in 0..4 {
                    let b = s * (QK_K / QK) + 4 * h + g;
                    let q = _mm256_or_si256(lows[g], _mm256_slli_epi16(_mm256_and_si256(highs[g], m3), 4));
                    // The low 128 bits hold values 0..16 (scale 2g), the high 16..32 (2g + 1).
                    let sc = sb.as_ptr().add(192 + 8 * h + 2 * g) as *const i8;
                    let scales = _mm256_set_m128i(_mm_set1_epi16(*sc.add(1) as i16), _mm_set1_epi16(*sc as i16));
                    for (acc, x) in acc.iter_mut().zip(xs) {
                        let xv = _mm256_loadu_si256(x.q.as_ptr().add(b * QK) as *const __m256i);
                        // (q - 32) x as q x - 32 x: maddubs wants the unsigned operand first;
                        // pair sums stay within i16 (63 * 127 * 2 and 32 * 128 * 2).
                        let p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(q, xv), _mm256_maddubs_epi16(m32, xv));
                        let p32 = _mm256_madd_epi16(p16, scales);
                        *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p32), _mm256_set1_ps(d * *x.d.get_unchecked(b)), *acc);
                    }
                }
            }
        }
        acc.map(|a| hsum(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::GgmlType;
    use crate::quant::{dequantize_row, quantize_row};

    #[test]
    fn simd_and_scalar_match_the_dequantized_reference() {
        let k = 512;
        for seed in 0..4u32 {
            let w: Vec<f32> = (0..k).map(|i| (((i as u32).wrapping_mul(2654435761u32) ^ seed) % 1000) as f32 / 250.0 - 2.0).collect();
            let xf: Vec<f32> = (0..k).map(|i| ((i * 37 + seed as usize * 11) % 101) as f32 / 30.0 - 1.7).collect();
            let mut bytes = Vec::new();
            quantize_row(GgmlType::Q6_K, &w, &mut bytes).unwrap();
            let mut wd = vec![0f32; k];
            dequantize_row(GgmlType::Q6_K, &bytes, &mut wd).unwrap();
            let mut x = Q8Row::default();
            x.quantize(&xf);
            let want: f32 = (0..k).map(|i| wd[i] * x.q[i] as f32 * x.d[i / QK]).sum();
            let scalar = scalar_dot(&bytes, &x);
            let fast = dot(&bytes, &x);
            let tol = 1e-4 * (1.0 + want.abs()) * 10.0;
            assert!((scalar - want).abs() <= tol, "scalar {scalar} vs {want}");
            assert!((fast - want).abs() <= tol, "simd {fast} vs {want}");
            for v in dot4(&bytes, [&x, &x, &x, &x]) {
                assert!((v - fast).abs() <= 1e-6 * (1.0 + fast.abs()), "dot4 {v} vs {fast}");
            }
        }
    }
}
