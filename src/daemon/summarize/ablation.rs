//! Switching stages of the extractive summarizer off, to measure what each adds
//! (`benches/summary_quality.sh` prints a row per stage). `SEQGPT_SUMMARY_ABLATE` names the
//! stages to switch off, separated by commas: `structure` (every block is prose, one
//! section), `sections` (no section weights), `position` (no position prior), `cues` (no cue
//! phrases), `title` (no title terms), `length` (no sentence-length prior), `redundancy` (no
//! redundancy penalty), `fill` (no filling of the word budget). Unset, as in normal use,
//! nothing is off. It is read once per process.

use std::sync::OnceLock;

/// The stages that can be switched off.
pub const STAGES: &[&str] = &["structure", "sections", "position", "cues", "title", "length", "redundancy", "fill"];

/// Whether `stage` is switched off.
pub fn off(stage: &str) -> bool {
    static OFF: OnceLock<Vec<String>> = OnceLock::new();
    OFF.get_or_init(|| {
        std::env::var("SEQGPT_SUMMARY_ABLATE")
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    })
    .iter()
    .any(|s| s == stage)
}
