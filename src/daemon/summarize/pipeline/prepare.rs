//! Preparing the document: its pages read into a [`Document`] ([`structure::read`]), refused
//! when nothing to summarize is left; what the stats say of it before any summarizing; and
//! `--explain`, which shows the ranker's view of what was read.

use super::super::document::Document;
use super::super::prompt::detect_language;
use super::super::rank::Ranker;
use super::super::scorer::NAMES;
use super::super::text::split_sentences;
use super::super::{pages, structure, Cancel, Language, SummaryError, SummaryOptions, SummaryStats};
use super::Input;
use seqgpt_pdf::ExtractedDocument;

/// The document read from `extracted` (lines, blocks, sections); `NoText` when no text is left
/// after cleaning, or no prose (only code, tables, formulas or lists).
pub(super) fn read_document(extracted: ExtractedDocument, cancel: &Cancel) -> Result<Document, SummaryError> {
    cancel.check()?;
    let doc = structure::read(extracted, cancel)?;
    if !doc.blocks.iter().any(|b| !b.text.trim().is_empty()) {
        return Err(SummaryError::NoText("there is no text to summarize (empty after cleaning)".into()));
    }
    if super::super::rank::summarizable(&doc).is_empty() {
        return Err(SummaryError::NoText(super::NO_PROSE.into()));
    }
    Ok(doc)
}

/// What the stats say of `doc` before it is summarized: its pages, paragraphs, sentences and
/// characters, what cleaning removed, and the extractor's warnings.
pub(super) fn document_stats(doc: &Document, extract_ms: u64) -> SummaryStats {
    SummaryStats {
        page_count: doc.page_count,
        pages: doc.pages.len() as u32,
        paragraphs: doc.prose().count() as u32,
        sentences: doc.blocks.iter().map(|b| split_sentences(&b.text).len()).sum::<usize>() as u32,
        input_chars: doc.pages.iter().map(|p| p.text.chars().count() as u64).sum(),
        edge_lines_removed: doc.clean.edge_lines_removed as u32,
        dehyphenated: doc.clean.dehyphenated as u32,
        warnings: doc.warnings.clone(),
        extract_ms,
        ..SummaryStats::default()
    }
}

/// The language of `doc`, detected from its blocks' text.
pub(super) fn language_of(doc: &Document) -> Language {
    detect_language(doc.blocks.iter().map(|b| b.text.as_str()))
}

/// Why the extractive summary of `input` is what it is: every block with its kind and
/// section, and every sentence with its features, score and whether it was chosen
/// (`seqgpt summarize --local --explain`). Runs on the calling thread.
pub fn explain(input: Input, opts: &SummaryOptions, limits: &seqgpt_pdf::Limits) -> Result<serde_json::Value, SummaryError> {
    let cancel = Cancel::new();
    let extracted = match input {
        Input::Text(t) => pages::of_text(&t, opts)?,
        Input::Pdf { bytes, .. } => pages::of_pdf(&bytes, opts, limits, &cancel)?,
    };
    let doc = &read_document(extracted, &cancel)?;
    let ranker = Ranker::new(doc, &cancel)?;
    let chosen = ranker.choose(opts.word_budget()).chosen;
    let blocks: Vec<serde_json::Value> = doc
        .blocks
        .iter()
        .map(|b| {
            let section = &doc.sections[b.section];
            serde_json::json!({
                "kind": b.kind.as_str(),
                "page": b.page(doc),
                "section": section.title,
                "section_kind": section.kind,
                "text": b.text.chars().take(160).collect::<String>(),
            })
        })
        .collect();
    let sentences: Vec<serde_json::Value> = ranker
        .sentences
        .iter()
        .enumerate()
        .map(|(i, s)| {
            serde_json::json!({
                "text": s.text,
                "block": s.block,
                "words": s.words,
                "candidate": s.candidate,
                "dangling": s.dangling,
                "section": doc.blocks[s.block].section,
                "features": NAMES.iter().zip(ranker.features[i]).map(|(n, x)| ((*n).to_string(), serde_json::json!(x))).collect::<serde_json::Map<_, _>>(),
                "x": ranker.features[i].to_vec(),
                "terms": super::super::text::terms(&s.text),
                "score": ranker.scores[i],
                "chosen": chosen.binary_search(&i).is_ok(),
            })
        })
        .collect();
    let terms: Vec<serde_json::Value> = ranker.terms.iter().map(|(t, x)| serde_json::json!([t, x.to_vec()])).collect();
    Ok(serde_json::json!({
        "title": doc.title,
        "features": NAMES.to_vec(),
        "blocks": blocks,
        "sentences": sentences,
        "term_features": super::super::keyterms::NAMES.to_vec(),
        "terms": terms,
    }))
}
