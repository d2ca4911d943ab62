//! What the scheduler drives: one running batch that admits sequences, steps them one token
//! at a time and cancels them. The real engine implements it ([`super::EngineBackend`]);
//! tests use [`super::fake::FakeBackend`] so that timing does not depend on a model.
//!
//! A backend lives on the scheduler's engine thread and is only ever called from there.

use super::memory::{BatchState, MemoryModel};
use seqgpt_engine::generate::{GenerationConfig, Generated};
use std::sync::Arc;

/// A sequence to admit.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSequence {
    pub id: u64,
    pub prompt: Vec<u32>,
    pub config: GenerationConfig,
}

/// What an operation produced, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// Row `id` generated `token`; `text` is the text it adds (possibly empty while a
    /// character is incomplete).
    Token { id: u64, token: u32, text: String },
    /// Row `id` left the batch (`finish` says why, `Cancelled` after [`Backend::cancel`]);
    /// its tokens were all sent as `Token` updates before.
    Finished(Generated),
}

/// Free memory where the batch lives, in bytes (None when unknown); callable from any
/// thread, cheap enough to call before each admission.
pub type FreeMemoryFn = Arc<dyn Fn() -> Option<u64> + Send + Sync>;

/// Facts the scheduler plans with.
#[derive(Clone)]
pub struct ModelInfo {
    /// Prompt + new tokens of one sequence may not exceed this.
    pub context_length: usize,
    pub memory: MemoryModel,
    pub free_memory: FreeMemoryFn,
}

pub trait Backend: Send + 'static {
    fn info(&self) -> ModelInfo;

    /// Prefills `seqs` and adds them to the running batch (starting one if none runs);
    /// their first tokens come back, and the sequences that already finished.
    fn admit(&mut self, seqs: Vec<NewSequence>) -> Result<Vec<Update>, String>;

    /// One token for every row of the running batch; finished rows leave it.
    fn step(&mut self) -> Result<Vec<Update>, String>;

    /// Ends rows `ids` now and frees their cache (unknown ids are ignored).
    fn cancel(&mut self, ids: &[u64]) -> Result<Vec<Update>, String>;

    /// Runs one sequence on its own to the end (beam search), outside the running batch.
    fn run_solo(&mut self, seq: NewSequence) -> Result<Generated, String>;

    /// The running batch now.
    fn state(&self) -> BatchState;

    /// Drops the running batch (after an error: its rows are reported failed).
    fn reset(&mut self);
}

/// Turns prompt text into token ids (at submit, on the caller's thread).
pub trait TextEncoder: Send + Sync {
    fn encode(&self, text: &str) -> Result<Vec<u32>, String>;
}
