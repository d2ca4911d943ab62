//! Layout: turn the glyphs of a page into text in reading order.
//!
//! 1. Glyphs are split by writing direction and put in a frame where `p` runs along the
//!    baseline and `s` down the page (in reading order).
//! 2. Lines: glyphs whose baselines are close (relative to the font size) form a line; a line
//!    is cut into segments at wide gaps (columns, table cells), and at narrower ones that the
//!    lines above or below leave blank too (a gutter between columns set close together).
//! 3. Within a segment a space goes where the gap between glyphs exceeds a tenth of the font
//!    size (pdftotext's rule), except between CJK characters; glyphs drawn twice at the same
//!    place (fake bold) count once.
//! 4. Segments stack into blocks (paragraphs): next line below, overlapping horizontally,
//!    similar size and spacing; never two segments of one line.
//! 5. Blocks are ordered by Breuel's rules (above-and-overlapping, or left-of with nothing in
//!    between), which reads columns top to bottom, left to right.
//! 6. Output: lines joined by newlines, a hyphen at the end of a line inside a block joins the
//!    word, a blank line between blocks. Beside the text, each output line is described
//!    ([`TextLine`]): its range in the text, its box and its glyphs' boxes in user space, its
//!    size, the share of its glyphs in monospace, math, bold and italic faces, and its raised
//!    small runs (superscripts).

use super::font::style;
use super::interp::{Glyph, PageContent};
use super::{GlyphBox, TextLine};

/// A gap wider than this many font sizes starts a new segment (column, table cell).
const SEGMENT_GAP: f32 = 1.5;
/// A gap wider than this many font sizes is a space (pdftotext: 0.1).
const SPACE_GAP: f32 = 0.1;
/// Baselines closer than this many font sizes belong to one line.
const LINE_TOL: f32 = 0.5;
/// Most blocks ordered by the topological rules; more fall back to top-to-bottom order.
const MAX_ORDERED_BLOCKS: usize = 400;
/// Most blocks a new line is tried against (keeps hostile pages linear).
const MAX_OPEN_BLOCKS: usize = 256;
/// Most candidate table rows on a page, and neighbours each is compared with.
const MAX_ROWS: usize = 2000;
const ROW_NEIGHBOURS: usize = 8;
/// Rows with more cells than this are not treated as table rows.
const MAX_ROW_CELLS: usize = 64;

#[derive(Clone, Copy)]
struct G {
    p0: f32,
    p1: f32,
    s: f32,
    size: f32,
    idx: usize,
    /// The glyph's font style bits.
    style: u8,
}

/// A page laid out: its text, and a description of each of its lines.
pub(crate) struct Layout {
    pub(crate) text: String,
    pub(crate) lines: Vec<TextLine>,
}

/// User-space point of frame coordinates (p along the baseline, s down the page) for
/// writing direction `rot` (the inverse of [`frame`]).
fn user(rot: u8, p: f32, s: f32) -> (f32, f32) {
    match rot {
        0 => (p, -s),
        1 => (-s, -p),
        2 => (-p, s),
        _ => (s, p),
    }
}

/// The box of frame extent [p0, p1] x [top, bottom] in user space, clamped to `clip`.
fn user_box(rot: u8, p0: f32, p1: f32, top: f32, bottom: f32, clip: Option<[f64; 4]>) -> [f32; 4] {
    let (ax, ay) = user(rot, p0, top);
    let (bx, by) = user(rot, p1, bottom);
    let mut b = [ax.min(bx), ay.min(by), ax.max(bx), ay.max(by)];
    if let Some([x0, y0, x1, y1]) = clip {
        let (x0, y0, x1, y1) = (x0 as f32, y0 as f32, x1 as f32, y1 as f32);
        b = [b[0].clamp(x0, x1), b[1].clamp(y0, y1), b[2].clamp(x0, x1), b[3].clamp(y0, y1)];
    }
    b
}

struct Segment {
    glyphs: Vec<G>,
    p0: f32,
    p1: f32,
    s: f32,
    size: f32,
    /// The line (baseline cluster) the segment was cut from.
    line: usize,
}

struct Block {
    lines: Vec<Segment>,
    p0: f32,
    p1: f32,
    top: f32,
    bottom: f32,
    spacing: f32,
}

fn frame(g: &Glyph) -> (f32, f32) {
    match g.rot {
        0 => (g.x, -g.y),
        1 => (-g.y, -g.x),
        2 => (-g.x, g.y),
        _ => (g.y, g.x),
    }
}

