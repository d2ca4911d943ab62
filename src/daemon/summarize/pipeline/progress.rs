//! What a job reports while the pipeline works: the stage it is in and the text it streams.

/// A phase of a job, as reported in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Reading the PDF (pages done of total).
    Extract,
    /// Model prompts for the chunks (chunks done of total).
    Summarize,
    /// Merging partial summaries (prompts done of total).
    Reduce,
    /// The extractive ranker (0 of 1, then 1 of 1).
    Rank,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Extract => "extract",
            Stage::Summarize => "summarize",
            Stage::Reduce => "reduce",
            Stage::Rank => "rank",
        }
    }
}

/// Receives a job's progress and streamed text, in order.
pub trait Observer: Send {
    fn progress(&mut self, stage: Stage, done: u32, total: u32);
    /// Text the model generated for prompt `index` (chunks from 0, then the reduce prompts),
    /// as it grows; for the extractive method, the summary once.
    fn partial(&mut self, index: u32, text: &str);
}

/// An observer that ignores everything.
pub struct Ignore;

impl Observer for Ignore {
    fn progress(&mut self, _: Stage, _: u32, _: u32) {}
    fn partial(&mut self, _: u32, _: &str) {}
}
