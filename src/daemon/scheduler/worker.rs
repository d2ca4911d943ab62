//! The worker: a tokio task that owns the running batch's bookkeeping, applies the window
//! at its check points, admits joiners at token boundaries, and turns the engine's updates
//! into job events. Model work runs on the engine thread; the worker only awaits it.

use super::backend::{FreeMemoryFn, NewSequence, Update};
use super::buckets::Buckets;
use super::config::SchedulerConfig;
use super::engine_thread::{EngineThread, Op, OpResult};
use super::events::{Completion, Event, SchedulerError};
use super::memory::{BatchState, Budget, MemoryModel, Planned};
use super::shared::{fail_waiting, Pending, Shared, SharedState};
use super::window::Waiting;
use seqgpt_engine::generate::{FinishReason, Generated};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc::UnboundedSender, watch};
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

struct Running {
    tx: UnboundedSender<Event>,
    submitted: Instant,
    waited: Duration,
    first_token: Option<Instant>,
}

pub(crate) struct Worker {
    pub shared: Arc<Shared>,
    pub cfg: SchedulerConfig,
    pub buckets: Buckets,
    pub memory: MemoryModel,
    pub budget: Budget,
    pub free_memory: FreeMemoryFn,
    pub engine: Option<EngineThread>,
    pub state: BatchState,
    pub shutdown_rx: watch::Receiver<bool>,
    pub done_tx: watch::Sender<bool>,
    pub start: Instant,
    running: HashMap<u64, Running>,
    /// Bucket of the running batch (joiners come from it); None when idle or solo.
    bucket: Option<usize>,
    solo: Option<u64>,
    in_flight: Option<JoinHandle<Result<OpResult, String>>>,
}

enum Wake {
    Done(Result<OpResult, String>),
    Shutdown,
    Nudge,
    Tick,
    Deadline,
}

