//! Cleaning the lines of a document before its structure is read: running headers and
//! footers, page numbers, separator lines, footnote marks, labels set in the margin, and
//! typographic debris (ligatures, soft hyphens, non-breaking spaces, control characters). Every kept line remembers where
//! its text stands in its page's text, so that a summary's sentences can point back to it.
//!
//! The input is what the PDF extractor produces (one text per page, with its layout lines),
//! or plain text split into pages at form feeds (lines are its own lines).

use super::document::{CleanStats, Line};
use seqgpt_pdf::PageText;
use super::text::{is_cjk_letter, joins_hyphenated, unified_ideograph};
use super::{Cancel, SummaryError};
use std::collections::{BTreeMap, BTreeSet};

/// Lines at the top and at the bottom of a page that may be running headers or footers.
const EDGE_LINES: usize = 3;
/// Running headers are short: a longer line is text, however often it repeats.
const MAX_HEADER_CHARS: usize = 120;

/// A line of a page before cleaning: its byte range in the page text.
struct Raw {
    start: usize,
    end: usize,
    block_start: bool,
    layout: Option<usize>,
}

fn raw_lines(page: &PageText) -> Vec<Raw> {
    if !page.lines.is_empty() {
        return page
            .lines
            .iter()
            .enumerate()
            .map(|(i, l)| Raw { start: l.start as usize, end: (l.end as usize).min(page.text.len()), block_start: l.block_start, layout: Some(i) })
            .filter(|r| r.start <= r.end && page.text.is_char_boundary(r.start) && page.text.is_char_boundary(r.end))
            .collect();
    }
    let mut out = Vec::new();
    let mut offset = 0;
    let mut after_blank = true;
    for line in page.text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        if body.trim().is_empty() {
            after_blank = true;
        } else {
            out.push(Raw { start: offset, end: offset + body.len(), block_start: after_blank, layout: None });
            after_blank = false;
        }
        offset += line.len();
    }
    out
}

/// The lines of `pages`, cleaned; the text of the running headers and footers removed (the
/// title is often among them); and what was removed.
pub fn lines_of(pages: &[PageText], cancel: &Cancel) -> Result<(Vec<Line>, Vec<String>, CleanStats), SummaryError> {
    let mut stats = CleanStats::default();
    let raws: Vec<Vec<Raw>> = pages.iter().map(raw_lines).collect();
    let texts: Vec<Vec<&str>> = pages.iter().zip(&raws).map(|(p, rs)| rs.iter().map(|r| &p.text[r.start..r.end]).collect()).collect();
    let running = running_lines(&texts);
    let multi_page = pages.len() > 1;
    let mut running_text: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    for (pi, page) in pages.iter().enumerate() {
        cancel.check()?;
        let edges = edge_indices(&texts[pi]);
        let text_starts = margin_label_ends(page);
        let mut next_starts_block = true;
        for (li, r) in raws[pi].iter().enumerate() {
            let source = texts[pi][li];
            if edges.contains(&li) {
                let key = line_key(source);
                if running.contains(&key) || is_page_number(source, multi_page) {
                    stats.edge_lines_removed += 1;
                    if running.contains(&key) && !is_page_number(source, multi_page) {
                        running_text.entry(key).or_insert_with(|| collapse_spaces(source));
                    }
                    continue;
                }
            }
            if is_rule(source) {
                next_starts_block = true;
                continue;
            }
            let marks = r.layout.map_or(&[][..], |i| page.lines[i].superscripts.as_slice());
            let start = r.layout.and_then(|i| text_starts[i]).filter(|&s| s > r.start && s < r.end && page.text.is_char_boundary(s)).unwrap_or(r.start);
            let Some(mut line) = normalize_line(&page.text, start, r.end, marks) else { continue };
            line.page = pi;
            line.block_start = r.block_start || next_starts_block;
            line.layout = r.layout;
            line.glued = r.layout.is_some() && page.text.as_bytes().get(r.end).is_some_and(|&b| b != b'\n');
            next_starts_block = false;
            out.push(line);
        }
    }
    stats.dehyphenated = out.windows(2).filter(|w| !w[1].block_start && joins_hyphenated(&w[0].text, &w[1].text)).count();
    Ok((out, running_text.into_values().collect(), stats))
}

