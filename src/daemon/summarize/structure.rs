//! The structure of a document: what each block is (prose, heading, list item, code or
//! console output, display math, table, caption, footnote, reference entry, contents entry)
//! and which section it belongs to.
//!
//! A PDF's lines carry what the page shows: font size against the body text's, the share of
//! glyphs in monospace, math, bold faces, position on the page. Plain text has only its
//! characters, so the same rules read what text shows: symbol and digit density, code-like
//! lines (prompts, assignments, brackets), indentation, numbering. Only prose (and list items
//! written as sentences) may be quoted in a summary; headings give the sections, whose kind
//! (introduction, conclusion, references ...) the ranker weighs.

use super::clean::{self, continues_across_page};
use super::document::{Block, BlockKind, Document, Line, Section, SectionKind};
use seqgpt_pdf::ExtractedDocument;
use super::text::{is_cjk, is_cjk_letter, is_plain_word};
use super::{Cancel, SummaryError};
use std::collections::HashMap;

/// Reads the kind of a section from its title (numbering removed, any case).
pub fn section_kind(title: &str) -> Option<SectionKind> {
    let t = strip_numbering(title).to_lowercase();
    let t = t.trim_matches(|c: char| !c.is_alphanumeric() && !is_cjk_letter(c));
    // CJK titles are often set letter-spaced ("摘 要", "参 考 文 献").
    let squeezed: String;
    let t = if t.chars().any(is_cjk_letter) {
        squeezed = t.chars().filter(|c| !c.is_whitespace()).collect();
        squeezed.as_str()
    } else {
        t
    };
    let starts = |words: &[&str]| words.iter().any(|w| t.starts_with(w));
    let is = |words: &[&str]| words.iter().any(|w| t == *w);
    Some(if starts(&["abstract", "summary of the paper"]) || is(&["摘要", "提要"]) {
        SectionKind::Abstract
    } else if starts(&["introduction", "overview", "motivation", "preface", "引言", "介绍", "概述", "前言", "绪论", "简介"]) {
        SectionKind::Introduction
    } else if starts(&["background", "related work", "previous work", "prior work", "literature review", "related literature", "背景", "相关工作"]) {
        SectionKind::Background
    } else if is(&["summary"]) || starts(&["summary and", "summary of the paper", "summary of results", "summary of findings"]) || starts(&[
        "conclusion", "concluding", "discussion", "final remark", "closing remark", "outlook", "future work",
        "结论", "总结", "讨论", "小结", "结语", "展望",
    ]) {
        SectionKind::Conclusion
    } else if starts(&["acknowledg", "acknowlegement", "thanks", "funding", "致谢", "鸣谢"]) {
        SectionKind::Acknowledgements
    } else if starts(&["references", "bibliography", "literature cited", "works cited", "citations", "参考文献", "引用"]) {
        SectionKind::References
    } else if starts(&["appendix", "appendices", "supplementary", "supplemental", "附录"]) {
        SectionKind::Appendix
    } else if starts(&["contents", "table of contents", "目录", "目次"]) {
        SectionKind::Contents
    } else {
        return None;
    })
}

/// A heading's numbering ("2.1.", "3", "A.2", "IV.", "第3章", "第二节", "一、", "（二）"), its
/// depth, and the byte length of the numbering with the space after it in the trimmed title.
fn numbering(title: &str) -> Option<(String, u8, usize)> {
    let t = title.trim_start();
    if let Some((token, depth, len)) = cjk_numbering(t) {
        let rest = &t[len..];
        let len = len + (rest.len() - rest.trim_start().len());
        return (len < t.len()).then(|| (token, depth, len));
    }
    let first = t.split_whitespace().next()?;
    let token = first.trim_end_matches(['.', ':', ')']);
    // Arabic numbering may run into a CJK title without a space ("1.2研究方法").
    let (token, glued) = match token.find(|c: char| is_cjk_letter(c)) {
        Some(k) if k > 0 && token[..k].chars().all(|c| c.is_ascii_digit() || c == '.') => (token[..k].trim_end_matches('.'), true),
        _ => (token, false),
    };
    if token.is_empty() || (!glued && t.len() == first.len()) {
        return None;
    }
    let parts: Vec<&str> = token.split('.').collect();
    let ok = parts.iter().enumerate().all(|(i, p)| {
        !p.is_empty()
            && p.len() <= 3
            && (p.chars().all(|c| c.is_ascii_digit())
                || (!glued && i == 0 && p.len() == 1 && p.chars().all(|c| c.is_ascii_uppercase()))
                || (!glued && i == 0 && roman(p)))
    });
    if !ok || parts.len() > 4 {
        return None;
    }
    let len = if glued { t.find(|c: char| is_cjk_letter(c)).unwrap_or(t.len()) } else { first.len() };
    let rest = &t[len..];
    Some((token.to_string(), parts.len() as u8, len + (rest.len() - rest.trim_start().len())))
}

/// Chinese numerals as headings number with them.
fn cjk_numeral(c: char) -> bool {
    matches!(c, '一' | '二' | '三' | '四' | '五' | '六' | '七' | '八' | '九' | '十' | '〇' | '零' | '百')
}

