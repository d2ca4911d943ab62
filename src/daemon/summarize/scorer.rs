//! The learned sentence scorer: how likely a sentence is to be one of the few that stand for
//! the document, from what the structure stage knows of it.
//!
//! A logistic model over [`NAMES`]: the features are standardized with the mean and spread of
//! the training sentences, weighed, summed and squashed to a probability. The weights were fitted
//! on documents of many genres (articles, manuals, package documentation, reports) against the
//! sentences a greedy ROUGE oracle picks to match each document's own abstract, and ship in
//! `scorer.json` beside this file with the command that fitted them (`benches/fit_scorer.py`,
//! docs/SUMMARIZE.md "The learned scorer"): anyone can refit it. Scoring is a dot product per
//! sentence: deterministic, and negligible beside reading the PDF.

use super::logistic::Logistic;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The features, in the order of the vector the ranker fills and the weights file lists.
pub const NAMES: [&str; N] = [
    // Topic.
    "centrality",
    "centrality_log",
    "centrality_rel",
    "lead_sim",
    "vocab",
    "keyterms",
    "title",
    "heading",
    // Section kind and depth.
    "sec_front",
    "sec_abstract",
    "sec_introduction",
    "sec_background",
    "sec_body",
    "sec_conclusion",
    "sec_appendix",
    "sec_level",
    // Position in the document, the section and the paragraph.
    "doc_pos",
    "doc_pos_log",
    "doc_lead",
    "sec_pos",
    "block_lead",
    "first_in_block",
    "sent_in_block",
    // What the sentence says and how.
    "cue",
    "abstract_words",
    "definition",
    "first_person",
    "words_log",
    "short",
    "long",
    "prose",
    "prose_log",
    "digits",
    "list_item",
    "lower_start",
    "dangling",
    "aside",
    "url",
];

/// The number of features.
pub const N: usize = 38;

/// One sentence's features, in [`NAMES`] order.
pub type FeatureVec = [f64; N];

/// Groups of features that `benches/summary_quality.sh` switches off one at a time (a feature
/// switched off is held at its training mean), to measure what each adds.
pub fn group(name: &str) -> &'static [&'static str] {
    match name {
        "centrality" => &["centrality", "centrality_log", "centrality_rel", "lead_sim", "keyterms"],
        "vocabulary" => &["vocab"],
        "title" => &["title", "heading"],
        "sections" => &["sec_front", "sec_abstract", "sec_introduction", "sec_background", "sec_body", "sec_conclusion", "sec_appendix", "sec_level"],
        "position" => &["doc_pos", "doc_pos_log", "doc_lead", "sec_pos", "block_lead", "first_in_block", "sent_in_block"],
        "cues" => &["cue", "abstract_words", "definition", "first_person"],
        "length" => &["words_log", "short", "long"],
        _ => &[],
    }
}

/// The model that ships with the daemon (`scorer.json`, over [`NAMES`]).
pub fn shipped() -> &'static Logistic {
    static SHIPPED: OnceLock<Logistic> = OnceLock::new();
    // The file is compiled in and a unit test reads it: it cannot fail at run time.
    SHIPPED.get_or_init(|| Logistic::from_json(include_str!("scorer.json"), &NAMES, "scorer weights").expect("the shipped scorer.json is valid"))
}

/// How much more often than the average term each term of a document is found in its
/// abstract (a log ratio, fitted with the weights: `abstract_vocab.tsv`, "term<TAB>weight");
/// terms not listed weigh 0. It learns which words documents of every genre use to say what
/// they are ("package", "provides", "framework") and which they use for details ("line",
/// "figure", "option").
pub fn vocabulary() -> &'static HashMap<String, f64> {
    static VOCAB: OnceLock<HashMap<String, f64>> = OnceLock::new();
    VOCAB.get_or_init(|| {
        include_str!("abstract_vocab.tsv")
            .lines()
            .filter_map(|l| {
                let (t, w) = l.split_once('\t')?;
                Some((t.to_string(), w.trim().parse::<f64>().ok().filter(|w| w.is_finite())?))
            })
            .collect()
    })
}

/// The indices of the features in the groups `stages` names.
pub fn indices(stages: &[String]) -> Vec<usize> {
    stages
        .iter()
        .flat_map(|s| group(s).iter())
        .filter_map(|name| NAMES.iter().position(|n| n == name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_weights_load() {
        let s = shipped();
        assert_eq!(s.features.len(), N);
        assert!(s.weights.iter().all(|w| w.is_finite()));
        let x = [0.0; N];
        let p = s.probability(&x, &[]);
        assert!(p > 0.0 && p < 1.0);
        assert!(vocabulary().len() > 100, "the vocabulary holds {} terms", vocabulary().len());
    }

    #[test]
    fn a_weights_file_with_other_features_is_refused() {
        let bad = r#"{"features":["centrality"],"mean":[0],"scale":[1],"weights":[1],"bias":0}"#;
        assert!(Logistic::from_json(bad, &NAMES, "scorer weights").unwrap_err().contains("expected"));
    }

    #[test]
    fn every_group_names_known_features() {
        for g in ["centrality", "vocabulary", "title", "sections", "position", "cues", "length"] {
            assert!(!group(g).is_empty());
            assert_eq!(indices(&[g.to_string()]).len(), group(g).len(), "{g}");
        }
    }
}
