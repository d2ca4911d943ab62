//! Hugging Face BLOOM checkpoint -> one GGUF file with llama.cpp's BLOOM names.
//!
//! The pipeline has two seams so that quantizers slot in without touching the rest:
//! - [`TensorSource`] yields each GGUF tensor as f32 (the plain source reads the checkpoint
//!   and reorders QKV; AWQ wraps it and rescales weights layer by layer);
//! - [`Encoder`] picks each tensor's ggml type and encodes it (the plain encoder rounds to
//!   the nearest grid point; AWQ supplies its clipped ranges).
//! Tensors are produced, encoded and written one at a time: memory stays bounded by the
//! largest tensor.

pub mod checkpoint;
mod error;
pub mod tokenizer_meta;

use seqgpt_engine::gguf::{file_type_for, GgmlType, GgufWriter, MetadataValue, TensorSpec};
use seqgpt_engine::arch::{self, key, Part, Tensor, ARCH};
use seqgpt_engine::quant::quantize_row;
pub use checkpoint::{HfBloomConfig, HfCheckpoint};
pub use error::ConvertError;
use std::path::Path;

/// One tensor of the output file: its GGUF name, row-major shape and where it comes from.
#[derive(Debug, Clone)]
pub struct TensorPlan {
    pub name: String,
    pub shape: Vec<usize>,
    /// The checkpoint tensor (normalized name) it is made from.
    pub source: String,
    /// A 2-D weight matrix (quantizable), as opposed to a norm or bias vector.
    pub is_matrix: bool,
    /// What it is: the architecture's tensor, its block (0 outside the blocks) and part.
    pub tensor: Tensor,
    pub block: usize,
    pub part: Part,
}

/// The tensors of a BLOOM GGUF file, in file order.
pub fn bloom_plan(cfg: &HfBloomConfig, has_separate_head: bool) -> Vec<TensorPlan> {
    let h = cfg.hidden;
    let mut plan = Vec::new();
    // The weight's shape, [out, in] for a matrix; a bias is [out].
    let shape = |t: Tensor| -> Vec<usize> {
        match t {
            Tensor::TokenEmbd | Tensor::Output => vec![cfg.vocab_size, h],
            Tensor::AttnQkv => vec![3 * h, h],
            Tensor::AttnOutput => vec![h, h],
            Tensor::FfnUp => vec![4 * h, h],
            Tensor::FfnDown => vec![h, 4 * h],
            Tensor::TokenEmbdNorm | Tensor::AttnNorm | Tensor::FfnNorm | Tensor::OutputNorm => vec![h],
        }
    };
    let mut add_tensor = |t: Tensor, block: usize| {
        for &part in t.parts() {
            let shape = if part == Part::Weight { shape(t) } else { vec![shape(t)[0]] };
            let (name, source, is_matrix) = (t.name(block, part), t.hf_name(block, part), shape.len() == 2);
            plan.push(TensorPlan { name, shape, source, is_matrix, tensor: t, block, part });
        }
    };
    add_tensor(Tensor::TokenEmbd, 0);
    add_tensor(Tensor::TokenEmbdNorm, 0);
    for i in 0..cfg.n_layer {
        for t in arch::BLOCK {
            add_tensor(t, i);
        }
    }
    add_tensor(Tensor::OutputNorm, 0);
    if has_separate_head {
        add_tensor(Tensor::Output, 0);
    }
    plan
}

/// Produces each planned tensor as f32 values (row-major).
pub trait TensorSource {
    fn tensor(&mut self, plan: &TensorPlan) -> Result<Vec<f32>, ConvertError>;
}

