//! f32 dot products, compiled twice: for the baseline target and, on x86_64, with AVX2+FMA,
//! chosen once at run time. Eight independent accumulators let the compiler vectorize
//! without reassociating a single sum (which it may not do for floats).

/// `sum_i a[i] * b[i]`; `a` and `b` have the same length.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2_fma() {
            // SAFETY: the CPU supports AVX2 and FMA (checked above).
            return unsafe { dot_avx2(a, b) };
        }
    }
    dot_portable(a, b)
}

/// `dot` inlined into the caller, vectorized for the caller's target features (for
/// kernels that are themselves compiled per feature set, with short vectors).
#[inline(always)]
pub fn dot_inline(a: &[f32], b: &[f32]) -> f32 {
    dot_body(a, b, true)
}

/// `out[j] = dot(x, rows[j])` for several rows of length `x.len()` packed in `rows`.
#[inline]
pub fn dot_rows(x: &[f32], rows: &[f32], out: &mut [f32]) {
    let k = x.len();
    for (o, row) in out.iter_mut().zip(rows.chunks_exact(k)) {
        *o = dot(x, row);
    }
}

/// `sum_i f16(w[i]) * x[i]` for a row of little-endian f16 values (`w.len() == 2 * x.len()`).
#[inline]
pub fn dot_f16(w: &[u8], x: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if has_f16c() {
            // SAFETY: AVX2, FMA and F16C are present (checked above).
            return unsafe { dot_f16_avx2(w, x) };
        }
    }
    w.chunks_exact(2).zip(x).map(|(b, &x)| half::f16::from_le_bytes([b[0], b[1]]).to_f32() * x).sum()
}

/// Converts little-endian f16 values to f32 (`src.len() == 2 * dst.len()`).
#[inline]
pub fn f16_to_f32(src: &[u8], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_f16c() {
            // SAFETY: F16C is present (checked above).
            return unsafe { f16_to_f32_f16c(src, dst) };
        }
    }
    for (o, b) in dst.iter_mut().zip(src.chunks_exact(2)) {
        *o = half::f16::from_le_bytes([b[0], b[1]]).to_f32();
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn has_f16c() -> bool {
    use std::sync::OnceLock;
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| has_avx2_fma() && is_x86_feature_detected!("f16c"))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_f16_avx2(w: &[u8], x: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    let n = x.len().min(w.len() / 2);
    let (wp, xp) = (w.as_ptr(), x.as_ptr());
    let mut acc0 = _mm256_setzero_ps();
    let mut acc1 = _mm256_setzero_ps();
    let mut i = 0;
    while i + 16 <= n {
        let w0 = _mm256_cvtph_ps(_mm_loadu_si128(wp.add(2 * i) as *const __m128i));
        let w1 = _mm256_cvtph_ps(_mm_loadu_si128(wp.add(2 * i + 16) as *const __m128i));
        acc0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xp.add(i)), acc0);
        acc1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xp.add(i + 8)), acc1);
        i += 16;
    }
    let acc = _mm256_add_ps(acc0, acc1);
    let mut lanes = [0f32; 8];
    _mm256_storeu_ps(lanes.as_mut_ptr(), acc);
    let mut s = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    while i < n {
        s += half::f16::from_le_bytes([w[2 * i], w[2 * i + 1]]).to_f32() * x[i];
        i += 1;
    }
    s
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
unsafe fn f16_to_f32_f16c(src: &[u8], dst: &mut [f32]) {
    use std::arch::x86_64::*;
    let n = dst.len().min(src.len() / 2);
    let mut i = 0;
    while i + 8 <= n {
        let v = _mm256_cvtph_ps(_mm_loadu_si128(src.as_ptr().add(2 * i) as *const __m128i));
        _mm256_storeu_ps(dst.as_mut_ptr().add(i), v);
        i += 8;
    }
    while i < n {
        dst[i] = half::f16::from_le_bytes([src[2 * i], src[2 * i + 1]]).to_f32();
        i += 1;
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
pub fn has_avx2_fma() -> bool {
    use std::sync::OnceLock;
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
}

#[inline(always)]
fn dot_body(a: &[f32], b: &[f32], fma: bool) -> f32 {
    const L: usize = 16;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; L];
    let mut ca = a.chunks_exact(L);
    let mut cb = b.chunks_exact(L);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for i in 0..L {
            acc[i] = if fma { x[i].mul_add(y[i], acc[i]) } else { acc[i] + x[i] * y[i] };
        }
    }
    let mut tail = 0f32;
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        tail += x * y;
    }
    let mut s = [0f32; 8];
    for i in 0..8 {
        s[i] = acc[i] + acc[i + 8];
    }
    ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7])) + tail
}

fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    dot_body(a, b, false)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot_body(a, b, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_paths_match_scalar() {
        let x: Vec<f32> = (0..67).map(|i| (i as f32 * 0.3).sin()).collect();
        let w: Vec<u8> = (0..67).flat_map(|i| half::f16::from_f32((i as f32 * 0.7).cos()).to_le_bytes()).collect();
        let want: f32 = w.chunks(2).zip(&x).map(|(b, x)| half::f16::from_le_bytes([b[0], b[1]]).to_f32() * x).sum();
        assert!((dot_f16(&w, &x) - want).abs() < 1e-4);
        let mut out = vec![0f32; 67];
        f16_to_f32(&w, &mut out);
        for (o, b) in out.iter().zip(w.chunks(2)) {
            assert_eq!(*o, half::f16::from_le_bytes([b[0], b[1]]).to_f32());
        }
    }

    #[test]
    fn matches_f64_reference() {
        for n in [0usize, 1, 7, 16, 33, 1024, 1031] {
            let a: Vec<f32> = (0..n).map(|i| ((i * 13 % 17) as f32 - 8.0) * 0.37).collect();
            let b: Vec<f32> = (0..n).map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.21).collect();
            let want: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
            let got = dot(&a, &b) as f64;
            assert!((got - want).abs() <= 1e-4 * (1.0 + want.abs()), "n={n}: {got} vs {want}");
            assert!((dot_portable(&a, &b) as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()));
        }
    }
}
