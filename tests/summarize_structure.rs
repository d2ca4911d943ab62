//! The summarizer's reading of a document's structure, on small PDFs made here: block kinds
//! (prose, headings, code in a monospace face, a formula in a math face, a number table, a
//! caption, a footnote, a reference list), sections, the word budget, and the anchors that
//! point each summary sentence back to its page.

#[path = "pdf/builder.rs"]
mod builder;

use seqgpt_pdf::{extract_text, ExtractOptions};
use seqgpt_daemon::summarize::document::{Block, BlockKind, Document, SectionKind};
use seqgpt_daemon::summarize::structure;
use seqgpt_daemon::summarize::rank::{word_count, Ranker};
use seqgpt_daemon::summarize::compress::summary_text;
use seqgpt_daemon::summarize::pipeline::{Ignore, Input, Pipeline, PipelineSettings};
use seqgpt_daemon::summarize::{Cancel, SummaryOptions};

/// One text line: font resource, size, x, y, text (a PDF literal string's inside).
type L<'a> = (&'a str, f32, f32, f32, &'a str);

fn content(lines: &[L<'_>]) -> Vec<u8> {
    let mut c = String::new();
    for (font, size, x, y, text) in lines {
        c.push_str(&format!("BT /{font} {size} Tf {x} {y} Td ({text}) Tj ET\n"));
    }
    c.into_bytes()
}

/// A document with Times-Roman (/R), Helvetica-Bold (/B), Courier (/C) and Symbol (/S).
fn article(pages: &[Vec<L<'_>>]) -> Vec<u8> {
    let mut pdf = builder::Pdf::new();
    let r = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding /WinAnsiEncoding >>");
    let b = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>");
    let c = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Courier /Encoding /WinAnsiEncoding >>");
    let s = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Symbol >>");
    let resources = format!("<< /Font << /R {r} 0 R /B {b} 0 R /C {c} 0 R /S {s} 0 R >> >>");
    let pages: Vec<(Vec<u8>, String)> = pages.iter().map(|p| (content(p), resources.clone())).collect();
    builder::doc_with_pages(&mut pdf, &pages)
}

fn page_one() -> Vec<L<'static>> {
    vec![
        ("B", 14.0, 72.0, 730.0, "1. Introduction"),
        ("R", 10.0, 72.0, 706.0, "This paper describes a small tool that reads long documents and writes"),
        ("R", 10.0, 72.0, 694.0, "short summaries of them \\(Chang and Lin 2001\\). The summaries keep the"),
        ("R", 10.0, 72.0, 682.0, "sentences that state the point of a document, e.g. its aims and results."),
        ("R", 10.0, 72.0, 670.0, "We present the method in Section 2.1 and compare it with Fig. 3 of et al. work."),
        ("C", 10.0, 72.0, 640.0, "> x <- rnorm\\(10\\)"),
        ("C", 10.0, 72.0, 628.0, "> summary\\(x\\)"),
        ("R", 10.0, 72.0, 600.0, "The tool runs on small devices without a network, and its summaries are"),
        ("R", 10.0, 72.0, 588.0, "made of the document's own sentences, so that nothing is invented."),
        ("S", 12.0, 200.0, 555.0, "a + b = g \\(1\\)"),
        ("R", 10.0, 72.0, 520.0, "Model"),
        ("R", 10.0, 200.0, 520.0, "1.23"),
        ("R", 10.0, 300.0, 520.0, "4.56"),
        ("R", 10.0, 400.0, 520.0, "7.89"),
        ("R", 10.0, 72.0, 506.0, "Linear"),
        ("R", 10.0, 200.0, 506.0, "2.34"),
        ("R", 10.0, 300.0, 506.0, "5.67"),
        ("R", 10.0, 400.0, 506.0, "8.90"),
        ("R", 10.0, 72.0, 492.0, "Quadratic"),
        ("R", 10.0, 200.0, 492.0, "3.45"),
        ("R", 10.0, 300.0, 492.0, "6.78"),
        ("R", 10.0, 400.0, 492.0, "9.01"),
        ("R", 9.0, 72.0, 470.0, "Figure 1: Estimated densities of the two samples of the survey."),
        ("R", 10.0, 72.0, 440.0, "Summaries of this kind help readers decide which documents to read in full,"),
        ("R", 10.0, 72.0, 428.0, "and they point to the page where each of their sentences stands."),
        ("R", 7.0, 72.0, 60.0, "1 The data come from the national survey of the year before the study began."),
    ]
}

fn page_two() -> Vec<L<'static>> {
    vec![
        ("B", 14.0, 72.0, 730.0, "2. Conclusions"),
        ("R", 10.0, 72.0, 706.0, "In summary, the tool writes summaries that readers keep, and it needs no"),
        ("R", 10.0, 72.0, 694.0, "model file: its extractive method reads the structure of each document."),
        ("B", 14.0, 72.0, 660.0, "References"),
        ("R", 10.0, 72.0, 636.0, "Chang C, Lin C \\(2001\\). LIBSVM: a library for support vector machines. Software."),
        ("R", 10.0, 72.0, 612.0, "Erkan G, Radev DR \\(2004\\). LexRank: graph-based lexical centrality. JAIR."),
    ]
}

