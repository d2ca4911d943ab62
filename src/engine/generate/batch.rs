//! A batch of sequences decoded together, one token per step.
//!
//! Prompts of different lengths are left-padded into one prefill; each step then feeds every
//! unfinished row its last token. A row that finishes (EOS, a stop string, its token
//! budget, or a cancel) leaves the batch at once and its KV rows are freed. New sequences
//! can join between steps (continuous batching): they are prefilled on their own and their
//! cache rows appended.

use super::sampler::Sampler;
use super::{FinishReason, GenerationConfig, Generated};
use crate::model::{Bloom, KvCache, Logits};
use crate::tokenizer::Tokenizer;
use candle_core::Result;

/// One sequence in flight.
pub struct Sequence {
    /// Caller's handle for this sequence.
    pub id: u64,
    pub prompt: Vec<u32>,
    pub generated: Vec<u32>,
    pub config: GenerationConfig,
    sampler: Sampler,
    /// Prompt followed by the generated tokens (what the repetition penalty sees).
    seen: Vec<u32>,
    text_len_checked: usize,
}

impl Sequence {
    pub fn new(id: u64, prompt: Vec<u32>, config: GenerationConfig) -> Self {
        let sampler = Sampler::new(config.sampling.clone(), config.repetition_penalty);
        Self { id, seen: prompt.clone(), prompt, generated: Vec::new(), config, sampler, text_len_checked: 0 }
    }

    /// Chooses the next token from `logits` and records it; returns why it finished, if so.
    fn push_from_logits(&mut self, logits: &mut [f32], tok: &Tokenizer) -> Option<FinishReason> {
        let next = self.sampler.next(logits, &self.seen);
        self.generated.push(next);
        self.seen.push(next);
        if self.config.stop_on_eos && Some(next) == tok.eos_id {
            return Some(FinishReason::Eos);
        }
        if !self.config.stop_strings.is_empty() {
            if let Ok(text) = tok.decode(&self.generated) {
                // Only text that can contain a new match: the tail since the last check.
                let from = self.text_len_checked.saturating_sub(self.config.longest_stop());
                let from = (0..=from.min(text.len())).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
                if self.config.stop_strings.iter().any(|s| !s.is_empty() && text[from..].contains(s.as_str())) {
                    return Some(FinishReason::StopString);
                }
                self.text_len_checked = text.len();
            }
        }
        if self.generated.len() >= self.config.max_new_tokens {
            return Some(FinishReason::Length);
        }
        None
    }

    fn finish(self, reason: FinishReason, tok: &Tokenizer) -> Generated {
        let mut text = tok.decode(&self.generated).unwrap_or_default();
        if reason == FinishReason::StopString {
            if let Some(pos) = self.config.stop_strings.iter().filter_map(|s| text.find(s.as_str())).min() {
                text.truncate(pos);
            }
        }
        Generated { id: self.id, prompt_tokens: self.prompt.len(), ids: self.generated, text, finish: reason }
    }
}

/// Sequences decoding together, with their cache.
pub struct Batch {
    seqs: Vec<Sequence>,
    cache: Option<KvCache>,
}

impl Default for Batch {
    fn default() -> Self {
        Self::new()
    }
}

impl Batch {
    pub fn new() -> Self {
        Self { seqs: Vec::new(), cache: None }
    }

