//! PDF text extraction on lopdf's parser.
//!
//! [`extract_text`] opens a PDF (decrypting it with the empty or the given password, repairing
//! broken cross-reference tables as far as lopdf can), runs each selected page's content
//! streams and Form XObjects, maps the shown bytes to Unicode through the fonts, and lays the
//! glyphs out into text in reading order. Every resource it spends is capped by [`Limits`].
//!
//! Modules, one concept each:
//! - `extract`: [`extract_text`], a document's pages through the steps below;
//! - `document`: opening, encryption, damaged files, the page tree;
//! - `limits`: the caps and the per-document decoding budget;
//! - `lexer`: content-stream / CMap tokenizer;
//! - `interp`: the content-stream interpreter (graphics and text state, XObjects);
//! - `font`, `encoding`, `fontfile`: code -> width and code -> Unicode;
//! - `cmap`, `cjk`: ToUnicode and encoding CMaps, the predefined CJK CMaps and CID tables;
//! - `layout`: glyphs -> lines, blocks, reading order, text;
//! - `annotate`: an annotated copy (highlights and a note appended as an incremental update).
//!
//! See docs/PDF.md for the design, the corpus scores and the data licences.

mod annotate;
mod cjk;
mod cmap;
mod document;
mod encoding;
mod error;
mod extract;
mod font;
mod fontfile;
mod interp;
mod layout;
mod lexer;
mod limits;
mod objects;

pub use annotate::{annotate, page_geometry, AnnotateError, Annotations, Highlight, PageGeometry};
pub use error::PdfError;
pub use extract::extract_text;
pub use limits::Limits;

use std::ops::RangeInclusive;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// What to extract.
#[derive(Debug, Clone, Default)]
pub struct ExtractOptions {
    /// 1-based, inclusive page range; `None` for all pages. The end is clamped to the page
    /// count; a range that selects no page is [`PdfError::InvalidPageRange`].
    pub pages: Option<RangeInclusive<u32>>,
    /// Password for encrypted files (user or owner password). The empty user password is
    /// always tried first.
    pub password: Option<String>,
    pub limits: Limits,
    /// Checked before each page: once set, extraction ends with [`PdfError::Cancelled`].
    pub cancel: Option<Arc<AtomicBool>>,
}

/// How a page's text came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageStatus {
    /// The page has a text layer; `text` holds it.
    Text,
    /// The page shows no extractable text (an image-only or blank page); `text` is empty.
    NoTextLayer,
    /// The page's content is missing from the file (truncated or damaged); `text` is empty.
    Unreadable,
}

/// The text of one page.
#[derive(Debug, Clone, PartialEq)]
pub struct PageText {
    /// 1-based page number.
    pub number: u32,
    /// UTF-8 text in reading order: lines end with '\n', blocks (paragraphs) are separated by
    /// an empty line.
    pub text: String,
    pub status: PageStatus,
    /// Each line of `text` as laid out on the page, in order.
    pub lines: Vec<TextLine>,
    /// The page's visible area in user space (x0, y0, x1, y1): its CropBox within its MediaBox
    /// (every line and glyph box lies inside it); `None` when the page gives none.
    pub area: Option<[f32; 4]>,
}

/// One line of a page's text, as it stands on the page. Readers of the layout (the
/// summarizer's block classes and sentence anchors) use these; the text itself is the page's.
#[derive(Debug, Clone, PartialEq)]
pub struct TextLine {
    /// Byte range of the line in the page text (without its line break).
    pub start: u32,
    pub end: u32,
    /// The first line of a block (paragraph): the page text has a blank line before it.
    pub block_start: bool,
    /// The line's box in user space: x0, y0, x1, y1 (y up), within the page's area.
    pub bbox: [f32; 4],
    /// The size of the line's largest glyphs, in user-space units.
    pub size: f32,
    /// The size of its text: the median size of its glyphs, so that a line of running text
    /// with one word set larger (a package's name in its logo face) keeps the text's size; or
    /// the size of its first glyph where that is larger (a heading run into the line).
    pub text_size: f32,
    /// Shares of the line's glyphs set in a monospace, math, bold and italic face.
    pub mono: f32,
    pub math: f32,
    pub bold: f32,
    pub italic: f32,
    /// Byte ranges (in the page text) of runs clearly smaller than the line and raised above
    /// its baseline: superscripts, such as footnote marks.
    pub superscripts: Vec<(u32, u32)>,
    /// Each glyph of the line: the byte offset of its text in the page text, and its box.
    pub glyphs: Vec<GlyphBox>,
}

/// A glyph's place: where its text starts in the page text, and its box in user space.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GlyphBox {
    pub start: u32,
    pub bbox: [f32; 4],
}

/// The extracted text of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractedDocument {
    /// Pages in the document (not only the selected ones).
    pub page_count: u32,
    /// The selected pages, in order.
    pub pages: Vec<PageText>,
    /// Repairs made to a damaged file, one line each (empty for a sound file).
    pub warnings: Vec<String>,
    /// The document's title: `extract_text` reads the information dictionary's, when it has
    /// a readable one (a caller may set one it found on the pages).
    pub title: Option<String>,
}

impl ExtractedDocument {
    /// Numbers of the selected pages without a text layer (image-only or blank).
    pub fn pages_without_text(&self) -> Vec<u32> {
        self.pages.iter().filter(|p| p.status == PageStatus::NoTextLayer).map(|p| p.number).collect()
    }

    /// Numbers of the selected pages whose content is missing from the file.
    pub fn unreadable_pages(&self) -> Vec<u32> {
        self.pages.iter().filter(|p| p.status == PageStatus::Unreadable).map(|p| p.number).collect()
    }
}