fn read(bytes: &[u8]) -> Document {
    let mut extracted = extract_text(bytes, &ExtractOptions::default()).unwrap();
    extracted.title = None;
    structure::read(extracted, &Cancel::new()).unwrap()
}

/// The document's blocks, kind and text, for a failed assertion's message.
fn listing(doc: &Document) -> String {
    format!("{:#?}", doc.blocks.iter().map(|b| (b.kind, b.text.as_str())).collect::<Vec<_>>())
}

/// The first block that holds `needle`.
fn block_of<'a>(doc: &'a Document, needle: &str) -> &'a Block {
    doc.blocks.iter().find(|b| b.text.contains(needle)).unwrap_or_else(|| panic!("no block holds {needle:?}: {}", listing(doc)))
}

fn kind_of(doc: &Document, needle: &str) -> BlockKind {
    block_of(doc, needle).kind
}

#[test]
fn block_kinds_of_a_small_article() {
    let doc = read(&article(&[page_one(), page_two()]));
    let show = || listing(&doc);
    assert_eq!(kind_of(&doc, "1. Introduction"), BlockKind::Heading(1), "{}", show());
    assert_eq!(kind_of(&doc, "This paper describes"), BlockKind::Prose, "{}", show());
    assert_eq!(kind_of(&doc, "rnorm"), BlockKind::Code, "{}", show());
    assert_eq!(kind_of(&doc, "="), BlockKind::Math, "{}", show());
    assert_eq!(kind_of(&doc, "4.56"), BlockKind::Table, "{}", show());
    assert_eq!(kind_of(&doc, "Figure 1:"), BlockKind::Caption, "{}", show());
    assert_eq!(kind_of(&doc, "national survey"), BlockKind::Footnote, "{}", show());
    assert_eq!(kind_of(&doc, "LIBSVM"), BlockKind::Reference, "{}", show());
    assert_eq!(kind_of(&doc, "In summary"), BlockKind::Prose, "{}", show());
    // Sections and their kinds.
    let kinds: Vec<SectionKind> = doc.sections.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, vec![SectionKind::Front, SectionKind::Introduction, SectionKind::Conclusion, SectionKind::References], "{:?}", doc.sections);
    // Prose blocks only go to the model.
    let prose: Vec<String> = doc.prose_paragraphs().into_iter().map(|p| p.text).collect();
    assert!(prose.iter().all(|p| !p.contains("rnorm") && !p.contains("4.56") && !p.contains("LIBSVM") && !p.contains("Figure 1")), "{prose:?}");
}

#[test]
fn sentences_survive_citations_abbreviations_and_line_breaks() {
    let doc = read(&article(&[page_one(), page_two()]));
    let ranker = Ranker::new(&doc, &Cancel::new()).unwrap();
    // The sentences as the splitter cut them from their blocks.
    let texts: Vec<&str> = ranker.sentences.iter().map(|s| &doc.blocks[s.block].text[s.range.clone()]).collect();
    assert!(texts.contains(&"This paper describes a small tool that reads long documents and writes short summaries of them (Chang and Lin 2001)."), "{texts:#?}");
    // As a summary shows it, without its citation.
    assert!(ranker.sentences.iter().any(|s| s.text == "This paper describes a small tool that reads long documents and writes short summaries of them."));
    assert!(texts.contains(&"The summaries keep the sentences that state the point of a document, e.g. its aims and results."), "{texts:#?}");
    assert!(texts.contains(&"We present the method in Section 2.1 and compare it with Fig. 3 of et al. work."), "{texts:#?}");
    // No sentence of code, tables or references is a candidate.
    for s in &ranker.sentences {
        assert!(!s.text.contains("rnorm") && !s.text.contains("LIBSVM"), "{}", s.text);
    }
}

