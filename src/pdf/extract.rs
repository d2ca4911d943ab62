//! [`extract_text`]: open the document, select its pages, and run each through the
//! interpreter and the layout, the decoding budget shared by all of them.

use super::{document, interp, layout, limits};
use super::{ExtractOptions, ExtractedDocument, PageStatus, PageText, PdfError};
use std::sync::atomic::Ordering;

/// Extract the text of a PDF held in memory.
pub fn extract_text(pdf_bytes: &[u8], opts: &ExtractOptions) -> Result<ExtractedDocument, PdfError> {
    let limits = &opts.limits;
    let (doc, mut warnings) = document::open(pdf_bytes, opts.password.as_deref(), limits)?;
    let pages = document::pages(&doc, limits, &mut warnings)?;
    if pages.is_empty() {
        return Err(PdfError::Invalid("no pages found (truncated or damaged file?)".into()));
    }
    let page_count = u32::try_from(pages.len()).unwrap_or(u32::MAX);
    let (first, last) = match &opts.pages {
        None => (1, page_count),
        Some(r) => {
            let (a, b) = (*r.start(), *r.end());
            if a == 0 || a > b || a > page_count {
                return Err(PdfError::InvalidPageRange(format!(
                    "pages {a}-{b} do not select any of the document's {page_count} pages"
                )));
            }
            (a, b.min(page_count))
        }
    };
    let mut budget = limits::DecodeBudget::new(limits);
    let mut cache = interp::DocCache::default();
    let mut out = Vec::new();
    for number in first..=last {
        if opts.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(PdfError::Cancelled);
        }
        let Some(page) = pages.get((number - 1) as usize) else { break };
        let area = page.bbox.map(|b| b.map(|v| v as f32));
        let (text, lines, status) = match page.dict {
            None => (String::new(), Vec::new(), PageStatus::Unreadable),
            Some(dict) => match document::page_content(&doc, dict, &mut budget)? {
                None => (String::new(), Vec::new(), PageStatus::Unreadable),
                Some(content) => {
                    let mut it = interp::Interp::new(&doc, &mut budget, &mut cache, limits);
                    it.run(&content, page.resources)?;
                    let shown = it.finish();
                    let laid = layout::layout(&shown, page.bbox);
                    if laid.text.trim().is_empty() {
                        (String::new(), Vec::new(), PageStatus::NoTextLayer)
                    } else {
                        (laid.text, laid.lines, PageStatus::Text)
                    }
                }
            },
        };
        out.push(PageText { number, text, status, lines, area });
    }
    if !out.iter().any(|p| p.status == PageStatus::Text) {
        if out.iter().all(|p| p.status == PageStatus::Unreadable) {
            return Err(PdfError::Invalid(
                "the content of the selected pages is missing from the file (truncated or damaged file?)".into(),
            ));
        }
        return Err(PdfError::NoTextLayer);
    }
    let unreadable = out.iter().filter(|p| p.status == PageStatus::Unreadable).count();
    if unreadable > 0 {
        warnings.push(format!(
            "damaged PDF: {unreadable} of the {} selected pages are missing from the file (truncated?)",
            out.len()
        ));
    }
    let title = document::info_title(&doc);
    Ok(ExtractedDocument { page_count, pages: out, warnings, title })
}

