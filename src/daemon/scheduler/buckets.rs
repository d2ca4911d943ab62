//! Length buckets: a prompt's token count chooses its bucket, and the bucket the largest
//! batch it may run in.

use super::config::BucketConfig;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buckets {
    buckets: Vec<BucketConfig>,
}

impl Buckets {
    /// `buckets` as validated by [`super::SchedulerConfig::validate`] (non-empty, increasing).
    pub fn new(buckets: Vec<BucketConfig>) -> Self {
        assert!(!buckets.is_empty(), "at least one bucket");
        Self { buckets }
    }

    /// The bucket of a prompt of `tokens` tokens: the first whose `max_tokens` holds it; a
    /// prompt longer than every bound goes to the last bucket.
    pub fn of(&self, tokens: usize) -> usize {
        self.buckets.iter().position(|b| b.max_tokens.is_none_or(|m| tokens <= m)).unwrap_or(self.buckets.len() - 1)
    }

    /// The largest batch of bucket `i`.
    pub fn batch(&self, i: usize) -> usize {
        self.buckets[i].batch
    }

    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// A short label for logs and stats: `<=32`, `<=128`, `>128`.
    pub fn label(&self, i: usize) -> String {
        match self.buckets[i].max_tokens {
            Some(m) => format!("<={m}"),
            None => match i.checked_sub(1).and_then(|p| self.buckets[p].max_tokens) {
                Some(prev) => format!(">{prev}"),
                None => "any".into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::SchedulerConfig;

    #[test]
    fn default_buckets() {
        let b = Buckets::new(SchedulerConfig::default().buckets);
        assert_eq!([1, 32, 33, 128, 129, 5000].map(|t| b.of(t)), [0, 0, 1, 1, 2, 2]);
        assert_eq!([0, 1, 2].map(|i| b.batch(i)), [8, 4, 2]);
        assert_eq!(b.label(2), ">128");
    }

    #[test]
    fn bounded_last_bucket_takes_the_rest() {
        let b = Buckets::new(vec![BucketConfig { max_tokens: Some(10), batch: 4 }, BucketConfig { max_tokens: Some(20), batch: 1 }]);
        assert_eq!(b.of(500), 1);
    }
}