#[test]
fn the_word_budget_holds_and_is_filled() {
    let doc = read(&article(&[page_one(), page_two()]));
    let ranker = Ranker::new(&doc, &Cancel::new()).unwrap();
    let prose_words: usize = ranker.sentences.iter().filter(|s| s.candidate).map(|s| s.words).sum();
    for budget in [10, 25, 40, 60, 80] {
        let chosen = ranker.select(budget, |_| true);
        let words: usize = chosen.iter().map(|&i| ranker.sentences[i].words).sum();
        assert!(words <= budget, "{words} words for a budget of {budget}");
        assert_eq!(word_count(&ranker.render(&chosen, seqgpt_daemon::summarize::Style::Paragraph, budget)), words);
        if prose_words >= budget && budget >= 40 {
            assert!(words * 100 >= budget * 85, "{words} words fill less than 85% of {budget}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anchors_point_to_the_sentence_on_its_page() {
    let bytes = article(&[page_one(), page_two()]);
    let pages = extract_text(&bytes, &ExtractOptions::default()).unwrap().pages;
    let pipeline = Pipeline::new(None, None, PipelineSettings::default());
    let opts = SummaryOptions { max_words: Some(70), ..Default::default() };
    let s = pipeline.summarize(Input::Pdf { bytes: bytes.clone(), permit: None }, &opts, &mut Ignore, &Cancel::new()).await.unwrap();
    assert!(!s.sentences.is_empty());
    assert!(word_count(&s.text) <= 70, "{}", s.text);
    for a in &s.sentences {
        assert!(s.text.contains(&a.text), "{} not in {}", a.text, s.text);
        let page = &pages[a.page as usize - 1];
        let on_page: String = page.text.chars().skip(a.start as usize).take((a.end - a.start) as usize).collect();
        let flat = on_page.split_whitespace().collect::<Vec<_>>().join(" ");
        // The whole sentence on the page; the summary leaves its citations out.
        assert_eq!(summary_text(&flat), a.text, "page {} characters {}..{}", a.page, a.start, a.end);
        assert!(!a.boxes.is_empty());
        let [x0, y0, x1, y1] = page.area.unwrap();
        for b in &a.boxes {
            assert!(b[0] >= x0 && b[1] >= y0 && b[2] <= x1 && b[3] <= y1 && b[0] <= b[2] && b[1] <= b[3], "{b:?} outside the page");
        }
    }
    // Plain text: the same, without boxes.
    let text = "First page sentence that says something about the topic at hand.\u{000C}Second page has a sentence about other things entirely.";
    let s = pipeline.summarize(Input::Text(text.into()), &SummaryOptions::default(), &mut Ignore, &Cancel::new()).await.unwrap();
    assert!(!s.sentences.is_empty(), "no anchors for a text with two sentences: {:?}", s.text);
    for a in &s.sentences {
        let page = text.split('\u{000C}').nth(a.page as usize - 1).unwrap();
        let on_page: String = page.chars().skip(a.start as usize).take((a.end - a.start) as usize).collect();
        assert_eq!(on_page, a.text);
        assert!(a.boxes.is_empty());
    }
}

/// A number table of three rows at `y` (14 points apart).
fn table_at(y: f32) -> Vec<L<'static>> {
    let rows = [["Linear", "2.34", "5.67"], ["Quadratic", "3.45", "6.78"], ["Cubic", "4.56", "7.89"]];
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        for (k, cell) in row.iter().enumerate() {
            out.push(("R", 10.0, 72.0 + 150.0 * k as f32, y - 14.0 * i as f32, *cell));
        }
    }
    out
}

#[test]
fn a_sentence_the_page_sets_around_a_table_is_read_whole() {
    let mut page = vec![
        ("R", 10.0, 72.0, 730.0, "The tool reads every page of a long document and keeps the few sentences that"),
        ("R", 10.0, 72.0, 718.0, "a reader needs, and it measures how well they match what the authors wrote in"),
    ];
    page.extend(table_at(690.0));
    page.extend([
        ("R", 10.0, 72.0, 640.0, "their own abstract, so that the summary can be trusted by the people who read it."),
        ("R", 10.0, 72.0, 628.0, "The measurements are repeated on documents of many kinds and many sources."),
    ]);
    let doc = read(&article(&[page]));
    let show = || listing(&doc);
    assert_eq!(kind_of(&doc, "2.34"), BlockKind::Table, "{}", show());
    let ranker = Ranker::new(&doc, &Cancel::new()).unwrap();
    let texts: Vec<&str> = ranker.sentences.iter().map(|s| s.text.as_str()).collect();
    let whole = "The tool reads every page of a long document and keeps the few sentences that a reader needs, and it measures how well \
                 they match what the authors wrote in their own abstract, so that the summary can be trusted by the people who read it.";
    assert!(texts.contains(&whole), "{texts:#?}");
    assert!(ranker.sentences.iter().all(|s| !s.text.starts_with("their own abstract")), "{texts:#?}");
}

#[test]
fn a_running_header_before_a_table_is_no_sentence_start() {
    // A one-line running header, a table at the top of the page, then a paragraph that goes on
    // from the page before (not given): the header and the paragraph stay apart.
    let mut page = vec![("R", 10.0, 72.0, 760.0, "Journal of Statistical Tools and Their Uses")];
    page.extend(table_at(730.0));
    page.extend([
        ("R", 10.0, 72.0, 680.0, "observations on the number of faults in rolls of a textile fabric are counted"),
        ("R", 10.0, 72.0, 668.0, "for each roll. The model is fitted to these counts with two components."),
    ]);
    let doc = read(&article(&[page]));
    let show = || listing(&doc);
    let header = doc.blocks.iter().find(|b| b.text.contains("Journal of Statistical")).unwrap_or_else(|| panic!("{}", show()));
    assert!(!header.text.contains("observations"), "{}", show());
}

#[test]
fn notes_that_fill_more_than_the_bottom_fifth_are_notes() {
    // A critical edition's page: the text, then its notes in a smaller size, from below the
    // text down to the page's foot, more than a fifth of the page high. A quotation set small
    // between two paragraphs of text is no note.
    let mut page = vec![
        ("R", 10.0, 72.0, 730.0, "The edition prints the text of the poem with its variant readings and notes."),
        ("R", 10.0, 72.0, 718.0, "Every line of the text is numbered, so that a note can say which line it is on."),
        ("R", 8.0, 90.0, 696.0, "A quotation from the preface is set in a smaller size between the paragraphs."),
        ("R", 10.0, 72.0, 674.0, "The notes below the text give the readings of the other manuscripts in full."),
    ];
    let notes = [
        "1 Tous ] The first manuscript reads the same word here, with a different spelling of it.",
        "2 rois ] The second manuscript leaves this word out, and the third adds a gloss above it.",
        "3 Grece ] The fourth manuscript has a longer form of the name, which the editors keep.",
    ];
    for (i, note) in notes.iter().cycle().take(9).enumerate() {
        page.push(("R", 8.0, 72.0, 400.0 - 11.0 * i as f32, note));
    }
    let doc = read(&article(&[page_one(), page]));
    let show = || listing(&doc);
    assert_eq!(kind_of(&doc, "The first manuscript"), BlockKind::Footnote, "{}", show());
    assert_eq!(kind_of(&doc, "A quotation from the preface"), BlockKind::Prose, "{}", show());
    assert_eq!(kind_of(&doc, "The notes below the text"), BlockKind::Prose, "{}", show());
    let ranker = Ranker::new(&doc, &Cancel::new()).unwrap();
    assert!(ranker.sentences.iter().all(|s| !s.text.contains("manuscript reads") && !s.text.contains("leaves this word")), "{}", show());
}

#[test]
fn labels_in_the_margin_are_not_part_of_the_text() {
    // A package manual's page: the name of each documented command set small in the margin,
    // beside the first line of its description. A word of the text's own size that hangs
    // left of the column is text.
    let page = vec![
        ("B", 14.0, 100.0, 730.0, "2. Commands"),
        ("R", 10.0, 100.0, 706.0, "The package defines two commands that change how the items of a list look."),
        ("R", 10.0, 100.0, 694.0, "Both take the style as their argument and apply it to the lists that follow."),
        ("C", 8.0, 72.8, 670.0, "\\\\foo"),
        ("R", 10.0, 100.0, 670.0, "Define the style of the items of a list, as the next lines say in full."),
        ("R", 10.0, 100.0, 658.0, "The style names a counter and the text that stands before and after it."),
        ("R", 10.0, 76.0, 634.0, "very"),
        ("R", 10.0, 100.0, 634.0, "careful readers will note that the style applies to nested lists too."),
        ("R", 10.0, 100.0, 622.0, "It also applies to the lists of the appendix and of the index."),
    ];
    let doc = read(&article(&[page]));
    let show = || listing(&doc);
    let described = doc.blocks.iter().find(|b| b.text.contains("Define the style")).unwrap_or_else(|| panic!("{}", show()));
    assert_eq!(described.kind, BlockKind::Prose, "{}", show());
    assert!(described.text.starts_with("Define the style of the items"), "{}", show());
    assert!(!doc.blocks.iter().any(|b| b.text.contains("\\foo")), "{}", show());
    assert!(doc.blocks.iter().any(|b| b.text.contains("very careful readers")), "{}", show());
}

/// A page whose last paragraph breaks off mid-sentence ("... but the"); the next page goes on
/// with "spatio-temporal model would use ...".
fn paragraph_cut_at_page_end() -> Vec<L<'static>> {
    vec![
        ("B", 14.0, 72.0, 730.0, "4. Results"),
        ("R", 10.0, 72.0, 706.0, "The cross-validation shows hardly any gain of the spatio-temporal models."),
        ("R", 10.0, 72.0, 694.0, "An irregularly sampled data set would benefit more, as spatially close but"),
        ("R", 10.0, 72.0, 682.0, "unobserved locations are of no help in a purely spatial approach, but the"),
    ]
}