/// Characters of scripts written without spaces between words (Chinese, Japanese: Han, kana,
/// CJK punctuation, full-width forms). Hangul is not one: Korean separates words by spaces.
fn unspaced_script(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x2FDF | 0x2FF0..=0x303F | 0x3040..=0x30FF | 0x3100..=0x312F | 0x3190..=0x31FF
        | 0x3200..=0x33FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60 | 0xFFE0..=0xFFE6 | 0x20000..=0x3FFFF)
}

/// Lay out a page's glyphs. `bbox` is the visible page area (x0, y0, x1, y1) in user space;
/// glyphs wholly outside it are dropped, as pdftotext does.
pub(crate) fn layout(page: &PageContent, bbox: Option<[f64; 4]>) -> Layout {
    let text = page.text.as_str();
    let inside = |g: &Glyph| -> bool {
        let Some([x0, y0, x1, y1]) = bbox else { return true };
        let m = f64::from(g.size.abs()).max(1.0);
        let (x, y) = (f64::from(g.x), f64::from(g.y));
        x >= x0 - m && x <= x1 + m && y >= y0 - m && y <= y1 + m
    };
    let mut out = String::new();
    let mut out_lines: Vec<TextLine> = Vec::new();
    let mut counts = [0usize; 4];
    for g in &page.glyphs {
        counts[usize::from(g.rot & 3)] += 1;
    }
    let mut rots: Vec<u8> = (0..4u8).filter(|&r| counts[usize::from(r)] > 0).collect();
    rots.sort_by_key(|&r| std::cmp::Reverse(counts[usize::from(r)]));
    for rot in rots {
        let mut gs: Vec<G> = page
            .glyphs
            .iter()
            .enumerate()
            .filter(|(_, g)| g.rot == rot && inside(g) && g.size > 0.0)
            .map(|(idx, g)| {
                let (p, s) = frame(g);
                G { p0: p, p1: p + g.adv.max(0.0), s, size: g.size, idx, style: g.style }
            })
            .collect();
        if gs.is_empty() {
            continue;
        }
        let segments = lines(&mut gs, &page.glyphs, text);
        let blocks = blocks(segments);
        let units = row_units(&blocks);
        let order = reading_order(&units.iter().map(|u| u.bbox).collect::<Vec<_>>());
        for bi in order.into_iter().filter_map(|u| units.get(u)).flat_map(|u| u.blocks.iter().copied()) {
            let Some(b) = blocks.get(bi) else { continue };
            let mut block_text = String::new();
            let mut block_lines: Vec<TextLine> = Vec::new();
            for (li, line) in b.lines.iter().enumerate() {
                let (t, placed) = line_text(line, &page.glyphs, text);
                if t.is_empty() {
                    continue;
                }
                let start = block_text.len();
                block_text.push_str(&t);
                block_lines.push(describe(line, &placed, start, &t, rot, bbox));
                let last_line = li + 1 == b.lines.len();
                if !last_line && dehyphenate(&mut block_text) {
                    if let Some(l) = block_lines.last_mut() {
                        l.end = block_text.len() as u32;
                        l.glyphs.retain(|g| (g.start as usize) < block_text.len());
                    }
                    continue;
                }
                block_text.push('\n');
            }
            if !block_text.trim().is_empty() {
                let base = out.len() as u32;
                for (i, mut l) in block_lines.into_iter().enumerate() {
                    l.start += base;
                    l.end += base;
                    l.block_start = i == 0;
                    l.superscripts.iter_mut().for_each(|r| *r = (r.0 + base, r.1 + base));
                    l.glyphs.iter_mut().for_each(|g| g.start += base);
                    out_lines.push(l);
                }
                out.push_str(&block_text);
                out.push('\n');
            }
        }
    }
    Layout { text: out, lines: out_lines }
}

