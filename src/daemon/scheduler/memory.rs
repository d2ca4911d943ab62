//! The memory guard: how many bytes a batch will need (KV cache and activations) and how
//! many it may use.
//!
//! KV per token (every layer's key and value row): `2 * n_layer * hidden * elem` bytes, with
//! `elem` the cache's element size (4 for f32 on the CPU, 2 for f16 on a GPU): 98,304 bytes
//! for the 560M shape in f16, 196,608 in f32. A batch of `rows` with room for `capacity`
//! positions (left padding included) holds `rows * capacity * kv_per_token`.
//!
//! Activations, for one layer (layers run one after another, so one layer's tensors are live
//! at a time) of a forward of `rows x t` new tokens attending to `span` positions:
//! `elem * rows * (t * (7 * hidden + 2 * ffn) + 2 * n_head * t * span)`: the residual stream,
//! layer norm, attention output and input embeddings (4 x hidden), the fused QKV
//! (3 x hidden), the MLP's up-projection and GELU (2 x ffn), attention scores and
//! probabilities; plus `2 * 4 * rows * vocab` for the last positions' f32 logits and a copy
//! for sampling. The mapped weights are not part of the budget.
//!
//! The guard compares the peak of an admission with the budget: while joiners prefill, the
//! running cache, the joiners' fresh cache and the prefill activations are all live, and
//! merging them copies one layer at a time; afterwards the merged cache grows (by doubling,
//! as [`seqgpt_engine::model::KvCache`] does) until every row can finish.

use seqgpt_engine::model::BloomConfig;
use candle_core::DType;

/// The model facts the estimate needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryModel {
    pub n_layer: usize,
    pub hidden: usize,
    pub n_head: usize,
    pub ffn: usize,
    pub vocab: usize,
    /// Bytes per KV cache element (4 = f32, 2 = f16).
    pub kv_elem_bytes: usize,
    /// Bytes per activation element.
    pub act_elem_bytes: usize,
}

/// One row of the running batch, as the engine reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowState {
    pub id: u64,
    pub prompt_len: usize,
    pub max_new: usize,
    pub generated: usize,
}

/// The running batch after an engine operation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchState {
    pub rows: Vec<RowState>,
    /// Positions filled in the cache (left padding included).
    pub cache_len: usize,
    /// Positions the cache has room for.
    pub cache_capacity: usize,
    /// Bytes the cache holds now.
    pub cache_bytes: u64,
    /// Free memory where the batch lives (see [`Budget`]), if known.
    pub free_memory: Option<u64>,
}

/// A request the guard considers admitting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planned {
    pub prompt_len: usize,
    pub max_new: usize,
    /// Beam search width (1 = an ordinary row).
    pub beams: usize,
}

/// What admitting some requests would lead to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// The most bytes live at once, from the admission until every row finishes.
    pub peak_bytes: u64,
    /// Cache positions the batch reaches (left padding included).
    pub span: usize,
    /// The longest row's prompt + new tokens.
    pub longest_row: usize,
}

impl MemoryModel {
    pub fn from_bloom(cfg: &BloomConfig, cache_dtype: DType, activation_dtype: DType) -> Self {
        Self {
            n_layer: cfg.n_layer,
            hidden: cfg.hidden,
            n_head: cfg.n_head,
            ffn: cfg.ffn,
            vocab: cfg.vocab,
            kv_elem_bytes: cache_dtype.size_in_bytes(),
            act_elem_bytes: activation_dtype.size_in_bytes(),
        }
    }

    /// Key and value bytes of one position in every layer.
    pub fn kv_bytes_per_token(&self) -> u64 {
        2 * self.n_layer as u64 * self.hidden as u64 * self.kv_elem_bytes as u64
    }

    /// Live activation bytes of a forward of `rows x t` new tokens over `span` positions.
    pub fn activation_bytes(&self, rows: usize, t: usize, span: usize) -> u64 {
        let (rows, t, span) = (rows as u64, t as u64, span as u64);
        let per_layer = rows * (t * (7 * self.hidden as u64 + 2 * self.ffn as u64) + 2 * self.n_head as u64 * t * span);
        per_layer * self.act_elem_bytes as u64 + 2 * 4 * rows * self.vocab as u64
    }

    /// The peak bytes of admitting `new` (all ordinary rows) into the batch `state`
    /// (empty for a new batch).
    pub fn estimate(&self, state: &BatchState, new: &[Planned]) -> Estimate {
        let kv = self.kv_bytes_per_token();
        let running_remaining = state.rows.iter().map(|r| r.max_new.saturating_sub(r.generated)).max().unwrap_or(0);
        let running_longest = state.rows.iter().map(|r| r.prompt_len + r.max_new).max().unwrap_or(0);
        if new.is_empty() {
            let span = state.cache_len + running_remaining;
            return Estimate {
                peak_bytes: state.cache_bytes.max(state.rows.len() as u64 * span as u64 * kv)
                    + self.activation_bytes(state.rows.len(), 1, span),
                span,
                longest_row: running_longest,
            };
        }
        let n_new = new.len();
        let longest_new = new.iter().map(|p| p.prompt_len).max().unwrap_or(0);
        let budget_new = new.iter().map(|p| p.max_new).max().unwrap_or(0);
        let fresh_cache = n_new as u64 * (longest_new + budget_new) as u64 * kv;
        let prefill = self.activation_bytes(n_new, longest_new, longest_new);

        // After the merge every row ends where the longer side ended; each row then needs
        // its remaining tokens.
        let joined_len = state.cache_len.max(longest_new);
        let span = joined_len + running_remaining.max(budget_new);
        let rows = state.rows.len() + n_new;
        let mut capacity = state.cache_capacity.max(joined_len).max(longest_new + budget_new);
        while capacity < span {
            capacity = (capacity + 1).max(2 * capacity);
        }
        let merged = rows as u64 * capacity as u64 * kv;
        let one_layer = merged / self.n_layer.max(1) as u64;
        let admission_peak = state.cache_bytes + fresh_cache + prefill.max(2 * one_layer);
        let decode_peak = merged + self.activation_bytes(rows, 1, span);
        Estimate {
            peak_bytes: admission_peak.max(decode_peak),
            span,
            longest_row: running_longest.max(new.iter().map(|p| p.prompt_len + p.max_new).max().unwrap_or(0)),
        }
    }

