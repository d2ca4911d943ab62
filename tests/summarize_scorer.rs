//! The extractive summary on documents of other genres than research articles, on small PDFs
//! and texts made here: a manual's defining first sentence is kept, a change log is never
//! picked, sentences that point back never stand alone, a summary of prose is never empty
//! (a cut sentence, marked and warned about), a text without prose is refused with NoText,
//! and the shipped scorer scores a fixed document exactly as the script that fitted it.

#[path = "pdf/builder.rs"]
mod builder;

use seqgpt_daemon::summarize::pipeline::{explain, Ignore, Input, Pipeline, PipelineSettings};
use seqgpt_daemon::summarize::rank::{dangling_start, word_count};
use seqgpt_daemon::summarize::{Cancel, Method, Summary, SummaryError, SummaryOptions};

/// One text line: font resource, size, x, y, text (a PDF literal string's inside).
type L<'a> = (&'a str, f32, f32, f32, &'a str);

/// A PDF with Times-Roman (/R) and Helvetica-Bold (/B), one content stream per page.
fn pdf(pages: &[Vec<L<'_>>]) -> Vec<u8> {
    let mut pdf = builder::Pdf::new();
    let r = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding /WinAnsiEncoding >>");
    let b = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>");
    let resources = format!("<< /Font << /R {r} 0 R /B {b} 0 R >> >>");
    let pages: Vec<(Vec<u8>, String)> = pages
        .iter()
        .map(|p| {
            let mut c = String::new();
            for (font, size, x, y, text) in p {
                c.push_str(&format!("BT /{font} {size} Tf {x} {y} Td ({text}) Tj ET\n"));
            }
            (c.into_bytes(), resources.clone())
        })
        .collect();
    builder::doc_with_pages(&mut pdf, &pages)
}

/// Lines of a paragraph set from `y` down, 12 points apart.
fn para(lines: &[&'static str], y: f32) -> Vec<L<'static>> {
    lines.iter().enumerate().map(|(i, t)| ("R", 10.0, 72.0, y - 12.0 * i as f32, *t)).collect()
}

async fn summarize(input: Input, opts: &SummaryOptions) -> Result<Summary, SummaryError> {
    Pipeline::new(None, None, PipelineSettings::default()).summarize(input, opts, &mut Ignore, &Cancel::new()).await
}

fn budget(words: u32) -> SummaryOptions {
    SummaryOptions { max_words: Some(words), ..SummaryOptions::default() }
}

/// A graph-layout guide: its first paragraph says what the tool is; the body is details.
fn guide() -> Vec<u8> {
    let mut p1 = vec![("B", 14.0, 72.0, 740.0, "1 Introduction")];
    p1.extend(para(
        &[
            "neato is a utility that draws undirected graphs, the kind of graphs that are often used in",
            "telecommunication and computational biology. It reads a graph file and writes a drawing of it.",
        ],
        716.0,
    ));
    p1.extend(para(
        &[
            "Since the file format includes both undirected and directed graphs, neato draws graphs",
            "prepared for dot, and vice versa. The layout is made by a spring model in the plane.",
            "The lengths of the edges are the distances between the nodes in the model.",
        ],
        680.0,
    ));
    p1.push(("B", 14.0, 72.0, 630.0, "2 Options"));
    p1.extend(para(
        &[
            "The option for the maximum number of iterations sets how long the solver runs before it stops.",
            "The option for the random seed sets where the nodes start, so that drawings can be repeated.",
            "The option for the epsilon value sets the energy change below which the layout is finished.",
        ],
        606.0,
    ));
    let mut p2 = vec![("B", 14.0, 72.0, 740.0, "3 Change log")];
    p2.extend(para(&["New routines added to save and load the graph objects to and from a binary file."], 716.0));
    p2.extend(para(&["Fixed a bug in the handling of clusters when the graph file contains subgraphs."], 692.0));
    p2.extend(para(&["Version 2.4 added a faster solver for the spring model of very large graphs."], 668.0));
    p2.push(("B", 14.0, 72.0, 630.0, "4 Layout details"));
    p2.extend(para(
        &[
            "The spring model of the layout places the nodes where the energy of the springs is lowest.",
            "The layout of the graph file is written with the positions of the nodes and the edges.",
        ],
        606.0,
    ));
    pdf(&[p1, p2])
}

#[tokio::test]
async fn a_manuals_defining_first_sentence_is_kept_and_its_change_log_is_not() {
    let s = summarize(Input::Pdf { bytes: guide(), permit: None }, &budget(40)).await.unwrap();
    assert_eq!(s.method, Method::Extractive);
    assert!(s.text.starts_with("neato is a utility that draws undirected graphs"), "{}", s.text);
    for entry in ["New routines", "Fixed a bug", "Version 2.4"] {
        assert!(!s.text.contains(entry), "a change-log entry was picked: {}", s.text);
    }
    assert!(!s.sentences.is_empty());
}

#[test]
fn a_lowercase_start_is_a_name_the_document_uses_never_a_common_word() {
    // A command's name opens the first page; the last page opens with the tail of a
    // sentence cut off before it, "starts ..." (a word documents in general use, used twice).
    let first = para(
        &[
            "neato is a utility that draws undirected graphs, the kind of graphs that are often used in",
            "telecommunication and computational biology. It reads a graph file and writes a drawing of it.",
        ],
        716.0,
    );
    let second = para(
        &[
            "Since the file format includes both undirected and directed graphs, neato draws graphs",
            "prepared for dot, and vice versa. The layout is made by a spring model in the plane.",
        ],
        716.0,
    );
    let mut third = vec![("B", 14.0, 72.0, 740.0, "5 Pages")];
    third.extend(para(&["A new drawing starts on a page of its own when the graph file holds several graphs."], 716.0));
    third.extend(para(&["starts a new page when the drawing of the graph does not fit on the current page."], 692.0));
    let bytes = pdf(&[first, second, third]);
    let v = explain(Input::Pdf { bytes, permit: None }, &SummaryOptions::default(), &seqgpt_pdf::Limits::default()).unwrap();
    let candidate = |start: &str| {
        let s = v["sentences"].as_array().unwrap().iter().find(|s| s["text"].as_str().unwrap().starts_with(start));
        s.unwrap_or_else(|| panic!("no sentence starts {start:?}"))["candidate"].as_bool().unwrap()
    };
    assert!(candidate("neato is a utility"), "a command's name may start a sentence");
    assert!(!candidate("starts a new page"), "a common word's lowercase start is the tail of a cut sentence");
    assert!(candidate("A new drawing starts"));
}

#[test]
fn a_version_history_entry_is_an_aside_under_its_own_heading_too() {
    // A version history's entries stand under headings of their own ("5.1 Version 2.4"):
    // they are part of the history, as far as its numbering goes and no further. A title
    // that only ends with "upgrading" names a topic.
    let mut p1 = vec![("B", 14.0, 72.0, 740.0, "1 Introduction")];
    p1.extend(para(&["The layout tool draws undirected graphs with a spring model of their nodes and edges."], 716.0));
    p1.push(("B", 14.0, 72.0, 680.0, "2 Database upgrading"));
    p1.extend(para(&["The layout tool keeps the positions of the nodes in a database that it upgrades itself."], 656.0));
    let mut p2 = vec![("B", 14.0, 72.0, 740.0, "5 Upgrading checklist")];
    p2.push(("B", 12.0, 72.0, 716.0, "5.1 From version 2.3 to version 2.4"));
    p2.extend(para(&["The spring model of the layout now stops when the energy of the springs is low enough."], 692.0));
    p2.push(("B", 12.0, 72.0, 660.0, "5.2 From version 2.2 to version 2.3"));
    p2.extend(para(&["Graph files may now hold several graphs, and each of them is drawn on a page of its own."], 636.0));
    p2.push(("B", 14.0, 72.0, 600.0, "6 Layout details"));
    p2.extend(para(&["The layout of the graph file is written with the positions of the nodes and the edges."], 576.0));
    let bytes = pdf(&[p1, p2]);
    let v = explain(Input::Pdf { bytes, permit: None }, &SummaryOptions::default(), &seqgpt_pdf::Limits::default()).unwrap();
    let aside = |start: &str| {
        let s = v["sentences"].as_array().unwrap().iter().find(|s| s["text"].as_str().unwrap().starts_with(start));
        s.unwrap_or_else(|| panic!("no sentence starts {start:?}"))["features"]["aside"].as_f64().unwrap()
    };
    assert_eq!(aside("The spring model of the layout now stops"), 1.0, "an entry under 5.1 of the checklist");
    assert_eq!(aside("Graph files may now hold"), 1.0, "an entry under 5.2 of the checklist");
    assert_eq!(aside("The layout of the graph file"), 0.0, "section 6 comes after the history");
    assert_eq!(aside("The layout tool keeps"), 0.0, "database upgrading is a topic");
    assert_eq!(aside("The layout tool draws"), 0.0);
}

#[tokio::test]
async fn a_sentence_that_points_back_never_stands_alone() {
    // Each paragraph's second sentence points back; the first is too long for the budget.
    let text = "The first condition measures the reaction time of every participant who took part in the long \
                study of the project over several months in the laboratory. In a second condition, there is a \
                linear relationship between the reaction time and the number of items shown on the screen.\n\n\
                The second paragraph describes the apparatus that was used for all of the measurements reported \
                in the study over the whole period. Both are new generic functions with methods for the \
                classes of the measurements that the apparatus records.\n\n\
                Summaries of the measurements are given for every participant and condition of the study.\n\n\
                This is done by averaging the reaction times of each participant over the trials of a condition.";
    // With room for everything, the paragraph that opens by pointing back goes in after the
    // paragraph it points to.
    let all = summarize(Input::Text(text.into()), &budget(200)).await.unwrap();
    assert!(all.text.contains("study. This is done by averaging"), "{}", all.text);
    for words in [12, 20, 30, 60, 80] {
        let s = summarize(Input::Text(text.into()), &budget(words)).await.unwrap();
        for (k, a) in s.sentences.iter().enumerate() {
            if dangling_start(&a.text) {
                // The sentence before it in the document: in its paragraph, or closing the
                // paragraph just before.
                let before = k.checked_sub(1).map(|j| s.sentences[j].text.as_str()).unwrap_or("");
                assert!(
                    !before.is_empty()
                        && (text.contains(&format!("{before} {}", a.text)) || text.contains(&format!("{before}\n\n{}", a.text))),
                    "budget {words}: {:?} stands without the sentence before it: {}",
                    a.text,
                    s.text
                );
            }
        }
    }
    assert!(dangling_start("In a second condition, there is a linear relationship."));
    assert!(dangling_start("Both are new generic functions with methods for ..."));
    assert!(dangling_start("However, the results differ."));
    assert!(dangling_start("For example, the scribe may have used Roman letters for capitals."));
    assert!(!dangling_start("This package provides functions for mixture models."));
    assert!(!dangling_start("Newton's method converges quickly."));
}

#[tokio::test]
async fn a_paragraph_without_sentence_breaks_gives_a_cut_marked_summary() {
    let words: Vec<String> = (0..300).map(|i| format!("word{i} and more text")).collect();
    let text = words.join(" ");
    let s = summarize(Input::Text(text), &budget(40)).await.unwrap();
    assert!(!s.text.is_empty());
    assert!(s.text.ends_with('…'), "{}", s.text);
    assert!(word_count(&s.text) <= 40, "{}", s.text);
    assert!(s.stats.warnings.iter().any(|w| w.contains("cut")), "{:?}", s.stats.warnings);
}

#[tokio::test]
async fn a_three_word_budget_gives_a_cut_marked_summary() {
    let text = "The tool reads long documents and writes short summaries of them. Its summaries are made of the \
                document's own sentences, so that nothing is invented.";
    let s = summarize(Input::Text(text.into()), &budget(3)).await.unwrap();
    assert!(s.text.ends_with('…'), "{}", s.text);
    assert!((1..=3).contains(&word_count(&s.text)), "{}", s.text);
    assert!(s.stats.warnings.iter().any(|w| w.contains("budget of 3 words")), "{:?}", s.stats.warnings);
    assert_eq!(s.sentences.len(), 1);
}

#[tokio::test]
async fn a_text_without_prose_is_refused_with_no_text() {
    let code = "x <- rnorm(10)\nsummary(x)\nfit <- lm(y ~ x)\nplot(fit)\n\n$ make install\n$ ./configure --prefix=/usr\n";
    match summarize(Input::Text(code.into()), &SummaryOptions::default()).await {
        Err(SummaryError::NoText(m)) => assert!(m.contains("no prose"), "{m}"),
        other => panic!("expected NoText, got {other:?}"),
    }
}

#[test]
fn the_shipped_scorer_scores_a_fixed_document_as_the_fitting_script_did() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let golden: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("tests/fixtures/scorer/golden.json")).unwrap()).unwrap();
    let bytes = std::fs::read(root.join(golden["pdf"].as_str().unwrap())).unwrap();
    let v = explain(Input::Pdf { bytes, permit: None }, &SummaryOptions::default(), &seqgpt_pdf::Limits::default()).unwrap();
    let ours = v["sentences"].as_array().unwrap();
    let theirs = golden["sentences"].as_array().unwrap();
    assert_eq!(ours.len(), theirs.len());
    let mut scored = 0;
    for (a, b) in ours.iter().zip(theirs) {
        assert_eq!(a["text"], b["text"]);
        assert_eq!(a["candidate"], b["candidate"], "{}", a["text"]);
        let (x, y) = (a["score"].as_f64().unwrap(), b["score"].as_f64().unwrap());
        assert!((x - y).abs() < 1e-9, "{}: {x} against the script's {y}", a["text"]);
        scored += usize::from(y > 0.0);
    }
    assert!(scored >= 5, "the golden scores only {scored} sentences");
}

