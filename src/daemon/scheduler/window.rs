//! The waiting queue and the sliding-window trigger: which requests start a batch, and when.
//!
//! Pure and clock-injected: every decision takes `now`, so it is tested with plain instants
//! and driven by the worker on tokio's clock (paused in tests).
//!
//! Rules (docs/SCHEDULER.md has the reasoning):
//! - At most `queue_capacity` requests wait; `push` refuses one more (Busy). Requests that
//!   started running have left the queue and do not count.
//! - A new batch may start (when the engine is idle) at a check point if at least
//!   `min_batch` requests wait, or the oldest has waited at least `max_wait`. Check points
//!   are the ticks (every `tick`), the oldest request's deadline (`enqueued + max_wait`), and
//!   the engine going idle.
//! - A new batch takes the oldest request's bucket: the waiting requests of that bucket in
//!   arrival order, up to the bucket's batch size (a solo request, e.g. beam search, runs
//!   alone, and is never batched with others).
//! - A running batch admits joiners of its own bucket at token boundaries, up to its size.
//!   Fairness: a waiting request that a batch cannot take (another bucket, or a solo one)
//!   can be overtaken by at most `max_overtakes` younger requests (batch-mates and joiners);
//!   then the batch admits nobody younger than it, drains, and the oldest request's bucket
//!   runs next.

use super::config::SchedulerConfig;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// A request waiting in the queue, with what the window needs to know about it.
#[derive(Debug)]
pub struct Waiting<T> {
    pub id: u64,
    pub bucket: usize,
    pub prompt_len: usize,
    pub max_new: usize,
    /// Runs alone (beam search).
    pub solo: bool,
    pub enqueued: Instant,
    /// Younger requests that started before this one (see `max_overtakes`).
    pub overtaken: usize,
    pub payload: T,
}

#[derive(Debug)]
pub struct Window<T> {
    entries: VecDeque<Waiting<T>>,
    capacity: usize,
    min_batch: usize,
    max_wait: Duration,
    max_overtakes: usize,
}