    /// The peak bytes of one request on its own (beam search included): what it needs at
    /// the least.
    pub fn solo_bytes(&self, p: &Planned) -> u64 {
        if p.beams <= 1 {
            return self.estimate(&BatchState::default(), std::slice::from_ref(p)).peak_bytes;
        }
        // Beam search: the prompt's cache and its shared copy, then `beams` rows of
        // `max_new` positions each; reordering beams copies a layer at a time.
        let kv = self.kv_bytes_per_token();
        let (n, prompt, new) = (p.beams as u64, p.prompt_len as u64, p.max_new as u64);
        let cache = kv * (2 * prompt + n * new);
        let one_layer = kv * n * new / self.n_layer.max(1) as u64;
        let act = self
            .activation_bytes(1, p.prompt_len, p.prompt_len)
            .max(self.activation_bytes(p.beams, 1, p.prompt_len + p.max_new));
        cache + one_layer + act
    }
}

/// How many bytes the scheduler's batch may use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// A configured number of bytes.
    Fixed(u64),
    /// What the batch holds now plus `fraction` of the free memory the engine reports
    /// (MemAvailable and the cgroup's room on the CPU, free GPU memory on CUDA); no limit
    /// when the engine cannot tell.
    Derived { fraction: f64 },
}

impl Budget {
    pub fn bytes(&self, state: &BatchState) -> u64 {
        match *self {
            Budget::Fixed(b) => b,
            Budget::Derived { fraction } => match state.free_memory {
                Some(free) => state.cache_bytes.saturating_add((free as f64 * fraction) as u64),
                None => u64::MAX,
            },
        }
    }
}

/// Free memory for a batch on the CPU: `MemAvailable`, capped by the room left under the
/// cgroup's `memory.max`.
pub fn cpu_free_memory() -> Option<u64> {
    let avail = seqgpt_engine::sysinfo::mem_available_bytes();
    let cgroup = seqgpt_engine::sysinfo::cgroup_memory_headroom_bytes();
    match (avail, cgroup) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m560(elem: usize) -> MemoryModel {
        MemoryModel { n_layer: 24, hidden: 1024, n_head: 16, ffn: 4096, vocab: 250880, kv_elem_bytes: elem, act_elem_bytes: elem }
    }

    #[test]
    fn kv_per_token_matches_the_560m_figure() {
        assert_eq!(m560(2).kv_bytes_per_token(), 98_304);
        assert_eq!(m560(4).kv_bytes_per_token(), 196_608);
    }

    #[test]
    fn a_fresh_batch_is_its_cache_plus_prefill() {
        let m = m560(2);
        let p = Planned { prompt_len: 30, max_new: 64, beams: 1 };
        let e = m.estimate(&BatchState::default(), &[p; 8]);
        assert_eq!(e.span, 94);
        let cache = 8 * 94 * 98_304u64;
        assert!(e.peak_bytes >= cache + m.activation_bytes(8, 30, 30));
        assert!(e.peak_bytes < cache * 2, "{} vs cache {cache}", e.peak_bytes);
        // More rows never need less.
        let e4 = m.estimate(&BatchState::default(), &[p; 4]);
        assert!(e4.peak_bytes < e.peak_bytes);
    }

    #[test]
    fn joining_counts_the_running_cache_and_growth() {
        let m = m560(4);
        let kv = m.kv_bytes_per_token();
        let state = BatchState {
            rows: vec![RowState { id: 1, prompt_len: 20, max_new: 64, generated: 50 }],
            cache_len: 70,
            cache_capacity: 84,
            cache_bytes: 84 * kv,
            free_memory: None,
        };
        let e = m.estimate(&state, &[Planned { prompt_len: 10, max_new: 64, beams: 1 }]);
        // Rows end at 70 + 64; the capacity doubles from 84 to 168.
        assert_eq!(e.span, 134);
        assert!(e.peak_bytes >= 2 * 168 * kv);
        assert_eq!(e.longest_row, 84);
    }

    #[test]
    fn derived_budget_adds_held_bytes() {
        let s = BatchState { cache_bytes: 1000, free_memory: Some(10_000), ..Default::default() };
        assert_eq!(Budget::Derived { fraction: 0.5 }.bytes(&s), 6000);
        assert_eq!(Budget::Derived { fraction: 0.5 }.bytes(&BatchState::default()), u64::MAX);
        assert_eq!(Budget::Fixed(7).bytes(&s), 7);
    }
}
