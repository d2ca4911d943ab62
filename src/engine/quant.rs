//! ggml block formats: encoding f32 rows into them and decoding back.
//!
//! The encoders follow ggml's reference quantizers (`quantize_row_*_ref`) exactly, so a
//! file we write holds the same bytes llama.cpp's own quantizer would produce.
//!
//! Layouts (32 elements per block unless noted):
//! - Q8_0: f16 d, i8 q[32];            x = q * d
//! - Q4_0: f16 d, u8 q[16] (nibbles);  x = (q - 8) * d   (low nibbles: elements 0..16)
//! - Q4_1: f16 d, f16 m, u8 q[16];     x = q * d + m
//! - Q5_0: f16 d, u8 qh[4], u8 q[16];  x = (q - 16) * d  (qh: bit 4 of element j at bit j)
//! - Q5_1: f16 d, f16 m, u8 qh[4], u8 q[16]; x = q * d + m
//! - Q6_K (256 elements, 16 sub-blocks of 16): u8 ql[128], u8 qh[64], i8 scales[16], f16 d;
//!   x = d * scales[sub] * (q - 32), q 6 bits (low 4 in ql, high 2 in qh)
//!
//! The `encode_*_with` variants take the block parameters from the caller: group
//! quantization (several blocks sharing one scale, as AWQ's groups of 64 or 128 do) and
//! AutoAWQ import use them.

use crate::gguf::GgmlType;
use half::{bf16, f16};

pub const QK: usize = 32;

#[derive(Debug, thiserror::Error)]
#[error("{dtype} row of {len} values is not a whole number of {block}-element blocks")]
pub struct BlockError {
    pub dtype: GgmlType,
    pub len: usize,
    pub block: usize,
}

fn check_len(dtype: GgmlType, len: usize) -> Result<(), BlockError> {
    let block = dtype.block_elems();
    if len % block != 0 {
        return Err(BlockError { dtype, len, block });
    }
    Ok(())
}

/// Appends `src` encoded as `dtype` to `out`.
pub fn quantize_row(dtype: GgmlType, src: &[f32], out: &mut Vec<u8>) -> Result<(), BlockError> {
    check_len(dtype, src.len())?;
    match dtype {
        GgmlType::F32 => src.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
        GgmlType::F16 => src.iter().for_each(|v| out.extend_from_slice(&f16::from_f32(*v).to_le_bytes())),
        GgmlType::BF16 => src.iter().for_each(|v| out.extend_from_slice(&bf16::from_f32(*v).to_le_bytes())),
        GgmlType::Q8_0 => src.chunks_exact(QK).for_each(|b| encode_q8_0(b, out)),
        GgmlType::Q4_0 => src.chunks_exact(QK).for_each(|b| encode_q4_0(b, out)),
        GgmlType::Q4_1 => src.chunks_exact(QK).for_each(|b| {
            let (min, max) = min_max(b);
            encode_q4_1_with(b, (max - min) / 15.0, min, out)
        }),
        GgmlType::Q5_0 => src.chunks_exact(QK).for_each(|b| encode_q5_0_with(b, signed_absmax(b) / -16.0, out)),
        GgmlType::Q5_1 => src.chunks_exact(QK).for_each(|b| {
            let (min, max) = min_max(b);
            encode_q5_1_with(b, (max - min) / 31.0, min, out)
        }),
        GgmlType::Q6_K => src.chunks_exact(QK_K).for_each(|b| encode_q6_k(b, out)),
    }
    Ok(())
}

