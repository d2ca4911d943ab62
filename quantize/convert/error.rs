//! What can go wrong converting a checkpoint: reading it, its config, tokenizer or weights,
//! or writing the GGUF file.

use seqgpt_engine::gguf::GgufError;

#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    #[error("config: {0}")]
    Config(String),
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("weights: {0}")]
    Weights(String),
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error("{0}")]
    Other(String),
}
