//! The extractive summarizer: the document's most representative sentences, in document
//! order, within a word budget. It needs no model, so it is the fallback when none is
//! configured or the model fails, and the method of `seqgpt summarize --local` on a fresh
//! machine; with the SeqGPT template it also orders and cuts the sentences the model quoted.
//!
//! Ranking, deterministic for a given input (docs/SUMMARIZE.md has the weights and what each
//! adds on research articles):
//! 1. Candidates are the sentences of prose blocks and list items ([`super::structure`]) that
//!    read as whole sentences: 6 to 80 words (10 to 200 CJK characters), mostly plain words,
//!    ending like a sentence, not a lead-in to a list, code or figure ("as follows:", "is shown
//!    below."), not the tail of a sentence begun before the text.
//! 2. Each is a TF-IDF vector (sublinear term frequency, smoothed IDF over the document's
//!    sentences), L2-normalized; its centrality is the cosine with the centroid of the prose.
//! 3. The document knows more than its words, and the centrality is weighed by it: the kind of
//!    section a sentence stands in (conclusions and the front matter restate a document's
//!    point, appendices and reference lists do not), its place in its section and paragraph
//!    and in the document, its share of the title's terms, the phrases with which authors
//!    announce their point ("in this paper", "we present", "本文") and the words of abstracts
//!    ("provides", "implements", "describes", "framework", "example" ...), its length, and its
//!    share of plain words.
//! 4. Selection is greedy with maximal marginal relevance (a candidate loses a share of its
//!    score to its similarity with what is chosen, and near-duplicates are skipped) up to the
//!    word budget; when that leaves more than 15% of the budget unused, the best-scoring set of
//!    the top candidates that fills it is taken instead (a small knapsack).

use super::document::{Anchor, Document, SectionKind};
use super::document::BlockKind;
use super::structure::prose_share;
use super::text::{is_cjk, is_cjk_letter, split_sentences, terms};
use super::{Cancel, Length, Style, SummaryError};
use std::collections::HashMap;
use std::ops::Range;

/// The word budget of each length option (a CJK character counts as a word).
pub fn words_for(length: Length) -> usize {
    match length {
        Length::Short => 60,
        Length::Medium => 120,
        Length::Long => 250,
    }
}

/// Words of `text`: whitespace-separated tokens, except that in a token with CJK letters each
/// letter counts as a word, and so does each run of other letters or digits in it.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().map(token_words).sum()
}

fn token_words(tok: &str) -> usize {
    let (mut cjk, mut runs, mut in_run) = (0usize, 0usize, false);
    for c in tok.chars() {
        if is_cjk_letter(c) {
            cjk += 1;
            in_run = false;
        } else if c.is_alphanumeric() {
            if !in_run {
                runs += 1;
            }
            in_run = true;
        } else {
            in_run = false;
        }
    }
    if cjk == 0 {
        1
    } else {
        cjk + runs
    }
}

/// A sentence of the document.
#[derive(Debug, Clone, PartialEq)]
pub struct Sentence {
    /// Its block, and its byte range in the block's text.
    pub block: usize,
    pub range: Range<usize>,
    /// The sentence as a summary shows it.
    pub text: String,
    pub words: usize,
    /// It reads as a sentence a summary may quote (see the module notes).
    pub candidate: bool,
}

/// Sentence-level features, in the order the score multiplies them (`seqgpt summarize
/// --explain` prints them).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Features {
    pub centrality: f64,
    pub section: f64,
    pub position: f64,
    pub title: f64,
    pub cue: f64,
    pub length: f64,
    pub quality: f64,
}

/// Sparse TF-IDF vector: (term id, weight), sorted by term id, L2-normalized.
type SparseVec = Vec<(u32, f64)>;

/// A ranked document: its sentences, their vectors and scores.
pub struct Ranker {
    pub sentences: Vec<Sentence>,
    vectors: Vec<SparseVec>,
    pub features: Vec<Features>,
    pub scores: Vec<f64>,
}