/// Chooses each tensor's type and encodes it.
pub trait Encoder {
    fn dtype(&self, plan: &TensorPlan) -> GgmlType;
    fn encode(&mut self, plan: &TensorPlan, data: &[f32]) -> Result<Vec<u8>, ConvertError> {
        let dtype = self.dtype(plan);
        let row = *plan.shape.last().unwrap_or(&1);
        let mut out = Vec::new();
        for chunk in data.chunks(row) {
            quantize_row(dtype, chunk, &mut out).map_err(|e| ConvertError::Other(format!("{}: {e}", plan.name)))?;
        }
        Ok(out)
    }
}

/// Reads tensors from the checkpoint, reordering BLOOM's fused QKV from its per-head
/// `(n_head, 3, head_dim)` layout to `[Q; K; V]` as llama.cpp's converter does.
pub struct CheckpointSource<'a> {
    pub ckpt: &'a HfCheckpoint,
}

impl TensorSource for CheckpointSource<'_> {
    fn tensor(&mut self, plan: &TensorPlan) -> Result<Vec<f32>, ConvertError> {
        let t = self.ckpt.load(&plan.source, &plan.shape)?;
        let wrap = |e: candle_core::Error| ConvertError::Weights(format!("{}: {e}", plan.name));
        let data: Vec<f32> = t.flatten_all().and_then(|t| t.to_vec1()).map_err(wrap)?;
        if plan.tensor == Tensor::AttnQkv {
            let cfg = &self.ckpt.config;
            Ok(reorder_qkv(&data, cfg.n_head, cfg.hidden / cfg.n_head, *plan.shape.get(1).unwrap_or(&1)))
        } else {
            Ok(data)
        }
    }
}

/// Rows `(head, part, d)` -> `(part, head, d)`; `row_len` is 1 for the bias.
pub fn reorder_qkv(data: &[f32], n_head: usize, head_dim: usize, row_len: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(data.len());
    for part in 0..3 {
        for head in 0..n_head {
            let start = ((head * 3 + part) * head_dim) * row_len;
            out.extend_from_slice(&data[start..start + head_dim * row_len]);
        }
    }
    out
}

/// The plain encoder: matrices in `wtype` (the embedding in `embd_type`), vectors in f32
/// (as llama.cpp keeps norms and biases).
pub struct TypePlan {
    pub wtype: GgmlType,
    pub embd_type: GgmlType,
}

impl Encoder for TypePlan {
    fn dtype(&self, plan: &TensorPlan) -> GgmlType {
        let want = match (plan.is_matrix, plan.tensor) {
            (false, _) => return GgmlType::F32,
            (true, Tensor::TokenEmbd | Tensor::Output) => self.embd_type,
            (true, _) => self.wtype,
        };
        // A row that is not whole blocks cannot be block-quantized: keep it f16.
        if plan.shape[1] % want.block_elems() != 0 {
            GgmlType::F16
        } else {
            want
        }
    }
}

/// General and architecture metadata for a BLOOM file.
pub fn bloom_metadata(cfg: &HfBloomConfig, file_type: GgmlType, name: &str) -> Vec<(String, MetadataValue)> {
    let u = |v: usize| MetadataValue::U32(v as u32);
    let mut meta = vec![
        (key::ARCHITECTURE.to_string(), ARCH.into()),
        (key::NAME.to_string(), name.into()),
        (key::FILE_TYPE.to_string(), MetadataValue::U32(file_type_for(file_type))),
        (key::CONTEXT_LENGTH.to_string(), u(cfg.context_length)),
        (key::EMBEDDING_LENGTH.to_string(), u(cfg.hidden)),
        (key::FEED_FORWARD_LENGTH.to_string(), u(4 * cfg.hidden)),
        (key::BLOCK_COUNT.to_string(), u(cfg.n_layer)),
        (key::HEAD_COUNT.to_string(), u(cfg.n_head)),
        (key::HEAD_COUNT_KV.to_string(), u(cfg.n_head)),
        (key::LAYER_NORM_EPSILON.to_string(), MetadataValue::F32(cfg.layer_norm_eps as f32)),
    ];
    if file_type.is_quantized() {
        meta.push((key::QUANTIZATION_VERSION.to_string(), MetadataValue::U32(2)));
    }
    meta
}

