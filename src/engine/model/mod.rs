//! The model: BLOOM-family transformers loaded from a GGUF file.

pub mod bloom;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod config;
mod block_ops;
mod cpu_attention;
pub mod fused;
pub mod kv_cache;
pub mod layers;
pub mod placement;
pub mod weights;

pub use bloom::{Bloom, CpuKv, Logits, LoadError};
pub use config::BloomConfig;
pub use fused::path::fused_kernels_enabled;
pub use kv_cache::KvCache;