#[test]
fn a_column_of_row_names_is_no_prose() {
    // A paragraph runs on to the next page, whose top holds a table: a column of row names
    // (short lines, no sentence) beside the numbers. The names are not part of the text.
    let first = paragraph_cut_at_page_end();
    let second = vec![
        ("R", 10.0, 72.0, 730.0, "pure spatial"),
        ("R", 10.0, 72.0, 718.0, "separable"),
        ("R", 10.0, 72.0, 706.0, "product-sum"),
        ("R", 10.0, 72.0, 694.0, "sum-metric"),
        ("R", 10.0, 250.0, 730.0, "6.15"),
        ("R", 10.0, 250.0, 718.0, "6.08"),
        ("R", 10.0, 250.0, 706.0, "6.08"),
        ("R", 10.0, 250.0, 694.0, "6.11"),
        ("R", 10.0, 72.0, 640.0, "spatio-temporal model would use the value observed nearby at another time."),
        ("R", 10.0, 72.0, 628.0, "Gaps in time series can be filled in the same way, from the neighbours."),
    ];
    let doc = read(&article(&[first, second]));
    let show = || listing(&doc);
    assert_ne!(kind_of(&doc, "separable"), BlockKind::Prose, "{}", show());
    assert!(doc.blocks.iter().any(|b| b.kind == BlockKind::Prose && b.text.contains("but the spatio-temporal model would use")), "{}", show());
}

