//! The BLOOM hyper-parameters, read from a GGUF file's `bloom.*` keys.

use crate::arch::{key, Tensor, ARCH};
use crate::gguf::{GgufError, GgufFile};

#[derive(Debug, Clone, PartialEq)]
pub struct BloomConfig {
    pub hidden: usize,
    pub n_layer: usize,
    pub n_head: usize,
    pub ffn: usize,
    pub vocab: usize,
    pub context_length: usize,
    pub layer_norm_eps: f32,
}

impl BloomConfig {
    pub fn head_dim(&self) -> usize {
        self.hidden / self.n_head
    }

    /// Reads the `bloom.*` keys; the vocabulary size comes from `token_embd`'s rows.
    pub fn from_gguf(file: &GgufFile) -> Result<Self, GgufError> {
        let arch = file.get_str(key::ARCHITECTURE)?;
        if arch != ARCH {
            return Err(GgufError::Metadata {
                key: key::ARCHITECTURE.into(),
                problem: format!("'{arch}' is not a BLOOM model (this engine runs the bloom architecture)"),
            });
        }
        let usize_key = |k: &str| -> Result<usize, GgufError> {
            let v = file.get_u64(k)?;
            usize::try_from(v).ok().filter(|&v| v > 0 && v <= 1 << 24).ok_or_else(|| GgufError::Metadata {
                key: k.into(),
                problem: format!("{v} is out of range"),
            })
        };
        let embd = file.require(&Tensor::TokenEmbd.weight())?;
        let cfg = Self {
            hidden: usize_key(key::EMBEDDING_LENGTH)?,
            n_layer: usize_key(key::BLOCK_COUNT)?,
            n_head: usize_key(key::HEAD_COUNT)?,
            ffn: usize_key(key::FEED_FORWARD_LENGTH)?,
            vocab: embd.dims.get(1).copied().unwrap_or(0) as usize,
            context_length: usize_key(key::CONTEXT_LENGTH)?,
            layer_norm_eps: file.get_f64(key::LAYER_NORM_EPSILON)? as f32,
        };
        if cfg.hidden % cfg.n_head != 0 {
            return Err(GgufError::Metadata {
                key: key::HEAD_COUNT.into(),
                problem: format!("{} heads do not divide the hidden size {}", cfg.n_head, cfg.hidden),
            });
        }
        if !(cfg.layer_norm_eps.is_finite() && cfg.layer_norm_eps > 0.0) {
            return Err(GgufError::Metadata {
                key: key::LAYER_NORM_EPSILON.into(),
                problem: format!("{} is not a positive number", cfg.layer_norm_eps),
            });
        }
        Ok(cfg)
    }
}
