//! A submitted job, as its caller holds it: its events and its cancellation.

use super::events::{Completion, Event, SchedulerError};
use super::shared::Shared;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedReceiver;

/// A job accepted by the scheduler. Dropping it cancels the job (a caller that goes away
/// frees its place); after the terminal event that is a no-op.
pub struct JobHandle {
    id: u64,
    events: UnboundedReceiver<Event>,
    shared: Arc<Shared>,
}

/// Cancels a job from anywhere (cloneable, does not hold its events).
#[derive(Clone)]
pub struct Canceller {
    id: u64,
    shared: Arc<Shared>,
}

impl Canceller {
    pub fn cancel(&self) {
        self.shared.cancel(self.id);
    }
}

impl JobHandle {
    pub(crate) fn new(id: u64, events: UnboundedReceiver<Event>, shared: Arc<Shared>) -> Self {
        Self { id, events, shared }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// The next event; `None` after the terminal one.
    pub async fn next(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// The event channel itself (for `select!`); it closes after the terminal event.
    pub fn events(&mut self) -> &mut UnboundedReceiver<Event> {
        &mut self.events
    }

    /// Cancels the job: a waiting one leaves the queue now, a running one leaves its batch
    /// at the next token boundary (beam search: when it ends). Its stream then ends with
    /// `Failed(Cancelled)` (unless it finished first).
    pub fn cancel(&self) {
        self.shared.cancel(self.id);
    }

    pub fn canceller(&self) -> Canceller {
        Canceller { id: self.id, shared: self.shared.clone() }
    }

    /// Waits for the end: the completion, or why there is none.
    pub async fn wait(mut self) -> Result<Completion, SchedulerError> {
        while let Some(e) = self.events.recv().await {
            match e {
                Event::Finished(c) => return Ok(c),
                Event::Failed(err) => return Err(err),
                _ => {}
            }
        }
        Err(SchedulerError::ShuttingDown)
    }
}

impl Drop for JobHandle {
    fn drop(&mut self) {
        self.shared.cancel(self.id);
    }
}
