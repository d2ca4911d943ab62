//! LayerNorm over the last dimension, computed like PyTorch: mean, then the biased
//! variance of the centred values, in f32.

/// Normalizes each row of `x` (rows of `gamma.len()` values) into `out`.
pub fn layer_norm_rows(x: &[f32], gamma: &[f32], beta: &[f32], eps: f32, out: &mut [f32]) {
    let n = gamma.len();
    for (row, o) in x.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
        let mean = row.iter().sum::<f32>() / n as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for i in 0..n {
            o[i] = (row[i] - mean) * inv * gamma[i] + beta[i];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_to_gain_and_bias() {
        let x = [1.0f32, 2.0, 3.0, 4.0, 10.0, 10.0, 10.0, 10.0];
        let mut out = [0f32; 8];
        layer_norm_rows(&x, &[1.0; 4], &[0.5; 4], 1e-5, &mut out);
        let first: f32 = out[..4].iter().sum::<f32>() / 4.0;
        assert!((first - 0.5).abs() < 1e-6);
        let var: f32 = out[..4].iter().map(|v| (v - 0.5) * (v - 0.5)).sum::<f32>() / 4.0;
        assert!((var - 1.0).abs() < 1e-3);
        assert!(out[4..].iter().all(|v| (v - 0.5).abs() < 1e-6));
    }
}
