//! Cleaning extracted text before it is summarized: running headers and footers, page
//! numbers, hyphenation at line ends, hard line breaks, paragraphs split by a page break, and
//! typographic debris (ligatures, soft hyphens, non-breaking spaces, control characters).
//!
//! The input is what the PDF extractor produces (one string per page: lines end with `\n`,
//! blocks are separated by an empty line), or plain text split into pages at form feeds.

use super::text::{is_cjk_letter, join_pieces};
use std::collections::{BTreeMap, BTreeSet};

/// A paragraph of cleaned text and the page it starts on (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paragraph {
    pub text: String,
    pub page: u32,
}

/// What cleaning removed, for the job's stats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanStats {
    /// Running header and footer lines and page numbers removed.
    pub edge_lines_removed: usize,
    /// Words rejoined across a hyphenated line break.
    pub dehyphenated: usize,
}

/// Lines at the top and at the bottom of a page that may be running headers or footers.
const EDGE_LINES: usize = 3;
/// Running headers are short: a longer line is text, however often it repeats.
const MAX_HEADER_CHARS: usize = 120;

/// Splits plain text into pages at form feeds (the format of `seqgpt extract-text`).
pub fn pages_of_text(text: &str) -> Vec<(u32, String)> {
    text.split('\u{000C}').enumerate().map(|(i, p)| (i as u32 + 1, p.to_string())).collect()
}

/// Cleans `pages` (page number, text) into paragraphs.
pub fn clean_pages(pages: &[(u32, String)]) -> (Vec<Paragraph>, CleanStats) {
    let mut stats = CleanStats::default();
    let lines: Vec<(u32, Vec<String>)> =
        pages.iter().map(|(n, text)| (*n, normalize_chars(text).lines().map(|l| l.trim_end().to_string()).collect())).collect();
    let running = running_lines(&lines);

    // Per page: drop edge lines that are running headers/footers or page numbers, then cut
    // the rest into blocks at blank lines.
    let mut blocks: Vec<(u32, Vec<String>)> = Vec::new();
    let multi_page = lines.len() > 1;
    for (page, page_lines) in &lines {
        let edges = edge_indices(page_lines);
        let mut current: Vec<String> = Vec::new();
        let mut page_blocks: Vec<Vec<String>> = Vec::new();
        for (i, line) in page_lines.iter().enumerate() {
            if edges.contains(&i) {
                let key = line_key(line);
                if running.contains(&key) || is_page_number(line, multi_page) {
                    stats.edge_lines_removed += 1;
                    continue;
                }
            }
            if line.trim().is_empty() || is_rule(line) {
                if !current.is_empty() {
                    page_blocks.push(std::mem::take(&mut current));
                }
            } else {
                current.push(line.trim().to_string());
            }
        }
        if !current.is_empty() {
            page_blocks.push(current);
        }
        blocks.extend(page_blocks.into_iter().map(|b| (*page, b)));
    }

    // Join each block's lines; merge a paragraph cut by a page break.
    let mut out: Vec<Paragraph> = Vec::new();
    let mut prev_page = 0u32;
    for (page, block) in blocks {
        let mut text = String::new();
        for line in &block {
            join_line(&mut text, line, &mut stats);
        }
        let text = collapse_spaces(&text);
        if !text.chars().any(char::is_alphanumeric) {
            continue;
        }
        if page != prev_page {
            if let Some(last) = out.last_mut() {
                if continues_across_page(&last.text, &text) {
                    let mut merged = std::mem::take(&mut last.text);
                    join_line(&mut merged, &text, &mut stats);
                    last.text = collapse_spaces(&merged);
                    prev_page = page;
                    continue;
                }
            }
        }
        prev_page = page;
        out.push(Paragraph { text, page });
    }
    (out, stats)
}

/// A separator line ("~~~~~", "=====", "* * *", "_____"): no letters or digits, at least
/// three symbols. It ends a paragraph like a blank line.
fn is_rule(line: &str) -> bool {
    let t = line.trim();
    t.chars().filter(|c| !c.is_whitespace()).count() >= 3 && !t.chars().any(char::is_alphanumeric)
}

/// Appends `line` to `text` as the next line of the same paragraph: a word hyphenated at the
/// line end is rejoined ("sum-" + "mary" -> "summary"), CJK lines join without a space.
fn join_line(text: &mut String, line: &str, stats: &mut CleanStats) {
    let line = line.trim();
    let trimmed = text.trim_end();
    let mut chars = trimmed.chars().rev();
    let last = chars.next();
    let before = chars.next();
    let next = line.chars().next();
    if let (Some('-' | '\u{2010}'), Some(b), Some(n)) = (last, before, next) {
        if b.is_alphabetic() && !is_cjk_letter(b) && b.is_lowercase() && n.is_lowercase() {
            let cut = trimmed.len() - last.map_or(0, char::len_utf8);
            text.truncate(cut);
            text.push_str(line);
            stats.dehyphenated += 1;
            return;
        }
    }
    join_pieces(text, line);
}

/// Whether paragraph `next` (first on its page) continues `prev` (last on the previous page):
/// `prev` does not end a sentence and `next` starts with a lowercase letter, or both are CJK
/// and `prev` stops mid-sentence.
fn continues_across_page(prev: &str, next: &str) -> bool {
    let Some(end) = prev.trim_end().chars().last() else { return false };
    let Some(start) = next.chars().next() else { return false };
    let ends_sentence = matches!(end, '.' | '!' | '?' | ':' | '。' | '！' | '？' | '：' | '"' | '”' | '」' | '』' | ')' | '）');
    if ends_sentence {
        return false;
    }
    start.is_lowercase() || end == '-' || (is_cjk_letter(end) && is_cjk_letter(start)) || matches!(end, ',' | '，' | '、' | ';' | '；')
}