    pub fn len(&self) -> usize {
        self.seqs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }

    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.seqs.iter().map(|s| s.id)
    }

    /// The sequences in flight (for progress reports).
    pub fn sequences(&self) -> &[Sequence] {
        &self.seqs
    }

    /// Bytes held by this batch's KV cache.
    pub fn cache_bytes(&self) -> usize {
        self.cache.as_ref().map_or(0, KvCache::bytes)
    }

    /// Positions filled in this batch's KV cache (left padding included) and the positions
    /// it has room for; `(0, 0)` without a cache.
    pub fn cache_positions(&self) -> (usize, usize) {
        self.cache.as_ref().map_or((0, 0), |c| (c.own_len(), c.capacity()))
    }

    /// Prefills `new` (left-padded together), samples their first tokens and adds them to
    /// the batch. Sequences that finish on their first token are returned at once.
    pub fn admit(&mut self, model: &Bloom, tok: &Tokenizer, mut new: Vec<Sequence>) -> Result<Vec<Generated>> {
        new.retain(|s| !s.prompt.is_empty() || s.config.max_new_tokens == 0);
        if new.is_empty() {
            return Ok(Vec::new());
        }
        let longest = new.iter().map(|s| s.prompt.len()).max().unwrap_or(0);
        let budget = new.iter().map(|s| s.config.max_new_tokens).max().unwrap_or(0);
        let pad = tok.pad_id.unwrap_or(0);
        let ids: Vec<Vec<u32>> =
            new.iter().map(|s| [vec![pad; longest - s.prompt.len()], s.prompt.clone()].concat()).collect();
        let mask: Vec<Vec<u8>> =
            new.iter().map(|s| [vec![0u8; longest - s.prompt.len()], vec![1u8; s.prompt.len()]].concat()).collect();
        let mut cache = model.new_cache(new.len(), longest + budget)?;
        let logits = model.forward(&ids, &mask, &mut cache, Logits::Last)?;
        let logits: Vec<Vec<f32>> = logits.to_vec2()?;
        let mut done = Vec::new();
        let mut keep = Vec::new();
        let mut kept = Vec::new();
        for (row, (mut seq, mut l)) in new.into_iter().zip(logits).enumerate() {
            if seq.config.max_new_tokens == 0 {
                done.push(seq.finish(FinishReason::Length, tok));
                continue;
            }
            match seq.push_from_logits(&mut l, tok) {
                Some(reason) => done.push(seq.finish(reason, tok)),
                None => {
                    keep.push(row);
                    kept.push(seq);
                }
            }
        }
        if kept.is_empty() {
            return Ok(done);
        }
        if keep.len() != cache.batch() {
            cache.select_rows(&keep)?;
        }
        match self.cache.as_mut() {
            Some(c) => c.append_rows(cache)?,
            None => self.cache = Some(cache),
        }
        self.seqs.extend(kept);
        Ok(done)
    }

    /// One decoding step for every sequence; returns those that finished.
    pub fn step(&mut self, model: &Bloom, tok: &Tokenizer) -> Result<Vec<Generated>> {
        let Some(cache) = self.cache.as_mut() else {
            return Ok(Vec::new());
        };
        let ids: Vec<Vec<u32>> = self.seqs.iter().map(|s| vec![*s.generated.last().expect("admitted rows have a token")]).collect();
        let mask = vec![vec![1u8]; ids.len()];
        let logits: Vec<Vec<f32>> = model.forward(&ids, &mask, cache, Logits::Last)?.to_vec2()?;
        let mut finished = Vec::new();
        for (row, mut l) in logits.into_iter().enumerate() {
            if let Some(reason) = self.seqs[row].push_from_logits(&mut l, tok) {
                finished.push((row, reason));
            }
        }
        self.remove_rows(finished, tok)
    }

    /// Ends the sequences `ids` now (cancelled by their callers).
    pub fn cancel(&mut self, ids: &[u64], tok: &Tokenizer) -> Result<Vec<Generated>> {
        let rows = self
            .seqs
            .iter()
            .enumerate()
            .filter(|(_, s)| ids.contains(&s.id))
            .map(|(r, _)| (r, FinishReason::Cancelled))
            .collect();
        self.remove_rows(rows, tok)
    }

    fn remove_rows(&mut self, rows: Vec<(usize, FinishReason)>, tok: &Tokenizer) -> Result<Vec<Generated>> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let gone: std::collections::HashMap<usize, FinishReason> = rows.into_iter().collect();
        let keep: Vec<usize> = (0..self.seqs.len()).filter(|r| !gone.contains_key(r)).collect();
        let mut out = Vec::new();
        let mut remaining = Vec::new();
        for (r, seq) in std::mem::take(&mut self.seqs).into_iter().enumerate() {
            match gone.get(&r) {
                Some(&reason) => out.push(seq.finish(reason, tok)),
                None => remaining.push(seq),
            }
        }
        self.seqs = remaining;
        if keep.is_empty() {
            self.cache = None;
        } else if let Some(c) = self.cache.as_mut() {
            c.select_rows(&keep)?;
        }
        Ok(out)
    }
}
