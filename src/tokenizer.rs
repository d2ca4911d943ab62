//! The tokenizer embedded in the model file (`tokenizer.huggingface.json`), with the
//! special token ids from `tokenizer.ggml.*`.

use crate::gguf::GgufFile;

#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("the model file has no tokenizer.huggingface.json (convert it with seqgpt-quantize)")]
    Missing,
    #[error("tokenizer: {0}")]
    Invalid(String),
}

pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    pub eos_id: Option<u32>,
    pub bos_id: Option<u32>,
    pub pad_id: Option<u32>,
}

impl Tokenizer {
    pub fn from_gguf(file: &GgufFile) -> Result<Self, TokenizerError> {
        let json = file.get("tokenizer.huggingface.json").and_then(|v| v.as_str()).ok_or(TokenizerError::Missing)?;
        let inner = tokenizers::Tokenizer::from_bytes(json.as_bytes()).map_err(|e| TokenizerError::Invalid(e.to_string()))?;
        let id = |k: &str| file.get(k).and_then(|v| v.as_u64()).map(|v| v as u32);
        Ok(Self {
            inner,
            eos_id: id("tokenizer.ggml.eos_token_id"),
            bos_id: id("tokenizer.ggml.bos_token_id"),
            pad_id: id("tokenizer.ggml.padding_token_id"),
        })
    }

    /// Token ids of `text` (no special tokens added: BLOOM adds none).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let enc = self.inner.encode(text, false).map_err(|e| TokenizerError::Invalid(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Text of `ids`, special tokens skipped.
    pub fn decode(&self, ids: &[u32]) -> Result<String, TokenizerError> {
        self.inner.decode(ids, true).map_err(|e| TokenizerError::Invalid(e.to_string()))
    }

    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }
}
