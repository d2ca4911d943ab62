//! Round-to-nearest group quantization into ggml blocks, and the encoder that writes it.
//!
//! A group is `group` consecutive input channels of one weight row sharing one scale (and
//! offset): AWQ's grouping. ggml's 4/5/8-bit blocks hold 32 values: group 32 is one block,
//! a group of 64, 128, ... is several blocks repeating the group's parameters (computed
//! over the whole group, rounded to f16 once). The file stays a plain ggml file.
//!
//! The grids:
//! - Q4_0, Q5_0, Q8_0 (symmetric): ggml's, `d` from the group's signed absolute maximum;
//!   with group 32 the bytes are those of ggml's reference quantizer (llama-quantize);
//! - Q4_1, Q5_1 (asymmetric): AWQ's zero-point grid, `x = (q - z) * s` with an integer
//!   zero point `z = round(-min / s)`, `s = (max - min) / 15` (31), stored as `d = s`,
//!   `m = -z * s`. Unlike ggml's own Q4_1 (`m = min`), 0 is on this grid (up to the f16
//!   rounding of m): weights near zero stay near zero, which matters for the input
//!   channels whose weights are tiny because their activations are huge (outliers). A
//!   group that does not straddle 0 keeps ggml's `m = min`.
//!
//! `fake_quant` (encode, then decode) is what AWQ's searches measure, so the searches see
//! exactly the values the file will hold.

use anyhow::bail;
use half::f16;
use rayon::prelude::*;
use crate::convert::{ConvertError, Encoder, TensorPlan};
use seqgpt_engine::arch::Tensor;
use seqgpt_engine::gguf::GgmlType;
use seqgpt_engine::quant::{
    dequantize_row, encode_q4_0_with, encode_q4_1_with, encode_q5_0_with, encode_q5_1_with, encode_q8_0_with, min_max,
    quantize_row, signed_absmax, QK,
};

/// A weight type with a group size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupQuant {
    pub dtype: GgmlType,
    pub group: usize,
}

/// Types a weight matrix may be group-quantized to.
pub const GROUP_TYPES: [GgmlType; 5] = [GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0];

fn f16_round(v: f32) -> f32 {
    f16::from_f32(v).to_f32()
}

/// AWQ's asymmetric grid for a group with `levels` + 1 values: `(d, m)` with `m = -z d`,
/// `z` an integer, both f16-rounded. A constant group gets `d = 0, m = value`; a group
/// entirely above or below 0 gets ggml's `m = min`.
pub fn zero_point_grid(g: &[f32], levels: f32) -> (f32, f32) {
    let (min, max) = min_max(g);
    if max <= min {
        return (0.0, f16_round(min));
    }
    let d = f16_round((max - min) / levels);
    if d == 0.0 || min > 0.0 || max < 0.0 {
        return (d, f16_round(min));
    }
    let z = (-min / d).round().clamp(0.0, levels);
    (d, f16_round(-z * d))
}

impl GroupQuant {
    pub fn new(dtype: GgmlType, group: usize) -> anyhow::Result<Self> {
        if !GROUP_TYPES.contains(&dtype) {
            bail!("--wtype {dtype}: weight matrices are group-quantized to q4_0, q4_1, q5_0, q5_1 or q8_0");
        }
        if group == 0 || group % QK != 0 {
            bail!("--group-size {group}: must be a multiple of {QK} (the ggml block size)");
        }
        Ok(Self { dtype, group })
    }

    /// Whether rows of `cols` values split into whole groups.
    pub fn fits(&self, cols: usize) -> bool {
        cols % self.group == 0
    }

    /// Bytes of one encoded row of `cols` values.
    pub fn row_bytes(&self, cols: usize) -> usize {
        cols / QK * self.dtype.block_bytes()
    }