#[test]
fn a_table_header_row_is_no_prose() {
    // A paragraph runs on to the next page, whose top holds a table's header row: one line of
    // cells set far apart (word spacing 12), read as one line of text. The row is no
    // continuation of the paragraph.
    let first = paragraph_cut_at_page_end();
    let second = vec![
        ("R", 10.0, 72.0, 640.0, "spatio-temporal model would use the value observed nearby at another time."),
        ("R", 10.0, 72.0, 628.0, "Gaps in time series can be filled in the same way, from the neighbours."),
        ("R", 10.0, 72.0, 616.0, "The same holds for the stations that were left out of the model fit."),
    ];
    let with_header = |spacing: f32| {
        let mut pdf = builder::Pdf::new();
        let r = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding /WinAnsiEncoding >>");
        let b = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>");
        let resources = format!("<< /Font << /R {r} 0 R /B {b} 0 R >> >>");
        let mut top = format!("BT /R 10 Tf {spacing} Tw 150 730 Td (wMSE neigh. RMSE MAE) Tj 0 Tw ET\n").into_bytes();
        top.extend(content(&second));
        read(&builder::doc_with_pages(&mut pdf, &[(content(&first), resources.clone()), (top, resources)]))
    };
    let doc = with_header(12.0);
    let show = || listing(&doc);
    assert!(doc.blocks.iter().any(|b| b.text == "wMSE neigh. RMSE MAE"), "{}", show());
    assert!(doc.blocks.iter().all(|b| b.kind != BlockKind::Prose || !b.text.contains("RMSE")), "{}", show());
    assert!(doc.blocks.iter().any(|b| b.kind == BlockKind::Prose && b.text.contains("but the spatio-temporal model would use")), "{}", show());
}

/// A numbered item whose first line is short of a sentence's end reads like a numbered
/// heading; the lowercase line under it (a hanging indent) continues the item, as a reader
/// reads it, and the item's sentence is whole.
#[test]
fn a_list_item_goes_on_under_its_first_line() {
    let page = vec![
        ("R", 10.0, 72.0, 706.0, "The six major features of the program are listed below, in the order of the sections:"),
        ("R", 10.0, 80.0, 694.0, "1.      Concurrent access and conflict-resolution algorithms to guarantee that source"),
        ("R", 10.0, 110.0, 682.0, "changes are never lost when two developers edit the same file."),
        ("R", 10.0, 80.0, 670.0, "2.      Support for tracking the source distributions of other vendors."),
    ];
    let doc = read(&article(&[page]));
    let show = || listing(&doc);
    let item = block_of(&doc, "Concurrent access");
    assert_eq!(item.kind, BlockKind::ListItem, "{}", show());
    assert!(item.text.contains("changes are never lost"), "{}", show());
    assert_eq!(kind_of(&doc, "Support for tracking"), BlockKind::ListItem, "{}", show());
}

/// A line that opens with the punctuation or the bracketed abbreviation of a sentence a
/// line break cut (", the output", "(EM) algorithm") is no list item: the sentence is read
/// whole, its words kept.
#[test]
fn punctuation_at_a_line_start_is_no_bullet() {
    let page = vec![
        ("R", 10.0, 72.0, 706.0, "The format permits a natural interplay between code written in R"),
        ("R", 10.0, 72.0, 694.0, ", the output of that code, and commentary on the code. The function for"),
        ("R", 10.0, 72.0, 682.0, "maximum likelihood estimation with the Expectation-Maximization"),
        ("R", 10.0, 72.0, 670.0, "\\(EM\\) algorithm is described in detail in the next section of this guide."),
    ];
    let doc = read(&article(&[page]));
    let show = || listing(&doc);
    assert_eq!(doc.blocks.iter().filter(|b| !b.text.trim().is_empty()).count(), 1, "{}", show());
    assert_eq!(kind_of(&doc, "natural interplay"), BlockKind::Prose, "{}", show());
    assert!(doc.blocks[0].text.contains("(EM) algorithm is described"), "{}", show());
}