/// For each layout line of `page`, where its text starts when a label set in the margin
/// comes before it (a documented macro's or option's name beside its description, as a
/// package's documentation sets them): the label's glyphs are smaller than the text's and end
/// left of the text column's left edge, a gap before the line's first glyph at that edge.
/// pdftotext reads such a label as a block of its own; here it is left out of the line. The
/// edge is the leftmost left end (within a point) that at least a tenth of the page's lines,
/// and three, share: a list's or a caption's label that hangs left of its own text within the
/// column stays, and so do list markers and numbers in the margin (a label has at least two
/// letters).
fn margin_label_ends(page: &PageText) -> Vec<Option<usize>> {
    let lines = &page.lines;
    let mut out = vec![None; lines.len()];
    let mut lefts: Vec<f32> = lines.iter().map(|l| l.bbox[0]).collect();
    lefts.sort_by(f32::total_cmp);
    let shared = (lines.len() / 10).max(3);
    let Some(edge) = (0..lefts.len()).find(|&i| lefts[i..].iter().take_while(|&&x| x - lefts[i] <= 1.0).count() >= shared).map(|i| lefts[i]) else {
        return out;
    };
    let height = |g: &seqgpt_pdf::GlyphBox| g.bbox[3] - g.bbox[1];
    for (l, start) in lines.iter().zip(out.iter_mut()) {
        let (em, horizontal) = (l.size.max(1.0), l.bbox[2] - l.bbox[0] > l.bbox[3] - l.bbox[1]);
        if !horizontal || l.bbox[0] > edge - em {
            continue;
        }
        let Some(k) = l.glyphs.iter().position(|g| g.bbox[0] >= edge - 0.3 * em) else { continue };
        let (label, text) = l.glyphs.split_at(k);
        if label.is_empty() || text[0].bbox[0] > edge + 1.0 || label.iter().any(|g| g.bbox[2] > edge - 0.25 * em) {
            continue;
        }
        let text_height = text.iter().take(8).map(height).fold(0.0, f32::max);
        let at = text[0].start as usize;
        let letters = page.text.get(l.start as usize..at).unwrap_or("").chars().filter(|c| c.is_alphabetic()).count();
        if letters >= 2 && label.iter().all(|g| height(g) < 0.92 * text_height) {
            *start = Some(at);
        }
    }
    out
}

/// The normalized text of page bytes `start..end`, with its map back to the page
/// ([`Line::map`]), or `None` when nothing is left. `marks` are the page's superscript runs:
/// those that are footnote marks are dropped.
fn normalize_line(page_text: &str, start: usize, end: usize, marks: &[(u32, u32)]) -> Option<Line> {
    let src = &page_text[start..end];
    let mut text = String::with_capacity(src.len());
    let mut map: Vec<(u32, u32)> = Vec::new();
    // Appends `s`, which stands for the page's bytes from `at` on.
    let emit = |text: &mut String, map: &mut Vec<(u32, u32)>, s: &str, at: usize| {
        let t = text.len();
        let continues = map.last().is_some_and(|&(mt, mp)| mp as usize + (t - mt as usize) == at);
        if !continues {
            map.push((t as u32, at as u32));
        }
        text.push_str(s);
    };
    let indent = src.chars().take_while(|c| *c == ' ' || *c == '\t').map(|c| if c == '\t' { 4 } else { 1 }).sum();
    let mut wide_gaps = 0u32;
    let mut space_at: Option<usize> = None;
    let mut run = 0usize;
    let mut iter = src.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let at = start + i;
        if let Some(&(_, to)) = marks.iter().find(|&&(from, _)| from as usize == at) {
            let to = (to as usize).min(end);
            if is_footnote_mark(page_text, at, to) {
                while iter.peek().is_some_and(|&(j, _)| start + j < to) {
                    iter.next();
                }
                continue;
            }
        }
        if c.is_whitespace() {
            run += 1;
            if run == 2 {
                wide_gaps += 1;
            }
            if !text.is_empty() && space_at.is_none() {
                space_at = Some(at);
            }
            continue;
        }
        run = 0;
        let replacement: Option<&str> = match c {
            '\u{00AD}' | '\u{200B}' | '\u{FEFF}' | '\u{200C}' | '\u{200D}' => Some(""),
            '\u{FB00}' => Some("ff"),
            '\u{FB01}' => Some("fi"),
            '\u{FB02}' => Some("fl"),
            '\u{FB03}' => Some("ffi"),
            '\u{FB04}' => Some("ffl"),
            '\u{FB05}' | '\u{FB06}' => Some("st"),
            c if c.is_control() => Some(""),
            _ => None,
        };
        let mut unified = [0u8; 4];
        let replacement = replacement.or_else(|| unified_ideograph(c).map(|u| &*u.encode_utf8(&mut unified)));
        if replacement == Some("") {
            continue;
        }
        if let Some(sp) = space_at.take() {
            // A placeholder's closing bracket set apart from its word ("⟨key ⟩", an italic
            // font's spacing) closes up: "⟨key⟩" reads as the one word it stands for.
            let in_placeholder = c == '⟩' && text.rfind('⟨').is_some_and(|k| !text[k..].contains(' '));
            if !in_placeholder {
                emit(&mut text, &mut map, " ", sp);
            }
        }
        let mut buf = [0u8; 4];
        emit(&mut text, &mut map, replacement.unwrap_or_else(|| c.encode_utf8(&mut buf)), at);
    }
    if text.is_empty() {
        return None;
    }
    Some(Line {
        page: 0,
        text,
        map,
        indent,
        block_start: false,
        glued: false,
        layout: None,
        wide_gaps: wide_gaps.min(u32::from(u16::MAX)) as u16,
    })
}

