//! AutoAWQ checkpoints (4-bit, GEMM layout) into the same GGUF file.
//!
//! AutoAWQ stores each quantized linear `[out, in]` as
//! - `qweight` int32 `[in, out/8]`: eight 4-bit values per int32; nibble `i` (bits 4i..4i+4)
//!   of column `c` holds output channel `8c + AWQ_ORDER[i]`, AWQ_ORDER = [0,2,4,6,1,3,5,7];
//! - `qzeros` int32 `[in/g, out/8]`: the integer zero points, packed the same way;
//! - `scales` f16 `[in/g, out]`;
//!
//! and the weight is `(q - z) * s` per group of `g` input channels. That is a Q4_1 block
//! (`x = q * d + m`) with `d = s` and `m = -z * s`: the 4-bit values are copied, `d` is
//! exact and `m` is rounded to f16, so the import reproduces AutoAWQ's dequantized weights
//! up to f16 rounding of `m`. A group of 64 or 128 becomes 2 or 4 blocks repeating (d, m).
//!
//! BLOOM checkpoints also carry `mlp.gelu_impl.scales` (AutoAWQ's `ScaledActivation`: the
//! GELU output is divided by them before dense_4h_to_h). llama.cpp's BLOOM graph has no
//! such tensor, so the scales are folded into dense_4h_to_h's columns, which are then no
//! longer on a 4-bit grid; that matrix is re-encoded in `act_scaled_type` (q8_0 by
//! default: within 1/254 of each block's largest weight; f16 reproduces it up to f16
//! rounding). Scales that are all 1 need no folding and the matrix stays exact.

use anyhow::{bail, Context};
use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device};
use half::f16;
use crate::convert::{reorder_qkv, CheckpointSource, ConvertError, Encoder, HfCheckpoint, TensorPlan, TensorSource};
use seqgpt_engine::arch::{Part, Tensor};
use seqgpt_engine::gguf::GgmlType;
use seqgpt_engine::quant::quantize_row;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// AutoAWQ's nibble order within an int32.
pub const AWQ_ORDER: [usize; 8] = [0, 2, 4, 6, 1, 3, 5, 7];

/// The quantization settings of an AutoAWQ checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct AwqCheckpointConfig {
    pub bits: u32,
    pub group_size: Option<usize>,
    pub zero_point: bool,
    pub version: String,
}

/// Reads config.json's `quantization_config` (quant_method "awq") or an older AutoAWQ's
/// quant_config.json; None when the directory is not an AutoAWQ checkpoint.
pub fn detect(dir: &Path) -> anyhow::Result<Option<AwqCheckpointConfig>> {
    let read = |p: PathBuf| -> anyhow::Result<Option<serde_json::Value>> {
        if !p.exists() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        Ok(Some(serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))?))
    };
    let qc = match read(dir.join("config.json"))?.and_then(|c| c.get("quantization_config").cloned()) {
        Some(q) if q.get("quant_method").and_then(|m| m.as_str()) == Some("awq") => q,
        Some(_) => return Ok(None),
        None => match read(dir.join("quant_config.json"))? {
            Some(q) => q,
            None => return Ok(None),
        },
    };
    let int = |keys: &[&str]| keys.iter().find_map(|k| qc.get(*k).and_then(|v| v.as_i64()));
    let group = int(&["group_size", "q_group_size"]).unwrap_or(128);
    Ok(Some(AwqCheckpointConfig {
        bits: int(&["bits", "w_bit"]).unwrap_or(4) as u32,
        group_size: (group > 0).then_some(group as usize),
        zero_point: qc.get("zero_point").and_then(|v| v.as_bool()).unwrap_or(true),
        version: qc.get("version").and_then(|v| v.as_str()).unwrap_or("gemm").to_ascii_lowercase(),
    }))
}

/// One quantized linear, unpacked: `[out, in]` 4-bit values, `[out, in/g]` zeros and scales.
#[derive(Debug, Clone)]
pub struct QLinear {
    pub out: usize,
    pub inp: usize,
    pub group: usize,
    pub q: Vec<u8>,
    pub z: Vec<u8>,
    pub s: Vec<f32>,
}