/// A list item that a page break cuts goes on on the next page, as a paragraph does.
#[test]
fn a_list_item_goes_on_across_a_page_break() {
    let one = vec![
        ("R", 10.0, 72.0, 706.0, "The fitting functions are listed below, with what each one of them does:"),
        ("R", 10.0, 80.0, 100.0, "1.      The optimizers with box constraints are the two algorithms that are them-"),
    ];
    let two = vec![("R", 10.0, 110.0, 706.0, "selves wrappers around the versions provided in the base system.")];
    let doc = read(&article(&[one, two]));
    let show = || listing(&doc);
    let item = block_of(&doc, "box constraints");
    assert_eq!(item.kind, BlockKind::ListItem, "{}", show());
    assert!(item.text.contains("themselves wrappers around"), "{}", show());
}

/// A sentence that introduces a list, and list items that are no sentences of their own,
/// read as one sentence (the items after the lead-in, separated by semicolons), anchored on
/// every line of it, and a sentence that points back at the list may follow it; a list of
/// whole sentences keeps its sentences.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_in_and_its_fragments_are_one_sentence() {
    let page = vec![
        ("R", 10.0, 72.0, 706.0, "At present the package is mainly concerned with these matters of typesetting:"),
        ("R", 10.0, 80.0, 694.0, "1.      spacing of fractions, roots and symbols,"),
        ("R", 10.0, 80.0, 682.0, "2.      alternative versions of fractions, and"),
        ("R", 10.0, 80.0, 670.0, "3.      math symbols within bold text."),
        ("R", 10.0, 72.0, 652.0, "These matters are all set by the options of the package in the preamble."),
        ("R", 10.0, 72.0, 640.0, "Two options change what the package does, and each has a default value:"),
        ("R", 10.0, 80.0, 628.0, "1.      The first option sets the spacing of every fraction in the document."),
        ("R", 10.0, 80.0, 616.0, "2.      The second option chooses the form of the capital Greek letters."),
    ];
    let bytes = article(&[page]);
    let doc = read(&bytes);
    let ranker = Ranker::new(&doc, &Cancel::new()).unwrap();
    let texts: Vec<&str> = ranker.sentences.iter().map(|s| s.text.as_str()).collect();
    let joined = "At present the package is mainly concerned with these matters of typesetting: spacing of fractions, roots and symbols; alternative versions of fractions; math symbols within bold text.";
    assert!(texts.contains(&joined), "{texts:#?}\n{}", listing(&doc));
    assert!(texts.contains(&"The first option sets the spacing of every fraction in the document."), "{texts:#?}");
    assert!(texts.contains(&"Two options change what the package does, and each has a default value:"), "{texts:#?}");
    assert!(!texts.iter().any(|t| t.starts_with("alternative") || t.starts_with("math symbols")), "{texts:#?}");
    assert!(ranker.sentences.iter().find(|s| s.text == joined).is_some_and(|s| s.candidate));

    let pages = extract_text(&bytes, &ExtractOptions::default()).unwrap().pages;
    let pipeline = Pipeline::new(None, None, PipelineSettings::default());
    let opts = SummaryOptions { max_words: Some(200), ..Default::default() };
    let s = pipeline.summarize(Input::Pdf { bytes, permit: None }, &opts, &mut Ignore, &Cancel::new()).await.unwrap();
    // A sentence that points back at the list may follow it.
    let after = "These matters are all set by the options of the package in the preamble.";
    assert!(s.text.contains(&format!("{joined} {after}")) || s.text.contains(&format!("{joined}\n{after}")), "{}", s.text);
    let a = s.sentences.iter().find(|a| a.text == joined).unwrap_or_else(|| panic!("{:#?}", s.sentences));
    let on_page: String = pages[0].text.chars().skip(a.start as usize).take((a.end - a.start) as usize).collect();
    let flat = on_page.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.starts_with("At present the package") && flat.ends_with("math symbols within bold text."), "{flat:?}");
    assert_eq!(a.boxes.len(), 4, "one box per line: {:?}", a.boxes);
}