impl<T> Window<T> {
    pub fn new(cfg: &SchedulerConfig) -> Self {
        Self {
            entries: VecDeque::new(),
            capacity: cfg.queue_capacity,
            min_batch: cfg.min_batch,
            max_wait: cfg.max_wait(),
            max_overtakes: cfg.max_overtakes,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.capacity
    }

    /// Queues `w` at the back; returns its 1-based position, or gives it back when full.
    pub fn push(&mut self, w: Waiting<T>) -> Result<usize, Waiting<T>> {
        if self.is_full() {
            return Err(w);
        }
        self.entries.push_back(w);
        Ok(self.entries.len())
    }

    pub fn contains(&self, id: u64) -> bool {
        self.entries.iter().any(|w| w.id == id)
    }

    pub fn remove(&mut self, id: u64) -> Option<Waiting<T>> {
        let i = self.entries.iter().position(|w| w.id == id)?;
        self.entries.remove(i)
    }

    pub fn oldest(&self) -> Option<&Waiting<T>> {
        self.entries.front()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Waiting<T>> {
        self.entries.iter()
    }

    /// Whether a new batch starts at a check point at `now` (the engine being idle).
    pub fn triggered(&self, now: Instant) -> bool {
        match self.entries.front() {
            None => false,
            Some(oldest) => self.entries.len() >= self.min_batch || now.saturating_duration_since(oldest.enqueued) >= self.max_wait,
        }
    }

    /// When the oldest request will have waited `max_wait` (a check point).
    pub fn deadline(&self) -> Option<Instant> {
        self.entries.front().map(|w| w.enqueued + self.max_wait)
    }

    /// The requests a new batch would take, best first: the oldest request's bucket, in
    /// arrival order, at most `batch_of(bucket)`; a solo oldest request alone.
    pub fn fresh_candidates(&self, batch_of: impl Fn(usize) -> usize) -> Vec<&Waiting<T>> {
        let Some(oldest) = self.entries.front() else {
            return Vec::new();
        };
        if oldest.solo {
            return vec![oldest];
        }
        self.entries.iter().filter(|w| w.bucket == oldest.bucket && !w.solo).take(batch_of(oldest.bucket)).collect()
    }

    /// The requests that may join a running batch of `bucket` with `room` free rows, best
    /// first: its bucket's waiting requests in arrival order, as long as none of them
    /// overtakes a request the batch cannot take more than `max_overtakes` times.
    pub fn join_candidates(&self, bucket: usize, room: usize) -> Vec<&Waiting<T>> {
        let mut out = Vec::new();
        // The least number of further overtakes the older, unjoinable requests allow.
        let mut slack: Option<usize> = None;
        for w in &self.entries {
            if out.len() == room {
                break;
            }
            if w.bucket == bucket && !w.solo {
                match slack {
                    Some(0) => break,
                    Some(ref mut n) => {
                        *n -= 1;
                        out.push(w);
                    }
                    None => out.push(w),
                }
            } else {
                let left = self.max_overtakes.saturating_sub(w.overtaken);
                slack = Some(slack.map_or(left, |n| n.min(left)));
            }
        }
        out
    }

    /// Removes the requests `ids` (in queue order) to start them: each request left behind
    /// counts the younger ones among them as overtakes.
    pub fn take(&mut self, ids: &[u64]) -> Vec<Waiting<T>> {
        let mut younger_taken = 0;
        for w in self.entries.iter_mut().rev() {
            if ids.contains(&w.id) {
                younger_taken += 1;
            } else {
                w.overtaken += younger_taken;
            }
        }
        let (taken, kept): (VecDeque<_>, VecDeque<_>) = std::mem::take(&mut self.entries).into_iter().partition(|w| ids.contains(&w.id));
        self.entries = kept;
        taken.into()
    }

    /// Empties the queue (shutdown).
    pub fn drain(&mut self) -> Vec<Waiting<T>> {
        self.entries.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(id: u64, bucket: usize, at: Instant) -> Waiting<()> {
        Waiting { id, bucket, prompt_len: 4, max_new: 4, solo: false, enqueued: at, overtaken: 0, payload: () }
    }

    #[test]
    fn trigger_by_count_or_age() {
        let t0 = Instant::now();
        let mut win = Window::new(&SchedulerConfig::default());
        assert!(!win.triggered(t0));
        win.push(w(1, 0, t0)).unwrap();
        assert!(!win.triggered(t0 + Duration::from_millis(99)));
        assert!(win.triggered(t0 + Duration::from_millis(100)));
        assert_eq!(win.deadline(), Some(t0 + Duration::from_millis(100)));
        win.push(w(2, 1, t0)).unwrap();
        assert!(!win.triggered(t0));
        win.push(w(3, 2, t0)).unwrap();
        assert!(win.triggered(t0), "three waiting, whatever their buckets");
    }

    #[test]
    fn capacity_counts_waiting_requests() {
        let t0 = Instant::now();
        let mut win = Window::new(&SchedulerConfig::default());
        for i in 0..8 {
            assert_eq!(win.push(w(i, 0, t0)).unwrap(), i as usize + 1);
        }
        assert!(win.push(w(8, 0, t0)).is_err());
        win.take(&[0, 1]);
        assert_eq!(win.push(w(9, 0, t0)).unwrap(), 7);
    }

    #[test]
    fn fresh_batch_is_the_oldest_bucket_in_order() {
        let t0 = Instant::now();
        let mut win = Window::new(&SchedulerConfig { queue_capacity: 16, ..Default::default() });
        for (id, b) in [(1, 1), (2, 0), (3, 1), (4, 1), (5, 1), (6, 1)] {
            win.push(w(id, b, t0)).unwrap();
        }
        let ids: Vec<u64> = win.fresh_candidates(|_| 4).iter().map(|w| w.id).collect();
        assert_eq!(ids, [1, 3, 4, 5]);
        let mut solo = w(7, 0, t0);
        solo.solo = true;
        let mut win2 = Window::new(&SchedulerConfig::default());
        win2.push(solo).unwrap();
        win2.push(w(8, 0, t0)).unwrap();
        assert_eq!(win2.fresh_candidates(|_| 8).iter().map(|w| w.id).collect::<Vec<_>>(), [7]);
        win2.take(&[7]);
        assert_eq!(win2.fresh_candidates(|_| 8).iter().map(|w| w.id).collect::<Vec<_>>(), [8]);
    }

    #[test]
    fn joiners_overtake_other_buckets_a_bounded_number_of_times() {
        let t0 = Instant::now();
        let mut win = Window::new(&SchedulerConfig { max_overtakes: 3, ..Default::default() });
        let ids = |v: Vec<&Waiting<()>>| v.iter().map(|w| w.id).collect::<Vec<_>>();
        for (id, b) in [(1, 0), (2, 2), (3, 0), (4, 0), (5, 1), (6, 0), (7, 0)] {
            win.push(w(id, b, t0)).unwrap();
        }
        // 1 is older than everything it could overtake; 3, 4, 6 overtake 2 (and 6 also 5).
        assert_eq!(ids(win.join_candidates(0, 8)), [1, 3, 4, 6]);
        assert_eq!(ids(win.join_candidates(0, 2)), [1, 3]);
        assert_eq!(ids(win.join_candidates(1, 8)), [5], "5 may overtake the older 1 to 4 once");
        win.take(&[1, 3]);
        assert_eq!(win.iter().map(|w| (w.id, w.overtaken)).collect::<Vec<_>>(), [(2, 1), (4, 0), (5, 0), (6, 0), (7, 0)]);
        assert_eq!(ids(win.join_candidates(0, 8)), [4, 6]);
        win.take(&[4, 6]);
        assert_eq!(win.iter().map(|w| (w.id, w.overtaken)).collect::<Vec<_>>(), [(2, 3), (5, 1), (7, 0)]);
        assert_eq!(ids(win.join_candidates(0, 8)), Vec::<u64>::new(), "2 has been overtaken 3 times");
    }
}
