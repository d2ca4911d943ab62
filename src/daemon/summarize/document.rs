//! The document as the summarizer reads it: its pages, their lines (normalized, with running
//! headers and footers removed, each knowing where it stands in its page's text), the blocks
//! those lines form (each with a [`BlockKind`] and a section), and the way back from a piece
//! of a block's text to its page: the character range in the page text and its boxes on the
//! page ([`super::Anchor`]).
//!
//! A PDF's pages come with the extractor's layout lines (font sizes, faces, boxes); plain text
//! is split into lines, and its structure is read from the text alone ([`super::structure`]).

use super::chunk::Paragraph;
use super::Anchor;
use super::text::{join_pieces, joins_hyphenated};
use serde::{Deserialize, Serialize};
use seqgpt_pdf::PageText;
use std::ops::Range;

/// What a block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    Prose,
    /// A heading: its level (1 = section, 2 = subsection, ...).
    Heading(u8),
    ListItem,
    /// Program code or console output.
    Code,
    /// Display mathematics.
    Math,
    /// A table or a grid of numbers.
    Table,
    /// A figure's or table's caption.
    Caption,
    Footnote,
    /// An entry of a reference list or bibliography.
    Reference,
    /// A table of contents entry.
    Contents,
    /// Anything else (a lone label, a page decoration).
    Other,
}

impl BlockKind {
    /// Whether its sentences may be quoted in a summary.
    pub fn is_prose(self) -> bool {
        matches!(self, BlockKind::Prose | BlockKind::ListItem)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BlockKind::Prose => "prose",
            BlockKind::Heading(_) => "heading",
            BlockKind::ListItem => "list_item",
            BlockKind::Code => "code",
            BlockKind::Math => "math",
            BlockKind::Table => "table",
            BlockKind::Caption => "caption",
            BlockKind::Footnote => "footnote",
            BlockKind::Reference => "reference",
            BlockKind::Contents => "contents",
            BlockKind::Other => "other",
        }
    }
}

/// What a section is, from its heading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SectionKind {
    /// Before the first heading.
    Front,
    Abstract,
    Introduction,
    Background,
    Body,
    /// Conclusions, summary, discussion, outlook.
    Conclusion,
    Acknowledgements,
    References,
    Appendix,
    Contents,
}

/// A section: its heading and kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    pub title: String,
    /// 0 for the front matter, 1 for a section, 2 for a subsection ...
    pub level: u8,
    /// The kind of this section, or of the top-level section it is part of.
    pub kind: SectionKind,
    /// Index of its heading block (none for the front matter).
    pub heading: Option<usize>,
}

/// What cleaning removed, for the job's stats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanStats {
    /// Running header and footer lines and page numbers removed.
    pub edge_lines_removed: usize,
    /// Words rejoined across a hyphenated line break.
    pub dehyphenated: usize,
}

/// A line as the summarizer reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Index of its page in [`Document::pages`].
    pub page: usize,
    /// Normalized text: ligatures spelled out, exotic spaces plain, footnote marks and soft
    /// hyphens dropped, trimmed.
    pub text: String,
    /// Where `text` comes from: pairs (offset in `text`, byte offset in the page text) from
    /// which on the two advance together; the first pair is (0, the line's start).
    pub map: Vec<(u32, u32)>,
    /// Spaces before the text in the source line (plain text: indentation).
    pub indent: u32,
    /// Runs of two or more spaces inside the source line (plain text: table cells).
    pub wide_gaps: u16,
    /// The first line of a block in the source (after a blank line).
    pub block_start: bool,
    /// The next line continues this one's last word (the layout rejoined a word hyphenated
    /// across lines): they join without a space.
    pub glued: bool,
    /// Index of the extractor's line in its page (PDF).
    pub layout: Option<usize>,
}

impl Line {
    /// The page-text byte offset of byte `at` of `text`.
    pub fn page_offset(&self, at: usize) -> usize {
        let at = at as u32;
        let i = self.map.partition_point(|&(t, _)| t <= at).saturating_sub(1);
        let (t, p) = self.map.get(i).copied().unwrap_or((0, 0));
        (p + (at - t.min(at))) as usize
    }
}

/// A block of the document: a paragraph, a heading, a piece of code, a list item ...
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub kind: BlockKind,
    /// Its lines joined (hyphenation undone, a space or nothing between lines by script).
    pub text: String,
    /// The lines it was made of, in [`Document::lines`] (in order; a paragraph continued
    /// after a page break skips the footnotes between).
    pub lines: Vec<usize>,
    /// Where each line's text starts in `text`, and how many of the line's bytes follow
    /// (a hyphen removed at a join makes it shorter than the line).
    pub joins: Vec<(u32, u32)>,
    /// Index of its section in [`Document::sections`].
    pub section: usize,
}

impl Block {
    /// The page number its text starts on.
    pub fn page(&self, doc: &Document) -> u32 {
        self.lines.first().and_then(|&i| doc.lines.get(i)).map_or(1, |l| doc.pages[l.page].number)
    }
}

/// A cleaned, structured document.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Pages in the file (not only the selected ones).
    pub page_count: u32,
    /// The selected pages that have text.
    pub pages: Vec<PageText>,
    /// Repairs the extractor made to a damaged file, and the pages it skipped, one line each.
    pub warnings: Vec<String>,
    pub lines: Vec<Line>,
    pub blocks: Vec<Block>,
    pub sections: Vec<Section>,
    /// The title, when known (the PDF's metadata, or a running header that repeats it).
    pub title: String,
    pub clean: CleanStats,
}

