//! Text generation: greedy and sampled decoding of batches (with per-sequence finish and
//! continuous batching), and beam search.

pub mod batch;
pub mod beam;
pub mod sampler;

pub use batch::{Batch, Sequence};
pub use sampler::Sampling;

/// How to generate one sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationConfig {
    pub max_new_tokens: usize,
    pub sampling: Sampling,
    /// 1.0 = off; SeqGPT's own configuration uses 2.0.
    pub repetition_penalty: f32,
    pub stop_on_eos: bool,
    /// Generation ends when the text contains one of these (which is cut off).
    pub stop_strings: Vec<String>,
    /// 1 = no beam search.
    pub num_beams: usize,
    pub length_penalty: f32,
    /// Beam search ends once `num_beams` hypotheses are finished.
    pub early_stopping: bool,
}

impl Default for GenerationConfig {
    fn default() -> Self {
        Self {
            max_new_tokens: 64,
            sampling: Sampling::Greedy,
            repetition_penalty: 1.0,
            stop_on_eos: true,
            stop_strings: Vec::new(),
            num_beams: 1,
            length_penalty: 1.0,
            early_stopping: true,
        }
    }
}

impl GenerationConfig {
    pub(crate) fn longest_stop(&self) -> usize {
        self.stop_strings.iter().map(String::len).max().unwrap_or(0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Eos,
    StopString,
    Length,
    Cancelled,
}

/// A finished sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    pub id: u64,
    pub prompt_tokens: usize,
    /// Generated token ids (an EOS that ended it included, as transformers returns it).
    pub ids: Vec<u32>,
    pub text: String,
    pub finish: FinishReason,
}
