//! The summary pipeline on the PDF samples (tests/fixtures/pdf-samples), in-process and
//! through `seqgpt summarize --local`: extraction, cleaning, the extractive method, each bad
//! PDF's error. No model and no bus needed.

mod common;

use seqgpt_daemon::summarize::pipeline::{Ignore, Input, Pipeline, PipelineSettings};
use seqgpt_daemon::summarize::{Cancel, Length, Method, Style, SummaryError, SummaryOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pdf-samples").join(name)
}

fn pdf(name: &str) -> Input {
    Input::Pdf { bytes: std::fs::read(sample(name)).unwrap(), permit: None }
}

fn pipeline() -> Pipeline {
    Pipeline::new(None, None, PipelineSettings::default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_page_summary_is_extractive_and_from_the_text() {
    let s = pipeline().summarize(pdf("one-page.pdf"), &SummaryOptions::default(), &mut Ignore, &Cancel::new()).await.unwrap();
    assert_eq!(s.method, Method::Extractive);
    assert_eq!((s.stats.page_count, s.stats.pages), (1, 1));
    assert!(s.stats.sentences >= 15, "{:?}", s.stats);
    assert!(s.text.contains("library") || s.text.contains("volunteers"), "{}", s.text);
    // Every sentence of the summary is a sentence of the document, as pdftotext reads it.
    let Ok(out) = Command::new("pdftotext").arg(sample("one-page.pdf")).arg("-").output() else {
        assert!(std::env::var_os("CI").is_none(), "pdftotext is missing under CI (tests/deps.sh installs poppler-utils)");
        eprintln!("SKIPPED: the check against pdftotext (poppler-utils is not installed)");
        return;
    };
    assert!(out.status.success(), "pdftotext failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.split_whitespace().count() > 100, "pdftotext read almost nothing: {text:?}");
    let sentences: Vec<&str> = s.text.split(". ").filter(|t| !t.trim().is_empty()).collect();
    assert!(!sentences.is_empty());
    for sentence in sentences {
        let probe: String = sentence.split_whitespace().take(6).collect::<Vec<_>>().join(" ");
        assert!(text.contains(&probe), "{probe:?} is not in the document");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_headers_page_numbers_and_hyphens_are_cleaned() {
    let opts = SummaryOptions { length: Length::Long, style: Style::Bullets, ..Default::default() };
    let s = pipeline().summarize(pdf("report-3pages.pdf"), &opts, &mut Ignore, &Cancel::new()).await.unwrap();
    assert_eq!(s.stats.page_count, 3);
    assert_eq!(s.stats.edge_lines_removed, 6, "3 headers and 3 footers: {:?}", s.stats);
    assert!(!s.text.contains("Field Report") && !s.text.contains("Page 1 of 3"), "{}", s.text);
    // "prev-/ious" and "rep-/lace" are broken across lines in the PDF; the extractor's layout
    // already rejoins them (the cleaner would otherwise: see clean.rs's tests).
    assert!(!s.text.contains("prev-") && !s.text.contains("rep-"), "{}", s.text);
    assert!(s.text.lines().all(|l| l.starts_with("- ")), "{}", s.text);

    let only2 = SummaryOptions { pages: Some(2..=2), ..Default::default() };
    let s = pipeline().summarize(pdf("report-3pages.pdf"), &only2, &mut Ignore, &Cancel::new()).await.unwrap();
    assert_eq!((s.stats.page_count, s.stats.pages), (3, 1));
    assert!(s.text.contains("grain store") || s.text.contains("dryer") || s.text.contains("prices"), "{}", s.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chinese_pdf() {
    let s = pipeline().summarize(pdf("chinese.pdf"), &SummaryOptions { length: Length::Short, ..Default::default() }, &mut Ignore, &Cancel::new()).await.unwrap();
    assert_eq!(s.stats.page_count, 2);
    assert!(s.text.contains("图书馆") || s.text.contains("志愿者"), "{}", s.text);
    assert!(!s.text.contains("。 "), "CJK sentences join without spaces: {}", s.text);
    // The line breaks inside paragraphs are gone.
    assert!(!s.text.contains('\n'), "{}", s.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_bad_pdf_has_its_error() {
    let p = pipeline();
    let err = |r: Result<_, SummaryError>| r.err().expect("an error");
    assert!(matches!(err(p.summarize(pdf("invalid.pdf"), &Default::default(), &mut Ignore, &Cancel::new()).await), SummaryError::InvalidPdf(_)));
    assert!(matches!(err(p.summarize(pdf("encrypted.pdf"), &Default::default(), &mut Ignore, &Cancel::new()).await), SummaryError::Encrypted(_)));
    let wrong = SummaryOptions { password: Some("nope".into()), ..Default::default() };
    assert!(matches!(err(p.summarize(pdf("encrypted.pdf"), &wrong, &mut Ignore, &Cancel::new()).await), SummaryError::Encrypted(_)));
    let right = SummaryOptions { password: Some("secret".into()), ..Default::default() };
    let s = p.summarize(pdf("encrypted.pdf"), &right, &mut Ignore, &Cancel::new()).await.unwrap();
    assert!(s.text.contains("library") || s.text.contains("volunteers"), "{}", s.text);
    assert!(matches!(err(p.summarize(pdf("no-text.pdf"), &Default::default(), &mut Ignore, &Cancel::new()).await), SummaryError::NoText(_)));
    let past = SummaryOptions { pages: Some(5..=6), ..Default::default() };
    assert!(matches!(err(p.summarize(pdf("report-3pages.pdf"), &past, &mut Ignore, &Cancel::new()).await), SummaryError::InvalidArgs(_)));
    let small = PipelineSettings {
        pdf_limits: seqgpt_pdf::Limits { max_file_bytes: 1000, ..Default::default() },
        ..Default::default()
    };
    let e = err(Pipeline::new(None, None, small).summarize(pdf("one-page.pdf"), &Default::default(), &mut Ignore, &Cancel::new()).await);
    assert!(matches!(e, SummaryError::TooLarge(_)), "{e:?}");
}

fn seqgpt(args: &[&str]) -> std::process::Output {
    common::program(env!("CARGO_BIN_EXE_seqgpt")).args(args).env("SEQGPT_LOG", "warn").output().expect("run seqgpt")
}

/// The README's command: works without a daemon and without model weights, quickly.
#[test]
fn seqgpt_summarize_local_without_a_model() {
    let file = sample("one-page.pdf");
    let t0 = std::time::Instant::now();
    let out = seqgpt(&["summarize", "--local", file.to_str().unwrap()]);
    let elapsed = t0.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.trim().len() > 100, "{text}");
    assert!(elapsed.as_secs() < 10, "took {elapsed:?}");

    let out = seqgpt(&["summarize", "--local", "--json", "--length", "short", file.to_str().unwrap()]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["method"], "extractive");
    assert_eq!(v["stats"]["pages"], 1);
    assert!(v["job"].is_null());

    let out = seqgpt(&["summarize", "--local", sample("encrypted.pdf").to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("org.seqgpt.Summarizer1.Error.Encrypted"), "{err}");
    let out = seqgpt(&["summarize", "--local", "--password", "secret", sample("encrypted.pdf").to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let out = seqgpt(&["summarize", "--local", "--pages", "9-9", sample("report-3pages.pdf").to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("InvalidArgs"));
}