/// Phrases with which authors say what their document is about.
const CUES: &[&str] = &[
    "in this paper", "in this article", "in this vignette", "in this note", "in this report", "in this work",
    "in this thesis", "in this chapter", "in this document", "in this tutorial", "this paper", "this article",
    "this vignette", "this report", "this document", "this note", "this work", "we present", "we propose",
    "we describe", "we introduce", "we show", "we demonstrate", "we develop", "we provide", "we discuss",
    "we illustrate", "we implement", "we extend", "we review", "we summarize", "we conclude", "our approach",
    "our method", "our results", "the package", "this package", "the main contribution", "in summary",
    "to summarize", "in conclusion", "本文", "我们提出", "本研究", "本论文", "本项目", "本章",
];

/// Words with which documents describe what they are and offer (the vocabulary of
/// abstracts, matched as word beginnings): each one a sentence uses counts, up to three.
const ABSTRACT_WORDS: &[&str] = &[
    "provide", "implement", "describe", "illustrate", "introduce", "present", "propose", "develop", "allow", "enable",
    "support", "offer", "include", "extend", "available", "application", "applied", "example", "general", "framework",
    "approach", "method", "software", "package", "library", "tool", "toolkit", "paper", "article", "overview",
    "analysis", "efficient", "flexible", "new", "novel", "several", "variety", "wide", "range", "various", "based",
];

/// The ranking's weights, found on research articles (docs/SUMMARIZE.md, "Quality"; rounded).
mod weight {
    /// Sections: where documents state their point.
    pub const ABSTRACT: f64 = 1.5;
    pub const INTRODUCTION: f64 = 1.3;
    pub const CONCLUSION: f64 = 2.2;
    pub const FRONT: f64 = 1.75;
    pub const BODY: f64 = 1.4;
    pub const APPENDIX: f64 = 0.25;
    /// The first prose block of a section: 1 + this (its later blocks: 1 + this / (1 + rank)).
    pub const SECTION_LEAD: f64 = 0.35;
    /// The first sentence of a paragraph.
    pub const TOPIC_SENTENCE: f64 = 1.2;
    /// The document's beginning: 1 + this * (1 - relative position)^2.
    pub const LEAD: f64 = 0.25;
    /// The title: 1 + this * the share of the title's terms the sentence has.
    pub const TITLE: f64 = 1.0;
    /// A phrase that announces the document's point.
    pub const CUE: f64 = 1.15;
    /// Words of abstracts: 1 + this * min(hits, 3) / 3.
    pub const ABSTRACT_WORDS: f64 = 1.0;
    /// Sentence length: up to 7 words, 8 to 11, more than 36.
    pub const SHORT: f64 = 0.2;
    pub const SHORTISH: f64 = 0.35;
    pub const LONG: f64 = 0.65;
    pub const LONG_FROM: usize = 37;
    /// List items (written as sentences).
    pub const LIST_ITEM: f64 = 1.4;
    /// Exponent of the centrality (below 1: structure weighs more than topic alone).
    pub const CENTRALITY_POWER: f64 = 0.5;
    /// Exponent of the share of plain words.
    pub const PROSE_POWER: i32 = 2;
    /// Maximal marginal relevance: the share of a candidate's score lost per unit of similarity
    /// to the chosen sentences; above this similarity it is a near-duplicate, skipped.
    pub const REDUNDANCY: f64 = 0.25;
    pub const DUPLICATE: f64 = 0.3;
}

/// Section weights: where a document states its point.
fn section_weight(kind: SectionKind) -> f64 {
    match kind {
        SectionKind::Abstract => weight::ABSTRACT,
        SectionKind::Introduction => weight::INTRODUCTION,
        SectionKind::Conclusion => weight::CONCLUSION,
        SectionKind::Front => weight::FRONT,
        SectionKind::Background | SectionKind::Body => weight::BODY,
        SectionKind::Appendix => weight::APPENDIX,
        SectionKind::Acknowledgements | SectionKind::References | SectionKind::Contents => 0.0,
    }
}