/// Whether the superscript run `at..to` of the page text is a footnote mark: one to three
/// digits or mark symbols, right after a word or punctuation (not after a digit: "10⁶"),
/// and followed by a space, punctuation or the line's end.
fn is_footnote_mark(text: &str, at: usize, to: usize) -> bool {
    let Some(mark) = text.get(at..to) else { return false };
    let n = mark.chars().count();
    if n == 0 || n > 3 || !mark.chars().all(|c| c.is_ascii_digit() || "*†‡§¶".contains(c)) {
        return false;
    }
    let before = text[..at].chars().next_back();
    let after = text[to..].chars().next();
    let before_ok = before.is_some_and(|b| (b.is_alphabetic() || ".,;:)\"”’'".contains(b)) && !b.is_ascii_digit());
    let after_ok = after.is_none_or(|a| a.is_whitespace() || ".,;:)".contains(a));
    before_ok && after_ok
}

/// A separator line ("~~~~~", "=====", "* * *", "_____"): no letters or digits, at least
/// three symbols. It ends a paragraph like a blank line.
fn is_rule(line: &str) -> bool {
    let t = line.trim();
    t.chars().filter(|c| !c.is_whitespace()).count() >= 3 && !t.chars().any(char::is_alphanumeric)
}

/// Whether paragraph `next` (first on its page) continues `prev` (last on the previous page):
/// `prev` does not end a sentence and `next` starts with a lowercase letter, or both are CJK
/// and `prev` stops mid-sentence.
pub(crate) fn continues_across_page(prev: &str, next: &str) -> bool {
    let Some(end) = prev.trim_end().chars().last() else { return false };
    let Some(start) = next.chars().next() else { return false };
    let ends_sentence = matches!(end, '.' | '!' | '?' | ':' | '。' | '！' | '？' | '：' | '"' | '”' | '」' | '』' | ')' | '）');
    if ends_sentence {
        return false;
    }
    start.is_lowercase() || end == '-' || (is_cjk_letter(end) && is_cjk_letter(start)) || matches!(end, ',' | '，' | '、' | ';' | '；')
}

pub(crate) fn collapse_spaces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.trim().chars() {
        if c.is_whitespace() {
            space = true;
        } else {
            if space {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
    }
    out
}

/// Indices of the first and last few non-blank lines of a page.
fn edge_indices(lines: &[&str]) -> BTreeSet<usize> {
    let nonblank: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(i, _)| i).collect();
    let mut out = BTreeSet::new();
    out.extend(nonblank.iter().take(EDGE_LINES));
    out.extend(nonblank.iter().rev().take(EDGE_LINES));
    out
}