/// The CJK numbering at the start of `t` ("第3章", "第二节", "第一部分", "一、", "（二）",
/// "(三)"): its text, depth and byte length. A chapter or part is depth 1, a section 2; "一、"
/// depth 1 and "（一）" depth 2, as Chinese documents nest them.
fn cjk_numbering(t: &str) -> Option<(String, u8, usize)> {
    let number = |s: &str| -> usize {
        s.char_indices().find(|&(_, c)| !(cjk_numeral(c) || c.is_ascii_digit() || ('０'..='９').contains(&c))).map_or(s.len(), |(i, _)| i)
    };
    if let Some(rest) = t.strip_prefix('第') {
        let n = number(rest);
        let after = &rest[n..];
        let unit = ["章", "节", "部分", "篇", "部", "卷", "讲", "课"].iter().find(|u| after.starts_with(*u))?;
        if n == 0 {
            return None;
        }
        let len = '第'.len_utf8() + n + unit.len();
        let depth = if *unit == "节" { 2 } else { 1 };
        return Some((t[..len].to_string(), depth, len));
    }
    for (open, close) in [('（', '）'), ('(', ')')] {
        if let Some(rest) = t.strip_prefix(open) {
            let n = number(rest);
            if n > 0 && rest[..n].chars().all(cjk_numeral) && rest[n..].starts_with(close) {
                let len = open.len_utf8() + n + close.len_utf8();
                return Some((t[..len].to_string(), 2, len));
            }
            return None;
        }
    }
    let n = number(t);
    if n > 0 && t[..n].chars().all(cjk_numeral) && t[n..].starts_with(['、', '．']) {
        let len = n + t[n..].chars().next().map_or(0, char::len_utf8);
        return Some((t[..len].to_string(), 1, len));
    }
    None
}

/// The label a paragraph opens with when it is its section's heading run in ("摘要：本文 ...",
/// "摘 要: ...", "Abstract. We ..."; "关键词：" marks keywords), and the section kind it names.
fn run_in_label(text: &str) -> Option<(SectionKind, bool)> {
    let head: String = text.chars().take(16).collect();
    let colon = head.find(['：', ':', '.', '—'])?;
    let label: String = head[..colon].chars().filter(|c| !c.is_whitespace()).collect::<String>().to_lowercase();
    match label.as_str() {
        "摘要" | "提要" | "内容提要" | "内容摘要" | "abstract" => Some((SectionKind::Abstract, false)),
        "关键词" | "关键字" | "keywords" | "keyword" | "key words" | "keywords and phrases" => Some((SectionKind::Abstract, true)),
        _ => None,
    }
}

fn roman(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.chars().all(|c| matches!(c, 'I' | 'V' | 'X'))
}

/// `title` without its numbering.
pub fn strip_numbering(title: &str) -> &str {
    match numbering(title) {
        Some((_, _, len)) => title.trim_start()[len..].trim(),
        None => title.trim(),
    }
}

/// What the classifier knows of one line.
#[derive(Debug, Clone, Copy, Default)]
struct Features {
    words: usize,
    /// Share of whitespace tokens that are plain words (letters, with punctuation around).
    plain: f32,
    /// Share of non-space characters that are digits, and symbols (not letters, digits or
    /// common punctuation).
    digits: f32,
    symbols: f32,
    /// The line reads like code or console output (text signs only).
    code_text: bool,
    /// The share of glyphs in monospace, math and bold faces; size against the body's (PDF).
    mono: f32,
    math: f32,
    bold: f32,
    size: f32,
    /// The line is in the bottom fifth of its page, or below all of the page's body-size text
    /// (notes that fill more than a fifth: a critical edition's apparatus) (PDF).
    low: bool,
    /// Opens with a raised mark of one or two digits or note symbols ("¹This text is part of
    /// ..."): a note's number before its text (PDF).
    note_mark: bool,
    ends_sentence: bool,
    /// Starts like a list item ("•", "-", "1.", "(a)").
    bullet: bool,
    cjk: bool,
    /// The line's width per character, in ems of its size (PDF, Latin text; 0 where unknown).
    em_per_char: f32,
    /// Set far wider than the document's running text for its characters: cells of a table's
    /// row, or a letter-spaced title, not a line of prose.
    spread: bool,
}

/// Share of the plain words among `text`'s whitespace tokens (CJK text: share of CJK letters
/// and CJK punctuation among its non-space characters).
pub fn prose_share(text: &str) -> f32 {
    let (mut cjk, mut chars) = (0usize, 0usize);
    for c in text.chars().filter(|c| !c.is_whitespace()) {
        chars += 1;
        if is_cjk(c) {
            cjk += 1;
        }
    }
    if chars > 0 && cjk * 3 > chars {
        let ok = text.chars().filter(|c| !c.is_whitespace() && (is_cjk(*c) || c.is_alphabetic() || "，。、；：！？（）“”".contains(*c))).count();
        return ok as f32 / chars as f32;
    }
    let toks: Vec<&str> = text.split_whitespace().collect();
    if toks.is_empty() {
        return 0.0;
    }
    toks.iter().filter(|w| is_plain_word(w)).count() as f32 / toks.len() as f32
}

