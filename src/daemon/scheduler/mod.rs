//! The async scheduler between callers (D-Bus) and the engine: a bounded queue with a
//! sliding-window trigger, length buckets, continuous batching, backpressure and a memory
//! guard. docs/SCHEDULER.md describes the rules and the reasons.
//!
//! ```no_run
//! # async fn demo(engine: seqgpt_engine::engine::Engine) -> Result<(), seqgpt_daemon::scheduler::SchedulerError> {
//! use seqgpt_daemon::scheduler::{Event, Request, Scheduler, SchedulerConfig};
//! let sched = Scheduler::start(engine, SchedulerConfig::default())?;
//! let mut job = sched.submit(Request::text("Summarize: ...", Default::default()))?;
//! while let Some(event) = job.next().await {
//!     if let Event::Finished(done) = event {
//!         println!("{}", done.text);
//!     }
//! }
//! sched.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! Modules: [`config`] (TOML settings), [`buckets`] (length buckets), [`window`] (the queue
//! and the trigger, pure), [`memory`] (the memory guard's estimate and budget),
//! [`backend`] (what the worker drives; [`EngineBackend`] for the real engine,
//! [`fake::FakeBackend`] for tests), the worker loop, the engine thread and the test gate
//! `hold` (private),
//! [`handle`] and [`events`] (what callers hold and receive), [`stats`].

pub mod backend;
pub mod buckets;
pub mod config;
mod engine_backend;
mod engine_thread;
pub mod events;
pub mod fake;
pub mod handle;
mod hold;
pub mod memory;
mod shared;
pub mod stats;
pub mod window;
mod worker;

pub use backend::{Backend, ModelInfo, NewSequence, TextEncoder, Update};
pub use buckets::Buckets;
pub use config::{BucketConfig, ConfigError, SchedulerConfig};
pub use engine_backend::{free_memory_fn, EngineBackend, EngineEncoder};
pub use events::{Completion, Event, Prompt, Request, SchedulerError};
pub use handle::{Canceller, JobHandle};
pub use memory::{Budget, MemoryModel, Planned};
pub use stats::{Percentiles, Stats};

use seqgpt_engine::engine::Engine;
use backend::FreeMemoryFn;
use engine_thread::EngineThread;
use shared::{Pending, Shared};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, watch};
use window::{Waiting, Window};
use worker::Worker;

/// Hooks for the daemon that are not configuration.
#[derive(Default)]
pub struct StartOptions {
    /// Called on the engine thread after every operation, and once per tick while idle:
    /// the place for systemd's `WATCHDOG=1` ping (it proves the engine loop turns). An
    /// operation (one decoding step, or a whole beam search) delays the next call.
    pub on_tick: Option<Box<dyn FnMut() + Send>>,
    /// Hold the engine's running batch before its first step until this file exists
    /// (`hold::Held`: a gate for tests of signals and shutdown, `SEQGPT_TEST_HOLD`).
    pub hold: Option<std::path::PathBuf>,
}

/// A handle to the running scheduler; clones share it. When the last clone is dropped the
/// scheduler shuts down (as [`Scheduler::shutdown`]).
#[derive(Clone)]
pub struct Scheduler {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    cfg: SchedulerConfig,
    buckets: Buckets,
    memory: MemoryModel,
    budget: Budget,
    free_memory: FreeMemoryFn,
    context_length: usize,
    encoder: Option<Arc<dyn TextEncoder>>,
    next_id: AtomicU64,
    shutdown_tx: watch::Sender<bool>,
    done_rx: watch::Receiver<bool>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.shutdown_tx.send(true);
    }
}

impl Scheduler {
    /// Starts a scheduler over `engine` (on its own thread). Call within a tokio runtime.
    pub fn start(engine: Engine, config: SchedulerConfig) -> Result<Self, SchedulerError> {
        Self::start_engine(Arc::new(engine), config, StartOptions::default())
    }

    pub fn start_engine(engine: Arc<Engine>, config: SchedulerConfig, options: StartOptions) -> Result<Self, SchedulerError> {
        let encoder: Arc<dyn TextEncoder> = Arc::new(EngineEncoder(engine.clone()));
        let backend = EngineBackend::new(engine);
        match options.hold.clone() {
            Some(gate) => Self::start_with(hold::Held::new(backend, gate), Some(encoder), config, options),
            None => Self::start_with(backend, Some(encoder), config, options),
        }
    }

