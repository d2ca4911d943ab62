//! The extractive summarizer: picks the document's most representative sentences and returns
//! them in document order. It needs no model, so it is the fallback when none is configured or
//! the model fails, and the method of `seqgpt summarize --local` on a fresh machine.
//!
//! Ranking, deterministic for a given input:
//! 1. Sentences (Latin and CJK rules, see [`super::text`]) with their terms: Latin words and
//!    CJK character bigrams, so Chinese and Japanese need no word segmenter.
//! 2. Each sentence is a TF-IDF vector (sublinear term frequency, smoothed IDF over the
//!    document's sentences), L2-normalized. Its centrality is the cosine with the document's
//!    centroid: sentences about what the whole document is about score high.
//! 3. A position prior favours the lead (documents state their point early) and the first
//!    sentence of each paragraph (topic sentences); very short sentences are damped.
//! 4. Selection is greedy with maximal marginal relevance: a candidate's score is reduced by
//!    its similarity to what is already chosen, and near-duplicates are skipped, until the
//!    target count or the length budget of the `length` option is reached.

use super::clean::Paragraph;
use super::text::{is_cjk, split_sentences, terms, weighted_len};
use super::{Cancel, Length, Style, SummaryError};
use std::collections::HashMap;

/// A sentence of the document.
#[derive(Debug, Clone, PartialEq)]
pub struct Sentence {
    pub text: String,
    /// Index of its paragraph.
    pub paragraph: usize,
    pub first_in_paragraph: bool,
    /// A heading or label rather than a sentence: a one-line paragraph without final
    /// punctuation. Headings rank, but are chosen only when nothing else is left.
    pub heading: bool,
}

/// Splits paragraphs into sentences, in document order.
pub fn sentences_of(paragraphs: &[Paragraph]) -> Vec<Sentence> {
    let mut out = Vec::new();
    for (p, para) in paragraphs.iter().enumerate() {
        let ranges = split_sentences(&para.text);
        let heading = ranges.len() == 1 && is_heading(&para.text);
        for (i, r) in ranges.into_iter().enumerate() {
            out.push(Sentence { text: para.text[r].to_string(), paragraph: p, first_in_paragraph: i == 0, heading });
        }
    }
    out
}

fn is_heading(text: &str) -> bool {
    let t = text.trim();
    let ends_sentence = t.ends_with(['.', '!', '?', '。', '！', '？', '…', '"', '”', '」', ')', '）']);
    !ends_sentence && t.chars().count() <= 100
}

/// How many sentences and how much text a summary of each length aims at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    /// Sentences wanted (fewer when the document has fewer).
    pub sentences: usize,
    /// Budget in weighted characters (a CJK character counts 2.5, see
    /// [`super::text::weighted_len`]); the first sentence is taken even if it is longer.
    pub budget: f64,
}

impl Target {
    pub fn for_length(length: Length, document_sentences: usize) -> Self {
        let (ratio, min, max, budget) = match length {
            Length::Short => (0.10, 1, 3, 450.0),
            Length::Medium => (0.20, 2, 6, 1000.0),
            Length::Long => (0.35, 3, 12, 2200.0),
        };
        let n = document_sentences as f64;
        let want = ((n * ratio).round() as usize).clamp(min, max).min(document_sentences.max(1));
        Target { sentences: want, budget }
    }
}

/// Sparse TF-IDF vector: (term id, weight), sorted by term id, L2-normalized.
type SparseVec = Vec<(u32, f64)>;

/// A ranked document: its sentences, their vectors and scores.
pub struct Ranker {
    pub sentences: Vec<Sentence>,
    vectors: Vec<SparseVec>,
    term_counts: Vec<usize>,
    pub scores: Vec<f64>,
}

/// Similarity above which a candidate repeats a chosen sentence and is skipped.
const DUPLICATE_SIMILARITY: f64 = 0.65;
/// Weight of the redundancy penalty in maximal marginal relevance.
const REDUNDANCY_WEIGHT: f64 = 0.5;

