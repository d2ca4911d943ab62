//! The pipeline's first step for PDFs: the extractor (`seqgpt_pdf`), its limits, and its
//! errors as summary errors (which the daemon maps to its D-Bus error names).

use super::{Cancel, SummaryError, SummaryOptions};
use seqgpt_pdf::{ExtractOptions, Limits, PageText, PdfError};

/// The pages of a PDF, as the cleaner takes them.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractedPages {
    /// Pages in the document (not only the selected ones).
    pub page_count: u32,
    /// The selected pages that have text, with their layout.
    pub pages: Vec<PageText>,
    /// Repairs made to a damaged file, one line each.
    pub warnings: Vec<String>,
    /// The document's title from its metadata, if any.
    pub title: Option<String>,
}

/// Extracts the pages `opts.pages` of `bytes` (decrypting with `opts.password`), within
/// `limits`, stopping between pages once `cancel` is set. CPU-bound: run it on a blocking
/// thread.
pub fn extract_pages(bytes: &[u8], opts: &SummaryOptions, limits: &Limits, cancel: &Cancel) -> Result<ExtractedPages, SummaryError> {
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
    let doc = seqgpt_pdf::extract_text(bytes, &eo).map_err(map_error)?;
    let mut warnings = doc.warnings.clone();
    let without = doc.pages_without_text();
    if !without.is_empty() {
        warnings.push(format!("pages without a text layer (image-only?) were skipped: {}", list(&without)));
    }
    let pages = doc.pages.into_iter().filter(|p| p.status == seqgpt_pdf::PageStatus::Text).collect();
    Ok(ExtractedPages { page_count: doc.page_count, pages, warnings, title: doc.title })
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
    fn size_cap_before_parsing() {
        let limits = Limits { max_file_bytes: 10, ..Limits::default() };
        let e = extract_pages(b"%PDF-1.4 0123456789", &SummaryOptions::default(), &limits, &Cancel::new()).unwrap_err();
        assert!(matches!(e, SummaryError::TooLarge(_)), "{e:?}");
    }
}