/// Typographic normalization: ligatures spelled out, soft hyphens and control characters
/// dropped, exotic spaces made plain, CR/CRLF made LF.
fn normalize_chars(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            '\n' => out.push('\n'),
            '\t' => out.push(' '),
            '\u{00AD}' | '\u{200B}' | '\u{FEFF}' | '\u{200C}' | '\u{200D}' => {}
            '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' => out.push(' '),
            '\u{3000}' => out.push(' '),
            '\u{FB00}' => out.push_str("ff"),
            '\u{FB01}' => out.push_str("fi"),
            '\u{FB02}' => out.push_str("fl"),
            '\u{FB03}' => out.push_str("ffi"),
            '\u{FB04}' => out.push_str("ffl"),
            '\u{FB05}' | '\u{FB06}' => out.push_str("st"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

fn collapse_spaces(text: &str) -> String {
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
fn edge_indices(lines: &[String]) -> BTreeSet<usize> {
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

/// Keys of edge lines that repeat on at least half of the pages (and on two or more).
fn running_lines(pages: &[(u32, Vec<String>)]) -> BTreeSet<String> {
    if pages.len() < 2 {
        return BTreeSet::new();
    }
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (_, lines) in pages {
        let keys: BTreeSet<String> = edge_indices(lines)
            .into_iter()
            .map(|i| line_key(&lines[i]))
            .filter(|k| !k.is_empty() && k.chars().count() <= MAX_HEADER_CHARS)
            .collect();
        for k in keys {
            *counts.entry(k).or_default() += 1;
        }
    }
    let n = pages.len();
    counts.into_iter().filter(|(_, c)| *c >= 2 && c * 2 >= n).map(|(k, _)| k).collect()
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
    use super::*;

    fn pages(texts: &[&str]) -> Vec<(u32, String)> {
        texts.iter().enumerate().map(|(i, t)| (i as u32 + 1, t.to_string())).collect()
    }

    #[test]
    fn running_headers_footers_and_page_numbers_go() {
        let p = pages(&[
            "Annual Report 2024\n\nThe harvest was good this year.\nPrices rose.\n\nPage 1 of 3\n",
            "Annual Report 2024\n\nRain came late in the season.\n\nPage 2 of 3\n",
            "Annual Report 2024\n\nThe cooperative grew to forty members.\n\nPage 3 of 3\n",
        ]);
        let (paras, stats) = clean_pages(&p);
        let texts: Vec<&str> = paras.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(
            texts,
            vec!["The harvest was good this year. Prices rose.", "Rain came late in the season.", "The cooperative grew to forty members."]
        );
        assert_eq!(stats.edge_lines_removed, 6);
        assert_eq!(paras[2].page, 3);
    }

    #[test]
    fn a_header_on_one_page_only_stays() {
        let p = pages(&["Introduction\n\nText one.\n", "Methods\n\nText two.\n", "Results\n\nText three.\n"]);
        let (paras, stats) = clean_pages(&p);
        assert_eq!(paras.len(), 6);
        assert_eq!(stats.edge_lines_removed, 0);
    }

    #[test]
    fn hyphenation_and_hard_breaks_are_joined() {
        let p = pages(&["The sum-\nmary of the docu-\nment is short. A well-\nKnown case.\n"]);
        let (paras, stats) = clean_pages(&p);
        assert_eq!(paras[0].text, "The summary of the document is short. A well- Known case.");
        assert_eq!(stats.dehyphenated, 2);
    }

    #[test]
    fn paragraph_split_by_a_page_break_is_merged() {
        let p = pages(&["First page text that goes on and\n", "continues on the next page.\n\nNew paragraph.\n"]);
        let (paras, _) = clean_pages(&p);
        let texts: Vec<&str> = paras.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, vec!["First page text that goes on and continues on the next page.", "New paragraph."]);
    }

    #[test]
    fn cjk_lines_join_without_spaces() {
        let p = pages(&["第1页\n\n机器学习是人工智能的\n一个分支。\n\n第1页\n"]);
        let (paras, _) = clean_pages(&p);
        assert_eq!(paras.len(), 1);
        assert_eq!(paras[0].text, "机器学习是人工智能的一个分支。");
    }

    #[test]
    fn separator_lines_end_paragraphs() {
        let p = pages(&["Lesson 1\n~~~~~~~~~~\nMove the cursor.\n* * *\nThen quit.\n"]);
        let (paras, _) = clean_pages(&p);
        let texts: Vec<&str> = paras.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, vec!["Lesson 1", "Move the cursor.", "Then quit."]);
    }

    #[test]
    fn typographic_debris_is_normalized() {
        let p = pages(&["\u{FB01}nal\u{00A0}ef\u{FB02}uent co\u{00AD}operation\r\nnext\tline\u{0007}\n"]);
        let (paras, _) = clean_pages(&p);
        assert_eq!(paras[0].text, "final effluent cooperation next line");
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

    #[test]
    fn form_feeds_split_plain_text_into_pages() {
        let pages = pages_of_text("one\u{000C}two\u{000C}three");
        assert_eq!(pages.len(), 3);
        assert_eq!(pages[2], (3, "three".to_string()));
    }
}