/// A paragraph that cites a work by author and year is prose, however many commas it has; an
/// entry that opens with its authors and the year is a reference, even with no heading above.
#[test]
fn a_paragraph_that_cites_is_no_reference_entry() {
    let page = vec![
        ("R", 10.0, 72.0, 706.0, "Hence, as recommended by Overstall and Forster \\(2010\\), the package divides each"),
        ("R", 10.0, 72.0, 694.0, "chain into two halves, using the first half for fitting the proposal, and the second"),
        ("R", 10.0, 72.0, 682.0, "half for the estimate, which keeps the two steps apart."),
        ("R", 10.0, 72.0, 650.0, "Chang C, Lin C \\(2001\\). LIBSVM: a library for support vector machines, software, and data."),
    ];
    let doc = read(&article(&[page]));
    let show = || listing(&doc);
    assert_eq!(kind_of(&doc, "as recommended by"), BlockKind::Prose, "{}", show());
    assert_eq!(kind_of(&doc, "LIBSVM"), BlockKind::Reference, "{}", show());
}

/// A heading in the body's size but bold, over two lines, and a paragraph that opens with
/// "A ...": the capital is the paragraph's article, no numbering, and the heading stays apart.
#[test]
fn a_paragraph_that_opens_with_a_is_no_heading() {
    let page = vec![
        ("B", 10.0, 72.0, 706.0, "2 An overview of current level"),
        ("B", 10.0, 72.0, 694.0, "metering practice"),
        ("R", 10.0, 72.0, 682.0, "A number of quite different audio level measuring"),
        ("R", 10.0, 72.0, 670.0, "methods are being used today, and most of them do not measure loudness."),
    ];
    let doc = read(&article(&[page]));
    let show = || listing(&doc);
    assert!(matches!(kind_of(&doc, "metering practice"), BlockKind::Heading(_)), "{}", show());
    let para = block_of(&doc, "A number of");
    assert_eq!(para.kind, BlockKind::Prose, "{}", show());
    assert!(para.text.starts_with("A number of quite different"), "{}", show());
}

/// A face whose descriptor says fixed pitch (/Flags 33, as some producers write for every font
/// they embed), with `widths` for codes 32 to 126.
fn flagged_fixed(pdf: &mut builder::Pdf, name: &str, widths: impl Fn(u32) -> u32) -> u32 {
    let fd = pdf.add(format!("<< /Type /FontDescriptor /FontName /{name} /Flags 33 /FontBBox [0 -200 1000 900] /ItalicAngle 0 /Ascent 900 /Descent -200 /CapHeight 700 /StemV 80 >>"));
    let ws: Vec<String> = (32..127).map(|c| widths(c).to_string()).collect();
    pdf.add(format!(
        "<< /Type /Font /Subtype /TrueType /BaseFont /{name} /FirstChar 32 /LastChar 126 /Widths [{}] /FontDescriptor {fd} 0 R /Encoding /WinAnsiEncoding >>",
        ws.join(" ")
    ))
}

#[test]
fn a_fixed_pitch_flag_on_a_proportional_face_is_no_code() {
    let mut pdf = builder::Pdf::new();
    let t = flagged_fixed(&mut pdf, "Trebuchet", |c| 280 + (c * 37) % 320);
    let m = flagged_fixed(&mut pdf, "Letter", |_| 600);
    let resources = format!("<< /Font << /T {t} 0 R /M {m} 0 R >> >>");
    let page = vec![
        ("T", 10.0, 72.0, 706.0, "The method configures operations performed using the specified handle, not all"),
        ("T", 10.0, 72.0, 694.0, "operations performed on the underlying database, and returns 0 on success."),
        ("M", 10.0, 72.0, 670.0, "int DB->set_flags\\(DB *db, u_int32_t flags\\);"),
    ];
    let bytes = builder::doc_with_pages(&mut pdf, &[(content(&page), resources)]);
    let doc = read(&bytes);
    let show = || listing(&doc);
    assert_eq!(kind_of(&doc, "The method configures"), BlockKind::Prose, "{}", show());
    assert_eq!(kind_of(&doc, "set_flags"), BlockKind::Code, "{}", show());
}

/// A title numbered two levels deep that ends with a stop, set in bold: a heading, not a
/// sentence of the paragraph under it.
#[test]
fn a_numbered_bold_title_with_a_stop_is_a_heading() {
    let page = vec![
        ("B", 10.0, 72.0, 706.0, "3.2 Programming in GP: other specific functions."),
        ("R", 10.0, 72.0, 694.0, "In addition to the general programming functions, gp has functions that"),
        ("R", 10.0, 72.0, 682.0, "only make sense in the interpreter, which this section describes."),
    ];
    let doc = read(&article(&[page]));
    let show = || listing(&doc);
    assert!(matches!(kind_of(&doc, "Programming in GP"), BlockKind::Heading(_)), "{}", show());
    assert_eq!(kind_of(&doc, "In addition to"), BlockKind::Prose, "{}", show());
    assert!(doc.sections.iter().any(|s| s.title.starts_with("3.2 Programming in GP")), "{:?}", doc.sections);
}