    /// Appends `row` (whole groups) encoded.
    pub fn encode_row(&self, row: &[f32], out: &mut Vec<u8>) {
        debug_assert!(self.fits(row.len()));
        if self.group == QK && matches!(self.dtype, GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0) {
            quantize_row(self.dtype, row, out).expect("whole blocks");
            return;
        }
        for g in row.chunks_exact(self.group) {
            match self.dtype {
                GgmlType::Q4_0 => {
                    let d = f16_round(signed_absmax(g) / -8.0);
                    g.chunks_exact(QK).for_each(|b| encode_q4_0_with(b, d, out));
                }
                GgmlType::Q5_0 => {
                    let d = f16_round(signed_absmax(g) / -16.0);
                    g.chunks_exact(QK).for_each(|b| encode_q5_0_with(b, d, out));
                }
                GgmlType::Q4_1 => {
                    let (d, m) = zero_point_grid(g, 15.0);
                    g.chunks_exact(QK).for_each(|b| encode_q4_1_with(b, d, m, out));
                }
                GgmlType::Q5_1 => {
                    let (d, m) = zero_point_grid(g, 31.0);
                    g.chunks_exact(QK).for_each(|b| encode_q5_1_with(b, d, m, out));
                }
                GgmlType::Q8_0 => {
                    let amax = g.iter().fold(0f32, |a, v| a.max(v.abs()));
                    let d = f16_round(amax / 127.0);
                    g.chunks_exact(QK).for_each(|b| encode_q8_0_with(b, d, out));
                }
                other => unreachable!("{other} is not a group type"),
            }
        }
    }

    /// `row` encoded and decoded (the values the file will hold), into `out`.
    pub fn fake_quant_row(&self, row: &[f32], out: &mut [f32], scratch: &mut Vec<u8>) {
        scratch.clear();
        self.encode_row(row, scratch);
        dequantize_row(self.dtype, scratch, out).expect("whole blocks");
    }

    /// A `[rows, cols]` matrix fake-quantized row by row (all cores).
    pub fn fake_quant(&self, w: &[f32], cols: usize) -> Vec<f32> {
        let mut out = vec![0f32; w.len()];
        out.par_chunks_mut(cols).zip(w.par_chunks(cols)).for_each_init(Vec::new, |scratch, (o, r)| {
            self.fake_quant_row(r, o, scratch);
        });
        out
    }
}

/// The quantized-file encoder: vectors in f32, the token embedding (and a separate
/// `output`, if any) in `embd_type` by ggml's reference quantizer, every other matrix
/// group-quantized.
pub struct GroupEncoder {
    pub weights: GroupQuant,
    pub embd_type: GgmlType,
}

impl Encoder for GroupEncoder {
    fn dtype(&self, plan: &TensorPlan) -> GgmlType {
        match (plan.is_matrix, plan.tensor) {
            (false, _) => GgmlType::F32,
            (true, Tensor::TokenEmbd | Tensor::Output) => {
                if plan.shape[1] % self.embd_type.block_elems() == 0 {
                    self.embd_type
                } else {
                    GgmlType::F16
                }
            }
            (true, _) => {
                if self.weights.fits(plan.shape[1]) {
                    self.weights.dtype
                } else {
                    GgmlType::F16
                }
            }
        }
    }

