//! The async scheduler between callers (D-Bus) and the engine: a bounded queue with a
//! sliding-window trigger, length buckets, continuous batching, backpressure and a memory
//! guard. docs/SCHEDULER.md describes the rules and the reasons.
//!
//! This commit: the pure parts (settings, buckets, the window, the memory estimate, stats).

pub mod buckets;
pub mod config;
pub mod memory;
pub mod stats;
pub mod window;

pub use buckets::Buckets;
pub use config::{BucketConfig, ConfigError, SchedulerConfig};
pub use memory::{Budget, MemoryModel, Planned};
pub use stats::{Percentiles, Stats};
