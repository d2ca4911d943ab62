//! State shared by callers (submit, cancel, stats) and the worker, under one short lock.

use super::events::{Event, SchedulerError};
use super::stats::Recorder;
use super::window::{Waiting, Window};
use seqgpt_engine::generate::GenerationConfig;
use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Notify;

/// What a waiting request carries besides what the window looks at.
#[derive(Debug)]
pub(crate) struct Pending {
    pub tx: UnboundedSender<Event>,
    pub prompt: Vec<u32>,
    pub config: GenerationConfig,
}

pub(crate) struct SharedState {
    pub window: Window<Pending>,
    /// Jobs handed to the engine and not ended yet.
    pub active: HashSet<u64>,
    /// Active jobs whose callers cancelled; the worker applies them at the next boundary.
    pub cancels: HashSet<u64>,
    /// Set when no more requests are taken (shutdown, or the engine died).
    pub closed: Option<SchedulerError>,
    pub stats: Recorder,
    pub running: usize,
    pub held_bytes: u64,
}

pub(crate) struct Shared {
    state: Mutex<SharedState>,
    /// Wakes the worker (a new arrival moves the deadline; a cancel may free a slot).
    pub wake: Notify,
}

impl Shared {
    pub fn new(window: Window<Pending>) -> Self {
        Self {
            state: Mutex::new(SharedState {
                window,
                active: HashSet::new(),
                cancels: HashSet::new(),
                closed: None,
                stats: Recorder::default(),
                running: 0,
                held_bytes: 0,
            }),
            wake: Notify::new(),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, SharedState> {
        // A panic while holding the lock leaves consistent-enough state: keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Cancels job `id`: at once if it waits, at the worker's next boundary if it runs.
    pub fn cancel(&self, id: u64) {
        let mut s = self.lock();
        if let Some(w) = s.window.remove(id) {
            s.stats.counts.cancelled += 1;
            let _ = w.payload.tx.send(Event::Failed(SchedulerError::Cancelled));
        } else if s.active.contains(&id) && s.cancels.insert(id) {
            drop(s);
            self.wake.notify_one();
        }
    }
}

/// Ends a waiting request with `err` (counted as failed).
pub(crate) fn fail_waiting(s: &mut SharedState, w: Waiting<Pending>, err: SchedulerError) {
    s.stats.counts.failed += 1;
    let _ = w.payload.tx.send(Event::Failed(err));
}
