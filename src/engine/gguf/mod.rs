//! The GGUF v3 model file: one file holding metadata, the tokenizer and every tensor.
//!
//! `reader` maps a file and validates it before anything touches tensor bytes;
//! `writer` streams a file out tensor by tensor (so converters stay memory-bounded).
//! docs/FORMAT.md describes the layout and the keys this project writes.

mod reader;
mod value;
mod writer;

pub use reader::{GgufFile, TensorInfo};
pub use value::{MetadataValue, ValueType};
pub use writer::{GgufWriter, TensorSpec};

/// "GGUF" read as a little-endian u32.
pub const GGUF_MAGIC: u32 = 0x4655_4747;
pub const GGUF_VERSION: u32 = 3;
/// Alignment of the data section and of every tensor in it, unless `general.alignment` says otherwise.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// Errors from reading or writing a GGUF file. Every variant names what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("cannot open model file {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("not a GGUF file (magic {0:#010x}, expected 'GGUF')")]
    BadMagic(u32),
    #[error("unsupported GGUF version {0} (this engine reads version 2 and 3)")]
    BadVersion(u32),
    #[error("model file is truncated: {0}")]
    Truncated(String),
    #[error("model file is corrupt: {0}")]
    Corrupt(String),
    #[error("tensor '{name}': {problem}")]
    Tensor { name: String, problem: String },
    #[error("metadata key '{key}': {problem}")]
    Metadata { key: String, problem: String },
    #[error("write error: {0}")]
    Write(#[from] std::io::Error),
}

/// The ggml tensor types this engine reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgmlType {
    F32,
    F16,
    BF16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    #[allow(non_camel_case_types)]
    Q6_K,
}

impl GgmlType {
    /// Every type, in ggml's id order.
    pub const ALL: [GgmlType; 9] = [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
        GgmlType::Q6_K,
        GgmlType::BF16,
    ];

    /// The type id stored in the file (ggml's `enum ggml_type`).
    pub fn id(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::Q4_0 => 2,
            GgmlType::Q4_1 => 3,
            GgmlType::Q5_0 => 6,
            GgmlType::Q5_1 => 7,
            GgmlType::Q8_0 => 8,
            GgmlType::Q6_K => 14,
            GgmlType::BF16 => 30,
        }
    }

    pub fn from_id(id: u32) -> Option<Self> {
        Some(match id {
            0 => GgmlType::F32,
            1 => GgmlType::F16,
            2 => GgmlType::Q4_0,
            3 => GgmlType::Q4_1,
            6 => GgmlType::Q5_0,
            7 => GgmlType::Q5_1,
            8 => GgmlType::Q8_0,
            14 => GgmlType::Q6_K,
            30 => GgmlType::BF16,
            _ => return None,
        })
    }

    /// Elements per block.
    pub fn block_elems(self) -> usize {
        match self {
            GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => 1,
            GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q5_0 | GgmlType::Q5_1 | GgmlType::Q8_0 => 32,
            GgmlType::Q6_K => 256,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            GgmlType::F32 => 4,
            GgmlType::F16 | GgmlType::BF16 => 2,
            GgmlType::Q4_0 => 18,
            GgmlType::Q4_1 => 20,
            GgmlType::Q5_0 => 22,
            GgmlType::Q5_1 => 24,
            GgmlType::Q8_0 => 34,
            GgmlType::Q6_K => 210,
        }
    }

    /// Bytes taken by `elems` elements, or None when `elems` is not a whole number of
    /// blocks or the size overflows.
    pub fn bytes_for(self, elems: u64) -> Option<u64> {
        let be = self.block_elems() as u64;
        if elems % be != 0 {
            return None;
        }
        (elems / be).checked_mul(self.block_bytes() as u64)
    }

    pub fn name(self) -> &'static str {
        match self {
            GgmlType::F32 => "f32",
            GgmlType::F16 => "f16",
            GgmlType::BF16 => "bf16",
            GgmlType::Q4_0 => "q4_0",
            GgmlType::Q4_1 => "q4_1",
            GgmlType::Q5_0 => "q5_0",
            GgmlType::Q5_1 => "q5_1",
            GgmlType::Q8_0 => "q8_0",
            GgmlType::Q6_K => "q6_K",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name().eq_ignore_ascii_case(name))
    }

    pub fn is_quantized(self) -> bool {
        self.block_elems() > 1
    }
}

impl std::fmt::Display for GgmlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// llama.cpp's `general.file_type` (enum llama_ftype) for a model whose weights are mostly `t`.
pub fn file_type_for(t: GgmlType) -> u32 {
    match t {
        GgmlType::F32 => 0,
        GgmlType::F16 => 1,
        GgmlType::Q4_0 => 2,
        GgmlType::Q4_1 => 3,
        GgmlType::Q8_0 => 7,
        GgmlType::Q5_0 => 8,
        GgmlType::Q5_1 => 9,
        GgmlType::Q6_K => 18,
        GgmlType::BF16 => 32,
    }
}
