//! The scheduler's settings, read from the `[scheduler]` table of the daemon's TOML file.
//!
//! ```toml
//! [scheduler]
//! queue_capacity = 8      # requests that may wait; one more gets Busy
//! tick_ms = 50            # how often the window is checked
//! min_batch = 3           # a batch starts once this many wait ...
//! max_wait_ms = 100       # ... or once the oldest has waited this long
//! memory_budget_mb = 0    # KV + activations; 0 = derive from free memory
//! memory_fraction = 0.5   # share of free memory a derived budget may take
//! max_padding_ratio = 2.0 # joins stop once a batch's KV span exceeds this x its longest row
//! max_overtakes = 8       # younger requests that may start before one of another bucket
//!
//! [[scheduler.buckets]]
//! max_tokens = 32
//! batch = 8
//! [[scheduler.buckets]]
//! max_tokens = 128
//! batch = 4
//! [[scheduler.buckets]]   # no max_tokens: every longer prompt
//! batch = 2
//! ```

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One length bucket: prompts of at most `max_tokens` tokens (any length when `None`) run in
/// batches of at most `batch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BucketConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<usize>,
    pub batch: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SchedulerConfig {
    /// Requests that may wait in the queue (running ones do not count); past it, Busy.
    pub queue_capacity: usize,
    /// Period of the window check, in milliseconds.
    pub tick_ms: u64,
    /// A batch starts at a tick once at least this many requests wait.
    pub min_batch: usize,
    /// A batch starts anyway once the oldest request has waited this long (milliseconds).
    pub max_wait_ms: u64,
    /// Budget for KV cache and activations in MiB; 0 derives it from free memory.
    pub memory_budget_mb: u64,
    /// With a derived budget: the share of free memory (MemAvailable, the cgroup's room, or
    /// free GPU memory) the scheduler may fill, on top of what its batch already holds.
    pub memory_fraction: f64,
    /// A running batch admits joiners only while its KV span (positions, left padding
    /// included) stays within this multiple of its longest row's prompt + new tokens.
    pub max_padding_ratio: f64,
    /// Fairness: how many younger requests may start before a waiting request that the
    /// running batch cannot take (another bucket, beam search); then joins stop, the batch
    /// drains, and the oldest request's bucket runs next.
    pub max_overtakes: usize,
    /// Length buckets, by increasing `max_tokens`; the last may omit it (every longer prompt).
    pub buckets: Vec<BucketConfig>,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            queue_capacity: 8,
            tick_ms: 50,
            min_batch: 3,
            max_wait_ms: 100,
            memory_budget_mb: 0,
            memory_fraction: 0.5,
            max_padding_ratio: 2.0,
            max_overtakes: 8,
            buckets: vec![
                BucketConfig { max_tokens: Some(32), batch: 8 },
                BucketConfig { max_tokens: Some(128), batch: 4 },
                BucketConfig { max_tokens: None, batch: 2 },
            ],
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("scheduler config: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("scheduler config: {0}")]
    Invalid(String),
}

/// A whole daemon config file: only `[scheduler]` is read here, other tables are ignored.
#[derive(Deserialize)]
struct File {
    #[serde(default)]
    scheduler: SchedulerConfig,
}

impl SchedulerConfig {
    /// Reads the `[scheduler]` table of a TOML document (defaults where absent) and checks it.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let file: File = toml::from_str(text)?;
        file.scheduler.validate()?;
        Ok(file.scheduler)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        if self.queue_capacity == 0 {
            return bad("queue_capacity must be at least 1".into());
        }
        if self.tick_ms == 0 {
            return bad("tick_ms must be at least 1".into());
        }
        if self.min_batch == 0 {
            return bad("min_batch must be at least 1".into());
        }
        if !(self.memory_fraction > 0.0 && self.memory_fraction <= 1.0) {
            return bad(format!("memory_fraction {} must be in (0, 1]", self.memory_fraction));
        }
        if !(self.max_padding_ratio >= 1.0) {
            return bad(format!("max_padding_ratio {} must be at least 1", self.max_padding_ratio));
        }
        if self.buckets.is_empty() {
            return bad("at least one bucket is needed".into());
        }
        let mut last = 0usize;
        for (i, b) in self.buckets.iter().enumerate() {
            if b.batch == 0 {
                return bad(format!("bucket {i}: batch must be at least 1"));
            }
            match b.max_tokens {
                Some(m) if m <= last => {
                    return bad(format!("bucket {i}: max_tokens {m} must be larger than the previous bucket's ({last})"));
                }
                Some(m) => last = m,
                None if i + 1 != self.buckets.len() => {
                    return bad(format!("bucket {i}: only the last bucket may omit max_tokens"));
                }
                None => {}
            }
        }
        Ok(())
    }

    pub fn tick(&self) -> Duration {
        Duration::from_millis(self.tick_ms)
    }

    pub fn max_wait(&self) -> Duration {
        Duration::from_millis(self.max_wait_ms)
    }

    /// The fixed budget in bytes, if one is configured.
    pub fn fixed_budget_bytes(&self) -> Option<u64> {
        (self.memory_budget_mb > 0).then(|| self.memory_budget_mb.saturating_mul(1 << 20))
    }

    /// The "window off" variant used by benchmarks: a batch starts as soon as anything waits
    /// (no minimum, no wait); buckets, joins and the memory guard stay as configured.
    pub fn without_window(mut self) -> Self {
        self.min_batch = 1;
        self.max_wait_ms = 0;
        self
    }
}