impl Ranker {
    /// Splits the prose of `doc` into sentences and ranks them; `Cancelled` once `cancel` is
    /// set (checked every few sentences).
    pub fn new(doc: &Document, cancel: &Cancel) -> Result<Self, SummaryError> {
        let mut sentences = Vec::new();
        for (b, block) in doc.prose() {
            // A list item's marker ("•", "1.", "(a)") is not part of its sentence.
            let marker = if block.kind == BlockKind::ListItem { list_marker_len(&block.text) } else { 0 };
            for r in split_sentences(&block.text) {
                let r = r.start.max(marker)..r.end;
                if r.start >= r.end {
                    continue;
                }
                let source = block.text[r.clone()].trim_start();
                let r = r.end - source.len()..r.end;
                let text = source.to_string();
                let words = word_count(&text);
                let candidate = readable(&text, words);
                sentences.push(Sentence { block: b, range: r, text, words, candidate });
            }
        }
        cancel.check()?;
        // Term ids in first-seen order keep every sum in a fixed order (determinism).
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut counts: Vec<Vec<(u32, u32)>> = Vec::with_capacity(sentences.len());
        for (n, s) in sentences.iter().enumerate() {
            if n % 1024 == 0 {
                cancel.check()?;
            }
            counts.push(term_counts(&s.text, &mut ids));
        }
        let vocab = ids.len();
        let total = sentences.len() as f64;
        let mut df = vec![0u32; vocab];
        for tf in &counts {
            for (id, _) in tf {
                df[*id as usize] += 1;
            }
        }
        let idf: Vec<f64> = df.iter().map(|&d| ((total + 1.0) / (f64::from(d) + 1.0)).ln() + 1.0).collect();
        let vectorize = |tf: &[(u32, u32)]| -> SparseVec {
            let mut v: SparseVec = tf.iter().map(|&(id, c)| (id, (1.0 + f64::from(c).ln()) * idf[id as usize])).collect();
            let norm = v.iter().map(|(_, w)| w * w).sum::<f64>().sqrt();
            if norm > 0.0 {
                v.iter_mut().for_each(|(_, w)| *w /= norm);
            }
            v
        };
        let vectors: Vec<SparseVec> = counts.iter().map(|tf| vectorize(tf)).collect();
        cancel.check()?;
        let mut centroid = vec![0.0f64; vocab];
        for v in &vectors {
            for &(id, w) in v {
                centroid[id as usize] += w;
            }
        }
        let cnorm = centroid.iter().map(|w| w * w).sum::<f64>().sqrt();
        if cnorm > 0.0 {
            centroid.iter_mut().for_each(|w| *w /= cnorm);
        }
        let title_terms: Vec<u32> = {
            let mut t: Vec<u32> = terms(&doc.title).into_iter().filter_map(|t| ids.get(&t).copied()).collect();
            t.sort_unstable();
            t.dedup();
            t
        };
        // Place of each prose block in its section (0 = the section's first prose block), and
        // of each sentence in its block.
        let mut block_rank: HashMap<usize, usize> = HashMap::new();
        let mut seen_in_section: HashMap<usize, usize> = HashMap::new();
        for (b, block) in doc.prose() {
            let k = seen_in_section.entry(block.section).or_default();
            block_rank.insert(b, *k);
            *k += 1;
        }
        let ablated = |stage: &str| super::ablation::off(stage);
        let mut features = Vec::with_capacity(sentences.len());
        let mut prev_block = usize::MAX;
        let mut index_in_block = 0usize;
        for (i, s) in sentences.iter().enumerate() {
            if s.block != prev_block {
                prev_block = s.block;
                index_in_block = 0;
            } else {
                index_in_block += 1;
            }
            let block = &doc.blocks[s.block];
            let cos: f64 = vectors[i].iter().map(|&(id, x)| x * centroid[id as usize]).sum::<f64>().max(0.0);
            let centrality = cos.powf(weight::CENTRALITY_POWER);
            let section = if ablated("sections") { 1.0 } else { section_weight(doc.sections[block.section].kind) };
            let position = if ablated("position") {
                1.0
            } else {
                let rank = block_rank.get(&s.block).copied().unwrap_or(0) as f64;
                let rel = i as f64 / total.max(1.0);
                (1.0 + weight::SECTION_LEAD / (1.0 + rank))
                    * if index_in_block == 0 { weight::TOPIC_SENTENCE } else { 1.0 }
                    * (1.0 + weight::LEAD * (1.0 - rel).powi(2))
            };
            let title = if title_terms.is_empty() || ablated("title") {
                1.0
            } else {
                let hits = vectors[i].iter().filter(|(id, _)| title_terms.binary_search(id).is_ok()).count();
                1.0 + weight::TITLE * hits as f64 / title_terms.len() as f64
            };
            let lower = s.text.to_lowercase();
            let cue = if ablated("cues") {
                1.0
            } else {
                let hits = lower
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|word| ABSTRACT_WORDS.iter().any(|c| word.starts_with(c)))
                    .count()
                    .min(3) as f64;
                let announces = if CUES.iter().any(|c| lower.contains(c)) { weight::CUE } else { 1.0 };
                announces * (1.0 + weight::ABSTRACT_WORDS * hits / 3.0)
            };
            let length = match s.words {
                _ if ablated("length") => 1.0,
                0..=7 => weight::SHORT,
                8..=11 => weight::SHORTISH,
                n if n >= weight::LONG_FROM => weight::LONG,
                _ => 1.0,
            };
            let share = f64::from(prose_share(&s.text));
            let quality = share.powi(weight::PROSE_POWER) * if block.kind == BlockKind::ListItem { weight::LIST_ITEM } else { 1.0 };
            features.push(Features { centrality, section, position, title, cue, length, quality });
        }
        let scores = features
            .iter()
            .zip(&sentences)
            .map(|(f, s)| if s.candidate { f.centrality * f.section * f.position * f.title * f.cue * f.length * f.quality } else { 0.0 })
            .collect();
        Ok(Ranker { sentences, vectors, features, scores })
    }

    /// Cosine similarity of sentences `a` and `b`.
    pub fn similarity(&self, a: usize, b: usize) -> f64 {
        let (x, y) = (&self.vectors[a], &self.vectors[b]);
        let (mut i, mut j, mut dot) = (0, 0, 0.0);
        while i < x.len() && j < y.len() {
            match x[i].0.cmp(&y[j].0) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    dot += x[i].1 * y[j].1;
                    i += 1;
                    j += 1;
                }
            }
        }
        dot
    }

    /// Chooses sentences among the candidates `allowed`, by score with the redundancy
    /// penalty, within `max_words`; returns their indices in document order. Sentences that
    /// are not candidates are used only when no candidate is allowed.
    pub fn select(&self, max_words: usize, allowed: impl Fn(usize) -> bool) -> Vec<usize> {
        let max_words = max_words.min(MAX_SUMMARY_WORDS);
        let n = self.sentences.len();
        let mut pool: Vec<usize> = (0..n).filter(|&i| allowed(i) && self.sentences[i].candidate && self.scores[i] > 0.0).collect();
        if pool.is_empty() {
            pool = (0..n).filter(|&i| allowed(i) && self.sentences[i].words > 0).collect();
        }
        let (redundancy_weight, duplicate) =
            if super::ablation::off("redundancy") { (0.0, f64::INFINITY) } else { (weight::REDUNDANCY, weight::DUPLICATE) };
        let mut chosen: Vec<usize> = Vec::new();
        let mut used = 0usize;
        loop {
            let mut best: Option<(usize, f64)> = None;
            for (pos, &c) in pool.iter().enumerate() {
                if used + self.sentences[c].words > max_words {
                    continue;
                }
                let redundancy = chosen.iter().map(|&s| self.similarity(c, s)).fold(0.0, f64::max);
                if redundancy > duplicate {
                    continue;
                }
                let value = self.scores[c] - redundancy_weight * redundancy * self.scores[c];
                // Strictly greater: ties go to the earlier sentence.
                if best.is_none_or(|(_, b)| value > b) {
                    best = Some((pos, value));
                }
            }
            let Some((pos, _)) = best else { break };
            let c = pool.remove(pos);
            used += self.sentences[c].words;
            chosen.push(c);
        }
        if used * 100 < max_words * FILL_PERCENT && !super::ablation::off("fill") {
            if let Some(better) = self.fill(max_words, &allowed, duplicate) {
                if better.iter().map(|&i| self.sentences[i].words).sum::<usize>() > used {
                    chosen = better;
                }
            }
        }
        chosen.sort_unstable();
        chosen
    }

    /// When the greedy choice leaves much of the budget unused (its next sentences are all too
    /// long), the set of the best candidates that fills at least [`FILL_PERCENT`] of it with
    /// the highest total score: a knapsack over the best-scored candidates, near-duplicates
    /// of a better one left out. `None` when no such set exists.
    fn fill(&self, max_words: usize, allowed: &dyn Fn(usize) -> bool, dup: f64) -> Option<Vec<usize>> {
        const POOL: usize = 48;
        let mut order: Vec<usize> =
            (0..self.sentences.len()).filter(|&i| allowed(i) && self.sentences[i].candidate && self.scores[i] > 0.0).collect();
        order.sort_by(|&a, &b| self.scores[b].total_cmp(&self.scores[a]).then(a.cmp(&b)));
        let mut pool: Vec<usize> = Vec::new();
        for i in order {
            if pool.len() == POOL {
                break;
            }
            if self.sentences[i].words <= max_words && pool.iter().all(|&p| self.similarity(i, p) <= dup) {
                pool.push(i);
            }
        }
        let floor = (max_words * FILL_PERCENT).div_ceil(100);
        if pool.iter().map(|&i| self.sentences[i].words).sum::<usize>() < floor {
            return None;
        }
        // 0/1 knapsack: best[w] = the highest total score of a set of exactly w words;
        // took[k][w]: candidate k is in that set as it stood after considering k.
        let mut best: Vec<f64> = vec![f64::NEG_INFINITY; max_words + 1];
        best[0] = 0.0;
        let mut took = vec![vec![false; max_words + 1]; pool.len()];
        for (k, &i) in pool.iter().enumerate() {
            let (words, score) = (self.sentences[i].words, self.scores[i]);
            for w in (words..=max_words).rev() {
                let value = best[w - words] + score;
                if value > best[w] {
                    best[w] = value;
                    took[k][w] = true;
                }
            }
        }
        let total = (floor..=max_words).filter(|&w| best[w].is_finite()).max_by(|&a, &b| best[a].total_cmp(&best[b]))?;
        let mut set = Vec::new();
        let mut w = total;
        for k in (0..pool.len()).rev() {
            if took[k][w] {
                set.push(pool[k]);
                w -= self.sentences[pool[k]].words;
            }
        }
        Some(set)
    }

    /// The text of sentences `chosen` (document order) in `style`. A sentence longer than the
    /// whole budget (a text without sentence breaks) is cut to `max_words` with "…": a summary
    /// is bounded by its length, never by its input.
    pub fn render(&self, chosen: &[usize], style: Style, max_words: usize) -> String {
        let texts: Vec<String> = chosen.iter().map(|&i| cut_to_words(&self.sentences[i].text, max_words)).collect();
        render_sentences(texts.iter().map(String::as_str), style)
    }

    /// The anchors of sentences `chosen`, as [`Ranker::render`] shows them.
    pub fn anchors(&self, doc: &Document, chosen: &[usize], max_words: usize) -> Vec<Anchor> {
        chosen
            .iter()
            .map(|&i| {
                let s = &self.sentences[i];
                doc.anchor(s.block, s.range.clone(), &cut_to_words(&s.text, max_words))
            })
            .collect()
    }
}

