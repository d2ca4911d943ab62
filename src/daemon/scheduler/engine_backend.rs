//! The real engine as a scheduler backend: one continuous [`Batch`], plus beam search run
//! on its own.

use super::backend::{Backend, FreeMemoryFn, ModelInfo, NewSequence, TextEncoder, Update};
use super::memory::{cpu_free_memory, BatchState, MemoryModel, RowState};
use seqgpt_engine::engine::Engine;
use seqgpt_engine::generate::{Batch, Generated, Sequence};
use candle_core::Device;
use std::collections::HashMap;
use std::sync::Arc;

pub struct EngineBackend {
    engine: Arc<Engine>,
    batch: Batch,
    /// Per row in flight: tokens and text bytes already reported.
    reported: HashMap<u64, (usize, usize)>,
}

impl EngineBackend {
    pub fn new(engine: Arc<Engine>) -> Self {
        Self { engine, batch: Batch::new(), reported: HashMap::new() }
    }

    /// `Token` updates for what rows generated since the last report, then `Finished` for
    /// the rows in `done`.
    fn report(&mut self, done: Vec<Generated>) -> Vec<Update> {
        let tok = &self.engine.tokenizer;
        let mut out = Vec::new();
        for seq in self.batch.sequences() {
            let (n, text_len) = self.reported.entry(seq.id).or_insert((0, 0));
            if seq.generated.len() <= *n {
                continue;
            }
            let text = tok.decode(&seq.generated).unwrap_or_default();
            // Hold back a character still incomplete (decoded as U+FFFD at the end).
            let stable = if text.ends_with('\u{FFFD}') { text.trim_end_matches('\u{FFFD}') } else { &text[..] };
            let delta = stable.get(*text_len..).unwrap_or("");
            for (i, &t) in seq.generated[*n..].iter().enumerate() {
                let text = if i + 1 == seq.generated.len() - *n { delta.to_string() } else { String::new() };
                out.push(Update::Token { id: seq.id, token: t, text });
            }
            *n = seq.generated.len();
            *text_len = (*text_len).max(stable.len());
        }
        for g in done {
            let (n, text_len) = self.reported.remove(&g.id).unwrap_or((0, 0));
            let delta = g.text.get(text_len..).unwrap_or("");
            let fresh = g.ids.len().saturating_sub(n);
            for (i, &t) in g.ids[n.min(g.ids.len())..].iter().enumerate() {
                let text = if i + 1 == fresh { delta.to_string() } else { String::new() };
                out.push(Update::Token { id: g.id, token: t, text });
            }
            out.push(Update::Finished(g));
        }
        out
    }
}

/// Free memory where `device` computes: MemAvailable / cgroup room on the CPU, free GPU
/// memory on CUDA.
pub fn free_memory_fn(device: &Device) -> FreeMemoryFn {
    match device {
        Device::Cpu => Arc::new(cpu_free_memory),
        d => {
            let d = d.clone();
            Arc::new(move || seqgpt_engine::device::free_memory_bytes(&d))
        }
    }
}

impl Backend for EngineBackend {
    fn info(&self) -> ModelInfo {
        let m = &self.engine.model;
        ModelInfo {
            context_length: m.cfg.context_length,
            memory: MemoryModel::from_bloom(&m.cfg, m.kv_dtype(), m.dtype()),
            free_memory: free_memory_fn(m.device()),
        }
    }

    fn admit(&mut self, seqs: Vec<NewSequence>) -> Result<Vec<Update>, String> {
        let seqs: Vec<Sequence> = seqs.into_iter().map(|s| Sequence::new(s.id, s.prompt, s.config)).collect();
        let ids: Vec<u64> = seqs.iter().map(|s| s.id).collect();
        for &id in &ids {
            self.reported.insert(id, (0, 0));
        }
        let done = self.batch.admit(&self.engine.model, &self.engine.tokenizer, seqs).map_err(|e| e.to_string())?;
        Ok(self.report(done))
    }

    fn step(&mut self) -> Result<Vec<Update>, String> {
        let done = self.batch.step(&self.engine.model, &self.engine.tokenizer).map_err(|e| e.to_string())?;
        Ok(self.report(done))
    }

    fn cancel(&mut self, ids: &[u64]) -> Result<Vec<Update>, String> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let done = self.batch.cancel(ids, &self.engine.tokenizer).map_err(|e| e.to_string())?;
        Ok(self.report(done))
    }

    fn run_solo(&mut self, seq: NewSequence) -> Result<Generated, String> {
        // The engine's own whole-request path (a beam search, or a batch of one to the end).
        let mut done = self.engine.generate(std::slice::from_ref(&seq.prompt), &seq.config).map_err(|e| e.to_string())?;
        let mut g = done.pop().ok_or_else(|| "the sequence produced no result".to_string())?;
        g.id = seq.id;
        Ok(g)
    }

    fn state(&self) -> BatchState {
        let (cache_len, cache_capacity) = self.batch.cache_positions();
        BatchState {
            rows: self
                .batch
                .sequences()
                .iter()
                .map(|s| RowState { id: s.id, prompt_len: s.prompt.len(), max_new: s.config.max_new_tokens, generated: s.generated.len() })
                .collect(),
            cache_len,
            cache_capacity,
            cache_bytes: self.batch.cache_bytes() as u64,
            free_memory: None,
        }
    }

    fn reset(&mut self) {
        self.batch = Batch::new();
        self.reported.clear();
    }
}

/// The engine's tokenizer, for text prompts.
pub struct EngineEncoder(pub Arc<Engine>);

impl TextEncoder for EngineEncoder {
    fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        self.0.encode(text).map_err(|e| e.to_string())
    }
}
