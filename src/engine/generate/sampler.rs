//! Choosing the next token from logits, in Hugging Face's order: repetition penalty, then
//! temperature, top-k and top-p, then a draw (or the argmax when greedy).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[derive(Debug, Clone, PartialEq)]
pub enum Sampling {
    Greedy,
    Sample { temperature: f32, top_k: Option<usize>, top_p: Option<f32>, seed: u64 },
}

/// Per-sequence sampling state (each sequence has its own random stream, so a batch gives
/// the same draws as running its sequences one at a time).
pub struct Sampler {
    sampling: Sampling,
    repetition_penalty: f32,
    rng: StdRng,
    scratch: Vec<(f32, u32)>,
}

impl Sampler {
    pub fn new(sampling: Sampling, repetition_penalty: f32) -> Self {
        let seed = match &sampling {
            Sampling::Sample { seed, .. } => *seed,
            Sampling::Greedy => 0,
        };
        Self { sampling, repetition_penalty, rng: StdRng::seed_from_u64(seed), scratch: Vec::new() }
    }

    /// Picks the next token. `logits` is modified (penalized, scaled). `seen` are the tokens
    /// of the prompt and of what was generated so far.
    pub fn next(&mut self, logits: &mut [f32], seen: &[u32]) -> u32 {
        apply_repetition_penalty(logits, seen, self.repetition_penalty);
        match self.sampling.clone() {
            Sampling::Greedy => argmax(logits),
            Sampling::Sample { temperature, top_k, top_p, .. } => {
                if temperature <= 0.0 {
                    return argmax(logits);
                }
                self.sample(logits, temperature, top_k, top_p)
            }
        }
    }

    fn sample(&mut self, logits: &[f32], temperature: f32, top_k: Option<usize>, top_p: Option<f32>) -> u32 {
        let c = &mut self.scratch;
        c.clear();
        c.extend(logits.iter().enumerate().map(|(i, &l)| (l / temperature, i as u32)));
        // Highest first; ties by lower id, as a stable sort would leave them.
        c.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        if let Some(k) = top_k.filter(|&k| k > 0) {
            c.truncate(k.max(1));
        }
        let max = c[0].0;
        let mut probs: Vec<f32> = c.iter().map(|(l, _)| (l - max).exp()).collect();
        let total: f32 = probs.iter().sum();
        probs.iter_mut().for_each(|p| *p /= total);
        if let Some(p) = top_p.filter(|&p| p < 1.0) {
            // Keep the smallest prefix whose mass reaches p (at least one token).
            let mut mass = 0.0;
            let mut keep = probs.len();
            for (i, q) in probs.iter().enumerate() {
                mass += q;
                if mass >= p {
                    keep = i + 1;
                    break;
                }
            }
            probs.truncate(keep);
            let total: f32 = probs.iter().sum();
            probs.iter_mut().for_each(|q| *q /= total);
        }
        let r: f32 = self.rng.random();
        let mut acc = 0.0;
        for (i, q) in probs.iter().enumerate() {
            acc += q;
            if r < acc {
                return c[i].1;
            }
        }
        c[probs.len() - 1].1
    }
}

/// transformers' RepetitionPenaltyLogitsProcessor: each seen token's logit is divided by the
/// penalty when positive and multiplied by it when negative.
pub fn apply_repetition_penalty(logits: &mut [f32], seen: &[u32], penalty: f32) {
    if penalty == 1.0 {
        return;
    }
    let mut done = std::collections::HashSet::with_capacity(seen.len());
    for &t in seen {
        if let Some(l) = logits.get_mut(t as usize) {
            if done.insert(t) {
                *l = if *l < 0.0 { *l * penalty } else { *l / penalty };
            }
        }
    }
}

/// Index of the largest logit (the first one on ties, like torch.argmax).
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &l) in logits.iter().enumerate() {
        if l > logits[best] {
            best = i;
        }
    }
    best as u32
}

/// log-softmax in place.
pub fn log_softmax(logits: &mut [f32]) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let lse = max + logits.iter().map(|l| (l - max).exp()).sum::<f32>().ln();
    logits.iter_mut().for_each(|l| *l -= lse);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn penalty_follows_transformers() {
        let mut l = [2.0f32, -1.0, 3.0];
        apply_repetition_penalty(&mut l, &[0, 1, 1], 2.0);
        assert_eq!(l, [1.0, -2.0, 3.0]);
    }

    #[test]
    fn same_seed_same_draws_and_top_k_one_is_greedy() {
        let logits: Vec<f32> = (0..50).map(|i| (i as f32 * 0.37).sin()).collect();
        let s = Sampling::Sample { temperature: 0.8, top_k: Some(10), top_p: Some(0.9), seed: 7 };
        let draw = |s: &Sampling| {
            let mut sm = Sampler::new(s.clone(), 1.0);
            (0..20).map(|_| sm.next(&mut logits.clone(), &[])).collect::<Vec<_>>()
        };
        assert_eq!(draw(&s), draw(&s));
        let k1 = Sampling::Sample { temperature: 1.0, top_k: Some(1), top_p: None, seed: 1 };
        assert!(draw(&k1).iter().all(|&t| t == argmax(&logits)));
        // top-p keeps only tokens inside the nucleus.
        let s = Sampling::Sample { temperature: 1.0, top_k: None, top_p: Some(0.01), seed: 3 };
        assert!(draw(&s).iter().all(|&t| t == argmax(&logits)));
    }
}