/// The description of one output line whose text starts at byte `start` of its block's text;
/// `placed` pairs each glyph's byte offset within the line's text with the glyph.
fn describe(seg: &Segment, placed: &[(u32, G)], start: usize, line: &str, rot: u8, clip: Option<[f64; 4]>) -> TextLine {
    let len = line.len();
    let top = |g: &G| g.s - 0.85 * g.size;
    let bottom = |g: &G| g.s + 0.25 * g.size;
    let glyphs: Vec<GlyphBox> =
        placed.iter().map(|(off, g)| GlyphBox { start: start as u32 + off, bbox: user_box(rot, g.p0, g.p1, top(g), bottom(g), clip) }).collect();
    let (mut mono, mut math, mut bold, mut italic) = (0usize, 0usize, 0usize, 0usize);
    for (_, g) in placed {
        let st = g.style;
        mono += usize::from(st & style::MONOSPACE != 0);
        math += usize::from(st & style::MATH != 0);
        bold += usize::from(st & style::BOLD != 0);
        italic += usize::from(st & style::ITALIC != 0);
    }
    let n = placed.len().max(1) as f32;
    // Superscripts: glyphs clearly smaller than the line's and raised above its baseline.
    let mut superscripts: Vec<(u32, u32)> = Vec::new();
    for (i, (off, g)) in placed.iter().enumerate() {
        let raised = g.size <= 0.8 * seg.size && g.s < seg.s - 0.15 * seg.size;
        if !raised {
            continue;
        }
        let from = start as u32 + off;
        // To the next glyph, spaces between them left out.
        let next = placed.get(i + 1).map_or(len, |(o, _)| *o as usize);
        let to = start as u32 + line[..next].trim_end().len().max(*off as usize + 1) as u32;
        match superscripts.last_mut() {
            Some(last) if last.1 == from => last.1 = to,
            _ => superscripts.push((from, to)),
        }
    }
    let mut sizes: Vec<f32> = placed.iter().map(|(_, g)| g.size).collect();
    sizes.sort_by(f32::total_cmp);
    let median = sizes.get(sizes.len() / 2).copied().unwrap_or(seg.size);
    // A line that opens larger than its median opens with a heading run into it.
    let text_size = placed.first().map_or(median, |(_, g)| g.size.max(median));
    let (p0, p1) = (seg.p0, seg.p1);
    let t = placed.iter().map(|(_, g)| top(g)).fold(f32::MAX, f32::min).min(seg.s - 0.85 * seg.size);
    let b = placed.iter().map(|(_, g)| bottom(g)).fold(f32::MIN, f32::max).max(seg.s + 0.25 * seg.size);
    TextLine {
        start: start as u32,
        end: (start + len) as u32,
        block_start: false,
        bbox: user_box(rot, p0, p1, t, b, clip),
        size: seg.size,
        text_size,
        mono: mono as f32 / n,
        math: math as f32 / n,
        bold: bold as f32 / n,
        italic: italic as f32 / n,
        superscripts,
        glyphs,
    }
}

/// Remove a trailing hyphen that breaks a word across lines; true if removed.
fn dehyphenate(s: &mut String) -> bool {
    let mut it = s.chars().rev();
    if it.next() != Some('-') {
        return false;
    }
    if !it.next().is_some_and(char::is_alphabetic) {
        return false;
    }
    s.pop();
    true
}

/// The text of a glyph.
fn glyph_text<'t>(text: &'t str, g: &Glyph) -> &'t str {
    text.get(g.start as usize..(g.start as usize).saturating_add(g.len as usize)).unwrap_or("")
}

/// Group glyphs into line segments.
fn lines(gs: &mut [G], glyphs: &[Glyph], text: &str) -> Vec<Segment> {
    gs.sort_by(|a, b| a.s.total_cmp(&b.s).then(a.p0.total_cmp(&b.p0)));
    let mut clusters: Vec<Vec<G>> = Vec::new();
    let mut cur: Vec<G> = Vec::new();
    let (mut ref_s, mut ref_size) = (0f32, 0f32);
    for &g in gs.iter() {
        if !cur.is_empty() && (g.s - ref_s).abs() <= LINE_TOL * g.size.max(ref_size) {
            if g.size > ref_size {
                ref_s = g.s;
                ref_size = g.size;
            }
            cur.push(g);
            continue;
        }
        if !cur.is_empty() {
            clusters.push(std::mem::take(&mut cur));
        }
        ref_s = g.s;
        ref_size = g.size;
        cur.push(g);
    }
    if !cur.is_empty() {
        clusters.push(cur);
    }
    let mut rows: Vec<Vec<G>> = Vec::with_capacity(clusters.len());
    for mut cl in clusters {
        cl.sort_by(|a, b| a.p0.total_cmp(&b.p0).then(glyphs[a.idx].seq.cmp(&glyphs[b.idx].seq)));
        // Drop glyphs drawn twice at (almost) the same place with the same text (fake bold,
        // shadows).
        let mut kept: Vec<G> = Vec::with_capacity(cl.len());
        for g in cl {
            let dup = kept.iter().rev().take(4).any(|k| {
                (k.p0 - g.p0).abs() < 0.15 * g.size
                    && (k.s - g.s).abs() < 0.15 * g.size
                    && glyph_text(text, &glyphs[k.idx]) == glyph_text(text, &glyphs[g.idx])
            });
            if !dup {
                kept.push(g);
            }
        }
        rows.push(kept);
    }
    let mut segments = Vec::new();
    for (line, row) in rows.iter().enumerate() {
        let mut seg: Vec<G> = Vec::new();
        let mut end = f32::MIN;
        for (k, &g) in row.iter().enumerate() {
            let gap = g.p0 - end;
            if !seg.is_empty() && (gap > SEGMENT_GAP * g.size.max(1.0) || gutter(&rows, line, k, end)) {
                segments.push(make_segment(std::mem::take(&mut seg), line));
                end = f32::MIN;
            }
            end = end.max(g.p1);
            seg.push(g);
        }
        if !seg.is_empty() {
            segments.push(make_segment(seg, line));
        }
    }
    segments
}