/// Code and console lines by their text, for many languages: prompts (R, Python, shell,
/// Julia, MATLAB/Octave, SQL clients, IPython), console output indices, assignment and scope
/// operators, statement ends, TeX macros that start a line, SQL statements, markup; a call
/// ("f(x)") only in a line that is not mostly words (`plain` is its share of plain words).
/// Signs that prose also shows ("> " before a quotation, "+ " before a bullet, "# " before a
/// Markdown heading, "$ " before an amount) count only in a line that is not mostly words.
fn looks_like_code(t: &str, plain: f32) -> bool {
    let s = t.trim_start();
    let prompt = ["R> ", ">>> ", "... ", "In [", "Out[", "julia> ", "sage: ", "irb(", "octave:", ">> ", "sqlite> ", "mysql> ", "postgres=#", "PS> ", "C:\\>"]
        .iter()
        .any(|p| s.starts_with(p));
    let weak_prompt = ["> ", "$ ", "# ", "+ ", "% "].iter().any(|p| s.starts_with(p)) && plain < 0.6;
    let console_index = s.starts_with('[') && s[1..].split(']').next().is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == ','));
    let assign = [" <- ", " <<- ", " := ", " == ", " != ", "::", " += ", "<-", "->"].iter().any(|p| s.contains(p));
    let call = {
        let b = s.as_bytes();
        s.contains("()") || b.windows(2).any(|w| (w[0].is_ascii_alphanumeric() || w[0] == b'_') && w[1] == b'(')
    };
    let ends = s.ends_with(';') || s.ends_with('{') || s.ends_with('}') || s.starts_with('}') || s.starts_with("#include");
    let keyword = ["def ", "import ", "library(", "fn ", "#!", "@echo "]
        .iter()
        .any(|k| s.starts_with(k));
    let upper = s.to_ascii_uppercase();
    let sql = ["SELECT ", "INSERT INTO ", "CREATE TABLE ", "UPDATE ", "DELETE FROM "].iter().any(|k| s.starts_with(k)) && (upper.contains(" FROM ") || upper.contains(" SET ") || upper.contains('(') || s.ends_with(';'));
    let tex = s.starts_with('\\') && s[1..].starts_with(|c: char| c.is_ascii_alphabetic()) && (s.contains('{') || s.contains('[') || s.split_whitespace().count() <= 2);
    let xml = s.starts_with('<') && s.contains('>') && (s.contains("</") || s.ends_with("/>") || s.ends_with('>'));
    prompt || console_index || sql || ((weak_prompt || assign || ends || xml || keyword || tex) && plain < 0.8) || (call && plain < 0.6)
}

/// A line set in the typewriter face: mostly monospace glyphs, and not a CJK line that names
/// a command or a file inline (its CJK letters are in the text face: "或 \section 等的编号。").
fn typewriter(f: &Features) -> bool {
    f.mono > 0.5 && !(f.cjk && f.mono < 0.85)
}

/// Whether the change of face between lines `a` and `b` (text `b_text`) falls inside a
/// sentence that a name set in the typewriter face carries over the line break ("... a Perl" /
/// "script (rubikrotation.pl)."): `a` ends no sentence, `b` goes on in lowercase, and the
/// typewriter line of the two reads as running text, not as code.
fn typewriter_run_on(a: &Features, b: &Features, b_text: &str) -> bool {
    let tt = if typewriter(a) { a } else { b };
    !a.ends_sentence && b_text.trim_start().starts_with(|c: char| c.is_lowercase()) && !tt.code_text && tt.plain >= 0.5 && tt.words >= 2
}

fn features(doc: &Document, line: &Line, body: f32) -> Features {
    let t = line.text.as_str();
    let mut f = Features { plain: prose_share(t), words: t.split_whitespace().count(), ..Features::default() };
    let (mut digits, mut symbols, mut n, mut cjk) = (0usize, 0usize, 0usize, 0usize);
    for c in t.chars().filter(|c| !c.is_whitespace()) {
        n += 1;
        if c.is_ascii_digit() {
            digits += 1;
        } else if is_cjk(c) {
            cjk += 1;
        } else if !c.is_alphanumeric() && !".,;:'\"()-–—’‘“”?!/%".contains(c) {
            symbols += 1;
        }
    }
    let n = n.max(1) as f32;
    f.digits = digits as f32 / n;
    f.symbols = symbols as f32 / n;
    f.cjk = cjk as f32 / n > 0.3;
    f.code_text = !f.cjk && looks_like_code(t, f.plain);
    f.ends_sentence = t.trim_end().ends_with(['.', '!', '?', '。', '！', '？', ':', '：']);
    let first = t.split_whitespace().next().unwrap_or("");
    // A lone symbol (any bullet or dingbat: "•", "❼", "–"; not the punctuation that goes on
    // with a sentence a line break cut: ", the output of that code") or an enumerator ("1.",
    // "(a)", "iv)"; not "(EM)" or "Dr.").
    f.bullet = (first.chars().count() == 1 && first.chars().all(|c| !c.is_ascii_alphanumeric() && !c.is_alphabetic() && !"\"'([“‘,.;:!?)]}”’%".contains(c)) && f.words > 2)
        || first.starts_with(['•', '◦', '▪', '‣', '·'])
        || (first.len() <= 5
            && (first.ends_with(')') || first.ends_with('.'))
            && enumerator(first.trim_end_matches([')', '.']).trim_start_matches('('))
            && f.words > 3);
    f.size = 1.0;
    if let Some(tl) = line.layout.and_then(|i| doc.pages[line.page].lines.get(i)) {
        f.mono = tl.mono;
        f.math = tl.math;
        f.bold = tl.bold;
        f.size = if body > 0.0 { tl.text_size / body } else { 1.0 };
        if let Some([_, y0, _, y1]) = doc.pages[line.page].area {
            f.low = tl.bbox[3] < y0 + 0.2 * (y1 - y0);
        }
        let at = line.page_offset(0) as u32;
        f.note_mark = tl.superscripts.iter().any(|&(from, to)| {
            let mark = doc.pages[line.page].text.get(from as usize..to as usize).unwrap_or("");
            from == at && (1..=2).contains(&mark.chars().count()) && mark.chars().all(|c| c.is_ascii_digit() || "*†‡§¶".contains(c))
        });
        // The width of the glyphs the line kept (a label in the margin left out is not in it).
        let chars = t.chars().count();
        let (from, to) = (line.page_offset(0) as u32, line.page_offset(t.len().saturating_sub(1)) as u32);
        let (x0, x1) = tl.glyphs.iter().filter(|g| (from..=to).contains(&g.start)).fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), g| (a.min(g.bbox[0]), b.max(g.bbox[2])));
        if !f.cjk && tl.size > 0.0 && chars > 0 && x1 > x0 {
            f.em_per_char = (x1 - x0) / (tl.size * chars as f32);
        }
    }
    f
}