    fn encode(&mut self, plan: &TensorPlan, data: &[f32]) -> Result<Vec<u8>, ConvertError> {
        let dtype = self.dtype(plan);
        let cols = *plan.shape.last().unwrap_or(&1);
        let group_coded = plan.is_matrix && dtype == self.weights.dtype && !matches!(plan.tensor, Tensor::TokenEmbd | Tensor::Output);
        if !group_coded {
            let mut out = Vec::new();
            for row in data.chunks(cols) {
                quantize_row(dtype, row, &mut out).map_err(|e| ConvertError::Other(format!("{}: {e}", plan.name)))?;
            }
            return Ok(out);
        }
        let rows: Vec<&[f32]> = data.chunks(cols).collect();
        let row_bytes = self.weights.row_bytes(cols);
        let mut out = vec![0u8; rows.len() * row_bytes];
        let wq = self.weights;
        out.par_chunks_mut(row_bytes).zip(rows.par_iter()).for_each_init(Vec::new, |buf, (o, r)| {
            buf.clear();
            wq.encode_row(r, buf);
            o.copy_from_slice(buf);
        });
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: usize, seed: u32) -> Vec<f32> {
        (0..n).map(|i| (((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 8) % 1000) as f32 / 500.0 - 1.0).collect()
    }

    #[test]
    fn group_32_is_the_reference_encoder() {
        let r = row(128, 1);
        for dtype in [GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0] {
            let mut a = Vec::new();
            GroupQuant::new(dtype, 32).unwrap().encode_row(&r, &mut a);
            let mut b = Vec::new();
            quantize_row(dtype, &r, &mut b).unwrap();
            assert_eq!(a, b, "{dtype}");
        }
    }

    #[test]
    fn larger_groups_share_block_parameters() {
        let mut r = row(256, 2);
        r[5] = 3.0; // widen the first group's range
        for dtype in GROUP_TYPES {
            let gq = GroupQuant::new(dtype, 128).unwrap();
            let mut bytes = Vec::new();
            gq.encode_row(&r, &mut bytes);
            let bb = dtype.block_bytes();
            assert_eq!(bytes.len(), 8 * bb);
            // The parameter bytes (d, and m for the _1 types) repeat within each group.
            let params = if matches!(dtype, GgmlType::Q4_1 | GgmlType::Q5_1) { 4 } else { 2 };
            for g in 0..2 {
                let first = &bytes[g * 4 * bb..g * 4 * bb + params];
                for b in 1..4 {
                    assert_eq!(&bytes[(g * 4 + b) * bb..(g * 4 + b) * bb + params], first, "{dtype} group {g} block {b}");
                }
            }
            // Decoded values stay within half a step of the group's grid (one step at the
            // short end of the Q4_0/Q5_0 grids).
            let mut back = vec![0f32; 256];
            dequantize_row(dtype, &bytes, &mut back).unwrap();
            for (g, (gb, gr)) in back.chunks(128).zip(r.chunks(128)).enumerate() {
                let (lo, hi) = min_max(gr);
                let amax = lo.abs().max(hi.abs());
                let step = match dtype {
                    GgmlType::Q4_0 => amax / 8.0,
                    GgmlType::Q5_0 => amax / 16.0,
                    GgmlType::Q4_1 => (hi - lo) / 15.0,
                    GgmlType::Q5_1 => (hi - lo) / 31.0,
                    _ => amax / 127.0,
                };
                for (a, b) in gb.iter().zip(gr) {
                    assert!((a - b).abs() <= step + 1e-3, "{dtype} group {g}: {a} vs {b} (step {step})");
                }
            }
        }
    }

    #[test]
    fn zero_is_on_the_asymmetric_grid() {
        // A group spanning [-0.3, 1.0] with small weights near 0: ggml's m = min grid puts
        // 0.001 about 0.03 away; the zero-point grid keeps it within f16 rounding.
        let mut r = row(32, 3);
        r[0] = -0.3;
        r[1] = 1.0;
        r[2] = 0.001;
        r[3] = 0.0;
        for dtype in [GgmlType::Q4_1, GgmlType::Q5_1] {
            let gq = GroupQuant::new(dtype, 32).unwrap();
            let mut back = vec![0f32; 32];
            gq.fake_quant_row(&r, &mut back, &mut Vec::new());
            assert!(back[3].abs() < 1e-3 && (back[2] - 0.001).abs() < 2e-3, "{dtype}: {:?}", &back[..4]);
            let mut reference = Vec::new();
            quantize_row(dtype, &r, &mut reference).unwrap();
            let mut ggml = vec![0f32; 32];
            dequantize_row(dtype, &reference, &mut ggml).unwrap();
            assert!(ggml[3].abs() > 5e-3, "{dtype}: ggml's grid misses 0 here: {}", ggml[3]);
        }
        // Constant and one-signed groups.
        assert_eq!(zero_point_grid(&[0.5; 32], 15.0), (0.0, 0.5));
        let (d, m) = zero_point_grid(&[1.0, 2.5, 4.0, 1.5], 15.0);
        assert!((d - 0.2).abs() < 1e-3 && m == 1.0);
    }

    #[test]
    fn fake_quant_matches_the_encoder() {
        let w: Vec<f32> = (0..4).flat_map(|i| row(64, i)).collect();
        let gq = GroupQuant::new(GgmlType::Q4_1, 64).unwrap();
        let fq = gq.fake_quant(&w, 64);
        let mut bytes = Vec::new();
        for r in w.chunks(64) {
            gq.encode_row(r, &mut bytes);
        }
        let mut back = vec![0f32; w.len()];
        dequantize_row(GgmlType::Q4_1, &bytes, &mut back).unwrap();
        assert_eq!(fq, back);
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(GroupQuant::new(GgmlType::Q4_1, 48).is_err());
        assert!(GroupQuant::new(GgmlType::Q6_K, 32).is_err());
        assert!(GroupQuant::new(GgmlType::F16, 32).is_err());
    }
}