/// A gap this many font sizes wide may be a column gutter (narrower ones are word spaces).
const GUTTER_GAP: f32 = 0.8;
/// Text beside a gutter spans at least this many font sizes (a column, not a list label, a
/// table cell or a page number): left of it on the line itself, on both sides on the lines
/// around it.
const GUTTER_SIDE: f32 = 10.0;
/// Lines above and below that are asked whether they leave the gap blank.
const GUTTER_NEIGHBOURS: usize = 6;

/// Whether the gap in `rows[line]` before glyph `k` (from `end`) is a column gutter that is
/// narrower than a segment gap: two columns set close together (1 to 1.5 font sizes apart,
/// as some proceedings templates do), which a wide gap alone does not tell from a loose word
/// space. It is one when the line holds a column's width of text before it, and the
/// lines above it, or those below it, that reach across the gap's middle with a column's
/// width of text on either side leave it blank too
/// (a river of white down the page, which word spaces never line up to form): at least three
/// of them, and four in five. Monospace text keeps its spaces: code aligns its columns on purpose.
fn gutter(rows: &[Vec<G>], line: usize, k: usize, end: f32) -> bool {
    let row = &rows[line];
    let (first, g) = (&row[0], &row[k]);
    let size = g.size.max(1.0);
    let gap = g.p0 - end;
    let mono = |g: &G| g.style & style::MONOSPACE != 0;
    if gap <= GUTTER_GAP * size || mono(g) || mono(&row[k - 1]) || end - first.p0 < GUTTER_SIDE * size {
        return false;
    }
    let (mid, half) = ((end + g.p0) / 2.0, 0.3 * size);
    // (lines that reach a column's width across the gap's middle on both sides, those of
    // them that leave it blank: a contents page's column of page numbers is no column)
    let count = |others: &[Vec<G>]| {
        let (mut spanning, mut clear) = (0usize, 0usize);
        for other in others {
            let (Some(a), Some(b)) = (other.first(), other.last()) else { continue };
            let reach = GUTTER_SIDE * size;
            if a.p0 > mid - reach || other.iter().map(|o| o.p1).fold(b.p1, f32::max) < mid + reach {
                continue;
            }
            spanning += 1;
            // The row is sorted by left end; glyphs are narrow, so only those starting within
            // a few font sizes left of the gap can reach into it.
            let from = other.partition_point(|o| o.p0 < mid - half - 4.0 * size);
            if !other[from..].iter().take_while(|o| o.p0 < mid + half).any(|o| o.p1 > mid - half) {
                clear += 1;
            }
        }
        clear >= 3 && clear * 5 >= spanning * 4
    };
    // Above or below: a column's first line has a line across the page above it (a title, a
    // figure's caption), its last one a line across the page below it.
    count(&rows[line.saturating_sub(GUTTER_NEIGHBOURS)..line]) || count(&rows[line + 1..(line + 1 + GUTTER_NEIGHBOURS).min(rows.len())])
}

fn make_segment(glyphs: Vec<G>, line: usize) -> Segment {
    let p0 = glyphs.iter().map(|g| g.p0).fold(f32::MAX, f32::min);
    let p1 = glyphs.iter().map(|g| g.p1).fold(f32::MIN, f32::max);
    // Baseline and size of the line: those of its largest glyph.
    let main = glyphs.iter().max_by(|a, b| a.size.total_cmp(&b.size)).copied();
    let (s, size) = main.map(|g| (g.s, g.size)).unwrap_or((0.0, 1.0));
    Segment { glyphs, p0, p1: p1.max(p0), s, size, line }
}