/// Marks as low the smaller lines that stand below the last line of body-size text on their
/// page: a page's notes, however much of it they fill.
fn mark_below_body(doc: &Document, feats: &mut [Features]) {
    // A line's box on its page, [x0, y0, x1, y1] with y upwards.
    let bbox_of = |l: &Line| l.layout.and_then(|i| doc.pages[l.page].lines.get(i)).map(|tl| tl.bbox);
    let mut lowest_body: HashMap<usize, f32> = HashMap::new();
    for (l, f) in doc.lines.iter().zip(feats.iter()) {
        if let (Some(b), true) = (bbox_of(l), f.size >= 0.95) {
            let y = lowest_body.entry(l.page).or_insert(f32::INFINITY);
            *y = y.min(b[1]);
        }
    }
    for (l, f) in doc.lines.iter().zip(feats.iter_mut()) {
        if let (Some(b), Some(&y)) = (bbox_of(l), lowest_body.get(&l.page)) {
            f.low |= f.size < 0.9 && b[3] <= y;
        }
    }
}

/// How much wider per character than the document's running text a line must be set to read
/// as spread out (a justified line of prose stretches by a tenth or two).
const SPREAD: f32 = 1.4;

/// Marks the lines of two words or more set [`SPREAD`] times wider per character than the
/// median line of body-size prose-like text (four words or more, mostly plain words).
fn mark_spread(feats: &mut [Features]) {
    let mut body: Vec<f32> =
        feats.iter().filter(|f| f.em_per_char > 0.0 && (f.size - 1.0).abs() <= 0.12 && f.words >= 4 && f.plain >= 0.6).map(|f| f.em_per_char).collect();
    if body.len() < 5 {
        return;
    }
    body.sort_by(f32::total_cmp);
    let median = body[body.len() / 2];
    for f in feats.iter_mut() {
        f.spread = f.words >= 2 && f.em_per_char > SPREAD * median;
    }
}

/// The body text's font size: the size most of the document's characters are set in.
fn body_size(doc: &Document) -> f32 {
    let mut hist: std::collections::BTreeMap<u32, usize> = std::collections::BTreeMap::new();
    for l in &doc.lines {
        if let Some(tl) = l.layout.and_then(|i| doc.pages[l.page].lines.get(i)) {
            *hist.entry((tl.text_size * 4.0).round() as u32).or_default() += l.text.len();
        }
    }
    hist.into_iter().max_by_key(|&(k, n)| (n, std::cmp::Reverse(k))).map_or(0.0, |(k, _)| k as f32 / 4.0)
}

/// Whether a line is a caption's first line.
fn caption_start(t: &str) -> bool {
    let lower = t.to_lowercase();
    for w in ["figure", "fig.", "table", "listing", "algorithm", "exhibit", "chart", "plate", "code", "box"] {
        if let Some(rest) = lower.strip_prefix(w) {
            let rest = rest.trim_start();
            let num: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
            if !num.is_empty() && num.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                let after = rest[num.len()..].trim_start();
                return after.starts_with([':', '.', '—', '–', '-']) || after.is_empty() || (num.ends_with('.') && !after.is_empty());
            }
        }
    }
    let mut chars = t.chars();
    matches!(chars.next(), Some('图' | '表')) && chars.next().is_some_and(|c| c.is_ascii_digit())
}

/// Reference-list entries by their text: "[12] ..." or "Author A, Author B (2001). Title ...":
/// an entry opens with its authors' names and the year, which a stop or a comma closes. A
/// paragraph that cites a work ("as recommended by Overstall and Forster (2010), the
/// package ...", "Alfons and Templ (2013) describe ...") is prose.
fn reference_like(t: &str) -> bool {
    let s = t.trim_start();
    let bracket = s.starts_with('[') && s[1..].split(']').next().is_some_and(|n| !n.is_empty() && n.len() <= 4 && n.chars().all(|c| c.is_ascii_alphanumeric()));
    bracket || names_then_year(s)
}

/// The longest list of authors before an entry's year, in words and in bytes (which also
/// bounds the scan of a text of brackets).
const MAX_AUTHOR_WORDS: usize = 24;
const MAX_AUTHOR_BYTES: usize = 400;

/// Whether `s` opens with names ("Meyer, D., Zeileis, A., and Hornik, K.", "Chang C, Lin C",
/// "张三，李四": capitalized or uncased words, initials or commas among them) and then a year
/// in brackets closed by a stop, a comma, a colon or a semicolon ("(2006).").
fn names_then_year(s: &str) -> bool {
    for (at, _) in s.match_indices('(') {
        let before = &s[..at];
        if at > MAX_AUTHOR_BYTES || before.split_whitespace().count() > MAX_AUTHOR_WORDS {
            return false;
        }
        let inner = &s[at + 1..];
        let digits = inner.bytes().take_while(u8::is_ascii_digit).count();
        let rest = inner[digits..].trim_start_matches(|c: char| c.is_ascii_lowercase());
        // Another bracket before the year ("(eds.)") is part of the names.
        let Some(after) = rest.strip_prefix(')').filter(|_| digits == 4) else { continue };
        let names = before.split_whitespace().all(|w| {
            let w = w.trim_matches(|c: char| matches!(c, ',' | '.' | ';' | '(' | ')'));
            // Capitalized, or in a script without case (CJK names).
            w.starts_with(|c: char| c.is_alphabetic() && !c.is_lowercase())
                || matches!(w, "" | "and" | "&" | "et" | "al" | "eds" | "ed" | "von" | "van" | "der" | "den" | "de" | "di" | "da" | "du" | "le" | "la")
        });
        // An entry's names have initials or commas ("Chang C, Lin C"); a sentence's opening
        // before a citation has neither ("Following Segers and Vandewalle (2004), ...").
        let initial = before.split_whitespace().any(|w| {
            let w = w.trim_end_matches([',', ';']);
            let letters: Vec<char> = w.chars().filter(|c| c.is_alphabetic()).collect();
            (1..=3).contains(&letters.len()) && letters.iter().all(|c| c.is_uppercase()) && w.chars().all(|c| c.is_alphabetic() || matches!(c, '.' | '-'))
        });
        let closed = after.trim_start().chars().next().is_none_or(|c| matches!(c, '.' | ',' | ':' | ';' | '。' | '，' | '：' | '；'));
        return !before.trim().is_empty() && names && (initial || before.contains([',', '，'])) && closed;
    }
    false
}