#[tokio::test]
async fn a_double_spaced_page_keeps_its_paragraphs_whole() {
    // 10-point text on a 24-point pitch (a thesis's double spacing), paragraphs apart by an
    // indent and a slightly wider gap.
    let lines = [
        "Multi-criteria recommender systems can be defined as recommender systems that use",
        "preference information on several criteria, and they are studied in this thesis for",
        "the recommendation of items to the users of a large online platform of reviews, where",
        "every user rates the items on their price, their quality and the service of the shop.",
        "The thesis proposes a method that learns the weight of each criterion from the ratings",
        "of every user, and it compares the method with the classic methods on three data sets",
        "of ratings that were collected from the platform over the course of several years, and",
        "it finds that the learned weights improve the recommendations for most of the users.",
    ];
    let mut page = vec![("B", 14.0, 72.0, 740.0, "1 Introduction")];
    for (i, t) in lines.iter().enumerate() {
        let gap = if i >= 4 { 30.0 } else { 0.0 };
        page.push(("R", 10.0, if i == 4 { 90.0 } else { 72.0 }, 710.0 - 24.0 * i as f32 - gap, *t));
    }
    let bytes = pdf(&[page]);
    let text = seqgpt_pdf::extract_text(&bytes, &seqgpt_pdf::ExtractOptions::default()).unwrap().pages[0].text.clone();
    assert!(text.contains(&lines[..4].join("\n")), "the paragraph's lines were split:\n{text}");
    assert!(text.contains(&lines[4..].join("\n")), "the paragraph's lines were split:\n{text}");
    let s = summarize(Input::Pdf { bytes, permit: None }, &budget(60)).await.unwrap();
    assert!(!s.sentences.is_empty());
    for a in &s.sentences {
        assert!(
            a.text.starts_with("Multi-criteria recommender") || a.text.starts_with("The thesis proposes"),
            "a fragment of a sentence: {:?}",
            a.text
        );
    }
}

