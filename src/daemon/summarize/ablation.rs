//! Switching stages of the extractive summarizer off, to measure what each adds
//! (`benches/summary_quality.sh` prints a row per stage). `SEQGPT_SUMMARY_ABLATE` names the
//! stages to switch off, separated by commas: `structure` (every block is prose, one
//! section), the learned scorer's feature groups (`centrality`, `sections`, `position`,
//! `cues`, `title`, `length`: held at their training mean, [`super::scorer::group`]),
//! `coherence` (sentences that point back may stand alone), `redundancy` (no redundancy
//! penalty), `fill` (no filling of the word budget).
//!
//! Only `seqgpt summarize --local` reads the variable ([`enable_from_env`]), and then uses no
//! summary cache: the daemon never does, so its summaries and its cache cannot depend on it.

use std::sync::OnceLock;

/// The stages that can be switched off.
pub const STAGES: &[&str] = &["structure", "centrality", "sections", "position", "cues", "title", "length", "coherence", "redundancy", "fill"];

static OFF: OnceLock<Vec<String>> = OnceLock::new();

/// Reads `SEQGPT_SUMMARY_ABLATE` for this process (once; later calls change nothing) and
/// returns the stages it switches off. An unknown stage is an error.
pub fn enable_from_env() -> Result<&'static [String], String> {
    let asked: Vec<String> =
        std::env::var("SEQGPT_SUMMARY_ABLATE").unwrap_or_default().split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    if let Some(bad) = asked.iter().find(|s| !STAGES.contains(&s.as_str())) {
        return Err(format!("SEQGPT_SUMMARY_ABLATE: unknown stage {bad:?} (stages: {})", STAGES.join(", ")));
    }
    Ok(OFF.get_or_init(|| asked))
}

/// The stages switched off in this process (none unless [`enable_from_env`] ran).
pub fn stages() -> &'static [String] {
    OFF.get().map_or(&[], Vec::as_slice)
}

/// Whether `stage` is switched off.
pub fn off(stage: &str) -> bool {
    stages().iter().any(|s| s == stage)
}