/// Contents entries: a title, a leader or gap, and a page number at the end.
fn contents_like(t: &str) -> bool {
    let s = t.trim_end();
    let last = s.split_whitespace().last().unwrap_or("");
    let number = !last.is_empty() && (last.chars().all(|c| c.is_ascii_digit()) || super::clean::roman_page(last));
    number && (s.contains(". . .") || s.contains("....") || s.contains("···") || s.contains("……"))
}

/// Reads the pages of `extracted` into a [`Document`]: their lines cleaned ([`clean`]: running
/// headers and footers removed), then blocks classified and grouped into sections. The title is
/// the file's, else the most telling running header.
pub fn read(extracted: ExtractedDocument, cancel: &Cancel) -> Result<Document, SummaryError> {
    let ExtractedDocument { page_count, pages, warnings, title } = extracted;
    let (lines, running, clean) = clean::lines_of(&pages, cancel)?;
    cancel.check()?;
    let title = title.as_deref().unwrap_or("").trim().to_string();
    let mut doc = Document { page_count, pages, warnings, lines, blocks: Vec::new(), sections: Vec::new(), title, clean };
    if doc.title.is_empty() {
        doc.title = running.into_iter().max_by_key(|r| r.split_whitespace().count().min(12)).unwrap_or_default();
    }
    build(&mut doc, cancel)?;
    Ok(doc)
}