/// The largest budget the selection plans for (the knapsack's table is this long).
const MAX_SUMMARY_WORDS: usize = 100_000;

/// The share of the word budget (percent) a summary fills when the document has enough prose.
const FILL_PERCENT: usize = 85;

/// Bytes of a list item's marker and the spaces after it.
pub fn list_marker_len(text: &str) -> usize {
    let first = text.split_whitespace().next().unwrap_or("");
    let letters = first.trim_matches(|c: char| matches!(c, '(' | ')' | '.' | ':'));
    let marker = first.chars().count() == 1 && !first.chars().all(|c| c.is_alphabetic())
        || (!letters.is_empty() && letters.len() <= 3 && (first.ends_with(')') || first.ends_with('.')) && letters.chars().all(|c| c.is_ascii_alphanumeric()));
    if !marker {
        return 0;
    }
    let after = &text[text.find(first).unwrap_or(0) + first.len()..];
    text.len() - after.trim_start().len()
}

/// Whether a sentence reads as one a summary may quote.
fn readable(text: &str, words: usize) -> bool {
    let cjk = text.chars().filter(|c| is_cjk_letter(*c)).count() * 2 > text.chars().filter(|c| !c.is_whitespace()).count();
    let (lo, hi) = if cjk { (10, 200) } else { (6, 80) };
    let first = text.chars().next().unwrap_or(' ');
    // It ends like a sentence (closing quotes and brackets aside): not a fragment that a
    // page, a column or a display cut short.
    let end = text.trim_end().trim_end_matches(['"', '\'', ')', ']', '”', '’', '」', '』', '）']);
    // Not a lead-in to what follows ("... is shown below.", "as follows."), and not the tail
    // of a sentence that began before the text given ("(SVM), so ...").
    let last_word = end.trim_end_matches(['.', '!', '?', '。', '！', '？', '…']).rsplit(char::is_whitespace).next().unwrap_or("").to_lowercase();
    let lead_in = matches!(last_word.as_str(), "below" | "follows" | "following" | "here");
    let tail = first == '(' && !text.trim_end().trim_end_matches(['.', '!', '?']).ends_with(')');
    (lo..=hi).contains(&words)
        && end.ends_with(['.', '!', '?', '。', '！', '？', '…'])
        && !lead_in
        && !tail
        && (first.is_uppercase() || is_cjk(first) || first.is_ascii_digit() || "\"“‘(".contains(first))
        && prose_share(text) >= 0.75
}