/// What a conversion wrote.
#[derive(Debug, Clone)]
pub struct ConvertSummary {
    pub tensors: usize,
    pub bytes: u64,
}

/// Writes `out` from `ckpt`, pulling tensors from `source` and encoding them with `encoder`.
/// `progress(done, total)` is called after each tensor. The file appears atomically.
pub fn write_gguf(
    ckpt: &HfCheckpoint,
    out: &Path,
    source: &mut dyn TensorSource,
    encoder: &mut dyn Encoder,
    extra_metadata: Vec<(String, MetadataValue)>,
    mut progress: impl FnMut(usize, usize),
) -> Result<ConvertSummary, ConvertError> {
    let cfg = &ckpt.config;
    let separate_head = ckpt.has(&Tensor::Output.hf_name(0, Part::Weight)) && !cfg.tie_word_embeddings;
    let plan = bloom_plan(cfg, separate_head);
    let main_type = plan
        .iter()
        .find(|p| p.name == Tensor::AttnQkv.name(0, Part::Weight))
        .map_or(GgmlType::F32, |p| encoder.dtype(p));
    let name = cfg
        .name
        .clone()
        .or_else(|| ckpt.dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "bloom".into());
    let mut meta = bloom_metadata(cfg, main_type, &name);
    meta.extend(tokenizer_meta::tokenizer_metadata(ckpt, cfg.vocab_size)?);
    meta.extend(extra_metadata);

    let specs: Vec<TensorSpec> = plan.iter().map(|p| TensorSpec::new(&p.name, &p.shape, encoder.dtype(p))).collect();
    let tmp = out.with_extension("gguf.partial");
    let io = |e| ConvertError::Io(tmp.display().to_string(), e);
    let file = std::fs::File::create(&tmp).map_err(io)?;
    let result = (|| {
        let mut w = GgufWriter::new(std::io::BufWriter::with_capacity(1 << 20, file), &meta, specs)?;
        for (i, p) in plan.iter().enumerate() {
            let data = source.tensor(p)?;
            let bytes = encoder.encode(p, &data)?;
            w.write_tensor(&p.name, &bytes)?;
            progress(i + 1, plan.len());
        }
        let buf = w.finish()?;
        let file = buf.into_inner().map_err(|e| ConvertError::Io(tmp.display().to_string(), e.into_error()))?;
        file.sync_all().map_err(io)?;
        Ok::<_, ConvertError>(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, out).map_err(|e| ConvertError::Io(out.display().to_string(), e))?;
    let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    Ok(ConvertSummary { tensors: plan.len(), bytes })
}

/// Converts with plain rounding: matrices in `wtype`, the embedding in `embd_type`.
pub fn convert_plain(
    model_dir: &Path,
    out: &Path,
    wtype: GgmlType,
    embd_type: GgmlType,
    progress: impl FnMut(usize, usize),
) -> Result<ConvertSummary, ConvertError> {
    let ckpt = HfCheckpoint::open(model_dir)?;
    let mut source = CheckpointSource { ckpt: &ckpt };
    let mut encoder = TypePlan { wtype, embd_type };
    write_gguf(&ckpt, out, &mut source, &mut encoder, Vec::new(), progress)
}

#[cfg(test)]
mod tests {
    use super::reorder_qkv;

    #[test]
    fn qkv_reorder_groups_parts() {
        // 2 heads, head_dim 1, rows of length 1: [q0 k0 v0 q1 k1 v1] -> [q0 q1 k0 k1 v0 v1]
        let data = [0.0, 1.0, 2.0, 10.0, 11.0, 12.0];
        assert_eq!(reorder_qkv(&data, 2, 1, 1), vec![0.0, 10.0, 1.0, 11.0, 2.0, 12.0]);
    }
}