/// The requests' memory shape.
fn planned(w: &Waiting<Pending>) -> Planned {
    Planned { prompt_len: w.prompt_len, max_new: w.max_new, beams: w.payload.config.num_beams.max(1) }
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

impl Worker {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        shared: Arc<Shared>,
        cfg: SchedulerConfig,
        memory: MemoryModel,
        budget: Budget,
        free_memory: FreeMemoryFn,
        engine: EngineThread,
        state: BatchState,
        shutdown_rx: watch::Receiver<bool>,
        done_tx: watch::Sender<bool>,
        start: Instant,
    ) -> Self {
        Self {
            shared,
            buckets: Buckets::new(cfg.buckets.clone()),
            cfg,
            memory,
            budget,
            free_memory,
            engine: Some(engine),
            state,
            shutdown_rx,
            done_tx,
            start,
            running: HashMap::new(),
            bucket: None,
            solo: None,
            in_flight: None,
        }
    }

    fn idle(&self) -> bool {
        self.in_flight.is_none() && self.running.is_empty()
    }

    pub async fn run(mut self) {
        let tick = self.cfg.tick();
        let mut ticker = tokio::time::interval_at(self.start + tick, tick);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
        loop {
            let deadline = if self.idle() { self.shared.lock().window.deadline() } else { None };
            let in_flight = &mut self.in_flight;
            let wake = tokio::select! {
                biased;
                r = async { in_flight.as_mut().expect("guarded").await }, if in_flight.is_some() => {
                    Wake::Done(r.unwrap_or_else(|e| Err(format!("the engine task failed: {e}"))))
                }
                _ = self.shutdown_rx.changed() => Wake::Shutdown,
                _ = self.shared.wake.notified() => Wake::Nudge,
                _ = ticker.tick() => Wake::Tick,
                _ = tokio::time::sleep_until(deadline.unwrap_or(self.start)), if deadline.is_some() => Wake::Deadline,
            };
            match wake {
                Wake::Done(r) => {
                    self.in_flight = None;
                    self.on_result(r);
                    self.next_op();
                }
                Wake::Shutdown => break,
                Wake::Nudge => {
                    // A cancel may concern the only rows of a batch whose op already ended:
                    // nothing to do until the next boundary, which always comes.
                }
                Wake::Tick => {
                    if self.idle() {
                        if let Some(e) = &self.engine {
                            e.heartbeat();
                        }
                    }
                    self.check();
                }
                Wake::Deadline => self.check(),
            }
        }
        self.shutdown().await;
    }

    /// A check point: with the engine idle, start a batch if the window says so.
    fn check(&mut self) {
        if !self.idle() {
            return;
        }
        let shared = self.shared.clone();
        let mut s = shared.lock();
        if s.closed.is_some() {
            return;
        }
        let now = Instant::now();
        while s.window.triggered(now) {
            let cands = s.window.fresh_candidates(|b| self.buckets.batch(b));
            let plans: Vec<Planned> = cands.iter().map(|w| planned(w)).collect();
            let ids: Vec<u64> = cands.iter().map(|w| w.id).collect();
            let solo = cands[0].solo;
            let bucket = cands[0].bucket;
            let state = BatchState { free_memory: self.derived_free(), ..BatchState::default() };
            let budget = self.budget.bytes(&state);
            let k = if solo {
                usize::from(self.memory.solo_bytes(&plans[0]) <= budget)
            } else {
                (1..=plans.len()).rev().find(|&k| self.memory.estimate(&state, &plans[..k]).peak_bytes <= budget).unwrap_or(0)
            };
            if k == 0 {
                let need = if solo { self.memory.solo_bytes(&plans[0]) } else { self.memory.estimate(&state, &plans[..1]).peak_bytes };
                let w = s.window.take(&ids[..1]).pop().expect("candidate waits");
                let msg = format!("needs about {:.1} MiB for its KV cache and activations, the memory budget is {:.1} MiB now", mib(need), mib(budget));
                fail_waiting(&mut s, w, SchedulerError::TooLarge(msg));
                continue;
            }
            if k < ids.len() {
                s.stats.counts.shrunk += 1;
            }
            let taken = s.window.take(&ids[..k]);
            let seqs = self.admit(&mut s, taken, false, now);
            s.stats.counts.batches += 1;
            drop(s);
            if solo {
                let seq = seqs.into_iter().next().expect("one");
                self.solo = Some(seq.id);
                self.bucket = None;
                self.send(Op::Solo(seq));
            } else {
                self.bucket = Some(bucket);
                self.send(Op::Run { cancel: Vec::new(), admit: seqs, step: false });
            }
            return;
        }
    }

    /// Free memory for a derived budget (not read for a fixed one).
    fn derived_free(&self) -> Option<u64> {
        match self.budget {
            Budget::Fixed(_) => None,
            Budget::Derived { .. } => (self.free_memory)(),
        }
    }

    /// Moves `taken` into the running set: `Started` events, and the sequences to admit.
    fn admit(&mut self, s: &mut SharedState, taken: Vec<Waiting<Pending>>, joined: bool, now: Instant) -> Vec<NewSequence> {
        let batch_size = self.state.rows.len() + taken.len();
        let mut seqs = Vec::with_capacity(taken.len());
        for w in taken {
            let waited = now.saturating_duration_since(w.enqueued);
            let _ = w.payload.tx.send(Event::Started { bucket: w.bucket, batch_size, joined, waited });
            s.active.insert(w.id);
            self.running.insert(w.id, Running { tx: w.payload.tx, submitted: w.enqueued, waited, first_token: None });
            seqs.push(NewSequence { id: w.id, prompt: w.payload.prompt, config: w.payload.config });
        }
        s.running = self.running.len();
        seqs
    }

    fn send(&mut self, op: Op) {
        match &self.engine {
            Some(e) => self.in_flight = Some(e.run(op)),
            None => self.on_result(Err("the engine thread has stopped".into())),
        }
    }

    /// After an operation: the next token boundary (cancels, joiners, a step), or a check
    /// point when the batch has drained.
    fn next_op(&mut self) {
        if self.in_flight.is_some() {
            return;
        }
        if self.running.is_empty() {
            self.bucket = None;
            self.check();
            return;
        }
        let shared = self.shared.clone();
        let mut s = shared.lock();
        let cancel: Vec<u64> = s.cancels.iter().copied().filter(|id| self.running.contains_key(id)).collect();
        let mut admit = Vec::new();
        if let (Some(bucket), None) = (self.bucket, s.closed.as_ref()) {
            let mut state = self.state.clone();
            state.rows.retain(|r| !cancel.contains(&r.id));
            let room = self.buckets.batch(bucket).saturating_sub(state.rows.len());
            let now = Instant::now();
            let cands = s.window.join_candidates(bucket, room);
            if !cands.is_empty() {
                let plans: Vec<Planned> = cands.iter().map(|w| planned(w)).collect();
                let ids: Vec<u64> = cands.iter().map(|w| w.id).collect();
                state.free_memory = self.derived_free();
                let budget = self.budget.bytes(&state);
                let ratio = self.cfg.max_padding_ratio;
                let k = (1..=plans.len())
                    .rev()
                    .find(|&k| {
                        let e = self.memory.estimate(&state, &plans[..k]);
                        e.peak_bytes <= budget && e.span as f64 <= ratio * e.longest_row as f64
                    })
                    .unwrap_or(0);
                if k > 0 {
                    if k < ids.len() {
                        s.stats.counts.shrunk += 1;
                    }
                    let taken = s.window.take(&ids[..k]);
                    s.stats.counts.joins += k as u64;
                    self.state.rows.retain(|r| !cancel.contains(&r.id));
                    admit = self.admit(&mut s, taken, true, now);
                }
            }
        }
        let rows = self.running.len() - cancel.len();
        if rows > 0 {
            s.stats.counts.steps += 1;
            s.stats.counts.step_rows += rows as u64;
        }
        drop(s);
        self.send(Op::Run { cancel, admit, step: true });
    }

    fn on_result(&mut self, r: Result<OpResult, String>) {
        let shared = self.shared.clone();
        let mut s = shared.lock();
        let res = match r {
            Ok(res) => res,
            Err(e) => {
                // The engine thread is gone: nothing can run any more.
                let err = SchedulerError::Engine(e);
                for id in self.running.keys().copied().collect::<Vec<_>>() {
                    self.end(&mut s, id, Err(err.clone()));
                }
                s.closed.get_or_insert(err.clone());
                for w in s.window.drain() {
                    fail_waiting(&mut s, w, err.clone());
                }
                self.solo = None;
                self.engine = None;
                return;
            }
        };
        let now = Instant::now();
        for u in res.updates {
            match u {
                Update::Token { id, token, text } => {
                    if let Some(r) = self.running.get_mut(&id) {
                        r.first_token.get_or_insert(now);
                        s.stats.counts.tokens += 1;
                        let _ = r.tx.send(Event::Tokens { ids: vec![token], text });
                    }
                }
                Update::Finished(g) => self.end(&mut s, g.id, Ok(g)),
            }
        }
        if let Some(out) = res.solo {
            if let Some(id) = self.solo.take() {
                if let Ok(g) = &out {
                    s.stats.counts.tokens += g.ids.len() as u64;
                }
                let cancelled = s.cancels.contains(&id);
                let out = match out {
                    Ok(_) if cancelled => Err(SchedulerError::Cancelled),
                    Ok(g) => Ok(g),
                    Err(e) => Err(SchedulerError::Engine(e)),
                };
                self.end(&mut s, id, out);
            }
        }
        self.state = res.state;
        // Rows the engine no longer has (a failed operation dropped its batch) end here:
        // nothing accepted is ever left without a terminal event.
        let error = res.error.unwrap_or_else(|| "the engine lost the sequence".into());
        let lost: Vec<u64> = self
            .running
            .keys()
            .copied()
            .filter(|id| Some(*id) != self.solo && !self.state.rows.iter().any(|r| r.id == *id))
            .collect();
        for id in lost {
            self.end(&mut s, id, Err(SchedulerError::Engine(error.clone())));
        }
        s.held_bytes = self.state.cache_bytes;
        s.running = self.running.len();
    }

    /// Sends job `id` its terminal event and forgets it.
    fn end(&mut self, s: &mut SharedState, id: u64, out: Result<Generated, SchedulerError>) {
        let Some(r) = self.running.remove(&id) else {
            return;
        };
        s.active.remove(&id);
        s.cancels.remove(&id);
        s.running = self.running.len();
        let now = Instant::now();
        let event = match out {
            Ok(g) if g.finish == FinishReason::Cancelled => {
                s.stats.counts.cancelled += 1;
                Event::Failed(SchedulerError::Cancelled)
            }
            Ok(g) => {
                let total = now.saturating_duration_since(r.submitted);
                let first_token = r.first_token.map_or(total, |t| t.saturating_duration_since(r.submitted));
                s.stats.finished(r.waited, first_token, total);
                Event::Finished(Completion {
                    prompt_tokens: g.prompt_tokens,
                    ids: g.ids,
                    text: g.text,
                    finish: g.finish,
                    waited: r.waited,
                    first_token,
                    total,
                })
            }
            Err(e) => {
                if e == SchedulerError::Cancelled {
                    s.stats.counts.cancelled += 1;
                } else {
                    s.stats.counts.failed += 1;
                }
                Event::Failed(e)
            }
        };
        let _ = r.tx.send(event);
    }

    /// Ends everything: waiting and running jobs get `ShuttingDown` now; then the engine
    /// thread stops after its current operation.
    async fn shutdown(mut self) {
        {
            let shared = self.shared.clone();
            let mut s = shared.lock();
            s.closed.get_or_insert(SchedulerError::ShuttingDown);
            for w in s.window.drain() {
                fail_waiting(&mut s, w, SchedulerError::ShuttingDown);
            }
            for id in self.running.keys().copied().collect::<Vec<_>>() {
                self.end(&mut s, id, Err(SchedulerError::ShuttingDown));
            }
            s.held_bytes = 0;
        }
        self.in_flight = None;
        if let Some(e) = self.engine.take() {
            e.stop().await;
        }
        let _ = self.done_tx.send(true);
    }
}
