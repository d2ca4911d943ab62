//! Preparing the document: the pages (split from text at form feeds, or the PDF extractor's),
//! the requested pages among them, then lines, blocks and sections ([`Document::read`]), its
//! language and counts; and `--explain`, which shows the ranker's view of what was read.

use super::super::document::{text_pages, Document};
use super::super::extract::{extract_pages, ExtractedPages};
use super::super::prompt::detect_language;
use super::super::rank::Ranker;
use super::super::scorer::NAMES;
use super::super::text::split_sentences;
use super::super::{Cancel, Language, SummaryError, SummaryOptions};
use super::Input;

/// The document read, and what the stats say of it.
pub(super) struct Prepared {
    pub doc: Document,
    pub page_count: u32,
    pub pages: u32,
    pub input_chars: u64,
    pub warnings: Vec<String>,
    /// Detected from the text (used when the request says `auto`).
    pub language: Language,
    /// Sentences in all the document's blocks.
    pub sentences: u32,
}

/// A document's pages: text to split at form feeds, or what the PDF extractor gave.
pub(super) enum Pages {
    Text(String),
    Pdf(ExtractedPages),
}

/// Pages -> selected pages -> the document read (lines, blocks, sections), its language.
pub(super) fn prepare(input: Pages, opts: &SummaryOptions, cancel: &Cancel) -> Result<Prepared, SummaryError> {
    let (page_count, pages, warnings, title, pdf) = match input {
        Pages::Text(t) => {
            let pages = text_pages(&t);
            (pages.len() as u32, pages, Vec::new(), None, false)
        }
        Pages::Pdf(e) => (e.page_count, e.pages, e.warnings, e.title, true),
    };
    // PDF pages arrive already selected by the extractor; text pages are selected here.
    let selected: Vec<_> = match (&opts.pages, pdf) {
        (Some(r), false) => {
            let (a, b) = (*r.start(), *r.end());
            if a == 0 || a > b || a > page_count {
                return Err(SummaryError::InvalidArgs(format!(
                    "pages {a}-{b} do not select any of the text's {page_count} pages (pages are separated by form feeds)"
                )));
            }
            pages.into_iter().filter(|p| (a..=b).contains(&p.number)).collect()
        }
        _ => pages,
    };
    let input_chars = selected.iter().map(|p| p.text.chars().count() as u64).sum();
    let page_total = selected.len() as u32;
    cancel.check()?;
    let doc = Document::read(selected, title.as_deref().unwrap_or(""), cancel)?;
    if !doc.blocks.iter().any(|b| !b.text.trim().is_empty()) {
        return Err(SummaryError::NoText("there is no text to summarize (empty after cleaning)".into()));
    }
    if super::super::rank::summarizable(&doc).is_empty() {
        return Err(SummaryError::NoText(super::NO_PROSE.into()));
    }
    let language = detect_language(doc.blocks.iter().map(|b| b.text.as_str()));
    let sentences = doc.blocks.iter().map(|b| split_sentences(&b.text).len()).sum::<usize>() as u32;
    Ok(Prepared { doc, page_count, pages: page_total, input_chars, warnings, language, sentences })
}

/// Why the extractive summary of `input` is what it is: every block with its kind and
/// section, and every sentence with its features, score and whether it was chosen
/// (`seqgpt summarize --local --explain`). Runs on the calling thread.
pub fn explain(input: Input, opts: &SummaryOptions, limits: &seqgpt_pdf::Limits) -> Result<serde_json::Value, SummaryError> {
    let cancel = Cancel::new();
    let pages = match input {
        Input::Text(t) => Pages::Text(t),
        Input::Pdf { bytes, .. } => Pages::Pdf(extract_pages(&bytes, opts, limits, &cancel)?),
    };
    let prep = prepare(pages, opts, &cancel)?;
    let doc = &prep.doc;
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
    Ok(serde_json::json!({"title": doc.title, "features": NAMES.to_vec(), "blocks": blocks, "sentences": sentences}))
}