/// A line as a running header compares: lowercase, digit runs as `#` ("Page 3" = "Page 4"),
/// spaces collapsed.
fn line_key(line: &str) -> String {
    let mut out = String::new();
    let mut in_digits = false;
    for c in collapse_spaces(line).chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// Keys of edge lines that repeat on at least half of the pages that hold text (and on two or
/// more), or on at least half of the odd or of the even pages (and on three or more of them):
/// books and journals set the title over one side and the authors over the other, and a
/// figure at a page's top can push the header out of the edge lines now and then. A book's
/// header that names its chapter ("Chapter 1: Introduction") repeats over the chapter only:
/// an edge line on three or more pages, and on at least half of those from its first to its
/// last, is one too.
fn running_lines(pages: &[Vec<&str>]) -> BTreeSet<String> {
    if pages.len() < 2 {
        return BTreeSet::new();
    }
    // Per key: the odd and the even pages (by their place in the input) that hold it.
    let mut counts: BTreeMap<String, [usize; 2]> = BTreeMap::new();
    // Per key of a chapter's header (a line of words at a page's top): the pages with text
    // that hold it there, the first and the last by their place among them.
    let mut chapter: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut with_text = [0usize; 2];
    for (i, lines) in pages.iter().enumerate() {
        if lines.iter().all(|l| l.trim().is_empty()) {
            continue;
        }
        let place = with_text[0] + with_text[1];
        with_text[i % 2] += 1;
        let keys: BTreeSet<String> = edge_indices(lines)
            .into_iter()
            .map(|i| line_key(&lines[i]))
            .filter(|k| !k.is_empty() && k.chars().count() <= MAX_HEADER_CHARS)
            .collect();
        for k in keys {
            counts.entry(k).or_default()[i % 2] += 1;
        }
        let tops: BTreeSet<String> = lines
            .iter()
            .filter(|l| !l.trim().is_empty())
            .take(EDGE_LINES)
            .filter(|l| words_only(l))
            .map(|l| line_key(l))
            .filter(|k| k.chars().count() <= MAX_HEADER_CHARS)
            .collect();
        for k in tops {
            let e = chapter.entry(k).or_insert((0, place, place));
            e.0 += 1;
            e.2 = place;
        }
    }
    let n = with_text[0] + with_text[1];
    counts
        .into_iter()
        .filter(|(k, c)| {
            let all = c[0] + c[1];
            let in_chapter = chapter.get(k).is_some_and(|&(m, first, last)| m >= 3 && m * 2 >= last - first + 1);
            (all >= 2 && all * 2 >= n) || (0..2).any(|side| c[side] >= 3 && c[side] * 2 >= with_text[side]) || in_chapter
        })
        .map(|(k, _)| k)
        .collect()
}

/// A line of words (a page number aside), as a header names a chapter: no code, no formula,
/// no mere number.
fn words_only(line: &str) -> bool {
    let tokens: Vec<&str> = line.split_whitespace().filter(|t| !t.chars().all(|c| c.is_ascii_digit() || c == '.')).collect();
    let words = tokens.iter().filter(|t| super::text::is_plain_word(t)).count();
    !tokens.is_empty() && words * 4 >= tokens.len() * 3
}

/// Page-number lines: "7", "- 7 -", "Page 7", "page 7 of 12", "7 / 12", "第7页", "vii".
/// A lone Roman numeral counts only in a multi-page document.
fn is_page_number(line: &str, multi_page: bool) -> bool {
    let s = collapse_spaces(line).to_lowercase();
    let s = s.trim_matches(|c: char| matches!(c, '-' | '–' | '—' | ' ' | '|' | '[' | ']' | '(' | ')'));
    if s.is_empty() {
        return false;
    }
    let digits = |t: &str| !t.is_empty() && t.len() <= 5 && t.chars().all(|c| c.is_ascii_digit());
    if digits(s) {
        return true;
    }
    let rest = s.strip_prefix("page").or_else(|| s.strip_prefix("p.")).or_else(|| s.strip_prefix("seite")).unwrap_or(s).trim();
    let parts: Vec<&str> = rest.split(|c: char| c == '/' || c.is_whitespace()).filter(|p| !p.is_empty() && *p != "of" && *p != "von").collect();
    if !parts.is_empty() && parts.len() <= 2 && parts.iter().all(|p| digits(p)) && rest != s {
        return true;
    }
    if parts.len() == 2 && parts.iter().all(|p| digits(p)) && (s.contains('/') || s.contains(" of ")) {
        return true;
    }
    if let Some(inner) = s.strip_prefix('第').and_then(|t| t.strip_suffix('页').or_else(|| t.strip_suffix('頁'))) {
        let inner = inner.trim();
        if digits(inner) || inner.chars().all(|c| "一二三四五六七八九十百零〇".contains(c)) {
            return true;
        }
    }
    if let Some(inner) = s.strip_suffix('页').or_else(|| s.strip_suffix('頁')) {
        if digits(inner.trim()) {
            return true;
        }
    }
    multi_page && roman_value(s).is_some_and(|v| v <= 200)
}

/// Whether `s` is a page number in Roman numerals ("xii", "IV").
pub(crate) fn roman_page(s: &str) -> bool {
    roman_value(&s.to_lowercase()).is_some()
}

/// The value of a canonical lowercase Roman numeral ("xiv" -> 14); `None` for anything else
/// ("civil", "iiii").
fn roman_value(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 9 {
        return None;
    }
    let digit = |c: char| match c {
        'i' => Some(1u32),
        'v' => Some(5),
        'x' => Some(10),
        'l' => Some(50),
        'c' => Some(100),
        _ => None,
    };
    let vals: Vec<u32> = s.chars().map(digit).collect::<Option<_>>()?;
    // Subtractive notation: a digit before a larger one counts negative.
    let mut total: i64 = 0;
    for (i, &v) in vals.iter().enumerate() {
        if vals.get(i + 1).is_some_and(|&next| next > v) {
            total -= i64::from(v);
        } else {
            total += i64::from(v);
        }
    }
    let total = u32::try_from(total).ok().filter(|&t| t > 0)?;
    (to_roman(total) == s).then_some(total)
}

/// The canonical lowercase Roman numeral of `n` (1..=399).
fn to_roman(mut n: u32) -> String {
    const TABLE: &[(u32, &str)] =
        &[(100, "c"), (90, "xc"), (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")];
    let mut out = String::new();
    for &(v, s) in TABLE {
        while n >= v {
            out.push_str(s);
            n -= v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::document::Document;
    use super::super::pages::{split, whole};
    use super::super::structure;
    use super::*;

    fn read(pages: &[&str]) -> Document {
        structure::read(whole(split(&pages.join("\u{000C}"))), &Cancel::new()).unwrap()
    }

    fn texts(doc: &Document) -> Vec<&str> {
        doc.blocks.iter().map(|b| b.text.as_str()).collect()
    }

    #[test]
    fn running_headers_footers_and_page_numbers_go() {
        let doc = read(&[
            "Annual Report 2024\n\nThe harvest was good this year.\nPrices rose.\n\nPage 1 of 3\n",
            "Annual Report 2024\n\nRain came late in the season.\n\nPage 2 of 3\n",
            "Annual Report 2024\n\nThe cooperative grew to forty members.\n\nPage 3 of 3\n",
        ]);
        assert_eq!(
            texts(&doc),
            vec!["The harvest was good this year. Prices rose.", "Rain came late in the season.", "The cooperative grew to forty members."]
        );
        assert_eq!(doc.clean.edge_lines_removed, 6);
        assert_eq!(doc.blocks[2].page(&doc), 3);
        // The running header is kept as a title candidate.
        assert_eq!(doc.title, "Annual Report 2024");
    }

    #[test]
    fn headers_that_alternate_between_odd_and_even_pages_go() {
        // The title over the even pages, the authors over the odd ones; one even page opens
        // with a figure's labels instead, and the last page is empty.
        let words = ["rivers", "forests", "deserts", "islands", "glaciers", "valleys", "harbours", "meadows"];
        let mut pages: Vec<String> = (1..=8)
            .map(|n| {
                let header = if n % 2 == 0 { "Density-based Clustering with R" } else { "Ann Smith, Bo Chen" };
                let top = if n == 6 { format!("(a)\n(b)\n(c)\n\n{header}") } else { header.to_string() };
                let w = words[n - 1];
                format!("{top}\n\nThis page is about {w},\nwhich the survey of {w}\ndescribes at length.\n\n{n}\n")
            })
            .collect();
        pages.push(String::new());
        let doc = read(&pages.iter().map(String::as_str).collect::<Vec<_>>());
        let all = texts(&doc).join(" | ");
        assert!(!all.contains("Ann Smith"), "{all}");
        assert_eq!(all.matches("Density-based Clustering").count(), 1, "only the header the figure pushed down stays: {all}");
        assert_eq!(doc.blocks.iter().filter(|b| b.text.starts_with("This page is about")).count(), 8, "{all}");
    }

    #[test]
    fn a_header_that_names_its_chapter_goes() {
        // A manual whose header names the chapter it is in, over each of its pages; a sentence
        // that a page break cuts goes on under it. The line of code that goes on at the top of
        // three pages of the first chapter is no header.
        let mut pages = Vec::new();
        for (chapter, title) in [(1, "Introduction and preliminaries"), (2, "Simple manipulations"), (3, "Objects and their modes")] {
            for k in 1..=4 {
                let page = 4 * (chapter - 1) + k;
                let code = if chapter == 1 && k > 1 { "x <- c(10.4, 5.6, 3.1)\n\n" } else { "" };
                pages.push(format!("Chapter {chapter}: {title} {page}\n\n{code}the language does, as page {k} of chapter {chapter} says in its\nown words, and it goes on\n"));
            }
        }
        let doc = read(&pages.iter().map(String::as_str).collect::<Vec<_>>());
        let all = texts(&doc).join(" | ");
        assert!(!all.contains("Chapter "), "{all}");
        assert_eq!(all.matches("x <- c(10.4, 5.6, 3.1)").count(), 3, "{all}");
    }

    #[test]
    fn a_header_on_one_page_only_stays() {
        let doc = read(&[
            "Introduction\n\nThe first page has its own text here.\n",
            "Methods\n\nThe second page has its own text too.\n",
            "Results\n\nThe third page ends the short report.\n",
        ]);
        assert_eq!(doc.blocks.len(), 6);
        assert_eq!(doc.clean.edge_lines_removed, 0);
    }

    #[test]
    fn hyphenation_and_hard_breaks_are_joined() {
        let doc = read(&["The sum-\nmary of the docu-\nment is short. A well-\nKnown case.\n"]);
        assert_eq!(texts(&doc), vec!["The summary of the document is short. A well- Known case."]);
        assert_eq!(doc.clean.dehyphenated, 2);
    }

    #[test]
    fn paragraph_split_by_a_page_break_is_merged() {
        let doc = read(&["First page text that goes on and\n", "continues on the next page.\n\nA new paragraph starts here.\n"]);
        assert_eq!(texts(&doc), vec!["First page text that goes on and continues on the next page.", "A new paragraph starts here."]);
    }

    #[test]
    fn cjk_lines_join_without_spaces() {
        let doc = read(&["第1页\n\n机器学习是人工智能的\n一个分支。\n\n第1页\n"]);
        assert_eq!(texts(&doc), vec!["机器学习是人工智能的一个分支。"]);
    }

    #[test]
    fn separator_lines_end_paragraphs() {
        let doc = read(&["Lesson 1\n~~~~~~~~~~\nMove the cursor with the keys.\n* * *\nThen quit the editor again.\n"]);
        assert_eq!(texts(&doc), vec!["Lesson 1", "Move the cursor with the keys.", "Then quit the editor again."]);
    }

    #[test]
    fn typographic_debris_is_normalized() {
        let doc = read(&["\u{FB01}nal\u{00A0}ef\u{FB02}uent co\u{00AD}operation\r\nnext\tline\u{0007} here\n"]);
        assert_eq!(texts(&doc), vec!["final effluent cooperation next line here"]);
        // Every line still knows where its text is on the page.
        let line = &doc.lines[0];
        let page = &doc.pages[0].text;
        assert_eq!(&page[line.page_offset(0)..line.page_offset(5)], "\u{FB01}nal");
        // A placeholder closes up; angle brackets around more than one word keep their spaces.
        let doc = read(&["the ⟨key ⟩=⟨value ⟩ pairs of ⟨key list ⟩\n"]);
        assert_eq!(texts(&doc), vec!["the ⟨key⟩=⟨value⟩ pairs of ⟨key list ⟩"]);
    }

    #[test]
    fn footnote_marks_are_dropped_math_superscripts_kept() {
        assert!(is_footnote_mark("matrices2 x", 8, 9));
        assert!(!is_footnote_mark("10 6 x", 2, 3), "after a digit");
        // A line whose layout marks two raised runs: the footnote mark after a word goes, the
        // exponent after a digit stays, and the text after the mark still maps to the page.
        let page = "matrices2 and 106 here";
        let line = normalize_line(page, 0, page.len(), &[(8, 9), (16, 17)]).unwrap();
        assert_eq!(line.text, "matrices and 106 here");
        assert_eq!(line.page_offset(line.text.find("and").unwrap()), page.find("and").unwrap());
    }

    #[test]
    fn page_number_shapes() {
        for s in ["7", "- 7 -", "Page 7", "page 7 of 12", "7 / 12", "第7页", "第十二页", "12页"] {
            assert!(is_page_number(s, true), "{s}");
        }
        assert!(is_page_number("xii", true));
        assert!(!is_page_number("xii", false));
        for s in ["7 apples", "Chapter 7", "2024 report", "civil"] {
            assert!(!is_page_number(s, true), "{s}");
        }
    }
}