impl Ranker {
    /// Ranks `sentences`; `Cancelled` once `cancel` is set (checked every few sentences).
    pub fn new(sentences: Vec<Sentence>, cancel: &Cancel) -> Result<Self, SummaryError> {
        // Term ids in first-seen order keep every sum in a fixed order (determinism).
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut counts: Vec<Vec<(u32, u32)>> = Vec::with_capacity(sentences.len());
        let mut term_counts = Vec::with_capacity(sentences.len());
        for (n, s) in sentences.iter().enumerate() {
            if n % 1024 == 0 {
                cancel.check()?;
            }
            let ts = terms(&s.text);
            term_counts.push(ts.len());
            let mut term_ids: Vec<u32> = ts
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
            counts.push(tf);
        }
        cancel.check()?;
        let vocab = ids.len();
        let n = sentences.len() as f64;
        let mut df = vec![0u32; vocab];
        for tf in &counts {
            for (id, _) in tf {
                df[*id as usize] += 1;
            }
        }
        let idf: Vec<f64> = df.iter().map(|&d| ((n + 1.0) / (f64::from(d) + 1.0)).ln() + 1.0).collect();
        let vectors: Vec<SparseVec> = counts
            .iter()
            .map(|tf| {
                let mut v: SparseVec =
                    tf.iter().map(|&(id, c)| (id, (1.0 + f64::from(c).ln()) * idf[id as usize])).collect();
                let norm = v.iter().map(|(_, w)| w * w).sum::<f64>().sqrt();
                if norm > 0.0 {
                    v.iter_mut().for_each(|(_, w)| *w /= norm);
                }
                v
            })
            .collect();
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
        let total = sentences.len().max(1) as f64;
        let scores = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let centrality: f64 = v.iter().map(|&(id, w)| w * centroid[id as usize]).sum();
                let rel = i as f64 / total;
                let lead = 1.0 + 0.25 * (1.0 - rel).powi(3);
                let topic = if sentences[i].first_in_paragraph { 1.1 } else { 1.0 };
                let t = term_counts[i];
                let size = if t < 5 { 0.6 + 0.08 * t as f64 } else if t > 60 { 0.85 } else { 1.0 };
                centrality * lead * topic * size
            })
            .collect();
        Ok(Ranker { sentences, vectors, term_counts, scores })
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

    /// Chooses sentences among those `allowed`, by score with the redundancy penalty, up to
    /// `target`; returns their indices in document order.
    pub fn select(&self, target: Target, allowed: impl Fn(usize) -> bool) -> Vec<usize> {
        let n = self.sentences.len();
        let substantial: Vec<usize> =
            (0..n).filter(|&i| allowed(i) && self.term_counts[i] >= 3 && !self.sentences[i].heading).collect();
        let mut candidates: Vec<usize> =
            if substantial.len() >= target.sentences { substantial } else { (0..n).filter(|&i| allowed(i)).collect() };
        let mut chosen: Vec<usize> = Vec::new();
        let mut used = 0.0;
        while chosen.len() < target.sentences && !candidates.is_empty() {
            let mut best: Option<(usize, f64)> = None;
            let mut duplicates = Vec::new();
            for (pos, &c) in candidates.iter().enumerate() {
                let redundancy = chosen.iter().map(|&s| self.similarity(c, s)).fold(0.0, f64::max);
                if redundancy > DUPLICATE_SIMILARITY {
                    duplicates.push(pos);
                    continue;
                }
                let value = self.scores[c] - REDUNDANCY_WEIGHT * redundancy;
                // Strictly greater: ties go to the earlier sentence.
                if best.is_none_or(|(_, b)| value > b) {
                    best = Some((pos, value));
                }
            }
            let Some((pos, _)) = best else { break };
            let c = candidates[pos];
            let len = weighted_len(&self.sentences[c].text);
            let fits = chosen.is_empty() || used + len <= target.budget;
            // Remove the pick and the duplicates (positions descending keep indices valid).
            let mut gone = duplicates;
            gone.push(pos);
            gone.sort_unstable_by(|a, b| b.cmp(a));
            for g in gone {
                candidates.remove(g);
            }
            if fits {
                chosen.push(c);
                used += len;
            }
        }
        chosen.sort_unstable();
        chosen
    }

    /// The text of sentences `chosen` (document order) in `style`. A sentence longer than the
    /// whole budget (a text without sentence breaks) is cut at a word boundary with "…":
    /// a summary is bounded by its length, never by its input.
    pub fn render(&self, chosen: &[usize], style: Style, budget: f64) -> String {
        let mut cut: Vec<std::borrow::Cow<'_, str>> = Vec::with_capacity(chosen.len());
        for &i in chosen {
            let text = self.sentences[i].text.as_str();
            cut.push(if weighted_len(text) > budget { std::borrow::Cow::Owned(cut_to(text, budget)) } else { text.into() });
        }
        render_sentences(cut.iter().map(|s| s.as_ref()), style)
    }
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

/// The result of [`summarize`].
#[derive(Debug, Clone, PartialEq)]
pub struct Extract {
    pub text: String,
    /// Sentences in the document.
    pub sentences: usize,
    /// Indices of the chosen sentences (document order).
    pub chosen: Vec<usize>,
}

/// An extractive summary of `paragraphs`.
pub fn summarize(paragraphs: &[Paragraph], length: Length, style: Style) -> Extract {
    let ranker = Ranker::new(sentences_of(paragraphs), &Cancel::new()).expect("never cancelled");
    let target = Target::for_length(length, ranker.sentences.len());
    let chosen = ranker.select(target, |_| true);
    Extract { text: ranker.render(&chosen, style, target.budget), sentences: ranker.sentences.len(), chosen }
}

