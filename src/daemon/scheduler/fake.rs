//! A model-free backend for tests of the scheduler and of the layers above it (D-Bus):
//! deterministic tokens, no time of its own, and a log of what it was asked to do.
//!
//! Row `id` generates tokens `id * 1000 + 1`, `id * 1000 + 2`, ... and finishes after its
//! `max_new_tokens` (`Length`), or early at a token equal to `eos_token` when set.

use super::backend::{Backend, ModelInfo, NewSequence, Update};
use super::memory::{BatchState, MemoryModel, RowState};
use seqgpt_engine::generate::{FinishReason, Generated};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the fake was asked to do, for assertions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeLog {
    /// Ids of each admission, in order.
    pub admits: Vec<Vec<u64>>,
    /// Rows of each step.
    pub steps: Vec<usize>,
    /// Ids cancelled.
    pub cancelled: Vec<u64>,
    /// Ids run on their own.
    pub solos: Vec<u64>,
    /// The most rows the batch ever held.
    pub max_rows: usize,
}

struct Row {
    id: u64,
    prompt_len: usize,
    max_new: usize,
    generated: Vec<u32>,
}

pub struct FakeBackend {
    rows: Vec<Row>,
    cache_len: usize,
    log: Arc<Mutex<FakeLog>>,
    context_length: usize,
    memory: MemoryModel,
    step_delay: Duration,
    fail_on_step: Option<usize>,
    eos_token: Option<u32>,
}

impl Default for FakeBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeBackend {
    pub fn new() -> Self {
        Self {
            rows: Vec::new(),
            cache_len: 0,
            log: Arc::default(),
            context_length: 1 << 30,
            // 1 KiB of KV per token and small activations.
            memory: MemoryModel { n_layer: 1, hidden: 512, n_head: 1, ffn: 512, vocab: 16, kv_elem_bytes: 1, act_elem_bytes: 1 },
            step_delay: Duration::ZERO,
            fail_on_step: None,
            eos_token: None,
        }
    }

    /// The log, shared: keep a clone before handing the backend to the scheduler.
    pub fn log(&self) -> Arc<Mutex<FakeLog>> {
        self.log.clone()
    }

    pub fn with_context_length(mut self, n: usize) -> Self {
        self.context_length = n;
        self
    }

    pub fn with_memory_model(mut self, m: MemoryModel) -> Self {
        self.memory = m;
        self
    }

    /// Real (wall-clock) time each step takes; paused-clock tests keep it zero.
    pub fn with_step_delay(mut self, d: Duration) -> Self {
        self.step_delay = d;
        self
    }

    /// The `n`th step (from 0) fails.
    pub fn failing_on_step(mut self, n: usize) -> Self {
        self.fail_on_step = Some(n);
        self
    }

    /// Rows finish (`Eos`) when they generate `token`.
    pub fn with_eos(mut self, token: u32) -> Self {
        self.eos_token = Some(token);
        self
    }

    fn token(id: u64, k: usize) -> u32 {
        (id as u32).wrapping_mul(1000).wrapping_add(k as u32 + 1)
    }

    fn finished(row: Row, finish: FinishReason) -> Generated {
        let text = row.generated.iter().map(|t| format!("<{t}>")).collect();
        Generated { id: row.id, prompt_tokens: row.prompt_len, ids: row.generated, text, finish }
    }

    /// One token for each of `rows` (indices into `self.rows`); returns updates.
    fn generate(&mut self, which: impl Fn(u64) -> bool) -> Vec<Update> {
        let mut out = Vec::new();
        let mut keep = Vec::new();
        for mut row in std::mem::take(&mut self.rows) {
            if !which(row.id) {
                keep.push(row);
                continue;
            }
            let t = Self::token(row.id, row.generated.len());
            row.generated.push(t);
            out.push(Update::Token { id: row.id, token: t, text: format!("<{t}>") });
            if self.eos_token == Some(t) {
                out.push(Update::Finished(Self::finished(row, FinishReason::Eos)));
            } else if row.generated.len() >= row.max_new {
                out.push(Update::Finished(Self::finished(row, FinishReason::Length)));
            } else {
                keep.push(row);
            }
        }
        self.rows = keep;
        if self.rows.is_empty() {
            self.cache_len = 0;
        }
        out
    }
}

