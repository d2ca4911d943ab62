//! The engine runner: one thread that owns the engine and decodes every submitted prompt in a
//! shared batch (continuous batching: prompts join between decoding steps and leave as they
//! finish), streaming each prompt's text as it grows.
//!
//! It implements [`Generate`] for `seqgpt summarize --local --model F` and, until the async
//! scheduler of issue 5 is merged, for the daemon. Its knobs come from the `[scheduler]` table
//! of the daemon's config: `queue_capacity` (prompts that may wait; one more is `Busy`),
//! `tick_ms` (how often an idle loop wakes, and so how often the watchdog callback runs) and the
//! largest `batch` of its `buckets` (rows decoded together).

use super::generator::{CancelOnDrop, GenError, GenEvent, GenHandle, GenOutput, Generate, ModelInfo};
use crate::engine::Engine;
use crate::generate::{Batch, GenerationConfig, Generated, Sequence};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

/// The runner's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct RunnerConfig {
    pub queue_capacity: usize,
    pub max_batch: usize,
    pub tick: Duration,
    /// A prompt joins a running batch only while the batch's KV span (positions, left
    /// padding included) stays within this multiple of what the prompt needs alone (prompt +
    /// new tokens). Otherwise it waits for the batch to drain: without this bound, a batch
    /// that keeps receiving prompts never shrinks, and its cache (memory, and time per step)
    /// grows to the whole context.
    pub max_padding_ratio: f64,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig { queue_capacity: 8, max_batch: 8, tick: Duration::from_millis(50), max_padding_ratio: 2.0 }
    }
}

impl RunnerConfig {
    /// Reads `queue_capacity`, `tick_ms`, `max_padding_ratio` and the buckets' largest
    /// `batch` from a `[scheduler]` table; other keys belong to the scheduler and are not read
    /// here.
    pub fn from_scheduler_table(table: &toml::Table) -> Result<Self, String> {
        let mut cfg = RunnerConfig::default();
        let positive = |key: &str, v: &toml::Value| -> Result<usize, String> {
            match v.as_integer() {
                Some(n) if n >= 1 => Ok(n as usize),
                _ => Err(format!("[scheduler] {key} must be a positive integer, not {v}")),
            }
        };
        if let Some(v) = table.get("queue_capacity") {
            cfg.queue_capacity = positive("queue_capacity", v)?;
        }
        if let Some(v) = table.get("tick_ms") {
            cfg.tick = Duration::from_millis(positive("tick_ms", v)? as u64);
        }
        if let Some(v) = table.get("max_padding_ratio") {
            match v.as_float().or_else(|| v.as_integer().map(|i| i as f64)) {
                Some(r) if r >= 1.0 => cfg.max_padding_ratio = r,
                _ => return Err(format!("[scheduler] max_padding_ratio must be a number >= 1, not {v}")),
            }
        }
        if let Some(v) = table.get("buckets") {
            let buckets = v.as_array().ok_or("[scheduler] buckets must be an array of tables")?;
            let mut largest = 0;
            for b in buckets {
                let batch = b.get("batch").ok_or("[[scheduler.buckets]] needs batch")?;
                largest = largest.max(positive("buckets.batch", batch)?);
            }
            if largest > 0 {
                cfg.max_batch = largest;
            }
        }
        Ok(cfg)
    }
}

struct Request {
    id: u64,
    prompt: Vec<u32>,
    config: GenerationConfig,
    events: UnboundedSender<GenEvent>,
    cancel: Arc<AtomicBool>,
}

impl Request {
    fn abandoned(&self) -> bool {
        self.cancel.load(Ordering::Relaxed) || self.events.is_closed()
    }
}

struct Shared {
    queued: AtomicUsize,
    shutdown: AtomicBool,
}

