//! Where each tensor of a file lives when the model runs on a device: the plan that
//! `Bloom::load` follows and `seqgpt info` / `seqgpt model check` print. On a GPU the token
//! embeddings stay in the mapping (46% of SeqGPT-560M; a lookup reads one row per token),
//! everything else is uploaded, and a tied head gets a quantized GPU copy of the embeddings
//! (decoding reads the whole head every token).

use crate::arch::Tensor;
use crate::gguf::{GgmlType, TensorInfo};

/// Where one tensor is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In the mapping, read by the CPU kernels.
    Cpu,
    /// In the mapping, rows gathered on the CPU (the token embeddings, on any device).
    CpuRows,
    /// Uploaded once in its file type.
    Gpu,
}

impl Place {
    pub fn describe(self) -> &'static str {
        match self {
            Place::Cpu => "cpu",
            Place::CpuRows => "cpu (rows gathered from the mapping)",
            Place::Gpu => "gpu",
        }
    }
}

/// The head when the file has no `output` tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TiedHead {
    /// The CPU reads `token_embd` in place.
    CpuInPlace,
    /// The GPU keeps a copy of `token_embd` in this type.
    GpuCopy(GgmlType),
}

impl TiedHead {
    pub fn describe(self) -> String {
        match self {
            TiedHead::CpuInPlace => "cpu (tied: token_embd read in place)".into(),
            TiedHead::GpuCopy(t) => format!("gpu ({} copy of the tied token_embd)", t.name()),
        }
    }
}

/// The type of a GPU head tied to embeddings of type `embd`: a quantized file's own type,
/// else q8_0 (an f16 head would be the largest upload and the most bytes read per token).
pub fn tied_head_type(embd: GgmlType) -> GgmlType {
    if embd.is_quantized() {
        embd
    } else {
        GgmlType::Q8_0
    }
}

#[derive(Debug)]
pub struct Plan<'a> {
    /// Every tensor of the file, in file order, with its place.
    pub tensors: Vec<(&'a TensorInfo, Place)>,
    /// `None` when the file has its own `output` tensor.
    pub tied_head: Option<TiedHead>,
    /// Bytes of the file's tensors uploaded (a tied head's copy not counted).
    pub gpu_bytes: u64,
}

/// The plan for `tensors` (a file's) on a GPU (`gpu`) or the CPU.
pub fn plan(tensors: &[TensorInfo], gpu: bool) -> Plan<'_> {
    let embd = Tensor::TokenEmbd.weight();
    let place = |t: &TensorInfo| match (t.name == embd, gpu) {
        (true, _) => Place::CpuRows,
        (false, true) => Place::Gpu,
        (false, false) => Place::Cpu,
    };
    let tensors: Vec<_> = tensors.iter().map(|t| (t, place(t))).collect();
    let gpu_bytes = tensors.iter().filter(|(_, p)| *p == Place::Gpu).map(|(t, _)| t.byte_len).sum();
    let has_output = tensors.iter().any(|(t, _)| t.name == Tensor::Output.weight());
    let embd_type = tensors.iter().find(|(t, _)| t.name == embd).map(|(t, _)| t.dtype);
    let tied_head = match (has_output, gpu, embd_type) {
        (true, _, _) => None,
        (false, false, _) => Some(TiedHead::CpuInPlace),
        (false, true, Some(t)) => Some(TiedHead::GpuCopy(tied_head_type(t))),
        // No embeddings: the file fails to load; the plan says nothing of a head.
        (false, true, None) => None,
    };
    Plan { tensors, tied_head, gpu_bytes }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, dtype: GgmlType, byte_len: u64) -> TensorInfo {
        TensorInfo { name: name.into(), dims: vec![], dtype, file_offset: 0, byte_len }
    }

    fn file(embd: GgmlType, output: bool) -> Vec<TensorInfo> {
        let mut t = vec![
            info("token_embd.weight", embd, 1000),
            info("token_embd_norm.weight", GgmlType::F32, 4),
            info("blk.0.attn_qkv.weight", GgmlType::Q4_0, 300),
            info("blk.0.attn_qkv.bias", GgmlType::F32, 12),
        ];
        if output {
            t.push(info("output.weight", GgmlType::Q6_K, 700));
        }
        t
    }

    #[test]
    fn on_a_gpu_the_embeddings_stay_in_the_mapping_and_the_rest_is_uploaded() {
        let f = file(GgmlType::F16, false);
        let p = plan(&f, true);
        let places: Vec<Place> = p.tensors.iter().map(|(_, p)| *p).collect();
        assert_eq!(places, [Place::CpuRows, Place::Gpu, Place::Gpu, Place::Gpu]);
        assert_eq!(p.gpu_bytes, 4 + 300 + 12);
        assert_eq!(p.tied_head, Some(TiedHead::GpuCopy(GgmlType::Q8_0)), "an f16 head becomes q8_0");
        assert_eq!(p.tied_head.unwrap().describe(), "gpu (q8_0 copy of the tied token_embd)");
    }

    #[test]
    fn a_quantized_tied_head_keeps_the_files_type() {
        for t in [GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q8_0, GgmlType::Q6_K] {
            assert_eq!(tied_head_type(t), t);
            assert_eq!(plan(&file(t, false), true).tied_head, Some(TiedHead::GpuCopy(t)));
        }
        for t in [GgmlType::F32, GgmlType::F16, GgmlType::BF16] {
            assert_eq!(tied_head_type(t), GgmlType::Q8_0, "{t:?}");
        }
    }

    #[test]
    fn on_the_cpu_everything_is_read_in_place() {
        let f = file(GgmlType::Q8_0, false);
        let p = plan(&f, false);
        let places: Vec<Place> = p.tensors.iter().map(|(_, p)| *p).collect();
        assert_eq!(places, [Place::CpuRows, Place::Cpu, Place::Cpu, Place::Cpu]);
        assert_eq!(p.gpu_bytes, 0);
        assert_eq!(p.tied_head, Some(TiedHead::CpuInPlace));
    }

    #[test]
    fn a_file_with_its_own_head_has_no_tied_copy() {
        let f = file(GgmlType::F16, true);
        let p = plan(&f, true);
        assert_eq!(p.tied_head, None);
        assert_eq!(p.gpu_bytes, 4 + 300 + 12 + 700, "the head is uploaded as any other tensor");
    }
}