impl Backend for FakeBackend {
    fn info(&self) -> ModelInfo {
        ModelInfo { context_length: self.context_length, memory: self.memory, free_memory: Arc::new(|| None) }
    }

    fn admit(&mut self, seqs: Vec<NewSequence>) -> Result<Vec<Update>, String> {
        let ids: Vec<u64> = seqs.iter().map(|s| s.id).collect();
        let longest = seqs.iter().map(|s| s.prompt.len()).max().unwrap_or(0);
        self.cache_len = self.cache_len.max(longest);
        let mut zero = Vec::new();
        for s in seqs {
            let row = Row { id: s.id, prompt_len: s.prompt.len(), max_new: s.config.max_new_tokens, generated: Vec::new() };
            if row.max_new == 0 {
                zero.push(Update::Finished(Self::finished(row, FinishReason::Length)));
            } else {
                self.rows.push(row);
            }
        }
        {
            let mut log = self.log.lock().unwrap();
            log.admits.push(ids.clone());
            log.max_rows = log.max_rows.max(self.rows.len());
        }
        let mut out = zero;
        out.extend(self.generate(|id| ids.contains(&id)));
        Ok(out)
    }

    fn step(&mut self) -> Result<Vec<Update>, String> {
        if self.rows.is_empty() {
            return Ok(Vec::new());
        }
        let n = {
            let mut log = self.log.lock().unwrap();
            log.steps.push(self.rows.len());
            log.steps.len() - 1
        };
        if self.fail_on_step == Some(n) {
            return Err(format!("fake failure on step {n}"));
        }
        if !self.step_delay.is_zero() {
            std::thread::sleep(self.step_delay);
        }
        self.cache_len += 1;
        Ok(self.generate(|_| true))
    }

    fn cancel(&mut self, ids: &[u64]) -> Result<Vec<Update>, String> {
        let mut out = Vec::new();
        let mut keep = Vec::new();
        for row in std::mem::take(&mut self.rows) {
            if ids.contains(&row.id) {
                self.log.lock().unwrap().cancelled.push(row.id);
                out.push(Update::Finished(Self::finished(row, FinishReason::Cancelled)));
            } else {
                keep.push(row);
            }
        }
        self.rows = keep;
        if self.rows.is_empty() {
            self.cache_len = 0;
        }
        Ok(out)
    }

    fn run_solo(&mut self, seq: NewSequence) -> Result<Generated, String> {
        self.log.lock().unwrap().solos.push(seq.id);
        let mut row = Row { id: seq.id, prompt_len: seq.prompt.len(), max_new: seq.config.max_new_tokens, generated: Vec::new() };
        for k in 0..row.max_new {
            row.generated.push(Self::token(seq.id, k));
        }
        Ok(Self::finished(row, FinishReason::Length))
    }

    fn state(&self) -> BatchState {
        let kv = self.memory.kv_bytes_per_token();
        let rows: Vec<RowState> = self
            .rows
            .iter()
            .map(|r| RowState { id: r.id, prompt_len: r.prompt_len, max_new: r.max_new, generated: r.generated.len() })
            .collect();
        let capacity = self.cache_len + rows.iter().map(|r| r.max_new - r.generated).max().unwrap_or(0);
        BatchState {
            cache_len: self.cache_len,
            cache_capacity: capacity,
            cache_bytes: rows.len() as u64 * capacity as u64 * kv,
            rows,
            free_memory: None,
        }
    }

    fn reset(&mut self) {
        self.rows.clear();
        self.cache_len = 0;
    }
}
