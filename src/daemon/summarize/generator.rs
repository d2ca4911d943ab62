//! What the pipeline needs from whatever runs the model: submit one prompt, receive its
//! events, cancel by dropping the handle.
//!
//! The daemon and `seqgpt summarize --local --model F` both use
//! [`super::scheduled::ScheduledGenerator`] (the async scheduler of [`crate::scheduler`]); the
//! pipeline's tests use a scripted fake.

use crate::generate::GenerationConfig;
use tokio::sync::mpsc::UnboundedReceiver;

/// Facts about the loaded model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// `general.name` from the model file (or its file stem when it has none).
    pub name: String,
    /// The model file.
    pub path: std::path::PathBuf,
    /// Tokens of context (prompt + generated).
    pub context_length: usize,
    /// Where it runs: `cpu` or `cuda:N`.
    pub device: String,
}

/// Why a generation did not happen or did not finish: the scheduler's own reasons (`Busy`,
/// `TooLarge`, `Invalid`, `Cancelled`, `Engine`, `ShuttingDown`).
pub use crate::scheduler::SchedulerError as GenError;

/// What happens to one submitted prompt, in order: `Started`, `Text` (zero or more), then
/// exactly one of `Finished` and `Failed`.
#[derive(Debug, Clone, PartialEq)]
pub enum GenEvent {
    Started,
    /// Newly generated text (a preview: the final text, stop strings cut, is in `Finished`).
    Text(String),
    Finished(GenOutput),
    Failed(GenError),
}

#[derive(Debug, Clone, PartialEq)]
pub struct GenOutput {
    pub text: String,
    pub prompt_tokens: usize,
    pub generated_tokens: usize,
}

/// A submitted prompt. Dropping it cancels the generation (a no-op once it has ended).
pub struct GenHandle {
    events: UnboundedReceiver<GenEvent>,
    _cancel: CancelOnDrop,
}

/// Runs its closure once, when dropped.
pub struct CancelOnDrop(Option<Box<dyn FnOnce() + Send + Sync>>);

impl CancelOnDrop {
    pub fn new(f: impl FnOnce() + Send + Sync + 'static) -> Self {
        Self(Some(Box::new(f)))
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

impl GenHandle {
    pub fn new(events: UnboundedReceiver<GenEvent>, cancel: CancelOnDrop) -> Self {
        Self { events, _cancel: cancel }
    }

    /// The next event; `None` after the terminal one.
    pub async fn next(&mut self) -> Option<GenEvent> {
        self.events.recv().await
    }
}

/// A model that generates text for prompts.
pub trait Generate: Send + Sync {
    fn info(&self) -> &ModelInfo;
    /// Tokens of `text` in the model's tokenizer.
    fn count_tokens(&self, text: &str) -> usize;
    /// Queues `prompt`, or refuses it at once (`Busy`, `TooLarge`, `Invalid`, `ShuttingDown`).
    fn submit(&self, prompt: &str, config: GenerationConfig) -> Result<GenHandle, GenError>;
    /// Prompts waiting to start.
    fn queue_len(&self) -> usize;
}
