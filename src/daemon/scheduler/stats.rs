//! Counters and latency percentiles, for `Scheduler::stats` (D-Bus properties, logs).

use serde::Serialize;
use std::collections::VecDeque;
use std::time::Duration;

/// Latencies kept for percentiles: the most recent this many.
const WINDOW: usize = 4096;

/// Percentiles of the recent requests, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    pub count: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Percentiles {
    /// Nearest-rank percentiles of `samples`.
    pub fn of(samples: impl IntoIterator<Item = Duration>) -> Self {
        let mut v: Vec<f64> = samples.into_iter().map(|d| d.as_secs_f64() * 1e3).collect();
        if v.is_empty() {
            return Self::default();
        }
        v.sort_by(f64::total_cmp);
        let rank = |p: f64| v[((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Self { count: v.len(), p50_ms: rank(50.0), p95_ms: rank(95.0), p99_ms: rank(99.0), max_ms: v[v.len() - 1] }
    }
}

/// A snapshot of the scheduler.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Requests accepted into the queue.
    pub accepted: u64,
    /// Refused with Busy.
    pub busy: u64,
    /// Refused at submit for another reason (too large, invalid, shutting down).
    pub refused: u64,
    pub finished: u64,
    pub cancelled: u64,
    /// Ended with an error after being accepted (engine, memory, shutdown).
    pub failed: u64,
    pub waiting: usize,
    pub running: usize,
    /// Batches started, and sequences that joined running ones.
    pub batches: u64,
    pub joins: u64,
    /// Admissions the memory guard made smaller.
    pub shrunk: u64,
    /// Tokens generated.
    pub tokens: u64,
    /// Decoding steps, and the rows they decoded (their ratio: the mean batch occupancy).
    pub steps: u64,
    pub step_rows: u64,
    /// Bytes the running batch's KV cache holds.
    pub kv_bytes: u64,
    pub wait: Percentiles,
    pub first_token: Percentiles,
    pub total: Percentiles,
}

#[derive(Debug, Default)]
pub(crate) struct Recorder {
    pub counts: Stats,
    waits: VecDeque<Duration>,
    firsts: VecDeque<Duration>,
    totals: VecDeque<Duration>,
}

impl Recorder {
    pub fn finished(&mut self, waited: Duration, first_token: Duration, total: Duration) {
        self.counts.finished += 1;
        for (q, d) in [(&mut self.waits, waited), (&mut self.firsts, first_token), (&mut self.totals, total)] {
            if q.len() == WINDOW {
                q.pop_front();
            }
            q.push_back(d);
        }
    }

    pub fn snapshot(&self, waiting: usize, running: usize) -> Stats {
        Stats {
            waiting,
            running,
            wait: Percentiles::of(self.waits.iter().copied()),
            first_token: Percentiles::of(self.firsts.iter().copied()),
            total: Percentiles::of(self.totals.iter().copied()),
            ..self.counts.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let p = Percentiles::of((1..=100).map(Duration::from_millis));
        assert_eq!((p.p50_ms, p.p95_ms, p.p99_ms, p.max_ms, p.count), (50.0, 95.0, 99.0, 100.0, 100));
        assert_eq!(Percentiles::of([]).count, 0);
    }
}