/// A running engine thread. Dropping the last handle stops it after its current step.
pub struct EngineRunner {
    tx: Mutex<Option<SyncSender<Request>>>,
    shared: Arc<Shared>,
    engine: Arc<Engine>,
    info: ModelInfo,
    next_id: AtomicU64,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl EngineRunner {
    /// Starts the engine thread. `on_tick` runs on it after every operation and at least once
    /// per `tick` while idle (the systemd watchdog ping belongs there: it proves the loop turns).
    pub fn start(
        engine: Engine,
        info: ModelInfo,
        config: RunnerConfig,
        on_tick: Option<Box<dyn FnMut() + Send>>,
    ) -> std::io::Result<Self> {
        let engine = Arc::new(engine);
        let (tx, rx) = mpsc::sync_channel(config.queue_capacity.max(1));
        let shared = Arc::new(Shared { queued: AtomicUsize::new(0), shutdown: AtomicBool::new(false) });
        let thread = {
            let (engine, shared) = (engine.clone(), shared.clone());
            std::thread::Builder::new()
                .name("seqgpt-engine".into())
                .spawn(move || EngineLoop { engine, shared, config, on_tick, live: HashMap::new(), span: 0 }.run(rx))?
        };
        Ok(EngineRunner {
            tx: Mutex::new(Some(tx)),
            shared,
            engine,
            info,
            next_id: AtomicU64::new(1),
            thread: Mutex::new(Some(thread)),
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Ends every waiting and running prompt with `ShuttingDown` and stops the thread (after
    /// its current step); blocks until it has stopped.
    pub fn shutdown(&self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
}

impl Drop for EngineRunner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Generate for EngineRunner {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.engine.tokenizer.encode(text).map_or_else(|_| text.chars().count(), |ids| ids.len())
    }

    fn submit(&self, prompt: &str, config: GenerationConfig) -> Result<GenHandle, GenError> {
        if self.shared.shutdown.load(Ordering::SeqCst) {
            return Err(GenError::ShuttingDown);
        }
        let ids = self.engine.encode(prompt).map_err(|e| GenError::Invalid(e.to_string()))?;
        let ctx = self.info.context_length;
        if ids.len() + config.max_new_tokens > ctx {
            return Err(GenError::TooLarge(format!(
                "a prompt of {} tokens + {} new tokens exceeds the model's context of {ctx}",
                ids.len(),
                config.max_new_tokens
            )));
        }
        let (events, rx) = unbounded_channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let req = Request { id: self.next_id.fetch_add(1, Ordering::Relaxed), prompt: ids, config, events, cancel: cancel.clone() };
        let guard = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let Some(tx) = guard.as_ref() else { return Err(GenError::ShuttingDown) };
        // Counted before sending, so the engine thread never decrements below zero.
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        match tx.try_send(req) {
            Ok(()) => Ok(GenHandle::new(rx, CancelOnDrop::new(move || cancel.store(true, Ordering::Relaxed)))),
            Err(e) => {
                self.shared.queued.fetch_sub(1, Ordering::SeqCst);
                Err(match e {
                    TrySendError::Full(_) => GenError::Busy,
                    TrySendError::Disconnected(_) => GenError::ShuttingDown,
                })
            }
        }
    }

    fn queue_len(&self) -> usize {
        self.shared.queued.load(Ordering::SeqCst)
    }
}

/// A prompt in the batch.
struct Live {
    req: Request,
    /// Text already sent as `GenEvent::Text`.
    sent: String,
}

struct EngineLoop {
    engine: Arc<Engine>,
    shared: Arc<Shared>,
    config: RunnerConfig,
    on_tick: Option<Box<dyn FnMut() + Send>>,
    live: HashMap<u64, Live>,
    /// Positions in the batch's KV cache (left padding included); 0 when it is empty.
    span: usize,
}

impl EngineLoop {
    fn tick(&mut self) {
        if let Some(f) = self.on_tick.as_mut() {
            f();
        }
    }

    fn run(mut self, rx: Receiver<Request>) {
        let mut batch = Batch::new();
        // A request taken from the queue that did not fit the running batch: it goes first
        // once the batch drains (and still counts as queued).
        let mut held: Option<Request> = None;
        loop {
            if self.shared.shutdown.load(Ordering::SeqCst) {
                break;
            }
            if batch.is_empty() && held.is_none() {
                self.span = 0;
                match rx.recv_timeout(self.config.tick) {
                    Ok(r) => held = Some(r),
                    Err(RecvTimeoutError::Timeout) => {
                        self.tick();
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            let mut new: Vec<Request> = Vec::new();
            while batch.len() + new.len() < self.config.max_batch {
                let r = match held.take() {
                    Some(r) => r,
                    None => match rx.try_recv() {
                        Ok(r) => r,
                        Err(_) => break,
                    },
                };
                if r.abandoned() {
                    self.shared.queued.fetch_sub(1, Ordering::SeqCst);
                    let _ = r.events.send(GenEvent::Failed(GenError::Cancelled));
                    continue;
                }
                if self.fits(&batch, &new, &r) {
                    self.shared.queued.fetch_sub(1, Ordering::SeqCst);
                    new.push(r);
                } else {
                    held = Some(r);
                    break;
                }
            }
            if !new.is_empty() {
                self.admit(&mut batch, new);
                self.tick();
            }
            if !batch.is_empty() {
                self.step(&mut batch);
                self.tick();
            }
        }
        // Shutdown: everything waiting or running ends with an error.
        for (_, l) in self.live.drain() {
            let _ = l.req.events.send(GenEvent::Failed(GenError::ShuttingDown));
        }
        for r in held.into_iter().chain(std::iter::from_fn(|| rx.try_recv().ok())) {
            self.shared.queued.fetch_sub(1, Ordering::SeqCst);
            let _ = r.events.send(GenEvent::Failed(GenError::ShuttingDown));
        }
    }

    /// Whether `r` may join `batch` (and the prompts `new` joining with it) now.
    fn fits(&self, batch: &Batch, new: &[Request], r: &Request) -> bool {
        if r.config.num_beams > 1 {
            // Beam search runs alone between steps: it never pads the batch.
            return true;
        }
        let group: Vec<(usize, usize)> =
            new.iter().filter(|q| q.config.num_beams <= 1).map(|q| (q.prompt.len(), q.config.max_new_tokens)).collect();
        let remaining = batch
            .sequences()
            .iter()
            .map(|s| s.config.max_new_tokens.saturating_sub(s.generated.len()))
            .max()
            .unwrap_or(0);
        join_fits(
            if batch.is_empty() { None } else { Some(self.span) },
            remaining,
            &group,
            (r.prompt.len(), r.config.max_new_tokens),
            self.config.max_padding_ratio,
            self.engine.model.cfg.context_length,
        )
    }

    fn admit(&mut self, batch: &mut Batch, new: Vec<Request>) {
        let mut seqs = Vec::new();
        let mut ids = Vec::new();
        for r in new {
            if r.abandoned() {
                let _ = r.events.send(GenEvent::Failed(GenError::Cancelled));
                continue;
            }
            let _ = r.events.send(GenEvent::Started);
            if r.config.num_beams > 1 {
                // Beam search runs alone, start to end, between the batch's steps.
                let out = self.engine.generate(std::slice::from_ref(&r.prompt), &r.config);
                match out {
                    Ok(mut g) if !g.is_empty() => {
                        let g = g.remove(0);
                        let _ = r.events.send(GenEvent::Text(g.text.clone()));
                        let _ = r.events.send(GenEvent::Finished(output(g)));
                    }
                    Ok(_) => {
                        let _ = r.events.send(GenEvent::Failed(GenError::Engine("beam search returned nothing".into())));
                    }
                    Err(e) => {
                        let _ = r.events.send(GenEvent::Failed(GenError::Engine(e.to_string())));
                    }
                }
                self.tick();
                continue;
            }
            seqs.push(Sequence::new(r.id, r.prompt.clone(), r.config.clone()));
            ids.push(r.id);
            self.live.insert(r.id, Live { req: r, sent: String::new() });
        }
        if seqs.is_empty() {
            return;
        }
        let longest = ids.iter().filter_map(|id| self.live.get(id)).map(|l| l.req.prompt.len()).max().unwrap_or(0);
        let was_empty = batch.is_empty();
        match batch.admit(&self.engine.model, &self.engine.tokenizer, seqs) {
            Ok(done) => {
                // New rows are left-padded to the batch's length (or it to theirs).
                self.span = if was_empty { longest } else { self.span.max(longest) };
                self.stream(batch);
                self.finish(done);
            }
            Err(e) => {
                // The batch is unchanged when admission fails: only the new rows fail.
                for id in ids {
                    if let Some(l) = self.live.remove(&id) {
                        let _ = l.req.events.send(GenEvent::Failed(GenError::Engine(e.to_string())));
                    }
                }
            }
        }
    }

    fn step(&mut self, batch: &mut Batch) {
        match batch.step(&self.engine.model, &self.engine.tokenizer) {
            Ok(done) => {
                self.span += 1;
                self.stream(batch);
                self.finish(done);
            }
            Err(e) => {
                for (_, l) in self.live.drain() {
                    let _ = l.req.events.send(GenEvent::Failed(GenError::Engine(e.to_string())));
                }
                *batch = Batch::new();
                return;
            }
        }
        let gone: Vec<u64> = self.live.iter().filter(|(_, l)| l.req.abandoned()).map(|(id, _)| *id).collect();
        if gone.is_empty() {
            return;
        }
        match batch.cancel(&gone, &self.engine.tokenizer) {
            Ok(out) => {
                for g in out {
                    if let Some(l) = self.live.remove(&g.id) {
                        let _ = l.req.events.send(GenEvent::Failed(GenError::Cancelled));
                    }
                }
            }
            Err(e) => {
                for (_, l) in self.live.drain() {
                    let _ = l.req.events.send(GenEvent::Failed(GenError::Engine(e.to_string())));
                }
                *batch = Batch::new();
            }
        }
    }

    /// Sends each running prompt the text its new tokens added. A trailing U+FFFD (a
    /// character whose UTF-8 bytes are not all generated yet) is held back.
    fn stream(&mut self, batch: &Batch) {
        for seq in batch.sequences() {
            let Some(l) = self.live.get_mut(&seq.id) else { continue };
            let Ok(text) = self.engine.tokenizer.decode(&seq.generated) else { continue };
            let stable = text.trim_end_matches('\u{FFFD}');
            if stable.len() > l.sent.len() && stable.starts_with(l.sent.as_str()) {
                let _ = l.req.events.send(GenEvent::Text(stable[l.sent.len()..].to_string()));
                l.sent = stable.to_string();
            }
        }
    }

    fn finish(&mut self, done: Vec<Generated>) {
        for g in done {
            if let Some(l) = self.live.remove(&g.id) {
                let _ = l.req.events.send(GenEvent::Finished(output(g)));
            }
        }
    }
}

/// The join rule. `span`: positions of the running batch (`None`: no batch); `remaining`:
/// the most new tokens a running row may still generate; `group`: (prompt, new tokens) of the
/// prompts already joining; `candidate`: the prompt asking to join. Every prompt of the
/// resulting group must stay within `ratio` times its own need, and the batch within the
/// context.
fn join_fits(
    span: Option<usize>,
    remaining: usize,
    group: &[(usize, usize)],
    candidate: (usize, usize),
    ratio: f64,
    context: usize,
) -> bool {
    if span.is_none() && group.is_empty() {
        return true;
    }
    let longest = group.iter().map(|g| g.0).chain([candidate.0]).max().unwrap_or(0);
    let start = span.map_or(longest, |s| s.max(longest));
    let max_new = group.iter().map(|g| g.1).chain([candidate.1, remaining]).max().unwrap_or(0);
    if start + max_new > context {
        return false;
    }
    group.iter().chain([&candidate]).all(|&(p, m)| (start + m) as f64 <= ratio * (p + m) as f64)
}

fn output(g: Generated) -> GenOutput {
    GenOutput { prompt_tokens: g.prompt_tokens, generated_tokens: g.ids.len(), text: g.text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_config_from_the_scheduler_table() {
        let t: toml::Table = toml::from_str(
            "queue_capacity = 3\ntick_ms = 20\nmin_batch = 2\n[[buckets]]\nmax_tokens = 32\nbatch = 8\n[[buckets]]\nbatch = 2\n",
        )
        .unwrap();
        let c = RunnerConfig::from_scheduler_table(&t).unwrap();
        assert_eq!(c, RunnerConfig { queue_capacity: 3, max_batch: 8, tick: Duration::from_millis(20), max_padding_ratio: 2.0 });
        assert_eq!(RunnerConfig::from_scheduler_table(&toml::Table::new()).unwrap(), RunnerConfig::default());
        let bad: toml::Table = toml::from_str("queue_capacity = 0").unwrap();
        assert!(RunnerConfig::from_scheduler_table(&bad).is_err());
        let t: toml::Table = toml::from_str("max_padding_ratio = 1.5").unwrap();
        assert_eq!(RunnerConfig::from_scheduler_table(&t).unwrap().max_padding_ratio, 1.5);
        let bad: toml::Table = toml::from_str("max_padding_ratio = 0.5").unwrap();
        assert!(RunnerConfig::from_scheduler_table(&bad).is_err());
    }

    #[test]
    fn joins_keep_the_kv_span_bounded() {
        // An empty batch takes anything.
        assert!(join_fits(None, 0, &[], (1500, 64), 2.0, 2048));
        // A short prompt joins a young batch...
        assert!(join_fits(Some(120), 30, &[], (100, 32), 2.0, 2048));
        // ...but not one whose span is far past what it needs.
        assert!(!join_fits(Some(400), 30, &[], (100, 32), 2.0, 2048));
        // A long prompt would pad the short ones joining with it.
        assert!(!join_fits(None, 0, &[(50, 32)], (600, 32), 2.0, 2048));
        // Never past the context.
        assert!(!join_fits(Some(1900), 100, &[], (1900, 200), 2.0, 2048));
    }
}