/// The text of a line, and each placed glyph with its byte offset in that text.
fn line_text(seg: &Segment, glyphs: &[Glyph], text: &str) -> (String, Vec<(u32, G)>) {
    let mut s = String::new();
    let mut placed: Vec<(u32, G)> = Vec::new();
    let mut prev_end: Option<f32> = None;
    let mut prev_char: Option<char> = None;
    let mut pending_space = false;
    for g in &seg.glyphs {
        let t = glyph_text(text, &glyphs[g.idx]);
        if t.trim().is_empty() {
            // A space glyph (or one without text): a word break if it is a real space.
            if t.contains(' ') && !s.is_empty() {
                pending_space = true;
            }
            prev_end = Some(prev_end.map_or(g.p1, |e: f32| e.max(g.p1)));
            continue;
        }
        let first = t.chars().next();
        if let (Some(end), Some(pc), Some(fc)) = (prev_end, prev_char, first) {
            let gap = g.p0 - end;
            let wide = gap > SPACE_GAP * g.size;
            let cjk_pair = unspaced_script(pc) && unspaced_script(fc);
            let space = if cjk_pair { gap > g.size } else { wide || pending_space };
            if space && !s.ends_with(' ') {
                s.push(' ');
            }
        }
        pending_space = false;
        placed.push((s.len() as u32, *g));
        s.push_str(t);
        prev_char = t.chars().next_back();
        prev_end = Some(g.p1.max(g.p0));
    }
    s.truncate(s.trim_end().len());
    let lead = s.len() - s.trim_start().len();
    if lead > 0 {
        s.drain(..lead);
        placed.retain(|(o, _)| *o as usize >= lead);
        placed.iter_mut().for_each(|(o, _)| *o -= lead as u32);
    }
    placed.retain(|(o, _)| (*o as usize) < s.len());
    (s, placed)
}

/// The page's line pitch, in font sizes: the most common distance from a line of running text
/// (`running`) to the next one below it (overlapping it, in a similar size), in steps
/// of 0.1; `None` on a page with too
/// few such pairs to tell. 1.2 is single spacing; a double-spaced thesis has about 2.4.
fn line_pitch(segs: &[Segment], running: impl Fn(&Segment) -> bool) -> Option<f32> {
    let mut hist = [0usize; 41];
    let mut pairs = 0usize;
    for (i, a) in segs.iter().enumerate().filter(|(_, a)| running(a)) {
        // The nearest segment below `a` among the next few (they are sorted by `s`).
        let next = segs[i + 1..].iter().take(12).filter(|b| {
            let dy = b.s - a.s;
            dy > 0.3 * a.size && dy <= 4.0 * a.size && (b.size - a.size).abs() <= 0.15 * a.size && b.p1.min(a.p1) - b.p0.max(a.p0) > 0.0
        });
        if let Some(dy) = next.map(|b| b.s - a.s).min_by(f32::total_cmp) {
            hist[((dy / a.size * 10.0).round() as usize).min(40)] += 1;
            pairs += 1;
        }
    }
    let (bin, n) = hist.iter().enumerate().max_by_key(|&(k, &n)| (n, std::cmp::Reverse(k)))?;
    (pairs >= 6 && *n * 2 >= pairs).then_some(bin as f32 / 10.0)
}

/// Stack segments into blocks. Lines join a block up to 1.6 font sizes apart, or, on a page
/// set with wider spacing (1.5- or double-spaced), up to 1.12 times the page's own pitch, so
/// that a paragraph's lines stay together at any spacing while a paragraph's extra space
/// still ends it. The wider reach applies below lines of running text only.
fn blocks(mut segs: Vec<Segment>) -> Vec<Block> {
    segs.sort_by(|a, b| a.s.total_cmp(&b.s).then(a.p0.total_cmp(&b.p0)));
    // Lines of running text: at least 60% of the page's longest, on a line whose every segment
    // is that long (columns side by side are; a contents entry beside its page number, a table
    // row or a label are not, and keep the fixed reach: on a page of contents entries alone,
    // the entries are the longest lines).
    let wide = 0.6 * segs.iter().map(|s| s.p1 - s.p0).fold(0.0f32, f32::max);
    let mut short_lines = std::collections::HashSet::new();
    for seg in segs.iter().filter(|s| s.p1 - s.p0 < wide) {
        short_lines.insert(seg.line);
    }
    let running = |seg: &Segment| seg.p1 - seg.p0 >= wide && !short_lines.contains(&seg.line);
    let reach = line_pitch(&segs, running).map_or(1.6, |p| (p * 1.12).clamp(1.6, 3.5));
    let max_size = segs.iter().map(|s| s.size).fold(0.0f32, f32::max);
    let mut blocks: Vec<Block> = Vec::new();
    // Blocks that may still take a line: the most recent ones whose last line is near enough.
    let mut open: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    for seg in segs {
        open.retain(|&i| blocks[i].lines.last().is_some_and(|l| seg.s - l.s <= reach * max_size));
        let mut best: Option<usize> = None;
        for &i in &open {
            let b = &blocks[i];
            let Some(last) = b.lines.last() else { continue };
            // Segments cut from one line stand side by side (columns), never one above the
            // other, even where the columns' baselines are set a little apart.
            if last.line == seg.line {
                continue;
            }
            let dy = seg.s - last.s;
            let size = seg.size.max(last.size);
            let reach = if running(last) { reach } else { 1.6 };
            if dy <= 0.3 * size || dy > reach * size {
                continue;
            }
            if !(seg.size <= last.size * 1.35 && last.size <= seg.size * 1.35) {
                continue;
            }
            if b.lines.len() >= 2 && dy > b.spacing * 1.35 + 0.1 * size {
                continue;
            }
            let overlap = seg.p1.min(b.p1) - seg.p0.max(b.p0);
            if overlap <= 0.0 {
                continue;
            }
            // The paragraph right above goes on: a block whose last line overlaps this
            // segment before one that only its wider lines reach (two columns whose lines
            // alternate, a block that a line across both columns began); then the nearest.
            let under = |l: &Segment| seg.p1.min(l.p1) > seg.p0.max(l.p0);
            let key = |l: &Segment| (under(l), l.s);
            if best.is_none_or(|j| blocks[j].lines.last().is_some_and(|l| key(l) < key(last))) {
                best = Some(i);
            }
        }
        match best {
            Some(i) => {
                let b = &mut blocks[i];
                let dy = seg.s - b.lines.last().map_or(seg.s, |l| l.s);
                b.spacing = if b.lines.len() == 1 { dy } else { b.spacing.min(dy) };
                b.p0 = b.p0.min(seg.p0);
                b.p1 = b.p1.max(seg.p1);
                b.bottom = b.bottom.max(seg.s);
                b.lines.push(seg);
            }
            None => {
                if open.len() >= MAX_OPEN_BLOCKS {
                    open.pop_front();
                }
                open.push_back(blocks.len());
                blocks.push(Block {
                    p0: seg.p0,
                    p1: seg.p1,
                    top: seg.s - seg.size,
                    bottom: seg.s,
                    spacing: 0.0,
                    lines: vec![seg],
                })
            }
        }
    }
    blocks
}

