//! The model's summary of a document: prose in chunks that fit a prompt (a long document first
//! condensed by the ranker), one prompt per chunk, then either the quoted sentences (a
//! `quote` template) or the partial summaries merged by reduce prompts until one is left (an
//! `instruction` template).

use super::super::chunk::{chunk, Chunk, Paragraph};
use super::super::document::Document;
use super::super::prompt::{chunk_sentences, quoted_sentences, Template, TemplateKind};
use super::super::rank::{cut_to_words, render_sentences, Ranker};
use super::super::text::split_sentences;
use super::super::{Cancel, Language, Style, SummaryError, SummaryOptions, SummaryStats};
use super::{count_tokens, ModelFailure, ModelOutcome, ModelSetup, Observer, Pipeline, Stage};
use seqgpt_engine::generate::{GenerationConfig, Sampling};
use std::collections::HashMap;
use std::sync::Arc;

impl Pipeline {
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn model_summary(
        &self,
        m: &ModelSetup,
        doc: &Arc<Document>,
        opts: &SummaryOptions,
        language: Language,
        stats: &mut SummaryStats,
        obs: &mut dyn Observer,
        cancel: &Cancel,
    ) -> Result<ModelOutcome, ModelFailure> {
        let t = &m.template;
        let new_tokens = t.new_tokens(opts.length);
        let budget = chunk_budget(m, t, language, opts, new_tokens).map_err(ModelFailure::Failed)?;
        let count = |s: &str| m.count_tokens(s);
        let (g, d, max_chunks) = (m.tokens.clone(), doc.clone(), self.settings.max_model_chunks);
        // The model reads prose only: no code, formulas, tables or reference lists.
        let (chunks, kept) = self
            .blocking(cancel, move |cancel| {
                let count = |s: &str| count_tokens(g.as_ref(), s);
                let paragraphs = d.prose_paragraphs();
                let chunks = chunk(&paragraphs, budget, &count, cancel)?;
                if chunks.len() <= max_chunks {
                    return Ok((chunks, 0));
                }
                let (condensed, kept) = condense(&d, budget * max_chunks * 9 / 10, &count, cancel)?;
                let mut chunks = chunk(&condensed, budget, &count, cancel)?;
                chunks.truncate(max_chunks);
                Ok((chunks, kept))
            })
            .await
            .map_err(ModelFailure::Stop)?;
        stats.condensed_to_sentences = kept as u32;
        stats.chunks = chunks.len() as u32;
        let config = GenerationConfig {
            max_new_tokens: new_tokens,
            sampling: Sampling::Greedy,
            repetition_penalty: t.repetition_penalty,
            stop_strings: t.stop.clone(),
            ..GenerationConfig::default()
        };
        let prompts: Vec<String> = chunks.iter().map(|c| t.chunk_prompt(&c.text, language, opts.length)).collect();
        obs.progress(Stage::Summarize, 0, prompts.len() as u32);
        let answers = self.run_prompts(m, &prompts, &config, 0, Stage::Summarize, stats, obs, cancel).await?;
        match t.kind {
            TemplateKind::Quote => {
                let (o, d) = (opts.clone(), doc.clone());
                self.blocking(cancel, move |cancel| select_quoted(&d, &chunks, &answers, &o, cancel)).await.map_err(ModelFailure::Stop)
            }
            TemplateKind::Instruction => {
                let mut partials: Vec<String> = answers.iter().map(|a| clean_generated(a)).filter(|a| !a.is_empty()).collect();
                if partials.is_empty() {
                    return Ok(ModelOutcome::Unusable("the model answered with empty text".into()));
                }
                let max_words = opts.word_budget();
                let mut index = prompts.len() as u32;
                // Reduce: merge partial summaries, in groups that fit one prompt, until one is left.
                while partials.len() > 1 {
                    let groups = group_partials(&partials, budget, &count);
                    if groups.len() == partials.len() {
                        // No two partials fit one prompt together: another round could not
                        // shrink them, so the answer is the partial summaries in order.
                        partials = vec![partials.join("\n")];
                        break;
                    }
                    let reduce: Vec<String> =
                        groups.iter().map(|g| t.reduce_prompt(&numbered(g), language, opts.length)).collect();
                    obs.progress(Stage::Reduce, 0, reduce.len() as u32);
                    let out = self.run_prompts(m, &reduce, &config, index, Stage::Reduce, stats, obs, cancel).await?;
                    index += reduce.len() as u32;
                    partials = out.iter().map(|a| clean_generated(a)).filter(|a| !a.is_empty()).collect();
                    if partials.is_empty() {
                        return Ok(ModelOutcome::Unusable("the model's reduce step answered with empty text".into()));
                    }
                }
                let text = cut_to_words(&partials.remove(0), max_words);
                let text = match opts.style {
                    Style::Paragraph => text,
                    Style::Bullets => {
                        render_sentences(split_sentences(&text).into_iter().map(|r| &text[r]), Style::Bullets)
                    }
                };
                Ok(ModelOutcome::Summary(text, Vec::new()))
            }
        }
    }
}