/// Smallest and largest value (ggml's Q4_1/Q5_1 range).
pub fn min_max(b: &[f32]) -> (f32, f32) {
    b.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

/// The value of largest magnitude, with its sign (the first one on ties, as ggml scans).
pub fn signed_absmax(b: &[f32]) -> f32 {
    let mut amax = 0f32;
    let mut max = 0f32;
    for &v in b {
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    max
}

fn encode_q8_0(b: &[f32], out: &mut Vec<u8>) {
    let amax = b.iter().fold(0f32, |m, v| m.max(v.abs()));
    encode_q8_0_with(b, amax / 127.0, out)
}

/// Q8_0 with a given step `d`; values are clamped to -127..=127.
pub fn encode_q8_0_with(b: &[f32], d: f32, out: &mut Vec<u8>) {
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
    out.extend(b.iter().map(|v| ((v * id).round().clamp(-127.0, 127.0) as i8) as u8));
}

fn encode_q4_0(b: &[f32], out: &mut Vec<u8>) {
    // The value of largest magnitude, with its sign, maps to -8.
    encode_q4_0_with(b, signed_absmax(b) / -8.0, out)
}

/// Q4_0 with a given step `d` (ggml: the signed absolute maximum / -8). Values are
/// clamped to the 0..=15 grid.
pub fn encode_q4_0_with(b: &[f32], d: f32, out: &mut Vec<u8>) {
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
    let q = |v: f32| ((v * id + 8.5) as i8).clamp(0, 15) as u8;
    for j in 0..QK / 2 {
        out.push(q(b[j]) | (q(b[j + QK / 2]) << 4));
    }
}

/// Q5_0 with a given step `d` (ggml: the signed absolute maximum / -16). Values are
/// clamped to the 0..=31 grid.
pub fn encode_q5_0_with(b: &[f32], d: f32, out: &mut Vec<u8>) {
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
    let q = |v: f32| ((v * id + 16.5) as i8).clamp(0, 31) as u8;
    push_5bit(b, q, out);
}

/// Q5_1 with a given step `d` and offset `min` (ggml: range / 31 and the minimum).
pub fn encode_q5_1_with(b: &[f32], d: f32, min: f32, out: &mut Vec<u8>) {
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
    out.extend_from_slice(&f16::from_f32(min).to_le_bytes());
    let q = |v: f32| (((v - min) * id + 0.5) as i8).clamp(0, 31) as u8;
    push_5bit(b, q, out);
}

/// qh (bit 4 of each element, element j at bit j) then the low nibbles as in Q4.
fn push_5bit(b: &[f32], q: impl Fn(f32) -> u8, out: &mut Vec<u8>) {
    let mut qs = [0u8; QK / 2];
    let mut qh = 0u32;
    for j in 0..QK / 2 {
        let (x0, x1) = (q(b[j]), q(b[j + QK / 2]));
        qs[j] = (x0 & 0x0f) | ((x1 & 0x0f) << 4);
        qh |= (((x0 & 0x10) >> 4) as u32) << j;
        qh |= (((x1 & 0x10) >> 4) as u32) << (j + QK / 2);
    }
    out.extend_from_slice(&qh.to_le_bytes());
    out.extend_from_slice(&qs);
}

/// Elements of a k-quant super-block.
pub const QK_K: usize = 256;

/// ggml's `nearest_int`: round half to even.
fn nearest_int(v: f32) -> i32 {
    v.round_ties_even() as i32
}

/// ggml's `make_qx_quants` with `rmse_type` 1 and no importance weights: the scale of
/// `x` on the signed grid -nmax..nmax-1 that minimises the x^2-weighted squared error
/// over 19 candidate scales. Writes `L[i] = q + nmax` and returns the scale.
fn make_qx_quants(nmax: i32, x: &[f32], l_out: &mut [i8]) -> f32 {
    let mut max = 0f32;
    let mut amax = 0f32;
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax < 1e-15 {
        l_out.iter_mut().for_each(|l| *l = 0);
        return 0.0;
    }
    let nmaxf = nmax as f32;
    let quant = |iscale: f32, v: f32| nearest_int(iscale * v).clamp(-nmax, nmax - 1);
    let sums = |iscale: f32| {
        let (mut sumlx, mut suml2) = (0f32, 0f32);
        for &v in x {
            let l = quant(iscale, v) as f32;
            let w = v * v;
            sumlx += w * v * l;
            suml2 += w * l * l;
        }
        (sumlx, suml2)
    };
    let mut iscale = -nmaxf / max;
    for (o, &v) in l_out.iter_mut().zip(x) {
        *o = (quant(iscale, v) + nmax) as i8;
    }
    let (sumlx, suml2) = sums(iscale);
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in -9..=9 {
        if is == 0 {
            continue;
        }
        iscale = -(nmaxf + 0.1 * is as f32) / max;
        let (sumlx, suml2) = sums(iscale);
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            for (o, &v) in l_out.iter_mut().zip(x) {
                *o = (quant(iscale, v) + nmax) as i8;
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

/// ggml's `quantize_row_q6_K_ref` for one super-block of 256 values.
fn encode_q6_k(x: &[f32], out: &mut Vec<u8>) {
    let mut l = [0i8; QK_K];
    let mut scales = [0f32; QK_K / 16];
    let (mut max_scale, mut max_abs_scale) = (0f32, 0f32);
    for ib in 0..QK_K / 16 {
        let scale = make_qx_quants(32, &x[16 * ib..16 * ib + 16], &mut l[16 * ib..16 * ib + 16]);
        scales[ib] = scale;
        if scale.abs() > max_abs_scale {
            max_abs_scale = scale.abs();
            max_scale = scale;
        }
    }
    if max_abs_scale < 1e-15 {
        out.extend_from_slice(&[0u8; 210]);
        return;
    }
    let iscale = -128.0 / max_scale;
    let d = f16::from_f32(1.0 / iscale);
    let mut sc = [0i8; QK_K / 16];
    for (s, &v) in sc.iter_mut().zip(&scales) {
        *s = nearest_int(iscale * v).min(127) as i8;
    }
    for j in 0..QK_K / 16 {
        let dj = d.to_f32() * sc[j] as f32;
        if dj == 0.0 {
            continue;
        }
        for ii in 0..16 {
            let q = nearest_int(x[16 * j + ii] / dj).clamp(-32, 31);
            l[16 * j + ii] = (q + 32) as i8;
        }
    }
    let mut ql = [0u8; QK_K / 2];
    let mut qh = [0u8; QK_K / 4];
    for half in 0..2 {
        let (j, qlo, qho) = (half * 128, half * 64, half * 32);
        for i in 0..32 {
            let q = |k: usize| l[j + i + 32 * k] as u8;
            ql[qlo + i] = (q(0) & 0xf) | ((q(2) & 0xf) << 4);
            ql[qlo + i + 32] = (q(1) & 0xf) | ((q(3) & 0xf) << 4);
            qh[qho + i] = (q(0) >> 4) | ((q(1) >> 4) << 2) | ((q(2) >> 4) << 4) | ((q(3) >> 4) << 6);
        }
    }
    out.extend_from_slice(&ql);
    out.extend_from_slice(&qh);
    out.extend(sc.iter().map(|&s| s as u8));
    out.extend_from_slice(&d.to_le_bytes());
}

/// Q4_1 with a given step `d` and offset `min` (AWQ chooses them; plain Q4_1 uses the
/// block's range). Values are clamped to the 0..=15 grid.
pub fn encode_q4_1_with(b: &[f32], d: f32, min: f32, out: &mut Vec<u8>) {
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
    out.extend_from_slice(&f16::from_f32(min).to_le_bytes());
    let q = |v: f32| (((v - min) * id + 0.5) as i8).clamp(0, 15) as u8;
    for j in 0..QK / 2 {
        out.push(q(b[j]) | (q(b[j + QK / 2]) << 4));
    }
}

/// Decodes `src` (whole blocks of `dtype`) into `out`, which must hold exactly its elements.
pub fn dequantize_row(dtype: GgmlType, src: &[u8], out: &mut [f32]) -> Result<(), BlockError> {
    check_len(dtype, out.len())?;
    let blocks = out.len() / dtype.block_elems();
    if src.len() != blocks * dtype.block_bytes() {
        return Err(BlockError { dtype, len: src.len(), block: dtype.block_bytes() });
    }
    match dtype {
        GgmlType::F32 => {
            for (o, c) in out.iter_mut().zip(src.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
        GgmlType::F16 => {
            for (o, c) in out.iter_mut().zip(src.chunks_exact(2)) {
                *o = f16::from_le_bytes([c[0], c[1]]).to_f32();
            }
        }
        GgmlType::BF16 => {
            for (o, c) in out.iter_mut().zip(src.chunks_exact(2)) {
                *o = bf16::from_le_bytes([c[0], c[1]]).to_f32();
            }
        }
        GgmlType::Q8_0 => {
            for (o, b) in out.chunks_exact_mut(QK).zip(src.chunks_exact(34)) {
                let d = f16::from_le_bytes([b[0], b[1]]).to_f32();
                for (x, &q) in o.iter_mut().zip(&b[2..]) {
                    *x = q as i8 as f32 * d;
                }
            }
        }
        GgmlType::Q4_0 => {
            for (o, b) in out.chunks_exact_mut(QK).zip(src.chunks_exact(18)) {
                let d = f16::from_le_bytes([b[0], b[1]]).to_f32();
                for (j, &q) in b[2..].iter().enumerate() {
                    o[j] = ((q & 0x0f) as i32 - 8) as f32 * d;
                    o[j + QK / 2] = ((q >> 4) as i32 - 8) as f32 * d;
                }
            }
        }
        GgmlType::Q4_1 => {
            for (o, b) in out.chunks_exact_mut(QK).zip(src.chunks_exact(20)) {
                let d = f16::from_le_bytes([b[0], b[1]]).to_f32();
                let m = f16::from_le_bytes([b[2], b[3]]).to_f32();
                for (j, &q) in b[4..].iter().enumerate() {
                    o[j] = (q & 0x0f) as f32 * d + m;
                    o[j + QK / 2] = (q >> 4) as f32 * d + m;
                }
            }
        }
        GgmlType::Q5_0 => {
            for (o, b) in out.chunks_exact_mut(QK).zip(src.chunks_exact(22)) {
                let d = f16::from_le_bytes([b[0], b[1]]).to_f32();
                let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
                for (j, &q) in b[6..].iter().enumerate() {
                    let (h0, h1) = high_bits(qh, j);
                    o[j] = (((q & 0x0f) | h0) as i32 - 16) as f32 * d;
                    o[j + QK / 2] = (((q >> 4) | h1) as i32 - 16) as f32 * d;
                }
            }
        }
        GgmlType::Q5_1 => {
            for (o, b) in out.chunks_exact_mut(QK).zip(src.chunks_exact(24)) {
                let d = f16::from_le_bytes([b[0], b[1]]).to_f32();
                let m = f16::from_le_bytes([b[2], b[3]]).to_f32();
                let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
                for (j, &q) in b[8..].iter().enumerate() {
                    let (h0, h1) = high_bits(qh, j);
                    o[j] = ((q & 0x0f) | h0) as f32 * d + m;
                    o[j + QK / 2] = ((q >> 4) | h1) as f32 * d + m;
                }
            }
        }
        GgmlType::Q6_K => {
            for (o, b) in out.chunks_exact_mut(QK_K).zip(src.chunks_exact(210)) {
                let d = f16::from_le_bytes([b[208], b[209]]).to_f32();
                for half in 0..2 {
                    // Fixed-size views: no bounds checks, and the loops vectorize (this
                    // decode serves the LM head when the embedding is Q6_K).
                    let ql: &[u8; 64] = b[half * 64..half * 64 + 64].try_into().expect("64");
                    let qh: &[u8; 32] = b[128 + half * 32..128 + half * 32 + 32].try_into().expect("32");
                    let sc: [f32; 8] = std::array::from_fn(|i| d * (b[192 + half * 8 + i] as i8) as f32);
                    let y: &mut [f32; 128] = (&mut o[half * 128..half * 128 + 128]).try_into().expect("128");
                    for l in 0..32 {
                        let is = l / 16;
                        let h = qh[l];
                        y[l] = sc[is] * (((ql[l] & 0xf) | ((h & 3) << 4)) as i32 - 32) as f32;
                        y[l + 32] = sc[is + 2] * (((ql[l + 32] & 0xf) | (((h >> 2) & 3) << 4)) as i32 - 32) as f32;
                        y[l + 64] = sc[is + 4] * (((ql[l] >> 4) | (((h >> 4) & 3) << 4)) as i32 - 32) as f32;
                        y[l + 96] = sc[is + 6] * (((ql[l + 32] >> 4) | (((h >> 6) & 3) << 4)) as i32 - 32) as f32;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Bit 4 of elements `j` and `j + 16` of a Q5 block, in place (0 or 0x10).
fn high_bits(qh: u32, j: usize) -> (u8, u8) {
    ((((qh >> j) << 4) & 0x10) as u8, ((qh >> (j + 12)) & 0x10) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(dtype: GgmlType, xs: &[f32]) -> Vec<f32> {
        let mut bytes = Vec::new();
        quantize_row(dtype, xs, &mut bytes).unwrap();
        assert_eq!(bytes.len(), xs.len() / dtype.block_elems() * dtype.block_bytes());
        let mut back = vec![0f32; xs.len()];
        dequantize_row(dtype, &bytes, &mut back).unwrap();
        back
    }

    fn ramp() -> Vec<f32> {
        (0..64).map(|i| ((i * 37 % 64) as f32 - 31.5) / 10.0).collect()
    }

    #[test]
    fn f32_and_f16_roundtrip() {
        let xs = ramp();
        assert_eq!(roundtrip(GgmlType::F32, &xs), xs);
        for (a, b) in roundtrip(GgmlType::F16, &xs).iter().zip(&xs) {
            assert!((a - b).abs() <= b.abs() * 1e-3);
        }
    }

    /// Within half a step of the grid; Q4_0 and Q5_0 map the block's largest magnitude to
    /// -8 (-16) steps, so on the other side the grid ends one step short (+7, +15 steps)
    /// and values beyond its end are up to a step away.
    fn assert_on_grid(dtype: GgmlType, xs: &[f32], back: &[f32], step: f32, pos_levels: Option<f32>) {
        for (a, b) in back.iter().zip(xs) {
            let beyond = pos_levels.is_some_and(|l| b.abs() > l * step);
            let tol = if beyond { step } else { step * 0.5 } + 1e-3;
            assert!((a - b).abs() <= tol, "{dtype}: {a} vs {b}");
        }
    }

    #[test]
    fn quantized_errors_within_half_a_step() {
        let xs = ramp();
        let amax = xs.iter().fold(0f32, |m, v| m.max(v.abs()));
        for (dtype, step, pos) in [
            (GgmlType::Q8_0, amax / 127.0, None),
            (GgmlType::Q4_0, amax / 8.0, Some(7.0)),
            (GgmlType::Q4_1, 2.0 * amax / 15.0, None),
        ] {
            assert_on_grid(dtype, &xs, &roundtrip(dtype, &xs), step, pos);
        }
    }

    #[test]
    fn q4_0_matches_ggml_reference_bytes() {
        // Block of 0..32: max magnitude 31 -> d = -31/8, q = trunc(x/d + 8.5) clamped.
        let xs: Vec<f32> = (0..32).map(|i| i as f32).collect();
        let mut bytes = Vec::new();
        quantize_row(GgmlType::Q4_0, &xs, &mut bytes).unwrap();
        let d = f16::from_le_bytes([bytes[0], bytes[1]]).to_f32();
        assert_eq!(d, f16::from_f32(-31.0 / 8.0).to_f32());
        assert_eq!(bytes[2] & 0x0f, 8); // x = 0 -> 8
        assert_eq!(bytes[2 + 15] >> 4, 0); // x = 31 -> 0
    }

    #[test]
    fn five_bit_types_roundtrip_within_half_a_step() {
        let xs = ramp();
        let amax = xs.iter().fold(0f32, |m, v| m.max(v.abs()));
        for (dtype, step, pos) in [(GgmlType::Q5_0, amax / 16.0, Some(15.0)), (GgmlType::Q5_1, 2.0 * amax / 31.0, None)] {
            assert_on_grid(dtype, &xs, &roundtrip(dtype, &xs), step, pos);
        }
    }

    #[test]
    fn q5_high_bits_land_where_ggml_reads_them() {
        // Q5_1 of 0..32: d = 1, min = 0, q = x; bit 4 is set for x >= 16, i.e. for the
        // upper half (elements 16..32) only: qh = 0xffff0000.
        let xs: Vec<f32> = (0..32).map(|i| i as f32).collect();
        let mut bytes = Vec::new();
        quantize_row(GgmlType::Q5_1, &xs, &mut bytes).unwrap();
        assert_eq!(u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]), 0xffff_0000);
        assert_eq!(bytes[8], 0x00); // elements 0 and 16: low nibbles 0 and 0
        assert_eq!(bytes[8 + 15], 0xff); // elements 15 and 31: 15 and 31 & 0xf
        let mut back = vec![0f32; 32];
        dequantize_row(GgmlType::Q5_1, &bytes, &mut back).unwrap();
        assert_eq!(back, xs);
        // Q5_0 of -16..16: the largest magnitude is -16 -> d = 1, q = x + 16.
        let xs: Vec<f32> = (0..32).map(|i| i as f32 - 16.0).collect();
        let mut bytes = Vec::new();
        quantize_row(GgmlType::Q5_0, &xs, &mut bytes).unwrap();
        assert_eq!(f16::from_le_bytes([bytes[0], bytes[1]]).to_f32(), 1.0);
        let mut back = vec![0f32; 32];
        dequantize_row(GgmlType::Q5_0, &bytes, &mut back).unwrap();
        assert_eq!(back, xs);
    }

    #[test]
    fn q6_k_roundtrip_and_layout() {
        // 512 values (two super-blocks) of varying scale per 16-element sub-block.
        let xs: Vec<f32> = (0..512).map(|i| ((i * 53 % 97) as f32 - 48.0) * (1.0 + (i / 16) as f32 * 0.25) / 40.0).collect();
        let mut bytes = Vec::new();
        quantize_row(GgmlType::Q6_K, &xs, &mut bytes).unwrap();
        assert_eq!(bytes.len(), 2 * 210);
        let mut back = vec![0f32; 512];
        dequantize_row(GgmlType::Q6_K, &bytes, &mut back).unwrap();
        for (sub, (a, b)) in back.chunks(16).zip(xs.chunks(16)).enumerate() {
            let amax = b.iter().fold(0f32, |m, v| m.max(v.abs()));
            for (x, y) in a.iter().zip(b) {
                // 6-bit grid over the sub-block's range, plus the 8-bit scale's rounding.
                assert!((x - y).abs() <= amax / 31.0 * 0.6 + 1e-4, "sub-block {sub}: {x} vs {y}");
            }
        }
        // A block of zeros is all zero bytes; a constant block decodes exactly.
        let mut z = Vec::new();
        quantize_row(GgmlType::Q6_K, &[0.0; 256], &mut z).unwrap();
        assert!(z.iter().all(|&b| b == 0));
        // Element 0 only: its sub-block scale is the largest, so scales[0] = -128 and q = 0.
        let mut one = vec![0f32; 256];
        one[0] = -1.0;
        let mut b1 = Vec::new();
        quantize_row(GgmlType::Q6_K, &one, &mut b1).unwrap();
        assert_eq!(b1[192] as i8, -128);
        let mut back = vec![0f32; 256];
        dequantize_row(GgmlType::Q6_K, &b1, &mut back).unwrap();
        assert!((back[0] + 1.0).abs() < 1e-3 && back[1..].iter().all(|&v| v == 0.0), "{:?}", &back[..4]);
    }

    #[test]
    fn group_parameters_are_honoured() {
        // A shared step larger than the block needs: values still land on its grid.
        let xs: Vec<f32> = (0..32).map(|i| (i as f32 - 16.0) / 8.0).collect();
        for (dtype, enc) in [
            (GgmlType::Q4_0, &(|b: &[f32], o: &mut Vec<u8>| encode_q4_0_with(b, -0.5, o)) as &dyn Fn(&[f32], &mut Vec<u8>)),
            (GgmlType::Q5_0, &|b: &[f32], o: &mut Vec<u8>| encode_q5_0_with(b, -0.25, o)),
            (GgmlType::Q4_1, &|b: &[f32], o: &mut Vec<u8>| encode_q4_1_with(b, 0.25, -2.0, o)),
            (GgmlType::Q5_1, &|b: &[f32], o: &mut Vec<u8>| encode_q5_1_with(b, 0.125, -2.0, o)),
            (GgmlType::Q8_0, &|b: &[f32], o: &mut Vec<u8>| encode_q8_0_with(b, 0.125, o)),
        ] {
            let mut bytes = Vec::new();
            enc(&xs, &mut bytes);
            let mut back = vec![0f32; 32];
            dequantize_row(dtype, &bytes, &mut back).unwrap();
            for (a, b) in back.iter().zip(&xs) {
                assert!((a - b).abs() <= 0.25 + 1e-6, "{dtype}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn type_table_is_consistent() {
        for t in GgmlType::ALL {
            assert_eq!(GgmlType::from_id(t.id()), Some(t));
            assert_eq!(GgmlType::from_name(t.name()), Some(t));
        }
    }

    #[test]
    fn bad_lengths_are_errors() {
        assert!(quantize_row(GgmlType::Q4_0, &[0.0; 31], &mut Vec::new()).is_err());
        assert!(dequantize_row(GgmlType::Q8_0, &[0u8; 33], &mut [0.0; 32]).is_err());
    }
}
