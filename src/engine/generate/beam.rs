//! Beam search, as transformers does it: log-softmax, then the logits processors
//! (repetition penalty) on the log-probabilities, cumulative scores, the best 2 x beams
//! candidates; candidates ending in EOS become finished hypotheses scored
//! `sum_logprobs / generated_len ^ length_penalty`, the rest continue. The prompt is run
//! once and its keys and values are shared by all beams.

use super::sampler::{apply_repetition_penalty, log_softmax};
use super::{FinishReason, GenerationConfig, Generated};
use crate::model::{Bloom, Logits};
use crate::tokenizer::Tokenizer;
use candle_core::Result;

#[derive(Clone)]
struct Beam {
    tokens: Vec<u32>,
    score: f32,
}

struct Hypothesis {
    tokens: Vec<u32>,
    score: f32,
    finish: FinishReason,
}

/// The `k` best `(score, token)` of `row`, best first.
fn top_k(row: &[f32], k: usize) -> Vec<(f32, u32)> {
    let mut best: Vec<(f32, u32)> = Vec::with_capacity(k + 1);
    for (i, &s) in row.iter().enumerate() {
        if best.len() == k && s <= best[k - 1].0 {
            continue;
        }
        let pos = best.partition_point(|&(b, _)| b >= s);
        best.insert(pos, (s, i as u32));
        best.truncate(k);
    }
    best
}

/// Runs beam search for one prompt and returns the best hypothesis.
pub fn beam_search(model: &Bloom, tok: &Tokenizer, id: u64, prompt: &[u32], cfg: &GenerationConfig) -> Result<Generated> {
    let n_beams = cfg.num_beams.max(1);
    let max_new = cfg.max_new_tokens;
    if prompt.is_empty() || max_new == 0 {
        return Ok(Generated { id, prompt_tokens: prompt.len(), ids: Vec::new(), text: String::new(), finish: FinishReason::Length });
    }
    let mut cache = model.new_cache(1, prompt.len())?;
    let first = model.forward(&[prompt.to_vec()], &[vec![1u8; prompt.len()]], &mut cache, Logits::Last)?;
    let mut rows: Vec<Vec<f32>> = first.to_vec2()?;
    let mut cache = cache.into_shared(n_beams, max_new)?;
    // Before the first step there is one live beam (transformers starts the others at -1e9).
    let mut beams = vec![Beam { tokens: Vec::new(), score: 0.0 }];
    let mut finished: Vec<Hypothesis> = Vec::new();
    let eos = if cfg.stop_on_eos { tok.eos_id } else { None };

    for step in 0..max_new {
        let last_step = step + 1 == max_new;
        // Candidates over all beams: 2 x beams of them, as transformers keeps.
        let mut cands: Vec<(f32, usize, u32)> = Vec::new();
        for (b, (beam, row)) in beams.iter().zip(rows.iter_mut()).enumerate() {
            log_softmax(row);
            let seen: Vec<u32> = prompt.iter().chain(&beam.tokens).copied().collect();
            apply_repetition_penalty(row, &seen, cfg.repetition_penalty);
            for (s, t) in top_k(row, 2 * n_beams) {
                cands.push((s + beam.score, b, t));
            }
        }
        cands.sort_by(|a, b| b.0.total_cmp(&a.0));
        cands.truncate(2 * n_beams);

        let gen_len = (step + 1) as f32;
        let norm = |s: f32| s / gen_len.powf(cfg.length_penalty);
        let mut next = Vec::with_capacity(n_beams);
        let mut origins = Vec::with_capacity(n_beams);
        for (rank, &(score, b, t)) in cands.iter().enumerate() {
            let mut tokens = beams[b].tokens.clone();
            tokens.push(t);
            if Some(t) == eos {
                // Only an EOS among the best `n_beams` candidates ends a hypothesis.
                if rank < n_beams {
                    finished.push(Hypothesis { tokens, score: norm(score), finish: FinishReason::Eos });
                }
            } else if last_step {
                if next.len() < n_beams {
                    finished.push(Hypothesis { tokens: tokens.clone(), score: norm(score), finish: FinishReason::Length });
                    next.push(Beam { tokens, score });
                }
            } else if next.len() < n_beams {
                next.push(Beam { tokens, score });
                origins.push(b);
            }
        }
        let enough = cfg.early_stopping && finished.len() >= n_beams;
        if last_step || enough || next.is_empty() {
            break;
        }
        beams = next;
        // Beams not yet distinct (first step) all come from row 0, which is the right copy.
        cache.select_rows(&origins)?;
        let ids: Vec<Vec<u32>> = beams.iter().map(|b| vec![*b.tokens.last().expect("non-empty")]).collect();
        let mask = vec![vec![1u8]; ids.len()];
        rows = model.forward(&ids, &mask, &mut cache, Logits::Last)?.to_vec2()?;
    }

    let best = finished
        .into_iter()
        .max_by(|a, b| a.score.total_cmp(&b.score))
        .ok_or_else(|| candle_core::Error::Msg("beam search produced no hypothesis".into()))?;
    let text = tok.decode(&best.tokens).unwrap_or_default();
    Ok(Generated { id, prompt_tokens: prompt.len(), ids: best.tokens, text, finish: best.finish })
}

#[cfg(test)]
mod tests {
    use super::top_k;

    #[test]
    fn top_k_is_sorted_and_complete() {
        let row = [0.1f32, 5.0, -1.0, 3.0, 4.0, 3.5];
        assert_eq!(top_k(&row, 3), vec![(5.0, 1), (4.0, 4), (3.5, 5)]);
        assert_eq!(top_k(&row, 10).len(), 6);
    }
}
