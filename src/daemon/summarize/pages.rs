//! The pipeline's first step: a document's pages as one [`ExtractedDocument`], whatever the
//! input. A PDF's come from the extractor (`seqgpt_pdf`, within its limits, its errors as
//! summary errors, which the daemon maps to its D-Bus error names); plain text is split into
//! pages at form feeds. Either way the pages are the selected ones that have text.

use super::{title, Cancel, SummaryError, SummaryOptions};
use seqgpt_pdf::{ExtractOptions, ExtractedDocument, Limits, PageStatus, PageText, PdfError};

/// Extracts the pages `opts.pages` of `bytes` (decrypting with `opts.password`), within
/// `limits`, stopping between pages once `cancel` is set; pages without text are left out,
/// and a warning names them. The title is the file's (its information dictionary's), else
/// the one its first page shows ([`title::of_first_page`]), read from page 1 even when the
/// selection starts later: the title belongs to the whole document. CPU-bound: run it on a
/// blocking thread.
pub fn of_pdf(bytes: &[u8], opts: &SummaryOptions, limits: &Limits, cancel: &Cancel) -> Result<ExtractedDocument, SummaryError> {
    if bytes.len() > limits.max_file_bytes {
        return Err(SummaryError::TooLarge(format!(
            "the PDF has {} bytes; the limit is {}",
            bytes.len(),
            limits.max_file_bytes
        )));
    }
    let eo = ExtractOptions {
        pages: opts.pages.clone(),
        password: opts.password.clone(),
        limits: limits.clone(),
        cancel: Some(cancel.flag()),
    };
    let mut doc = seqgpt_pdf::extract_text(bytes, &eo).map_err(map_error)?;
    let without = doc.pages_without_text();
    if !without.is_empty() {
        doc.warnings.push(format!("pages without a text layer (image-only?) were skipped: {}", list(&without)));
    }
    doc.pages.retain(|p| p.status == PageStatus::Text);
    if doc.title.as_deref().is_none_or(|t| t.trim().is_empty()) {
        doc.title = match doc.pages.first().filter(|p| p.number == 1) {
            Some(first) => title::of_first_page(first),
            // A first page that cannot be read gives no title; the selected pages still count.
            None => seqgpt_pdf::extract_text(bytes, &ExtractOptions { pages: Some(1..=1), ..eo })
                .ok()
                .and_then(|d| d.pages.into_iter().next())
                .filter(|p| p.status == PageStatus::Text)
                .and_then(|p| title::of_first_page(&p)),
        };
    }
    Ok(doc)
}

/// The pages `opts.pages` of plain text, whose pages form feeds separate.
pub fn of_text(text: &str, opts: &SummaryOptions) -> Result<ExtractedDocument, SummaryError> {
    let pages = split(text);
    let page_count = pages.len() as u32;
    let pages = match &opts.pages {
        Some(r) => {
            let (a, b) = (*r.start(), *r.end());
            if a == 0 || a > b || a > page_count {
                return Err(SummaryError::InvalidArgs(format!(
                    "pages {a}-{b} do not select any of the text's {page_count} pages (pages are separated by form feeds)"
                )));
            }
            pages.into_iter().filter(|p| (a..=b).contains(&p.number)).collect()
        }
        None => pages,
    };
    Ok(ExtractedDocument { page_count, pages, warnings: Vec::new(), title: None })
}

/// Pages of plain text: form feeds separate them.
pub fn split(text: &str) -> Vec<PageText> {
    text.split('\u{000C}')
        .enumerate()
        .map(|(i, p)| PageText { number: i as u32 + 1, text: p.to_string(), status: PageStatus::Text, lines: Vec::new(), area: None })
        .collect()
}

/// The pages as one document, as a test or a caller with pages of its own has them.
pub fn whole(pages: Vec<PageText>) -> ExtractedDocument {
    ExtractedDocument { page_count: pages.len() as u32, pages, warnings: Vec::new(), title: None }
}

fn list(pages: &[u32]) -> String {
    let shown: Vec<String> = pages.iter().take(20).map(u32::to_string).collect();
    let more = if pages.len() > 20 { format!(" and {} more", pages.len() - 20) } else { String::new() };
    format!("{}{more}", shown.join(", "))
}

/// The extractor's error as the pipeline's (and so as a D-Bus error name: InvalidPdf,
/// Encrypted, NoText, TooLarge, InvalidArgs).
pub fn map_error(e: PdfError) -> SummaryError {
    let message = e.to_string();
    match e {
        PdfError::Invalid(_) => SummaryError::InvalidPdf(message),
        PdfError::PasswordRequired | PdfError::WrongPassword | PdfError::UnsupportedEncryption(_) => {
            SummaryError::Encrypted(message)
        }
        PdfError::NoTextLayer => SummaryError::NoText(message),
        PdfError::TooLarge(_) => SummaryError::TooLarge(message),
        PdfError::InvalidPageRange(_) => SummaryError::InvalidArgs(message),
        PdfError::Cancelled => SummaryError::Cancelled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pdf_error_has_a_summary_error() {
        assert!(matches!(map_error(PdfError::Invalid("x".into())), SummaryError::InvalidPdf(_)));
        assert!(matches!(map_error(PdfError::PasswordRequired), SummaryError::Encrypted(_)));
        assert!(matches!(map_error(PdfError::WrongPassword), SummaryError::Encrypted(_)));
        assert!(matches!(map_error(PdfError::UnsupportedEncryption("pk".into())), SummaryError::Encrypted(_)));
        assert!(matches!(map_error(PdfError::NoTextLayer), SummaryError::NoText(_)));
        assert!(matches!(map_error(PdfError::TooLarge("x".into())), SummaryError::TooLarge(_)));
        assert!(matches!(map_error(PdfError::InvalidPageRange("x".into())), SummaryError::InvalidArgs(_)));
    }

    #[test]
    fn form_feeds_split_plain_text_into_pages() {
        let pages = split("one\u{000C}two\u{000C}three");
        assert_eq!(pages.len(), 3);
        assert_eq!((pages[2].number, pages[2].text.as_str()), (3, "three"));
    }

    #[test]
    fn pages_of_a_text_are_selected_and_counted() {
        let opts = SummaryOptions { pages: Some(2..=3), ..SummaryOptions::default() };
        let doc = of_text("one\u{000C}two\u{000C}three\u{000C}four", &opts).unwrap();
        assert_eq!(doc.page_count, 4);
        assert_eq!(doc.pages.iter().map(|p| p.number).collect::<Vec<_>>(), [2, 3]);
        let opts = SummaryOptions { pages: Some(5..=6), ..SummaryOptions::default() };
        assert!(matches!(of_text("one\u{000C}two", &opts), Err(SummaryError::InvalidArgs(_))));
    }

    #[test]
    fn size_cap_before_parsing() {
        let limits = Limits { max_file_bytes: 10, ..Limits::default() };
        let e = of_pdf(b"%PDF-1.4 0123456789", &SummaryOptions::default(), &limits, &Cancel::new()).unwrap_err();
        assert!(matches!(e, SummaryError::TooLarge(_)), "{e:?}");
    }
}
