//! Reading pages into a [`Document`]: their lines cleaned ([`super::clean`]), then the blocks
//! and sections read from them ([`super::structure`]).

use super::document::Document;
use seqgpt_pdf::PageText;
use super::{clean, structure, Cancel, SummaryError};

impl Document {
    /// Reads `pages`: lines, running headers and footers removed, blocks classified and
    /// grouped into sections. `title` is the document's title when the caller knows it.
    pub fn read(pages: Vec<PageText>, title: &str, cancel: &Cancel) -> Result<Document, SummaryError> {
        let (lines, running, clean) = clean::lines_of(&pages, cancel)?;
        cancel.check()?;
        let mut doc = Document { pages, lines, blocks: Vec::new(), sections: Vec::new(), title: title.trim().to_string(), clean };
        if doc.title.is_empty() {
            doc.title = running.into_iter().max_by_key(|r| r.split_whitespace().count().min(12)).unwrap_or_default();
        }
        structure::build(&mut doc, cancel)?;
        Ok(doc)
    }
}
