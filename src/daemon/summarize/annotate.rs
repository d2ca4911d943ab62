//! A summary as annotations of a copy of its PDF: one highlight per summary sentence (its
//! number and text as the highlight's comment), and one note on the sentences' first page
//! with the whole summary and how it was made. The copy is the original plus an incremental
//! update ([`seqgpt_pdf::annotate`]), so the original's bytes are its prefix. The command line
//! (`seqgpt summarize --annotate`, `seqgpt show`) and the D-Bus option `annotate_fd` both
//! write it from here.

use super::Anchor;
use seqgpt_pdf::{AnnotateError, Annotations, Highlight, Limits};

/// The colour the highlights are drawn in: the yellow of a highlighter pen.
pub const HIGHLIGHT_RGB: [f32; 3] = [1.0, 0.85, 0.1];

/// The annotations that show `sentences` (the summary's anchors) and the summary.
/// `made_by` says how the summary was made (method, model, length), for the note.
pub fn annotations(summary: &str, sentences: &[Anchor], made_by: &str) -> Annotations {
    let n = sentences.len();
    let highlights = sentences
        .iter()
        .enumerate()
        .filter(|(_, a)| !a.boxes.is_empty())
        .map(|(i, a)| Highlight {
            page: a.page,
            boxes: a.boxes.clone(),
            contents: format!("Summary sentence {} of {n}: {}", i + 1, a.text),
        })
        .collect();
    let page = sentences.iter().map(|a| a.page).min().unwrap_or(1);
    Annotations {
        highlights,
        note: Some((page, format!("Summary ({made_by}):\n\n{summary}"))),
        author: "seqgpt".into(),
        color: HIGHLIGHT_RGB,
    }
}

/// Why a summary cannot be shown as highlights, `None` when it can: every sentence of it
/// needs its place on a page.
pub fn unplaceable(sentences: &[Anchor], method: &str) -> Option<String> {
    if sentences.is_empty() {
        return Some(if method == "model" {
            "the summary was written by the model in its own words, so none of its sentences stands in the document to be highlighted".into()
        } else {
            "the summary says nothing of where its sentences stand in the document".into()
        });
    }
    if sentences.iter().all(|a| a.boxes.is_empty()) {
        return Some("the summary's sentences have no boxes on the page (was the input plain text?)".into());
    }
    None
}

/// The original PDF with the summary's annotations appended.
pub fn annotated_copy(pdf: &[u8], summary: &str, sentences: &[Anchor], made_by: &str) -> Result<Vec<u8>, AnnotateError> {
    seqgpt_pdf::annotate(pdf, &annotations(summary, sentences, made_by), &Limits::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchor(page: u32, boxes: Vec<[f32; 4]>) -> Anchor {
        Anchor { text: format!("sentence on page {page}"), page, start: 0, end: 5, boxes }
    }

    #[test]
    fn one_highlight_per_placed_sentence_and_the_note_on_the_first_page() {
        let a = annotations("S.", &[anchor(3, vec![[1.0, 2.0, 3.0, 4.0]]), anchor(2, vec![]), anchor(5, vec![[1.0, 2.0, 3.0, 4.0]])], "how");
        assert_eq!(a.highlights.len(), 2);
        assert_eq!(a.highlights[1].contents, "Summary sentence 3 of 3: sentence on page 5");
        assert_eq!(a.note, Some((2, "Summary (how):\n\nS.".into())));
    }

    #[test]
    fn a_model_summary_cannot_be_placed_and_says_why() {
        assert!(unplaceable(&[], "model").unwrap().contains("model"));
        assert!(unplaceable(&[anchor(1, vec![])], "extractive").unwrap().contains("no boxes"));
        assert_eq!(unplaceable(&[anchor(1, vec![[1.0, 2.0, 3.0, 4.0]])], "extractive"), None);
    }
}