/// A box in the reading-order sort: (p0, p1, top, bottom).
#[derive(Clone, Copy)]
struct BBox {
    p0: f32,
    p1: f32,
    top: f32,
    bottom: f32,
}

/// What the reading order sorts: a multi-line block, or the one-line blocks cut from the same
/// line (table rows, table-of-contents entries: number, title, page), which read together
/// left to right rather than as columns.
struct Unit {
    blocks: Vec<usize>,
    bbox: BBox,
}

fn row_units(blocks: &[Block]) -> Vec<Unit> {
    use std::collections::{HashMap, HashSet};
    // Candidate rows: one-line blocks cut from the same line.
    let mut rows: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, b) in blocks.iter().enumerate() {
        if let [only] = b.lines.as_slice() {
            rows.entry(only.line).or_default().push(i);
        }
    }
    rows.retain(|_, members| (2..=MAX_ROW_CELLS).contains(&members.len()));
    // A row is a table row only if a nearby row has at least two cells aligned with it (left or
    // right edges): headings of different columns that happen to share a baseline are not.
    let aligned = |a: &[usize], b: &[usize]| -> usize {
        a.iter()
            .filter(|&&x| {
                let (bx, tol) = (&blocks[x], 0.5 * blocks[x].lines[0].size);
                b.iter().any(|&y| (blocks[y].p0 - bx.p0).abs() < tol || (blocks[y].p1 - bx.p1).abs() < tol)
            })
            .count()
    };
    let mut by_pos: Vec<(f32, f32, usize, &Vec<usize>)> = rows
        .iter()
        .take(MAX_ROWS)
        .map(|(line, m)| (blocks[m[0]].lines[0].s, blocks[m[0]].lines[0].size, *line, m))
        .collect();
    by_pos.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut table_rows: HashSet<usize> = HashSet::new();
    for (k, &(s, size, line, members)) in by_pos.iter().enumerate() {
        let near = by_pos[k.saturating_sub(ROW_NEIGHBOURS)..(k + 1 + ROW_NEIGHBOURS).min(by_pos.len())].iter();
        if near.filter(|o| o.2 != line && (o.0 - s).abs() <= 4.0 * size).any(|o| aligned(members, o.3) >= 2 && aligned(o.3, members) >= 2) {
            table_rows.insert(line);
        }
    }
    let mut units: Vec<Unit> = Vec::new();
    let mut unit_of_line: HashMap<usize, usize> = HashMap::new();
    for (i, b) in blocks.iter().enumerate() {
        let bbox = BBox { p0: b.p0, p1: b.p1, top: b.top, bottom: b.bottom };
        let row = match b.lines.as_slice() {
            [only] if table_rows.contains(&only.line) => Some(only.line),
            _ => None,
        };
        if let Some(&u) = row.and_then(|l| unit_of_line.get(&l)) {
            let unit = &mut units[u];
            unit.blocks.push(i);
            unit.bbox = BBox {
                p0: unit.bbox.p0.min(bbox.p0),
                p1: unit.bbox.p1.max(bbox.p1),
                top: unit.bbox.top.min(bbox.top),
                bottom: unit.bbox.bottom.max(bbox.bottom),
            };
            continue;
        }
        if let Some(l) = row {
            unit_of_line.insert(l, units.len());
        }
        units.push(Unit { blocks: vec![i], bbox });
    }
    for u in &mut units {
        u.blocks.sort_by(|&a, &b| blocks[a].p0.total_cmp(&blocks[b].p0));
    }
    units
}