#[test]
fn a_page_of_contents_entries_reads_each_entry_with_its_page_number() {
    // A contents page alone: evenly spaced entries (a wider pitch than the 1.6 font sizes that
    // join lines anywhere), each with its page number far to the right. The entries are the
    // page's longest lines, yet no running text: they must not stack into one block read
    // before the column of numbers.
    let entries = ["1 Introduction", "2 Package Options", "3 Provided Macros", "4 Using the Fonts", "5 Known Problems", "6 Getting Started", "7 Thanks to Others"];
    let mut page = vec![("B", 14.0, 72.0, 740.0, "Contents")];
    for (i, t) in entries.iter().enumerate() {
        let y = 700.0 - 20.0 * i as f32;
        page.push(("R", 10.0, 72.0, y, *t));
        page.push(("R", 10.0, 400.0, y, ["3", "5", "8", "12", "15", "17", "20"][i]));
    }
    let text = seqgpt_pdf::extract_text(&pdf(&[page]), &seqgpt_pdf::ExtractOptions::default()).unwrap().pages[0].text.clone();
    let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle:?} missing:\n{text}"));
    for (i, t) in entries.iter().enumerate().skip(1) {
        assert!(at(entries[i - 1]) < at(["3", "5", "8", "12", "15", "17", "20"][i - 1]) && at(["3", "5", "8", "12", "15", "17", "20"][i - 1]) < at(t), "entry and number out of order:\n{text}");
    }
}

#[tokio::test]
async fn citations_and_cross_references_leave_the_quoted_sentence() {
    let text = "Graph layouts are computed by a spring model that places the nodes (Kamada and Kawai 1989). \
                The model is solved by stress majorization on the whole graph (see Section 4 for details), \
                which converges quickly [12].";
    let s = summarize(Input::Text(text.into()), &budget(60)).await.unwrap();
    assert_eq!(
        s.text,
        "Graph layouts are computed by a spring model that places the nodes. The model is solved by stress \
         majorization on the whole graph, which converges quickly."
    );
    // Each sentence is still anchored at the whole of it in the document.
    let first = &s.sentences[0];
    assert_eq!(first.text, "Graph layouts are computed by a spring model that places the nodes.");
    let whole = "Graph layouts are computed by a spring model that places the nodes (Kamada and Kawai 1989).";
    assert_eq!((first.end - first.start) as usize, whole.chars().count());
}