impl QLinear {
    /// AutoAWQ's dequantization `(q - z) * s`, `[out, in]`.
    pub fn dequantize(&self) -> Vec<f32> {
        let ng = self.inp / self.group;
        let mut w = vec![0f32; self.out * self.inp];
        for o in 0..self.out {
            for k in 0..self.inp {
                let g = o * ng + k / self.group;
                w[o * self.inp + k] = (self.q[o * self.inp + k] as f32 - self.z[g] as f32) * self.s[g];
            }
        }
        w
    }

    /// Row `o` as Q4_1 blocks: `d = s`, `m = -z * s`, the 4-bit values as they are.
    pub fn q4_1_row(&self, o: usize, out: &mut Vec<u8>) {
        let ng = self.inp / self.group;
        for b in 0..self.inp / 32 {
            let g = o * ng + b * 32 / self.group;
            let (s, z) = (self.s[g], self.z[g] as f32);
            out.extend_from_slice(&f16::from_f32(s).to_le_bytes());
            out.extend_from_slice(&f16::from_f32(-z * s).to_le_bytes());
            let q = &self.q[o * self.inp + b * 32..][..32];
            for j in 0..16 {
                out.push(q[j] | (q[j + 16] << 4));
            }
        }
    }
}

/// Unpacks AutoAWQ's packed int32 `[rows, cols/8]` into `[cols][rows]` 4-bit values
/// (transposed: AutoAWQ's rows are input channels or groups, ours are output channels).
pub fn unpack_transposed(packed: &[i32], rows: usize, cols: usize) -> Vec<u8> {
    let mut out = vec![0u8; rows * cols];
    for r in 0..rows {
        for c in 0..cols / 8 {
            let word = packed[r * (cols / 8) + c] as u32;
            for (i, &ch) in AWQ_ORDER.iter().enumerate() {
                out[(c * 8 + ch) * rows + r] = ((word >> (4 * i)) & 0xf) as u8;
            }
        }
    }
    out
}

/// The checkpoint's quantized tensors.
pub struct AwqTensors {
    st: MmapedSafetensors,
    names: Vec<String>,
    cfg: AwqCheckpointConfig,
}

