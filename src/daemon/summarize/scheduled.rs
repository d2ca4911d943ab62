//! The pipeline's model: the async scheduler ([`crate::scheduler`]: the sliding-window
//! batcher, length buckets, continuous batching, backpressure, the memory guard) behind the
//! pipeline's [`Generate`] trait. The daemon and `seqgpt summarize --local --model F` both
//! run their prompts through it.

use super::generator::{CancelOnDrop, GenError, GenEvent, GenHandle, GenOutput, Generate, ModelInfo};
use crate::engine::Engine;
use crate::generate::GenerationConfig;
use crate::scheduler::{Event, JobHandle, Request, Scheduler, SchedulerConfig, SchedulerError, StartOptions};
use std::sync::Arc;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

pub struct ScheduledGenerator {
    scheduler: Scheduler,
    engine: Arc<Engine>,
    info: ModelInfo,
}

impl ScheduledGenerator {
    /// Starts the scheduler over `engine` (its engine thread calls `on_tick` after every
    /// operation and once per tick while idle: the watchdog's place). Call within a tokio
    /// runtime.
    pub fn start(
        engine: Engine,
        info: ModelInfo,
        config: SchedulerConfig,
        on_tick: Option<Box<dyn FnMut() + Send>>,
    ) -> Result<Self, SchedulerError> {
        let engine = Arc::new(engine);
        let scheduler = Scheduler::start_engine(engine.clone(), config, StartOptions { on_tick })?;
        Ok(Self { scheduler, engine, info })
    }

    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// Ends waiting and running prompts (`ShuttingDown`) and waits for the engine thread.
    pub async fn shutdown(&self) {
        self.scheduler.shutdown().await;
    }
}

impl Generate for ScheduledGenerator {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.engine.tokenizer.encode(text).map_or_else(|_| text.chars().count(), |ids| ids.len())
    }

    fn submit(&self, prompt: &str, config: GenerationConfig) -> Result<GenHandle, GenError> {
        // The events are forwarded by a task: without a runtime there is nothing to run it.
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| GenError::Invalid("prompts are submitted from within a tokio runtime".into()))?;
        let job = self.scheduler.submit(Request::text(prompt, config))?;
        let canceller = job.canceller();
        let (tx, rx) = unbounded_channel();
        runtime.spawn(forward(job, tx));
        Ok(GenHandle::new(rx, CancelOnDrop::new(move || canceller.cancel())))
    }

    fn queue_len(&self) -> usize {
        self.scheduler.queue_len()
    }
}

/// Passes a job's events on in the pipeline's terms, up to the terminal one. When the
/// pipeline drops its handle the send fails, this returns, and dropping `job` cancels it.
async fn forward(mut job: JobHandle, tx: UnboundedSender<GenEvent>) {
    while let Some(event) = job.next().await {
        let out = match event {
            Event::Queued { .. } => continue,
            Event::Started { .. } => GenEvent::Started,
            Event::Tokens { text, .. } if text.is_empty() => continue,
            Event::Tokens { text, .. } => GenEvent::Text(text),
            Event::Finished(c) => GenEvent::Finished(GenOutput {
                text: c.text,
                prompt_tokens: c.prompt_tokens,
                generated_tokens: c.ids.len(),
            }),
            Event::Failed(e) => GenEvent::Failed(e),
        };
        let terminal = matches!(out, GenEvent::Finished(_) | GenEvent::Failed(_));
        if tx.send(out).is_err() || terminal {
            return;
        }
    }
    // The scheduler dropped the job without a terminal event: it is gone.
    let _ = tx.send(GenEvent::Failed(GenError::ShuttingDown));
}
