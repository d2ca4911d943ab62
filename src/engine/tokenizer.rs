//! The tokenizer embedded in the model file (`tokenizer.huggingface.json`), with the
//! special token ids from `tokenizer.ggml.*`.
//!
//! Parsing a 250k-token BPE (SeqGPT's) takes the `tokenizers` crate about a second, longer
//! than mapping and validating the model; it runs on a background thread started at open, and
//! the first call that needs the tokenizer waits for it. Model loading and everything that
//! works on token ids go ahead meanwhile.

use crate::arch::key;
use crate::gguf::GgufFile;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

#[derive(Debug, Clone, thiserror::Error)]
pub enum TokenizerError {
    #[error("the model file has no tokenizer.huggingface.json (convert it with seqgpt-quantize)")]
    Missing,
    #[error("tokenizer: {0}")]
    Invalid(String),
}

type Parsed = Result<tokenizers::Tokenizer, TokenizerError>;

pub struct Tokenizer {
    parsed: Arc<OnceLock<Parsed>>,
    loader: Mutex<Option<JoinHandle<()>>>,
    pub eos_id: Option<u32>,
    pub bos_id: Option<u32>,
    pub pad_id: Option<u32>,
    /// Entries of `tokenizer.ggml.tokens` (the embedding rows), when present.
    pub ggml_tokens: Option<usize>,
}

impl Tokenizer {
    /// Starts parsing the embedded tokenizer in the background.
    pub fn from_gguf(file: &GgufFile) -> Result<Self, TokenizerError> {
        let json = file.get(key::HF_TOKENIZER_JSON).and_then(|v| v.as_str()).ok_or(TokenizerError::Missing)?.to_string();
        let parsed = Arc::new(OnceLock::new());
        let slot = parsed.clone();
        let loader = std::thread::Builder::new()
            .name("tokenizer-load".into())
            .spawn(move || {
                let t = tokenizers::Tokenizer::from_bytes(json.as_bytes()).map_err(|e| TokenizerError::Invalid(e.to_string()));
                let _ = slot.set(t);
            })
            .map_err(|e| TokenizerError::Invalid(format!("cannot start the loader thread: {e}")))?;
        let id = |k: &str| file.get(k).and_then(|v| v.as_u64()).map(|v| v as u32);
        Ok(Self {
            parsed,
            loader: Mutex::new(Some(loader)),
            eos_id: id(key::EOS_ID),
            bos_id: id(key::BOS_ID),
            pad_id: id(key::PADDING_ID),
            ggml_tokens: file.get(key::TOKENS).and_then(|v| v.as_array()).map(<[_]>::len),
        })
    }

    /// Waits for the background parse and returns the tokenizer, or why it failed.
    pub fn ready(&self) -> Result<&tokenizers::Tokenizer, TokenizerError> {
        if self.parsed.get().is_none() {
            let handle = self.loader.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(h) = handle {
                if h.join().is_err() {
                    let _ = self.parsed.set(Err(TokenizerError::Invalid("the tokenizer parser panicked".into())));
                }
            }
        }
        match self.parsed.get() {
            Some(Ok(t)) => Ok(t),
            Some(Err(e)) => Err(e.clone()),
            None => Err(TokenizerError::Invalid("the tokenizer was not loaded".into())),
        }
    }

    /// Token ids of `text` (no special tokens added: BLOOM adds none).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let enc = self.ready()?.encode(text, false).map_err(|e| TokenizerError::Invalid(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Text of `ids`, special tokens skipped.
    pub fn decode(&self, ids: &[u32]) -> Result<String, TokenizerError> {
        self.ready()?.decode(ids, true).map_err(|e| TokenizerError::Invalid(e.to_string()))
    }

    /// Tokens the tokenizer knows (added tokens included).
    pub fn vocab_size(&self) -> Result<usize, TokenizerError> {
        Ok(self.ready()?.get_vocab_size(true))
    }
}