/// The longest prefix of `text` within `budget` (weighted length), ended at a word boundary
/// (or between CJK characters), with "…".
fn cut_to(text: &str, budget: f64) -> String {
    let mut used = 0.0;
    let mut end = 0;
    let mut last_break = 0;
    for (i, c) in text.char_indices() {
        used += weighted_len(c.encode_utf8(&mut [0; 4]));
        if used > budget - 1.0 {
            break;
        }
        if c.is_whitespace() || is_cjk(c) {
            last_break = if c.is_whitespace() { i } else { i + c.len_utf8() };
        }
        end = i + c.len_utf8();
    }
    let at = if last_break > 0 { last_break } else { end };
    format!("{}…", text[..at].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::clean::{clean_pages, pages_of_text};

    fn paragraphs(text: &str) -> Vec<Paragraph> {
        clean_pages(&pages_of_text(text)).0
    }

    const ENGLISH: &str = "\
Solar panels convert sunlight into electricity using photovoltaic cells. The cells are made of \
silicon, which releases electrons when light strikes it.

Installing solar panels on a house lowers the electricity bill. Many households recover the cost of \
the solar panels within ten years. Some regions pay owners for the electricity their panels return to \
the grid.

The weather matters. Clouds reduce the output of solar panels, but they still produce electricity on \
overcast days. Snow must be cleared.

My neighbour owns a cat. It is grey.

In short, solar panels turn sunlight into cheaper electricity for households, even in cloudy regions.";

    #[test]
    fn english_summary_picks_central_sentences_in_order() {
        let paras = paragraphs(ENGLISH);
        let out = summarize(&paras, Length::Short, Style::Paragraph);
        assert!(out.sentences >= 10);
        assert!(!out.chosen.is_empty() && out.chosen.len() <= 3);
        assert!(out.chosen.windows(2).all(|w| w[0] < w[1]), "document order");
        assert!(!out.text.contains("cat"), "off-topic sentence chosen: {}", out.text);
        assert!(out.text.contains("solar panels") || out.text.contains("Solar panels"), "{}", out.text);
        // Deterministic.
        assert_eq!(out, summarize(&paras, Length::Short, Style::Paragraph));
    }

    #[test]
    fn longer_lengths_choose_more() {
        let paras = paragraphs(ENGLISH);
        let short = summarize(&paras, Length::Short, Style::Paragraph);
        let long = summarize(&paras, Length::Long, Style::Paragraph);
        assert!(long.chosen.len() > short.chosen.len());
        let bullets = summarize(&paras, Length::Long, Style::Bullets);
        assert_eq!(bullets.text.lines().count(), bullets.chosen.len());
        assert!(bullets.text.lines().all(|l| l.starts_with("- ")));
    }

    #[test]
    fn chinese_summary_uses_bigrams() {
        let text = "\
太阳能电池板利用光伏电池把阳光转换成电能。电池由硅制成，光照射时硅会释放电子。

在房屋上安装太阳能电池板可以降低电费。许多家庭在十年内收回太阳能电池板的成本。

天气很重要。云层会降低太阳能电池板的发电量，但阴天仍然可以发电。

我的邻居养了一只猫。猫是灰色的。

总之，太阳能电池板把阳光变成更便宜的电能，即使在多云的地区也是如此。";
        let paras = paragraphs(text);
        let out = summarize(&paras, Length::Short, Style::Paragraph);
        assert_eq!(out.sentences, 9);
        assert!(!out.text.contains('猫'), "{}", out.text);
        assert!(out.text.contains("太阳能"), "{}", out.text);
        // CJK sentences join without spaces.
        assert!(!out.text.contains("。 "), "{}", out.text);
    }

    #[test]
    fn near_duplicates_are_not_both_chosen() {
        let text = "The river floods the valley every spring. The river floods the valley every spring! \
                    Farmers plant rice after the flood. The flood brings fertile silt to the valley fields.";
        let paras = paragraphs(text);
        let out = summarize(&paras, Length::Long, Style::Paragraph);
        assert_eq!(out.text.matches("floods the valley every spring").count(), 1, "{}", out.text);
    }

    #[test]
    fn tiny_and_empty_inputs() {
        assert_eq!(summarize(&[], Length::Short, Style::Paragraph).text, "");
        let one = paragraphs("Just one sentence here.");
        assert_eq!(summarize(&one, Length::Medium, Style::Paragraph).text, "Just one sentence here.");
    }

    #[test]
    fn vim_tutor_summaries_in_eight_languages() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("quantize/calib");
        for lang in ["en", "zh", "ja", "ko", "fr", "de", "ru", "es"] {
            let raw = std::fs::read_to_string(dir.join(format!("vimtutor.{lang}.txt"))).unwrap();
            let paras = paragraphs(&raw);
            let a = summarize(&paras, Length::Medium, Style::Paragraph);
            assert!(!a.text.is_empty(), "{lang}");
            assert!(a.chosen.len() >= 2 && a.chosen.len() <= 6, "{lang}: {}", a.chosen.len());
            assert!(weighted_len(&a.text) < 1000.0 + 2000.0, "{lang}");
            assert_eq!(a, summarize(&paras, Length::Medium, Style::Paragraph), "{lang}: deterministic");
        }
    }
}