fn term_counts(text: &str, ids: &mut HashMap<String, u32>) -> Vec<(u32, u32)> {
    let mut term_ids: Vec<u32> = terms(text)
        .into_iter()
        .map(|t| {
            let next = ids.len() as u32;
            *ids.entry(t).or_insert(next)
        })
        .collect();
    term_ids.sort_unstable();
    let mut tf: Vec<(u32, u32)> = Vec::new();
    for id in term_ids {
        match tf.last_mut() {
            Some((last, c)) if *last == id => *c += 1,
            _ => tf.push((id, 1)),
        }
    }
    tf
}

/// `text` cut to at most `max_words` words at a word boundary (between CJK letters), with
/// "…". Linear in `text`.
pub fn cut_to_words(text: &str, max_words: usize) -> String {
    let mut used = 0usize;
    let mut end = 0usize;
    let mut cut = false;
    let mut offset = 0usize;
    for tok in text.split_inclusive(char::is_whitespace) {
        let word = tok.trim_end();
        let w = if word.is_empty() { 0 } else { token_words(word) };
        if used + w > max_words {
            cut = true;
            // A CJK run: as many letters as fit.
            let mut n = used;
            for (j, c) in word.char_indices() {
                if is_cjk_letter(c) || (c.is_alphanumeric() && !word[..j].ends_with(|p: char| p.is_alphanumeric() && !is_cjk_letter(p))) {
                    n += 1;
                }
                if n > max_words {
                    end = offset + j;
                    break;
                }
            }
            break;
        }
        used += w;
        offset += tok.len();
        end = offset;
    }
    if !cut {
        return text.to_string();
    }
    format!("{}…", text[..end].trim_end())
}

/// Joins sentences as a paragraph (no space between CJK sentences) or as a bullet list.
pub fn render_sentences<'a>(sentences: impl Iterator<Item = &'a str>, style: Style) -> String {
    let mut out = String::new();
    for s in sentences {
        match style {
            Style::Bullets => {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str("- ");
                out.push_str(s);
            }
            Style::Paragraph => {
                let prev_cjk = out.chars().last().is_some_and(is_cjk);
                let next_cjk = s.chars().next().is_some_and(is_cjk);
                if !out.is_empty() && (!prev_cjk || !next_cjk) {
                    out.push(' ');
                }
                out.push_str(s);
            }
        }
    }
    out
}