/// Reads `doc.lines` into blocks and sections.
fn build(doc: &mut Document, cancel: &Cancel) -> Result<(), SummaryError> {
    let body = body_size(doc);
    let mut feats: Vec<Features> = doc.lines.iter().map(|l| features(doc, l, body)).collect();
    mark_below_body(doc, &mut feats);
    mark_spread(&mut feats);
    cancel.check()?;
    // Source blocks: runs of lines from one block of the page (a blank line, a page break, a
    // change of face or size between them ends one).
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in 0..doc.lines.len() {
        let l = &doc.lines[i];
        let new = match i.checked_sub(1) {
            None => true,
            Some(p) => {
                let (a, b) = (&feats[p], &feats[i]);
                l.block_start
                    || doc.lines[p].page != l.page
                    || (typewriter(a) != typewriter(b) && !typewriter_run_on(a, b, &l.text))
                    || (a.size - b.size).abs() > 0.12
                    || caption_start(&l.text)
                    || (b.bullet && doc.lines[p].layout.is_some())
                    || (is_heading_line(&feats[p], &doc.lines[p].text) && !(is_heading_line(b, &l.text) && !bare_numbered(b, &l.text)) && !item_goes_on(a, &l.text))
            }
        };
        if new {
            groups.push(vec![i]);
        } else if let Some(g) = groups.last_mut() {
            g.push(i);
        }
    }
    cancel.check()?;
    // Pass 1: each group's kind; a prose block that a page break or a float cut in two
    // continues the previous one.
    let mut blocks: Vec<Block> = Vec::new();
    let mut sizes: Vec<f32> = Vec::new();
    for g in groups {
        let (text, joins) = doc.join_lines(&g);
        let kind = classify(&g.iter().map(|&i| feats[i]).collect::<Vec<_>>(), &text, &g.iter().map(|&i| doc.lines[i].indent).collect::<Vec<_>>());
        if kind.is_prose() {
            // Floats (tables, figures, their captions, notes) may stand between the two halves
            // of a sentence, across a page break too; on one page the text flows around
            // figures and tables, never around its own notes.
            let float = |k: BlockKind| matches!(k, BlockKind::Footnote | BlockKind::Other | BlockKind::Caption | BlockKind::Table);
            let floats_between = blocks.last().is_some_and(|b| float(b.kind)) && !blocks.iter().rev().take_while(|b| float(b.kind)).any(|b| b.kind == BlockKind::Footnote);
            if let Some(prev) = blocks.iter_mut().rev().find(|b| !float(b.kind)) {
                let prev_page = prev.lines.last().map(|&i| doc.lines[i].page);
                let page = doc.lines[g[0]].page;
                // A paragraph the layout split: the next line on the same page (a column break,
                // a change of size); on the same page across figures and tables, where the type
                // size stays (a note's continuation is no body text's) and the block before
                // them has more than one line (one line may be a running header); the next page.
                let contiguous = prev_page == Some(page) && prev.lines.last().is_some_and(|&l| l + 1 == g[0]);
                let same_size = (median_size(&feats, &prev.lines) - median_size(&feats, &g)).abs() <= 0.12;
                let around_floats = prev_page == Some(page) && floats_between && prev.lines.len() > 1;
                let lowercase = text.starts_with(|c: char| c.is_lowercase());
                let split = (contiguous && lowercase) || (around_floats && same_size && lowercase) || prev_page.is_some_and(|p| p + 1 == page);
                // A list item goes on in a paragraph (not in the next item) the same way.
                let goes_on = prev.kind == BlockKind::Prose || (prev.kind == BlockKind::ListItem && kind == BlockKind::Prose && lowercase);
                if goes_on && split && continues_across_page(&prev.text, &text) {
                    prev.lines.extend(g.iter().copied());
                    let (t, j) = doc.join_lines(&prev.lines);
                    prev.text = t;
                    prev.joins = j;
                    continue;
                }
            }
        }
        sizes.push(g.iter().map(|&i| feats[i].size).fold(0.0, f32::max));
        blocks.push(Block { kind, text, lines: g, joins, section: 0 });
    }
    cancel.check()?;
    if super::ablation::off("structure") {
        // Measured without structure: every block is prose, in one section.
        for b in &mut blocks {
            b.kind = if b.text.trim().is_empty() { BlockKind::Other } else { BlockKind::Prose };
        }
        doc.blocks = blocks;
        doc.sections = vec![Section { title: String::new(), level: 0, kind: SectionKind::Front, heading: None }];
        return Ok(());
    }
    // Pass 2: heading levels and sections. A numbered heading's level is its numbering's
    // depth; otherwise headings rank by size (the largest style is level 1), and a heading as
    // large as the body text (set apart by weight only) is one level below the sized ones.
    let mut styles: Vec<i32> = blocks
        .iter()
        .zip(&sizes)
        .filter(|(b, _)| matches!(b.kind, BlockKind::Heading(_)))
        .map(|(_, &sz)| (sz * 20.0).round() as i32)
        .collect();
    styles.sort_unstable_by(|a, b| b.cmp(a));
    styles.dedup();
    let mut current = (SectionKind::Front, 0u8);
    let mut sections = vec![Section { title: String::new(), level: 0, kind: SectionKind::Front, heading: None }];
    for (bi, (b, &sz)) in blocks.iter_mut().zip(&sizes).enumerate() {
        if let BlockKind::Heading(_) = b.kind {
            let rank = styles.iter().position(|&st| st == (sz * 20.0).round() as i32).unwrap_or(0);
            let number = numbering(&b.text);
            let level = number.as_ref().map_or((rank + 1).min(6) as u8, |(_, depth, _)| *depth);
            let named = section_kind(&b.text);
            let kind = match named {
                Some(k) => k,
                // A heading below the one that set the kind is part of its section.
                None if level > current.1 && current.1 > 0 => current.0,
                // Lettered sections after an appendix are appendices too.
                None if current.0 == SectionKind::Appendix && number.as_ref().is_some_and(|(n, _, _)| n.starts_with(|c: char| c.is_ascii_uppercase())) => SectionKind::Appendix,
                None => SectionKind::Body,
            };
            if named.is_some() || level <= current.1.max(1) {
                current = (kind, level);
            }
            sections.push(Section { title: b.text.clone(), level, kind, heading: Some(bi) });
            b.kind = BlockKind::Heading(level);
        } else if b.kind.is_prose() {
            match run_in_label(&b.text) {
                // A keywords line is a list of terms, no sentence.
                Some((_, true)) => b.kind = BlockKind::Other,
                Some((kind, false)) if current.0 != kind => {
                    let title: String = b.text.chars().take_while(|c| !matches!(c, '：' | ':' | '.' | '—')).collect();
                    sections.push(Section { title: title.trim().to_string(), level: 1, kind, heading: None });
                    current = (kind, 1);
                }
                _ => {}
            }
            match current.0 {
                SectionKind::References => b.kind = BlockKind::Reference,
                SectionKind::Contents => b.kind = BlockKind::Contents,
                _ => {}
            }
        }
        b.section = sections.len() - 1;
    }
    doc.blocks = blocks;
    doc.sections = sections;
    Ok(())
}

/// The median type size of `lines` (one line's size may be off: a large symbol, a note mark).
fn median_size(feats: &[Features], lines: &[usize]) -> f32 {
    let mut sizes: Vec<f32> = lines.iter().map(|&l| feats[l].size).collect();
    sizes.sort_by(f32::total_cmp);
    sizes.get(sizes.len() / 2).copied().unwrap_or(1.0)
}

/// A line that reads as a heading only by a bare capital or Roman numeral at its start, set in
/// the body's face and size: as often a sentence's start ("A number of ...", "I think ...").
fn bare_numbered(f: &Features, text: &str) -> bool {
    f.size < 1.12 && f.bold < 0.6 && numbering(text).is_some_and(|(token, _, _)| {
        let first = text.split_whitespace().next().unwrap_or("");
        !token.chars().any(|c| c.is_ascii_digit()) && cjk_numbering(text.trim_start()).is_none() && !first.ends_with(['.', ')', ':'])
    })
}

/// A numbered line short enough for a heading whose title starts like one (a capital or a CJK
/// letter: "2 Methods", "第二章 方法", "一、引言"; not "3 of the 5 runs failed").
fn numbered_title(text: &str, words: usize) -> bool {
    let cjk = text.chars().filter(|c| is_cjk_letter(*c)).count() * 2 > text.chars().filter(|c| !c.is_whitespace()).count();
    let short = if cjk { text.chars().count() <= 30 } else { words <= 10 };
    short && numbering(text).is_some_and(|(_, _, len)| text.trim_start()[len..].chars().next().is_some_and(|c| c.is_uppercase() || is_cjk_letter(c)))
}

