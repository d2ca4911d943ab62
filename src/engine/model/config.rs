//! The BLOOM hyper-parameters, read from a GGUF file's `bloom.*` keys.

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
        let arch = file.get_str("general.architecture")?;
        if arch != "bloom" {
            return Err(GgufError::Metadata {
                key: "general.architecture".into(),
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
        let embd = file.require("token_embd.weight")?;
        let cfg = Self {
            hidden: usize_key("bloom.embedding_length")?,
            n_layer: usize_key("bloom.block_count")?,
            n_head: usize_key("bloom.attention.head_count")?,
            ffn: usize_key("bloom.feed_forward_length")?,
            vocab: embd.dims.get(1).copied().unwrap_or(0) as usize,
            context_length: usize_key("bloom.context_length")?,
            layer_norm_eps: file.get_f64("bloom.attention.layer_norm_epsilon")? as f32,
        };
        if cfg.hidden % cfg.n_head != 0 {
            return Err(GgufError::Metadata {
                key: "bloom.attention.head_count".into(),
                problem: format!("{} heads do not divide the hidden size {}", cfg.n_head, cfg.hidden),
            });
        }
        if !(cfg.layer_norm_eps.is_finite() && cfg.layer_norm_eps > 0.0) {
            return Err(GgufError::Metadata {
                key: "bloom.attention.layer_norm_epsilon".into(),
                problem: format!("{} is not a positive number", cfg.layer_norm_eps),
            });
        }
        Ok(cfg)
    }
}