impl Document {
    /// Joins lines `which` into one text, undoing hyphenation across line ends; returns the
    /// text and the joins of [`Block::joins`].
    pub fn join_lines(&self, which: &[usize]) -> (String, Vec<(u32, u32)>) {
        let mut text = String::new();
        let mut joins = Vec::with_capacity(which.len());
        let mut glued = false;
        for l in which.iter().map(|&i| &self.lines[i]) {
            let line = l.text.as_str();
            if text.is_empty() || std::mem::replace(&mut glued, l.glued) {
                glued = l.glued;
                joins.push((text.len() as u32, line.len() as u32));
                text.push_str(line);
                continue;
            }
            if joins_hyphenated(&text, line) {
                text.pop();
                // The previous line lost its hyphen.
                if let Some(last) = joins.last_mut() {
                    last.1 = last.1.saturating_sub(1);
                }
                joins.push((text.len() as u32, line.len() as u32));
                text.push_str(line);
            } else {
                let before = text.len();
                join_pieces(&mut text, line);
                let start = before + (text.len() - before - line.len());
                joins.push((start as u32, line.len() as u32));
            }
        }
        (text, joins)
    }

    /// The anchor of bytes `range` of block `b`'s text, shown as `shown`.
    pub fn anchor(&self, b: usize, range: Range<usize>, shown: &str) -> Anchor {
        let block = &self.blocks[b];
        // (line index, byte within the line's text) of a byte of the block's text.
        // (position in the block's lines, byte within that line's text) of a byte of the text.
        let locate = |at: usize| -> (usize, usize) {
            let i = block.joins.partition_point(|&(s, _)| s as usize <= at).saturating_sub(1);
            let (s, len) = block.joins[i];
            (i, (at.saturating_sub(s as usize)).min(len as usize))
        };
        let (first, first_at) = locate(range.start);
        let (mut last, mut last_at) = locate(range.end.saturating_sub(1).max(range.start));
        last_at += 1;
        let page = self.lines[block.lines[first]].page;
        // A sentence that runs on to the next page is anchored on the page where it starts.
        while last > first && self.lines[block.lines[last]].page != page {
            last -= 1;
            last_at = self.lines[block.lines[last]].text.len();
        }
        let (first_line, last_line) = (block.lines[first], block.lines[last]);
        let page_text = &self.pages[page].text;
        let start_byte = self.lines[first_line].page_offset(first_at).min(page_text.len());
        let end_byte = self.lines[last_line].page_offset(last_at.min(self.lines[last_line].text.len())).clamp(start_byte, page_text.len());
        let start_byte = floor_boundary(page_text, start_byte);
        let end_byte = ceil_boundary(page_text, end_byte);
        let start = page_text[..start_byte].chars().count() as u32;
        let end = start + page_text[start_byte..end_byte].chars().count() as u32;
        let mut boxes = Vec::new();
        for (k, &li) in block.lines[first..=last].iter().enumerate() {
            let l = &self.lines[li];
            if l.page != page {
                continue;
            }
            let Some(tl) = l.layout.and_then(|i| self.pages[page].lines.get(i)) else { continue };
            let (from, to) = (
                if k == 0 { start_byte } else { tl.start as usize },
                if first + k == last { end_byte } else { tl.end as usize },
            );
            let mut bx: Option<[f32; 4]> = None;
            for g in tl.glyphs.iter().filter(|g| (from..to).contains(&(g.start as usize))) {
                bx = Some(match bx {
                    None => g.bbox,
                    Some(b) => [b[0].min(g.bbox[0]), b[1].min(g.bbox[1]), b[2].max(g.bbox[2]), b[3].max(g.bbox[3])],
                });
            }
            boxes.extend(bx);
        }
        Anchor { text: shown.to_string(), page: self.pages[page].number, start, end, boxes }
    }

    /// The blocks a summary may quote, and whose text goes to the model: prose and list items.
    pub fn prose(&self) -> impl Iterator<Item = (usize, &Block)> {
        self.blocks.iter().enumerate().filter(|(_, b)| b.kind.is_prose())
    }

    /// Prose paragraphs as (text, page) for the chunker.
    pub fn prose_paragraphs(&self) -> Vec<Paragraph> {
        self.prose().map(|(_, b)| Paragraph { text: b.text.clone(), page: b.page(self) }).collect()
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use seqgpt_pdf::{extract_text, ExtractOptions};

    fn sample(name: &str) -> Vec<PageText> {
        let bytes = std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pdf-samples").join(name)).unwrap();
        extract_text(&bytes, &ExtractOptions::default()).unwrap().pages
    }

    #[test]
    fn layout_lines_are_the_page_text_lines() {
        for name in ["report-3pages.pdf", "one-page.pdf", "chinese.pdf"] {
            for page in sample(name) {
                let from_text: Vec<&str> = page.text.lines().filter(|l| !l.trim().is_empty()).collect();
                // Lines the layout rejoined (a hyphenated word) have no break between them.
                let mut from_layout: Vec<String> = Vec::new();
                let mut glued = false;
                for l in &page.lines {
                    let t = &page.text[l.start as usize..l.end as usize];
                    match from_layout.last_mut() {
                        Some(last) if glued => last.push_str(t),
                        _ => from_layout.push(t.to_string()),
                    }
                    glued = page.text.as_bytes().get(l.end as usize) != Some(&b'\n');
                }
                assert_eq!(from_layout, from_text, "{name} page {}", page.number);
            }
        }
    }
}