/// Whether `label` (an item's marker without its brackets and dot) counts items: a number of
/// up to three digits, one letter, or a small Roman numeral.
fn enumerator(label: &str) -> bool {
    let digits = !label.is_empty() && label.len() <= 3 && label.chars().all(|c| c.is_ascii_digit());
    let letter = label.chars().count() == 1 && label.chars().all(|c| c.is_alphabetic());
    let lower = label.to_ascii_lowercase();
    let roman = ["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi", "xii"].contains(&lower.as_str()) && (label == lower || label == label.to_ascii_uppercase());
    digits || letter || roman
}

/// Whether a line that starts in lowercase continues the list item whose first line (with
/// features `item`) is above it: "1. Concurrent access and conflict-resolution algorithms to
/// guarantee that source" / "changes are not lost." (that first line, short, numbered and
/// open-ended, reads like a heading).
fn item_goes_on(item: &Features, next: &str) -> bool {
    item.bullet && item.words >= 6 && next.trim_start().starts_with(|c: char| c.is_lowercase())
}

fn is_heading_line(f: &Features, text: &str) -> bool {
    // CJK lines have few spaces: their length is in characters.
    let short = if f.cjk { text.chars().filter(|c| !c.is_whitespace()).count() <= 30 } else { f.words <= 14 };
    // A title may end with a stop where a numbering two or more levels deep and its face set
    // it apart ("3.2 Programming in GP: other specific functions."): no sentence is numbered so.
    let stop = text.trim_end().ends_with(['.', ',', ';', '。', '，', '；']);
    let titled_stop = text.trim_end().ends_with('.') && (f.size >= 1.12 || f.bold >= 0.6) && numbering(text).is_some_and(|(_, depth, _)| depth >= 2);
    short && (!stop || titled_stop) && (f.size >= 1.12 || f.bold >= 0.6 || numbering(text).is_some()) && f.plain >= 0.5
}