/// Tokens of document text one chunk may hold: the template's prompt limit (or the model's
/// context less the new tokens), less the template's own tokens and a small margin.
fn chunk_budget(m: &ModelSetup, t: &Template, lang: Language, opts: &SummaryOptions, new_tokens: usize) -> Result<usize, String> {
    let ctx = m.context_length();
    let room = ctx.saturating_sub(new_tokens);
    let limit = if t.max_prompt_tokens > 0 { t.max_prompt_tokens.min(room) } else { room };
    let overhead = m.count_tokens(&t.chunk_prompt("", lang, opts.length));
    let reduce_overhead = m.count_tokens(&t.reduce_prompt("", lang, opts.length));
    let budget = limit.saturating_sub(overhead.max(reduce_overhead) + 8);
    if budget < 32 {
        return Err(format!(
            "the model's context ({ctx} tokens) leaves no room for text after the template and {new_tokens} new tokens"
        ));
    }
    Ok(budget)
}

/// The extractive pre-selection of a long document: its best sentences, in order, up to
/// `tokens`; returns them as paragraphs (one per source block) and how many were kept.
fn condense(doc: &Document, tokens: usize, count: &dyn Fn(&str) -> usize, cancel: &Cancel) -> Result<(Vec<Paragraph>, usize), SummaryError> {
    let ranker = Ranker::new(doc, cancel)?;
    let mut order: Vec<usize> = (0..ranker.sentences.len()).collect();
    order.sort_by(|&a, &b| ranker.scores[b].total_cmp(&ranker.scores[a]).then(a.cmp(&b)));
    let mut used = 0;
    let mut keep = Vec::new();
    for (n, i) in order.into_iter().enumerate() {
        if n % 256 == 0 {
            cancel.check()?;
        }
        let t = count(&ranker.sentences[i].text) + 1;
        if used + t > tokens {
            continue;
        }
        used += t;
        keep.push(i);
    }
    keep.sort_unstable();
    let mut out: Vec<Paragraph> = Vec::new();
    let mut last_block = usize::MAX;
    for &i in &keep {
        let s = &ranker.sentences[i];
        if s.block == last_block {
            let p = out.last_mut().expect("a paragraph was started");
            super::super::text::join_pieces(&mut p.text, &s.text);
        } else {
            out.push(Paragraph { text: s.text.clone(), page: doc.blocks[s.block].page(doc) });
            last_block = s.block;
        }
    }
    Ok((out, keep.len()))
}

/// The summary of a quote-kind template: the document's sentences that the answers quote,
/// reduced to the word budget by the ranker's scores, in document order, with their anchors.
fn select_quoted(
    doc: &Document,
    chunks: &[Chunk],
    answers: &[String],
    opts: &SummaryOptions,
    cancel: &Cancel,
) -> Result<ModelOutcome, SummaryError> {
    let ranker = Ranker::new(doc, cancel)?;
    let mut by_text: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, s) in ranker.sentences.iter().enumerate() {
        by_text.entry(s.text.as_str()).or_default().push(i);
    }
    let mut quoted = vec![false; ranker.sentences.len()];
    let mut any = false;
    for (c, answer) in chunks.iter().zip(answers) {
        cancel.check()?;
        let pieces = chunk_sentences(&c.text);
        for i in quoted_sentences(answer, &pieces) {
            // A piece of an overlong sentence has no exact match: find the sentence containing it.
            let piece = pieces[i];
            let hits: Vec<usize> = match by_text.get(piece) {
                Some(v) => v.clone(),
                None => ranker.sentences.iter().enumerate().filter(|(_, s)| s.text.contains(piece)).map(|(j, _)| j).collect(),
            };
            for j in hits {
                quoted[j] = true;
                any = true;
            }
        }
    }
    if !any {
        return Ok(ModelOutcome::Unusable("the model's answer quotes no sentence of the document".into()));
    }
    let budget = opts.word_budget();
    let chosen = ranker.select(budget, |i| quoted[i]);
    Ok(ModelOutcome::Summary(ranker.render(&chosen, opts.style, budget), ranker.anchors(doc, &chosen, budget)))
}

/// Partial summaries grouped so that each group's reduce prompt fits `budget`.
fn group_partials(partials: &[String], budget: usize, count: &dyn Fn(&str) -> usize) -> Vec<Vec<String>> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut used = 0;
    for p in partials {
        let t = count(p) + 4;
        match groups.last_mut() {
            Some(g) if used + t <= budget => {
                g.push(p.clone());
                used += t;
            }
            _ => {
                groups.push(vec![p.clone()]);
                used = t;
            }
        }
    }
    groups
}

/// Generated text as a summary: control characters (which byte-level tokens can produce)
/// dropped, except line breaks and tabs; trimmed.
fn clean_generated(text: &str) -> String {
    text.chars().filter(|c| !c.is_control() || matches!(c, '\n' | '\t')).collect::<String>().trim().to_string()
}

fn numbered(parts: &[String]) -> String {
    parts.iter().enumerate().map(|(i, p)| format!("{}. {}", i + 1, p)).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::pages::{split, whole};
    use crate::summarize::structure;

    #[test]
    fn condense_keeps_the_best_sentences_in_order() {
        let text: String = (0..40).map(|i| format!("Solar energy fact number {i} about panels. Unrelated filler {i} here.\n\n")).collect();
        let doc = structure::read(whole(split(&text)), &Cancel::new()).unwrap();
        let count = |s: &str| s.split_whitespace().count();
        let (out, kept) = condense(&doc, 100, &count, &Cancel::new()).unwrap();
        assert!(kept > 0 && kept < 80);
        assert!(out.iter().map(|p| count(&p.text)).sum::<usize>() <= 100);
    }
}