    /// Starts a scheduler over any backend; without an encoder, text prompts are refused.
    pub fn start_with<B: Backend>(
        backend: B,
        encoder: Option<Arc<dyn TextEncoder>>,
        config: SchedulerConfig,
        options: StartOptions,
    ) -> Result<Self, SchedulerError> {
        config.validate().map_err(|e| SchedulerError::Invalid(e.to_string()))?;
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(SchedulerError::Invalid("Scheduler::start needs a tokio runtime".into()));
        }
        let info = backend.info();
        let state = backend.state();
        let budget = match config.fixed_budget_bytes() {
            Some(b) => Budget::Fixed(b),
            None => Budget::Derived { fraction: config.memory_fraction },
        };
        let engine = EngineThread::spawn(Box::new(backend), options.on_tick)
            .map_err(|e| SchedulerError::Engine(format!("cannot start the engine thread: {e}")))?;
        let shared = Arc::new(Shared::new(Window::new(&config)));
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let (done_tx, done_rx) = watch::channel(false);
        let start = tokio::time::Instant::now();
        let worker = Worker::new(
            shared.clone(),
            config.clone(),
            info.memory,
            budget,
            info.free_memory.clone(),
            engine,
            state,
            shutdown_rx,
            done_tx,
            start,
        );
        tokio::spawn(worker.run());
        Ok(Self {
            inner: Arc::new(Inner {
                shared,
                buckets: Buckets::new(config.buckets.clone()),
                cfg: config,
                memory: info.memory,
                budget,
                free_memory: info.free_memory,
                context_length: info.context_length,
                encoder,
                next_id: AtomicU64::new(1),
                shutdown_tx,
                done_rx,
            }),
        })
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.inner.cfg
    }

    /// Tokens of context (prompt and generated) one request may use.
    pub fn context_length(&self) -> usize {
        self.inner.context_length
    }

    /// Queues `req`, or refuses it at once: `Busy` when the queue is full, `TooLarge` when it
    /// can never run (context length, memory), `Invalid`, `ShuttingDown`. Text prompts are
    /// tokenized here, on the caller's thread. The first event is always `Queued`.
    pub fn submit(&self, req: Request) -> Result<JobHandle, SchedulerError> {
        let inner = &self.inner;
        let refuse = |e: SchedulerError| {
            let mut s = inner.shared.lock();
            if e == SchedulerError::Busy {
                s.stats.counts.busy += 1;
            } else {
                s.stats.counts.refused += 1;
            }
            Err(e)
        };
        let (closed, full) = {
            let s = inner.shared.lock();
            (s.closed.clone(), s.window.is_full())
        };
        if let Some(e) = closed {
            return refuse(e);
        }
        // A full queue answers at once, before any tokenizing or memory reading (checked
        // again when the request is queued).
        if full {
            return refuse(SchedulerError::Busy);
        }
        let prompt = match req.prompt {
            Prompt::Tokens(ids) => ids,
            Prompt::Text(text) => match &inner.encoder {
                Some(enc) => match enc.encode(&text) {
                    Ok(ids) => ids,
                    Err(e) => return refuse(SchedulerError::Invalid(e)),
                },
                None => return refuse(SchedulerError::Invalid("this scheduler takes token ids, not text".into())),
            },
        };
        let cfg = req.config;
        if prompt.is_empty() {
            return refuse(SchedulerError::Invalid("the prompt is empty".into()));
        }
        if let Some(&bad) = prompt.iter().find(|&&t| t as usize >= inner.memory.vocab) {
            return refuse(SchedulerError::Invalid(format!("token id {bad} is outside the vocabulary of {}", inner.memory.vocab)));
        }
        if prompt.len() + cfg.max_new_tokens > inner.context_length {
            return refuse(SchedulerError::TooLarge(format!(
                "a prompt of {} tokens + {} new tokens exceeds the model's context of {}",
                prompt.len(),
                cfg.max_new_tokens,
                inner.context_length
            )));
        }
        let plan = Planned { prompt_len: prompt.len(), max_new: cfg.max_new_tokens, beams: cfg.num_beams.max(1) };
        let need = inner.memory.solo_bytes(&plan);
        let ceiling = self.memory_ceiling();
        if need > ceiling {
            return refuse(SchedulerError::TooLarge(format!(
                "needs about {:.1} MiB for its KV cache and activations even alone; the memory budget is {:.1} MiB",
                need as f64 / (1u64 << 20) as f64,
                ceiling as f64 / (1u64 << 20) as f64
            )));
        }

        let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        let waiting = Waiting {
            id,
            bucket: inner.buckets.of(prompt.len()),
            prompt_len: prompt.len(),
            max_new: cfg.max_new_tokens,
            solo: cfg.num_beams > 1,
            enqueued: tokio::time::Instant::now(),
            overtaken: 0,
            payload: Pending { tx: tx.clone(), prompt, config: cfg },
        };
        {
            let mut s = inner.shared.lock();
            if let Some(e) = s.closed.clone() {
                drop(s);
                return refuse(e);
            }
            match s.window.push(waiting) {
                Ok(position) => {
                    s.stats.counts.accepted += 1;
                    let _ = tx.send(Event::Queued { position });
                }
                Err(_) => {
                    drop(s);
                    return refuse(SchedulerError::Busy);
                }
            }
        }
        inner.shared.wake.notify_one();
        Ok(JobHandle::new(id, rx, inner.shared.clone()))
    }

    /// The most bytes a batch could use now if nothing else ran: the fixed budget, or what
    /// the running batch holds plus the allowed share of free memory.
    pub fn memory_ceiling(&self) -> u64 {
        let inner = &self.inner;
        match inner.budget {
            Budget::Fixed(b) => b,
            Budget::Derived { .. } => {
                let held = inner.shared.lock().held_bytes;
                let state = memory::BatchState { cache_bytes: held, free_memory: (inner.free_memory)(), ..Default::default() };
                inner.budget.bytes(&state)
            }
        }
    }

    /// Requests waiting (not yet running).
    pub fn queue_len(&self) -> usize {
        self.inner.shared.lock().window.len()
    }

    pub fn stats(&self) -> Stats {
        let s = self.inner.shared.lock();
        let mut st = s.stats.snapshot(s.window.len(), s.running);
        st.kv_bytes = s.held_bytes;
        st
    }

    /// Stops taking requests, ends every waiting and running job with `ShuttingDown`, and
    /// returns once the engine thread has stopped (after its current operation).
    pub async fn shutdown(&self) {
        let _ = self.inner.shutdown_tx.send(true);
        let mut done = self.inner.done_rx.clone();
        let _ = done.wait_for(|d| *d).await;
    }
}