/// The kind of a block of lines with features `f`, text `text` and indentations `indents`.
fn classify(f: &[Features], text: &str, indents: &[u32]) -> BlockKind {
    let n = f.len().max(1) as f32;
    let share = |p: &dyn Fn(&Features) -> bool| f.iter().filter(|x| p(x)).count() as f32 / n;
    let words: usize = f.iter().map(|x| x.words).sum();
    let plain = prose_share(text);
    let mono = f.iter().map(|x| x.mono).sum::<f32>() / n;
    let math = f.iter().map(|x| x.math).sum::<f32>() / n;
    let cjk = share(&|x| x.cjk) > 0.5;
    // Monospace: code, unless the block is mostly words (prose with a URL or a long name
    // set in the typewriter face).
    if mono > 0.85 || (mono > 0.5 && plain < 0.75) {
        return BlockKind::Code;
    }
    if caption_start(text) {
        return BlockKind::Caption;
    }
    let first = &f[0];
    // Headings: short, not a sentence, set apart by size, weight or numbering.
    if f.len() <= 2 && is_heading_line(first, text) && !first.bullet && (first.size >= 1.12 || first.bold >= 0.6 || numbered_title(text, first.words)) {
        let level = if first.size >= 1.4 { 1 } else if first.size >= 1.12 { 1 } else { 2 };
        return BlockKind::Heading(level);
    }
    if f.len() <= 2 && section_kind(text).is_some() && words <= 4 && !text.ends_with('.') {
        return BlockKind::Heading(1);
    }
    if share(&|x| x.code_text) >= 0.5 || (indents.iter().all(|&i| i >= 4) && share(&|x| x.symbols > 0.08) >= 0.5) {
        return BlockKind::Code;
    }
    if math > 0.3 && plain < 0.7 {
        return BlockKind::Math;
    }
    if !cjk && (share(&|x| x.symbols > 0.15 && x.plain < 0.5) >= 0.5 || (plain < 0.35 && words >= 1 && share(&|x| x.digits < 0.3) >= 0.5)) {
        return if share(&|x| x.digits > 0.3) >= 0.5 { BlockKind::Table } else { BlockKind::Math };
    }
    if !cjk && share(&|x| x.digits > 0.3 && x.plain < 0.6) >= 0.5 {
        return BlockKind::Table;
    }
    // Notes: smaller type at the page's foot; or, at its foot and no larger than the body's
    // (a document set small throughout), their number raised before them.
    if (f.iter().all(|x| x.low && x.size < 0.9) && f[0].size < 0.9) || (f[0].low && f[0].note_mark && f.iter().all(|x| x.low && x.size < 1.05)) {
        return BlockKind::Footnote;
    }
    if contents_like(text) {
        return BlockKind::Contents;
    }
    if reference_like(text) && share(&|x| x.ends_sentence) > 0.0 && words > 5 && text.split(',').count() >= 3 && !first.bullet {
        return BlockKind::Reference;
    }
    if first.bullet {
        return BlockKind::ListItem;
    }
    // A stack of labels (a table's column of row names, a list of names one per line): three
    // lines or more, none of more than three words, none ending a sentence; running text
    // fills its lines.
    if !cjk && f.len() >= 3 && f.iter().all(|x| x.words <= 3 && !x.ends_sentence) {
        return BlockKind::Other;
    }
    // Spread-out lines, all of them: a table's row of cells, never running text.
    if !cjk && f.iter().all(|x| x.spread) {
        return BlockKind::Other;
    }
    if (cjk && text.chars().count() >= 6) || (words >= 4 && plain >= 0.6) {
        return BlockKind::Prose;
    }
    BlockKind::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_kinds_from_titles() {
        assert_eq!(section_kind("1. Introduction"), Some(SectionKind::Introduction));
        assert_eq!(section_kind("5 Concluding remarks"), Some(SectionKind::Conclusion));
        assert_eq!(section_kind("Acknowledgments"), Some(SectionKind::Acknowledgements));
        assert_eq!(section_kind("References"), Some(SectionKind::References));
        assert_eq!(section_kind("Appendix A. Proofs"), Some(SectionKind::Appendix));
        assert_eq!(section_kind("参考文献"), Some(SectionKind::References));
        assert_eq!(section_kind("摘 要"), Some(SectionKind::Abstract));
        assert_eq!(section_kind("摘要："), Some(SectionKind::Abstract));
        assert_eq!(section_kind("参 考 文 献"), Some(SectionKind::References));
        assert_eq!(run_in_label("摘 要：本文研究了推荐系统。"), Some((SectionKind::Abstract, false)));
        assert_eq!(run_in_label("关键词：推荐系统；多准则"), Some((SectionKind::Abstract, true)));
        assert_eq!(run_in_label("本文研究了推荐系统。"), None);
        assert_eq!(section_kind("2.1. S4 objects"), None);
        assert_eq!(strip_numbering("2.1. S4 objects"), "S4 objects");
        assert_eq!(numbering("2.1. S4 objects"), Some(("2.1".into(), 2, 5)));
        assert_eq!(numbering("A.2 Proofs"), Some(("A.2".into(), 2, 4)));
        assert_eq!(numbering("In this paper we"), None);
    }

    #[test]
    fn chinese_numbered_headings() {
        for (title, number, depth, rest) in [
            ("第一章 绪论", "第一章", 1, "绪论"),
            ("第3章研究方法", "第3章", 1, "研究方法"),
            ("第二节 相关工作", "第二节", 2, "相关工作"),
            ("第十二部分 附录", "第十二部分", 1, "附录"),
            ("一、引言", "一、", 1, "引言"),
            ("十一、 结论", "十一、", 1, "结论"),
            ("（一）研究背景", "（一）", 2, "研究背景"),
            ("(二) 数据来源", "(二)", 2, "数据来源"),
            ("1.2 研究方法", "1.2", 2, "研究方法"),
            ("2.3.1研究对象", "2.3.1", 3, "研究对象"),
        ] {
            let (n, d, _) = numbering(title).unwrap_or_else(|| panic!("{title}"));
            assert_eq!((n.as_str(), d), (number, depth), "{title}");
            assert_eq!(strip_numbering(title), rest, "{title}");
        }
        assert_eq!(section_kind("第一章 绪论"), Some(SectionKind::Introduction));
        assert_eq!(section_kind("一、引言"), Some(SectionKind::Introduction));
        assert_eq!(numbering("第一次使用时"), None);
        assert_eq!(numbering("一些说明"), None);
        assert_eq!(numbering("（注意）"), None);
        // A numbered title's first letter is looked at by characters, not bytes.
        assert!(numbered_title("一、引言", 1));
        assert!(numbered_title("第二章 方法", 2));
        assert!(!numbered_title("3 of the 5 runs failed", 6));
    }

    #[test]
    fn code_lines_by_their_text() {
        for code in ["R> x <- rnorm(10)", "> library(kernlab)", "[1] 0.03222066 0.967779343", "int main() {", "<entry key=\"a\"/>", "x <- rbind(a, b)"] {
            assert!(looks_like_code(code, prose_share(code)), "{code}");
        }
        for prose in [
            "The package provides a function (see below) for this.",
            "We use R for the analysis; it is free.",
            "To load the data, in R, one first needs to load the package, using the function library(). The",
        ] {
            assert!(!looks_like_code(prose, prose_share(prose)), "{prose}");
        }
    }

    #[test]
    fn plain_words_and_prose_share() {
        assert!(is_plain_word("(word),"));
        assert!(!is_plain_word("x[1]"));
        assert!(is_plain_word("⟨key⟩,"));
        assert!(is_plain_word("⟨key⟩=⟨value⟩"));
        assert!(!is_plain_word("⟨key⟩x⟨value⟩"));
        assert!(!is_plain_word("⟨⟩"));
        assert!(!is_plain_word("⟨x1⟩"));
        assert!(prose_share("This is a plain sentence.") > 0.99);
        assert!(prose_share("d(u|y, θ, β) = W (y − ZΛ(θ)u − Xβ)") < 0.3);
        assert!(prose_share("图书馆的志愿者每周整理书架。") > 0.9);
    }

    #[test]
    fn captions_and_references() {
        assert!(caption_start("Figure 3: Results of the fit."));
        assert!(caption_start("Table 2. Data"));
        assert!(!caption_start("Figures show that"));
        assert!(reference_like("Chang C, Lin C (2001). LIBSVM: a library for support vector machines."));
        assert!(reference_like("[12] A. Smith, B. Jones. A title. Journal, 2001."));
        assert!(reference_like("Meyer, D., Zeileis, A., and Hornik, K. (2006). The strucplot framework. Journal, 17(3), 1-48."));
        assert!(reference_like("Smith J (ed.) (2001a), A handbook of graphs, Springer, Berlin."));
        assert!(reference_like("张三，李四 (2001). 中文文献的标题. 期刊, 12(3), 1-8."));
        // Prose that cites a work.
        assert!(!reference_like("Hence, as recommended by Overstall and Forster (2010), the package divides each chain into halves, one for fitting, one for the estimate."));
        assert!(!reference_like("Following Segers and Vandewalle (2004), a sensible choice for the threshold, the level, and the rest is made."));
        assert!(!reference_like("Alfons and Templ (2013) describe the package, its data sets, and its functions."));
        // A text of brackets is read in bounded time.
        assert!(!reference_like(&"((((".repeat(100_000)));
        assert!(!reference_like(&"Name (a) ".repeat(50_000)));
        assert!(!reference_like("Morover, a general introduction to package laeken is published as Alfons and Templ (2013). Throughout the paper, the data are used."));
    }
}
