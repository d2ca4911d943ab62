//! The engine: a mapped model file, its model and tokenizer, and generation entry points.

use crate::generate::{beam::beam_search, Batch, GenerationConfig, Generated, Sequence};
use crate::gguf::{GgufError, GgufFile};
use crate::model::{Bloom, CpuKv, LoadError, Logits};
use crate::tokenizer::{Tokenizer, TokenizerError};
use candle_core::{DType, Device};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    File(#[from] GgufError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    #[error("inference failed: {0}")]
    Compute(#[from] candle_core::Error),
    #[error("{0}")]
    Request(String),
}

pub struct Engine {
    pub file: GgufFile,
    pub model: Bloom,
    pub tokenizer: Tokenizer,
}

impl Engine {
    /// Maps and validates `path`, then builds the model on `device` (f32 activations on
    /// the CPU, f16 on a GPU).
    pub fn open(path: impl AsRef<Path>, device: &Device) -> Result<Self, EngineError> {
        Self::open_with(path, device, CpuKv::Auto)
    }

    /// As `open`, with the CPU's key/value cache type chosen (`CpuKv`).
    pub fn open_with(path: impl AsRef<Path>, device: &Device, cpu_kv: CpuKv) -> Result<Self, EngineError> {
        let file = GgufFile::open(path)?;
        let dtype = if device.is_cpu() { DType::F32 } else { DType::F16 };
        let model = Bloom::load(&file, device, dtype, cpu_kv)?;
        let tokenizer = Tokenizer::from_gguf(&file)?;
        Ok(Self { file, model, tokenizer })
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>, EngineError> {
        let ids = self.tokenizer.encode(text)?;
        if ids.is_empty() {
            return Err(EngineError::Request("the prompt is empty".into()));
        }
        Ok(ids)
    }

    /// Generates for several prompts: one left-padded batch (or, with beams, one beam search
    /// per prompt). Results come back in prompt order.
    pub fn generate(&self, prompts: &[Vec<u32>], cfg: &GenerationConfig) -> Result<Vec<Generated>, EngineError> {
        let max_ctx = self.model.cfg.context_length;
        for p in prompts {
            if p.is_empty() {
                return Err(EngineError::Request("a prompt is empty".into()));
            }
            if p.len() + cfg.max_new_tokens > max_ctx {
                return Err(EngineError::Request(format!(
                    "prompt of {} tokens + {} new tokens exceeds the model's context of {max_ctx}",
                    p.len(),
                    cfg.max_new_tokens
                )));
            }
        }
        if cfg.num_beams > 1 {
            return prompts
                .iter()
                .enumerate()
                .map(|(i, p)| Ok(beam_search(&self.model, &self.tokenizer, i as u64, p, cfg)?))
                .collect();
        }
        let seqs = prompts.iter().enumerate().map(|(i, p)| Sequence::new(i as u64, p.clone(), cfg.clone())).collect();
        let mut batch = Batch::new();
        let mut done = batch.admit(&self.model, &self.tokenizer, seqs)?;
        while !batch.is_empty() {
            done.extend(batch.step(&self.model, &self.tokenizer)?);
        }
        done.sort_by_key(|g| g.id);
        Ok(done)
    }

    /// Logits of the last position of `ids` (f32, the whole vocabulary).
    pub fn last_logits(&self, ids: &[u32]) -> Result<Vec<f32>, EngineError> {
        if ids.is_empty() {
            return Err(EngineError::Request("no tokens".into()));
        }
        let mut cache = self.model.new_cache(1, ids.len())?;
        let logits = self.model.forward(&[ids.to_vec()], &[vec![1u8; ids.len()]], &mut cache, Logits::Last)?;
        Ok(logits.squeeze(0)?.to_vec1()?)
    }
}
