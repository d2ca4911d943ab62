//! The model: BLOOM-family transformers loaded from a GGUF file.

pub mod bloom;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod config;
mod cpu_attention;
pub mod kv_cache;
pub mod layers;
pub mod weights;

pub use bloom::{Bloom, CpuKv, Logits, LoadError};
pub use config::BloomConfig;
pub use kv_cache::KvCache;

/// The fused CUDA kernels are on unless `SEQGPT_CUDA_FUSED=0` (then candle's own ops run
/// everything: slower, and the reference the fused path is checked against).
pub fn fused_kernels_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("SEQGPT_CUDA_FUSED").map_or(true, |v| v != "0"))
}
