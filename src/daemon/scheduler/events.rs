//! What callers send and receive: requests, the events of a job, and errors.

use seqgpt_engine::generate::{FinishReason, GenerationConfig};
use std::time::Duration;

/// A prompt, as text (tokenized at submit) or token ids.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    Text(String),
    Tokens(Vec<u32>),
}

/// One generation request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub prompt: Prompt,
    pub config: GenerationConfig,
}

impl Request {
    pub fn text(text: impl Into<String>, config: GenerationConfig) -> Self {
        Self { prompt: Prompt::Text(text.into()), config }
    }

    pub fn tokens(ids: Vec<u32>, config: GenerationConfig) -> Self {
        Self { prompt: Prompt::Tokens(ids), config }
    }
}

/// Why a request was refused or did not finish.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchedulerError {
    /// The queue is full (D-Bus: `org.freedesktop.DBus.Error.LimitsExceeded`).
    #[error("busy: the request queue is full, try again later")]
    Busy,
    /// The request can never run: longer than the model's context, or more memory than the
    /// budget allows even alone.
    #[error("request too large: {0}")]
    TooLarge(String),
    /// The request is malformed (an empty prompt, a prompt that does not tokenize).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// Cancelled by its caller (or the caller went away).
    #[error("cancelled")]
    Cancelled,
    /// Inference failed.
    #[error("engine error: {0}")]
    Engine(String),
    /// The scheduler is stopping (or stopped).
    #[error("the scheduler is shutting down")]
    ShuttingDown,
}

/// A finished request.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub prompt_tokens: usize,
    /// Generated token ids (an EOS that ended generation included).
    pub ids: Vec<u32>,
    /// The generated text (a stop string and what follows it cut off).
    pub text: String,
    pub finish: FinishReason,
    /// Time in the queue.
    pub waited: Duration,
    /// From submit to the first generated token.
    pub first_token: Duration,
    /// From submit to the end.
    pub total: Duration,
}

/// What happens to a job, in order: `Queued`, then `Started`, then `Tokens` (zero or more;
/// beam search sends none), then exactly one terminal event: `Finished` or `Failed`. A job
/// may fail before it starts (cancelled, too large for memory, shutdown).
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Accepted; `position` (from 1) in the queue of waiting requests.
    Queued { position: usize },
    /// Admitted into a batch: a new one, or a running one it joined at a token boundary.
    Started {
        /// Index of the length bucket (see [`super::config::SchedulerConfig::buckets`]).
        bucket: usize,
        /// Rows in the batch once admitted.
        batch_size: usize,
        joined: bool,
        /// Time spent in the queue.
        waited: Duration,
    },
    /// New tokens and the text they add. The text is a preview: the final text (stop strings
    /// cut off) is the one in `Finished`.
    Tokens { ids: Vec<u32>, text: String },
    Finished(Completion),
    Failed(SchedulerError),
}

impl Event {
    pub fn is_terminal(&self) -> bool {
        matches!(self, Event::Finished(_) | Event::Failed(_))
    }
}
