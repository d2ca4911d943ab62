//! seqgpt-quantize: BLOOM checkpoints into GGUF files this engine and llama.cpp both run.
//!
//! - [`convert`]: Hugging Face checkpoints (safetensors, shards, PyTorch `.bin`) as tensor
//!   sources, the tokenizer into GGUF metadata, and the plain conversion;
//! - [`pipeline`]: the methods (plain conversion, group RTN, calibrated AWQ, AutoAWQ
//!   import) on the converter's `TensorSource` / `Encoder` seams;
//! - [`calib`]: calibration text (shipped Vim tutor in 8 languages, or `--calib`), the
//!   held-out split, token samples;
//! - [`forward`] and [`activations`]: the f32 BLOOM block on candle CPU tensors, run layer
//!   by layer over the calibration samples to collect each linear layer's inputs;
//! - [`awq`]: scale search, folding, clipping search; [`rtn`]: group quantization into
//!   ggml blocks; [`autoawq`]: AutoAWQ's GEMM checkpoints;
//! - [`eval`]: KL / top-1 / logit metrics, through the engine or simulated in memory;
//! - [`progress`]: progress bar with ETA, peak memory.
//!
//! docs/QUANTIZATION.md describes the choices and the measurements behind them.

pub mod activations;
pub mod convert;
pub mod autoawq;
pub mod awq;
pub mod calib;
pub mod eval;
pub mod forward;
pub mod pipeline;
pub mod progress;
pub mod rtn;
