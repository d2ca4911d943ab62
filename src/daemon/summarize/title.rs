//! A document's title when its file names none: the largest text at the top of its first
//! page, as title pages, article first pages and manuals' covers set it. The ranker weighs
//! sentences by the title's terms and reads the names a manual uses from it, so a document
//! summarized from its later pages (the pages after an abstract, a chapter) keeps its title.

use seqgpt_pdf::PageText;

/// At most this many words: a longer run of the largest size is body text set large (a
/// slide, a poster), not a title.
const MAX_WORDS: usize = 30;
/// The title's size against the page's median line size: below it the page has no title
/// typography.
const MIN_RATIO: f32 = 1.2;

/// The title a first page shows: the first run of lines set in the page's largest size
/// (within 5% of it), in its upper half, joined with spaces; `None` when the page has no
/// line clearly larger than its text, or the run is no title (no word of two letters, too
/// long).
pub fn of_first_page(page: &PageText) -> Option<String> {
    let text = |l: &seqgpt_pdf::TextLine| page.text.get(l.start as usize..l.end as usize).unwrap_or("").trim();
    let lines: Vec<_> = page.lines.iter().filter(|l| text(l).chars().any(char::is_alphabetic)).collect();
    let mut sizes: Vec<f32> = lines.iter().map(|l| l.size).filter(|s| s.is_finite() && *s > 0.0).collect();
    if sizes.is_empty() {
        return None;
    }
    sizes.sort_by(f32::total_cmp);
    let median = sizes[sizes.len() / 2];
    let largest = sizes[sizes.len() - 1];
    if largest < MIN_RATIO * median {
        return None;
    }
    // The upper half of the page (y grows upwards), by its area or by the lines' extent.
    let (bottom, top) = match page.area {
        Some([_, y0, _, y1]) => (y0, y1),
        None => lines.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), l| (lo.min(l.bbox[1]), hi.max(l.bbox[3]))),
    };
    let middle = (bottom + top) / 2.0;
    let is_title = |l: &&&seqgpt_pdf::TextLine| l.size >= 0.95 * largest && l.bbox[3] >= middle;
    let start = lines.iter().position(|l| is_title(&l))?;
    let run: Vec<&str> = lines[start..].iter().take_while(|l| is_title(l)).map(|l| text(l)).collect();
    let title = run.join(" ");
    let words = title.split_whitespace().count();
    let worded = title.split(|c: char| !c.is_alphabetic()).any(|w| w.chars().count() >= 2);
    (worded && words <= MAX_WORDS).then_some(title)
}

#[cfg(test)]
mod tests {
    use super::*;
    use seqgpt_pdf::{PageStatus, TextLine};

    /// A page of (text, size, top y) lines on a 612 x 792 area.
    fn page(lines: &[(&str, f32, f32)]) -> PageText {
        let mut text = String::new();
        let mut out = Vec::new();
        for (t, size, y) in lines {
            let start = text.len() as u32;
            text.push_str(t);
            out.push(TextLine {
                start,
                end: text.len() as u32,
                block_start: true,
                bbox: [72.0, y - size, 540.0, *y],
                size: *size,
                text_size: *size,
                mono: 0.0,
                math: 0.0,
                bold: 0.0,
                italic: 0.0,
                superscripts: Vec::new(),
                glyphs: Vec::new(),
            });
            text.push_str("\n\n");
        }
        PageText { number: 1, text, status: PageStatus::Text, lines: out, area: Some([0.0, 0.0, 612.0, 792.0]) }
    }

    #[test]
    fn the_largest_lines_at_the_top_are_the_title() {
        let p = page(&[
            ("The geometry package", 17.0, 700.0),
            ("for page layout", 17.0, 680.0),
            ("Hideo Umeki", 12.0, 650.0),
            ("This package provides a flexible and easy interface to page dimensions.", 10.0, 600.0),
            ("You can change the page layout with intuitive parameters.", 10.0, 588.0),
        ]);
        assert_eq!(of_first_page(&p).as_deref(), Some("The geometry package for page layout"));
    }

    #[test]
    fn a_page_without_title_typography_or_with_large_text_below_has_no_title() {
        let body = ("Text set in the body size all the way down the page.", 10.0, 600.0);
        assert_eq!(of_first_page(&page(&[("A heading in the body size", 10.5, 700.0), body, body])), None);
        // The largest text stands in the lower half: a figure's label, not a title.
        assert_eq!(of_first_page(&page(&[body, body, ("Figure label", 20.0, 200.0)])), None);
        // A drop cap or a page number set large is no title.
        assert_eq!(of_first_page(&page(&[("7", 30.0, 760.0), body, body])), None);
        assert_eq!(of_first_page(&page(&[("T", 30.0, 700.0), body, body])), None);
        assert_eq!(of_first_page(&page(&[])), None);
    }
}