/// Order boxes for reading: topological sort over Breuel's "before" relation.
fn reading_order(blocks: &[BBox]) -> Vec<usize> {
    let n = blocks.len();
    let mut fallback: Vec<usize> = (0..n).collect();
    fallback.sort_by(|&a, &b| blocks[a].top.total_cmp(&blocks[b].top).then(blocks[a].p0.total_cmp(&blocks[b].p0)));
    if !(2..=MAX_ORDERED_BLOCKS).contains(&n) {
        return fallback;
    }
    let overlaps_x = |a: &BBox, b: &BBox| a.p0.max(b.p0) < a.p1.min(b.p1);
    let before = |a: usize, b: usize| -> bool {
        let (ba, bb) = (&blocks[a], &blocks[b]);
        // Rule 1: overlapping horizontally and a is above b.
        if overlaps_x(ba, bb) {
            return ba.top < bb.top || (ba.top == bb.top && a < b);
        }
        // Rule 2: a is left of b and no block between them vertically spans both.
        if ba.p1 <= bb.p0 {
            let (ytop, ybot) = (ba.top.min(bb.top), ba.bottom.max(bb.bottom));
            let blocked = blocks.iter().enumerate().any(|(c, bc)| {
                c != a
                    && c != b
                    && bc.top > ytop.min(ba.bottom)
                    && bc.bottom < ybot
                    && bc.top >= ba.bottom.min(bb.bottom)
                    && bc.p0 < ba.p1
                    && bc.p1 > bb.p0
            });
            return !blocked;
        }
        false
    };
    let mut indeg = vec![0usize; n];
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (a, next) in succ.iter_mut().enumerate() {
        for (b, deg) in indeg.iter_mut().enumerate() {
            if a != b && before(a, b) && !before(b, a) {
                next.push(b);
                *deg += 1;
            }
        }
    }
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    for _ in 0..n {
        // Among blocks with no pending predecessor, the top-most (then left-most) first; a cycle
        // (should not happen) is broken the same way.
        let pick = fallback.iter().copied().find(|&i| !done[i] && indeg[i] == 0).or_else(|| fallback.iter().copied().find(|&i| !done[i]));
        let Some(i) = pick else { break };
        done[i] = true;
        order.push(i);
        for &j in &succ[i] {
            indeg[j] = indeg[j].saturating_sub(1);
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(items: &[(&str, f32, f32, f32)]) -> PageContent {
        // (text, x, y, size): glyphs of width 0.5 * size per char
        let mut p = PageContent::default();
        for (text, x, y, size) in items {
            let mut x = *x;
            for ch in text.chars() {
                let start = p.text.len() as u32;
                p.text.push(ch);
                let len = p.text.len() as u32 - start;
                let seq = p.glyphs.len() as u32;
                p.glyphs.push(Glyph { x, y: *y, adv: 0.5 * size, size: *size, rot: 0, start, len, seq, style: 0 });
                x += 0.5 * size;
            }
        }
        p
    }

    #[test]
    fn words_and_lines() {
        let p = page(&[("Hello", 72.0, 700.0, 10.0), ("world", 100.0, 700.0, 10.0), ("next", 72.0, 688.0, 10.0)]);
        assert_eq!(layout(&p, None).text, "Hello world\nnext\n\n");
    }

    #[test]
    fn two_columns() {
        let p = page(&[
            ("left one", 72.0, 700.0, 10.0),
            ("right one", 300.0, 700.0, 10.0),
            ("left two", 72.0, 688.0, 10.0),
            ("right two", 300.0, 688.0, 10.0),
        ]);
        assert_eq!(layout(&p, None).text, "left one\nleft two\n\nright one\nright two\n\n");
    }

    #[test]
    fn narrow_gutter_splits_columns() {
        // Two columns 1.2 font sizes apart, the right one's baselines set a little lower: a
        // gap that a segment gap alone takes for a word space, but one blank down the page.
        let mut items = Vec::new();
        let (left, right): (Vec<String>, Vec<String>) =
            (1..=6).map(|i| (format!("left column line {i} reads on"), format!("right column line {i} reads"))).unzip();
        for i in 0..6 {
            let y = 700.0 - 12.0 * i as f32;
            let width = 0.5 * 10.0 * left[i].chars().count() as f32;
            items.push((left[i].as_str(), 72.0, y, 10.0));
            items.push((right[i].as_str(), 72.0 + width + 12.0, y - 0.4, 10.0));
        }
        let text = layout(&page(&items), None).text;
        let want = format!("{}\n\n{}\n\n", left.join("\n"), right.join("\n"));
        assert_eq!(text, want);
    }

    #[test]
    fn loose_word_space_keeps_the_line() {
        // One wide space in a justified line, in no other: a word space, not a gutter.
        let p = page(&[
            ("the first line of a paragraph", 72.0, 700.0, 10.0),
            ("goes on", 72.0, 688.0, 10.0),
            ("here", 72.0 + 35.0 + 12.0, 688.0, 10.0),
            ("and ends on its third line", 72.0, 676.0, 10.0),
        ]);
        assert_eq!(layout(&p, None).text, "the first line of a paragraph\ngoes on here\nand ends on its third line\n\n");
    }

    #[test]
    fn table_rows_read_across() {
        // Contents entries: number, title, page; rows too far apart to stack into paragraphs.
        let p = page(&[
            ("1", 72.0, 700.0, 10.0),
            ("Introduction", 100.0, 700.0, 10.0),
            ("3", 500.0, 700.0, 10.0),
            ("2", 72.0, 678.0, 10.0),
            ("Methods", 100.0, 678.0, 10.0),
            ("9", 500.0, 678.0, 10.0),
        ]);
        assert_eq!(layout(&p, None).text, "1\n\nIntroduction\n\n3\n\n2\n\nMethods\n\n9\n\n");
        // Headings of two columns that share a baseline are not a table row.
        let p = page(&[
            ("Left head", 72.0, 700.0, 10.0),
            ("Right head", 300.0, 700.0, 10.0),
            ("left body one", 72.0, 680.0, 10.0),
            ("left body two", 72.0, 668.0, 10.0),
            ("right body", 300.0, 680.0, 10.0),
        ]);
        assert_eq!(layout(&p, None).text, "Left head\n\nleft body one\nleft body two\n\nRight head\n\nright body\n\n");
    }

    #[test]
    fn dehyphenation_cjk_and_korean() {
        let p = page(&[("extrac-", 72.0, 700.0, 10.0), ("tion", 72.0, 688.0, 10.0)]);
        assert_eq!(layout(&p, None).text, "extraction\n\n");
        let p = page(&[("中文", 72.0, 700.0, 10.0), ("字", 84.0, 700.0, 10.0)]);
        assert_eq!(layout(&p, None).text, "中文字\n\n");
        // Korean words keep their spaces.
        let p = page(&[("강남", 72.0, 700.0, 10.0), ("스타일", 85.0, 700.0, 10.0)]);
        assert_eq!(layout(&p, None).text, "강남 스타일\n\n");
    }

    #[test]
    fn lines_describe_their_text_and_place() {
        // A line with a raised small footnote mark, then a second line.
        let mut p = page(&[("Hello world", 72.0, 700.0, 10.0), ("next line", 72.0, 688.0, 10.0)]);
        let start = p.text.len() as u32;
        p.text.push('2');
        let seq = p.glyphs.len() as u32;
        p.glyphs.push(Glyph { x: 127.0, y: 704.0, adv: 3.5, size: 7.0, rot: 0, start, len: 1, seq, style: 0 });
        let laid = layout(&p, Some([0.0, 0.0, 612.0, 792.0]));
        assert_eq!(laid.text, "Hello world2\nnext line\n\n");
        assert_eq!(laid.lines.len(), 2);
        let (a, b) = (&laid.lines[0], &laid.lines[1]);
        assert_eq!(&laid.text[a.start as usize..a.end as usize], "Hello world2");
        assert_eq!(&laid.text[b.start as usize..b.end as usize], "next line");
        assert!(a.block_start && !b.block_start);
        assert_eq!(a.superscripts.len(), 1, "{:?}", a.superscripts);
        assert_eq!(a.superscripts[0].0, a.end - 1);
        assert!(b.superscripts.is_empty());
        // Boxes in user space (y up): the first line above the second, inside the page.
        assert!(a.bbox[1] > b.bbox[1] && a.bbox[0] >= 71.0 && a.bbox[2] <= 131.0, "{:?} {:?}", a.bbox, b.bbox);
        assert!(a.bbox[1] < 700.0 && a.bbox[3] > 700.0);
        assert_eq!(a.glyphs.len(), 11, "one box per glyph, spaces not counted");
        assert_eq!(a.glyphs[0].start, a.start);
    }
}
