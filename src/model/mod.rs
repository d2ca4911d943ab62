//! The model: BLOOM-family transformers loaded from a GGUF file.

pub mod bloom;
pub mod config;
pub mod kv_cache;
pub mod layers;
pub mod weights;

pub use bloom::{Bloom, Logits, LoadError};
pub use config::BloomConfig;
pub use kv_cache::KvCache;
