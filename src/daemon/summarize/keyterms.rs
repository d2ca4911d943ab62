//! Key terms: how likely each of a document's terms is to be one its abstract uses, from how
//! the document uses it (how often, in how many paragraphs, how early, how widely spread, in
//! its title or its headings) and how often documents in general repeat it in their
//! abstracts (the abstract vocabulary). A summary made of sentences dense in such terms says
//! what the abstract would; the ranker gives each sentence the sum of its terms'
//! probabilities per word (the scorer's `keyterms` feature).
//!
//! A logistic model over [`NAMES`], fitted by `benches/fit_scorer.py` on the training
//! documents (a term is positive when the document's abstract has it) and shipped in
//! `keyterms.json` beside this file.

use super::logistic::Logistic;
use std::sync::OnceLock;

/// The term features, in the order of [`TermFeatures`] and of the weights file.
pub const NAMES: [&str; K] = ["tf_log", "blocks_log", "first", "first_log", "spread", "title", "headings_log", "vocab", "share_log"];

/// The number of term features.
pub const K: usize = 9;

/// One term's features, in [`NAMES`] order.
pub type TermFeatures = [f64; K];

/// How a document uses one term, gathered over its sentences in order.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    /// Occurrences in the document's sentences.
    pub count: u32,
    /// Paragraphs (blocks) that hold it.
    pub blocks: u32,
    /// The first and the last sentence that holds it.
    pub first: usize,
    pub last: usize,
    /// The block of the last sentence counted (to count blocks once).
    pub last_block: Option<usize>,
    pub in_title: bool,
    /// Section headings that hold it.
    pub headings: u32,
}

/// The features of a term used as `u` says, in a document of `sentences` sentences and
/// `occurrences` term occurrences in all; `vocab` is its abstract-vocabulary weight.
pub fn features(u: &Usage, sentences: usize, occurrences: u64, vocab: f64) -> TermFeatures {
    let n = sentences.max(1) as f64;
    [
        (1.0 + f64::from(u.count)).ln(),
        (1.0 + f64::from(u.blocks)).ln(),
        u.first as f64 / n,
        (1.0 + 100.0 * u.first as f64 / n).ln(),
        (u.last - u.first) as f64 / n,
        f64::from(u8::from(u.in_title)),
        (1.0 + f64::from(u.headings)).ln(),
        vocab,
        (f64::from(u.count.max(1)) / occurrences.max(1) as f64).ln(),
    ]
}

/// The model that ships with the daemon (`keyterms.json`, over [`NAMES`]).
pub fn shipped() -> &'static Logistic {
    static SHIPPED: OnceLock<Logistic> = OnceLock::new();
    // The file is compiled in and a unit test reads it: it cannot fail at run time.
    SHIPPED.get_or_init(|| Logistic::from_json(include_str!("keyterms.json"), &NAMES, "key-term weights").expect("the shipped keyterms.json is valid"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_model_loads_and_prefers_a_frequent_title_term() {
        let m = shipped();
        let title = Usage { count: 30, blocks: 12, first: 0, last: 90, in_title: true, headings: 3, ..Usage::default() };
        let rare = Usage { count: 1, blocks: 1, first: 60, last: 60, ..Usage::default() };
        let (a, b) = (m.probability(&features(&title, 100, 2000, 0.5), &[]), m.probability(&features(&rare, 100, 2000, 0.0), &[]));
        assert!(a > 0.0 && a < 1.0 && b > 0.0 && b < 1.0, "{a} {b}");
        assert!(a > 2.0 * b, "a frequent title term {a}, a rare one {b}");
    }

    #[test]
    fn a_model_with_other_features_is_refused() {
        let wrong = r#"{"features": ["tf_log"], "mean": [0], "scale": [1], "weights": [1], "bias": 0}"#;
        assert!(Logistic::from_json(wrong, &NAMES, "key-term weights").unwrap_err().contains("features"));
    }
}
