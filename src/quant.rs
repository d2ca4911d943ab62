//! ggml block formats: encoding f32 rows into them and decoding back.
//!
//! The encoders follow ggml's reference quantizers (`quantize_row_*_ref`) exactly, so a
//! file we write holds the same bytes llama.cpp's own quantizer would produce.
//!
//! Layouts (32 elements per block):
//! - Q8_0: f16 d, i8 q[32];            x = q * d
//! - Q4_0: f16 d, u8 q[16] (nibbles);  x = (q - 8) * d   (low nibbles: elements 0..16)
//! - Q4_1: f16 d, f16 m, u8 q[16];     x = q * d + m

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
            let (min, max) = b.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
            encode_q4_1_with(b, (max - min) / 15.0, min, out)
        }),
    }
    Ok(())
}

fn encode_q8_0(b: &[f32], out: &mut Vec<u8>) {
    let amax = b.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
    out.extend(b.iter().map(|v| ((v * id).round() as i8) as u8));
}

fn encode_q4_0(b: &[f32], out: &mut Vec<u8>) {
    // The value of largest magnitude, with its sign, maps to -8.
    let mut amax = 0f32;
    let mut max = 0f32;
    for &v in b {
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    let d = max / -8.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
    for j in 0..QK / 2 {
        let lo = ((b[j] * id + 8.5) as i8).min(15) as u8;
        let hi = ((b[j + QK / 2] * id + 8.5) as i8).min(15) as u8;
        out.push(lo | (hi << 4));
    }
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
    }
    Ok(())
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

    #[test]
    fn quantized_errors_within_half_a_step() {
        let xs = ramp();
        let amax = xs.iter().fold(0f32, |m, v| m.max(v.abs()));
        for (dtype, step) in [(GgmlType::Q8_0, amax / 127.0), (GgmlType::Q4_0, amax / 8.0), (GgmlType::Q4_1, 2.0 * amax / 15.0)] {
            let back = roundtrip(dtype, &xs);
            for (a, b) in back.iter().zip(&xs) {
                assert!((a - b).abs() <= step * 0.5 + 1e-2, "{dtype}: {a} vs {b}");
            }
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
    fn bad_lengths_are_errors() {
        assert!(quantize_row(GgmlType::Q4_0, &[0.0; 31], &mut Vec::new()).is_err());
        assert!(dequantize_row(GgmlType::Q8_0, &[0u8; 33], &mut [0.0; 32]).is_err());
    }
}