impl AwqTensors {
    pub fn open(dir: &Path, cfg: AwqCheckpointConfig) -> anyhow::Result<Self> {
        if cfg.bits != 4 || !cfg.zero_point || cfg.version != "gemm" {
            bail!(
                "AutoAWQ checkpoint with bits={}, zero_point={}, version={}: only 4-bit GEMM with zero points is supported",
                cfg.bits,
                cfg.zero_point,
                cfg.version
            );
        }
        let index = dir.join("model.safetensors.index.json");
        let files: Vec<PathBuf> = if index.exists() {
            let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&index)?)?;
            let mut f: Vec<PathBuf> = v["weight_map"]
                .as_object()
                .context("index without weight_map")?
                .values()
                .filter_map(|f| f.as_str().map(|f| dir.join(f)))
                .collect();
            f.sort();
            f.dedup();
            f
        } else {
            vec![dir.join("model.safetensors")]
        };
        // SAFETY: read-only mapping of checkpoint files that we do not modify.
        let st = unsafe { MmapedSafetensors::multi(&files) }.context("mapping the AutoAWQ safetensors")?;
        let names = st.tensors().into_iter().map(|(n, _)| n).collect();
        Ok(Self { st, names, cfg })
    }

    fn full_name(&self, name: &str) -> Option<&str> {
        let prefixed = format!("transformer.{name}");
        self.names.iter().find(|n| *n == name || **n == prefixed).map(String::as_str)
    }

    pub fn has(&self, name: &str) -> bool {
        self.full_name(name).is_some()
    }

    fn load(&self, name: &str, dtype: DType, shape: &[usize]) -> anyhow::Result<candle_core::Tensor> {
        let full = self.full_name(name).with_context(|| format!("the AutoAWQ checkpoint lacks {name}"))?;
        let t = self.st.load(full, &Device::Cpu)?;
        if t.dims() != shape {
            bail!("{name}: shape {:?}, expected {shape:?}", t.dims());
        }
        Ok(t.to_dtype(dtype)?)
    }

    /// The quantized linear `prefix` (normalized HF name without `.qweight`), `[out, in]`.
    pub fn linear(&self, prefix: &str, out: usize, inp: usize) -> anyhow::Result<QLinear> {
        let group = self.cfg.group_size.unwrap_or(inp);
        if inp % group != 0 || group % 32 != 0 || out % 8 != 0 {
            bail!("{prefix}: [{out}, {inp}] with group size {group}: groups must be whole multiples of 32");
        }
        let ng = inp / group;
        let qweight: Vec<i32> = self.load(&format!("{prefix}.qweight"), DType::I32, &[inp, out / 8])?.flatten_all()?.to_vec1()?;
        let qzeros: Vec<i32> = self.load(&format!("{prefix}.qzeros"), DType::I32, &[ng, out / 8])?.flatten_all()?.to_vec1()?;
        let scales: Vec<f32> = self.load(&format!("{prefix}.scales"), DType::F32, &[ng, out])?.flatten_all()?.to_vec1()?;
        let mut s = vec![0f32; out * ng];
        for g in 0..ng {
            for o in 0..out {
                s[o * ng + g] = scales[g * out + o];
            }
        }
        Ok(QLinear { out, inp, group, q: unpack_transposed(&qweight, inp, out), z: unpack_transposed(&qzeros, ng, out), s })
    }

    /// `mlp.gelu_impl.scales` of block `i`, None when absent or all ones.
    pub fn act_scales(&self, i: usize, ff: usize) -> anyhow::Result<Option<Vec<f32>>> {
        let name = format!("h.{i}.mlp.gelu_impl.scales");
        if !self.has(&name) {
            return Ok(None);
        }
        let v: Vec<f32> = self.load(&name, DType::F32, &[ff])?.to_vec1()?;
        Ok(v.iter().any(|&x| x != 1.0).then_some(v))
    }
}

/// The HF linear and shape behind a GGUF matrix name, for block matrices.
fn linear_of(plan: &TensorPlan) -> Option<(usize, String)> {
    if !plan.tensor.in_block() || plan.part != Part::Weight || !plan.is_matrix {
        return None;
    }
    let prefix = plan.source.strip_suffix(".weight")?.to_string();
    Some((plan.block, prefix))
}

/// Yields f32 tensors: AutoAWQ's dequantized weights (QKV rows reordered to [Q; K; V],
/// GELU scales folded into dense_4h_to_h), everything else from the checkpoint.
pub struct AutoAwqSource<'a> {
    pub ckpt: &'a HfCheckpoint,
    pub awq: Rc<AwqTensors>,
}

impl TensorSource for AutoAwqSource<'_> {
    fn tensor(&mut self, plan: &TensorPlan) -> Result<Vec<f32>, ConvertError> {
        let Some((i, prefix)) = linear_of(plan) else {
            return CheckpointSource { ckpt: self.ckpt }.tensor(plan);
        };
        let err = |e: anyhow::Error| ConvertError::Weights(format!("{}: {e:#}", plan.name));
        let (out, inp) = (plan.shape[0], plan.shape[1]);
        let mut w = self.awq.linear(&prefix, out, inp).map_err(err)?.dequantize();
        if plan.tensor == Tensor::FfnDown {
            if let Some(a) = self.awq.act_scales(i, inp).map_err(err)? {
                for row in w.chunks_mut(inp) {
                    row.iter_mut().zip(&a).for_each(|(v, a)| *v /= a);
                }
            }
        }
        if plan.tensor == Tensor::AttnQkv {
            let c = &self.ckpt.config;
            w = reorder_qkv(&w, c.n_head, c.hidden / c.n_head, inp);
        }
        Ok(w)
    }
}

/// Writes AutoAWQ's 4-bit matrices as exact Q4_1 (from the packed values, not from f32),
/// dense_4h_to_h with folded GELU scales in `act_scaled_type`, the embedding in
/// `embd_type`, vectors in f32.
pub struct AutoAwqEncoder<'a> {
    pub ckpt: &'a HfCheckpoint,
    pub awq: Rc<AwqTensors>,
    pub embd_type: GgmlType,
    pub act_scaled_type: GgmlType,
}

