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

/// `out[j] = dot(x, rows[j])` for several rows of length `x.len()` packed in `rows`.
#[inline]
pub fn dot_rows(x: &[f32], rows: &[f32], out: &mut [f32]) {
    let k = x.len();
    for (o, row) in out.iter_mut().zip(rows.chunks_exact(k)) {
        *o = dot(x, row);
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