/// A note at the page's foot in the body's own size (a document set small throughout): its
/// raised number says it is a note.
#[test]
fn a_note_in_the_body_size_is_a_note_by_its_raised_number() {
    let mut pdf = builder::Pdf::new();
    let r = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding /WinAnsiEncoding >>");
    let resources = format!("<< /Font << /R {r} 0 R >> >>");
    let mut c = content(&[
        ("R", 10.0, 72.0, 706.0, "The interpreter reads a library of scripts that define the rules of the system,"),
        ("R", 10.0, 72.0, 694.0, "and the core engine applies them to the expressions that the user enters."),
    ]);
    c.extend_from_slice(b"BT /R 6 Tf 72 100 Td 4 Ts (1) Tj /R 10 Tf 0 Ts (This text is part of the software package and may be copied freely.) Tj ET\n");
    let bytes = builder::doc_with_pages(&mut pdf, &[(c, resources)]);
    let doc = read(&bytes);
    let show = || listing(&doc);
    assert_eq!(kind_of(&doc, "part of the software package"), BlockKind::Footnote, "{}", show());
    assert_eq!(kind_of(&doc, "The interpreter reads"), BlockKind::Prose, "{}", show());
}

#[test]
fn a_sentence_that_runs_on_into_a_typewriter_line_is_read_whole() {
    // A sentence breaks before a file name set in the typewriter face ("... a Perl" / "script
    // rubikrotation.pl."): the change of face inside it ends no paragraph. Code after a line
    // that ends its sentence still stands apart, as does code that reads as code.
    let page = vec![
        ("B", 14.0, 72.0, 730.0, "1. Introduction"),
        ("R", 10.0, 72.0, 706.0, "The rubikrotation package is a dynamic extension to the rubikcube package. It"),
        ("R", 10.0, 72.0, 694.0, "consists of a style option, a small driver and a Perl"),
        ("C", 10.0, 72.0, 682.0, "script rubikrotation.pl."),
        ("R", 10.0, 72.0, 670.0, "The Perl script is the engine of this package and runs at every rotation."),
        ("R", 10.0, 72.0, 646.0, "Load the package in the preamble of the document with the"),
        ("C", 10.0, 72.0, 634.0, "\\\\usepackage{rubikrotation}"),
        ("R", 10.0, 72.0, 622.0, "command, and run the document with shell escape enabled for the script."),
        ("R", 10.0, 72.0, 598.0, "The script writes the new state of the cube to a file:"),
        ("C", 10.0, 72.0, 586.0, "cube state written to rubikstate.dat"),
    ];
    let doc = read(&article(&[page]));
    let show = || listing(&doc);
    let ranker = Ranker::new(&doc, &Cancel::new()).unwrap();
    let texts: Vec<&str> = ranker.sentences.iter().map(|s| s.text.as_str()).collect();
    assert!(texts.contains(&"It consists of a style option, a small driver and a Perl script rubikrotation.pl."), "{texts:#?}\n{}", show());
    assert_eq!(kind_of(&doc, "\\usepackage{rubikrotation}"), BlockKind::Code, "{}", show());
    assert!(!block_of(&doc, "cube state written").text.contains("to a file:"), "{}", show());
}

#[test]
fn a_line_with_one_larger_word_keeps_the_size_of_its_text() {
    // Running text that names its package in a larger logo face ("If xkeyval is loaded ..."):
    // the line is of the text's size, no heading, and its paragraph reads on across it.
    let page = vec![
        ("B", 14.0, 72.0, 730.0, "2. Loading the package"),
        ("R", 10.0, 72.0, 706.0, "The package is loaded in the preamble of the document, as any other package is."),
        // One line, three runs: the name in a 16-point face between 10-point text.
        ("R", 10.0, 72.0, 694.0, "If ) Tj /R 16 Tf (xkeyval) Tj /R 10 Tf ( is loaded by the class of the document, the package per-"),
        ("R", 10.0, 72.0, 682.0, "forms the same steps and reads the options given to the class as well."),
    ];
    let doc = read(&article(&[page]));
    let show = || listing(&doc);
    let line = doc.pages[0].lines.iter().find(|l| doc.pages[0].text[l.start as usize..l.end as usize].contains("xkeyval")).expect("the line");
    assert!(line.size > 15.0 && (line.text_size - 10.0).abs() < 0.5, "size {} text_size {}", line.size, line.text_size);
    assert!(doc.blocks.iter().all(|b| !(matches!(b.kind, BlockKind::Heading(_)) && b.text.contains("xkeyval"))), "{}", show());
    let ranker = Ranker::new(&doc, &Cancel::new()).unwrap();
    let texts: Vec<&str> = ranker.sentences.iter().map(|s| s.text.as_str()).collect();
    assert!(
        texts.contains(&"If xkeyval is loaded by the class of the document, the package performs the same steps and reads the options given to the class as well."),
        "{texts:#?}\n{}",
        show()
    );
}