impl AutoAwqEncoder<'_> {
    fn folded(&self, plan: &TensorPlan) -> bool {
        match linear_of(plan) {
            Some((i, _)) if plan.tensor == Tensor::FfnDown => {
                self.awq.act_scales(i, plan.shape[1]).map(|a| a.is_some()).unwrap_or(true)
            }
            _ => false,
        }
    }
}

impl Encoder for AutoAwqEncoder<'_> {
    fn dtype(&self, plan: &TensorPlan) -> GgmlType {
        let want = match (plan.is_matrix, linear_of(plan).is_some()) {
            (false, _) => return GgmlType::F32,
            (true, true) if self.folded(plan) => self.act_scaled_type,
            (true, true) => return GgmlType::Q4_1,
            (true, false) => self.embd_type,
        };
        if plan.shape[1] % want.block_elems() == 0 {
            want
        } else {
            GgmlType::F16
        }
    }

    fn encode(&mut self, plan: &TensorPlan, data: &[f32]) -> Result<Vec<u8>, ConvertError> {
        let dtype = self.dtype(plan);
        let mut out = Vec::new();
        if let (Some((_, prefix)), GgmlType::Q4_1, false) = (linear_of(plan), dtype, self.folded(plan)) {
            let (o, inp) = (plan.shape[0], plan.shape[1]);
            let ql = self.awq.linear(&prefix, o, inp).map_err(|e| ConvertError::Weights(format!("{}: {e:#}", plan.name)))?;
            let rows: Vec<usize> = if plan.tensor == Tensor::AttnQkv {
                let c = &self.ckpt.config;
                let rows: Vec<f32> = (0..o).map(|r| r as f32).collect();
                reorder_qkv(&rows, c.n_head, c.hidden / c.n_head, 1).into_iter().map(|r| r as usize).collect()
            } else {
                (0..o).collect()
            };
            for r in rows {
                ql.q4_1_row(r, &mut out);
            }
            return Ok(out);
        }
        let cols = *plan.shape.last().unwrap_or(&1);
        for row in data.chunks(cols) {
            quantize_row(dtype, row, &mut out).map_err(|e| ConvertError::Other(format!("{}: {e}", plan.name)))?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpacking_follows_awq_order() {
        // One input row, 8 output channels with values 1..=8: AutoAWQ packs channel
        // AWQ_ORDER[i] into nibble i.
        let vals = [1u32, 2, 3, 4, 5, 6, 7, 8];
        let mut word = 0u32;
        for (i, &ch) in AWQ_ORDER.iter().enumerate() {
            word |= vals[ch] << (4 * i);
        }
        let q = unpack_transposed(&[word as i32], 1, 8);
        assert_eq!(q, vec![1, 2, 3, 4, 5, 6, 7, 8]);
        // The top nibble set makes the int32 negative; it still unpacks.
        let q = unpack_transposed(&[0xf000_0000u32 as i32], 1, 8);
        assert_eq!(q[7], 15);
    }

    #[test]
    fn q4_1_rows_decode_to_autoawq_values() {
        let (out, inp, group) = (2, 64, 64);
        let q: Vec<u8> = (0..out * inp).map(|i| (i * 7 % 16) as u8).collect();
        let s = vec![f16::from_f32(0.0125).to_f32(), f16::from_f32(0.3).to_f32()];
        let ql = QLinear { out, inp, group, q, z: vec![3, 9], s };
        let want = ql.dequantize();
        let mut bytes = Vec::new();
        for o in 0..out {
            ql.q4_1_row(o, &mut bytes);
        }
        let mut got = vec![0f32; out * inp];
        seqgpt_engine::quant::dequantize_row(GgmlType::Q4_1, &bytes, &mut got).unwrap();
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            let o = i / inp;
            let tol = (ql.z[o] as f32 * ql.s[o]).abs() / 2048.0 + 1e-7;
            assert!((a - b).abs() <= tol, "{i}: {a} vs {b}");
        }
    }
}
