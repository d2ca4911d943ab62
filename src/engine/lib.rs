//! seqgpt-engine: BLOOM-family models from one GGUF file, on the CPU or a CUDA GPU.
//!
//! The inference layer of seqgpt-fast, with nothing of the daemon in it (no async runtime,
//! no D-Bus, no PDF): [`gguf`] (the mapped, validated file), [`quant`] (ggml block codecs),
//! [`arch`] (the architecture's tensor names and metadata keys, in one table), [`kernels`]
//! (CPU matrix products, attention, LayerNorm), [`model`] (BLOOM: weights, KV cache, forward;
//! the fused CUDA kernels), [`generate`] (batched decoding, beams, sampling), [`tokenizer`],
//! [`device`] (placement), [`engine`] (file + model + tokenizer), [`sysinfo`] (the machine).

pub mod arch;
pub mod device;
pub mod engine;
pub mod generate;
pub mod gguf;
pub mod kernels;
pub mod model;
pub mod quant;
pub mod sysinfo;
pub mod tokenizer;
