//! CJK documents get the same structure stage as Latin ones: their summaries hold no code,
//! table or formula lines. Checked on a Chinese text made here, and on the CJK PDFs of the
//! shared PDF corpus where it is present (`SEQGPT_PDF_CORPUS`, default /tmp/pdfcorpus, built
//! by ../shared/pdf/build_corpus.sh; skipped with a message otherwise).

use seqgpt::summarize::pipeline::{Ignore, Input, Pipeline, PipelineSettings};
use seqgpt::summarize::{Cancel, Length, SummaryOptions};
use std::path::PathBuf;

/// Whether a summary sentence looks like code, a table row or a formula rather than prose.
fn not_prose(s: &str) -> Option<&'static str> {
    let chars: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    let n = chars.len().max(1) as f32;
    let digits = chars.iter().filter(|c| c.is_ascii_digit()).count() as f32 / n;
    let symbols = chars.iter().filter(|c| "{}<>=\\$#|_^~;".contains(**c)).count() as f32 / n;
    if digits > 0.3 {
        return Some("digits");
    }
    if symbols > 0.1 {
        return Some("symbols");
    }
    let t = s.trim_start();
    if ["> ", "$ ", "# ", ">>> ", "R> "].iter().any(|p| t.starts_with(p)) || t.contains(" <- ") || t.contains("};") {
        return Some("code");
    }
    None
}

async fn summary_of(input: Input) -> Vec<String> {
    let pipeline = Pipeline::new(None, None, PipelineSettings::default());
    let opts = SummaryOptions { length: Length::Long, ..Default::default() };
    let s = pipeline.summarize(input, &opts, &mut Ignore, &Cancel::new()).await.unwrap();
    s.sentences.into_iter().map(|a| a.text).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chinese_text_with_code_and_a_table() {
    let text = "\
本文介绍一个在边缘设备上离线运行的文档摘要工具。它读取文档，找出说明文档要点的句子，并把它们组成摘要。

安装之后，可以用下面的命令生成摘要：

$ seqgpt summarize --local report.pdf --length short
> x <- summary(report)

表 1 列出了三种方法的结果：

方法    R1     R2
前导    32.8   5.2
中心    36.6   6.5

摘要只由文档自己的句子组成，因此不会出现文档中没有的内容。读者可以从每个句子跳到它所在的页面。";
    let sentences = summary_of(Input::Text(text.into())).await;
    assert!(!sentences.is_empty());
    for s in &sentences {
        assert!(not_prose(s).is_none(), "{s:?} is {:?}", not_prose(s));
        assert!(!s.contains("seqgpt summarize") && !s.contains("32.8"), "{s}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cjk_pdfs_of_the_shared_corpus() {
    let dir = PathBuf::from(std::env::var("SEQGPT_PDF_CORPUS").unwrap_or_else(|_| "/tmp/pdfcorpus".into())).join("corpus");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("SKIPPED: no PDF corpus at {} (bash ../shared/pdf/build_corpus.sh /tmp/pdfcorpus)", dir.display());
        return;
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("zh") && n.ends_with(".pdf")))
        .collect();
    files.sort();
    let mut checked = 0;
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let pipeline = Pipeline::new(None, None, PipelineSettings::default());
        let opts = SummaryOptions { length: Length::Long, ..Default::default() };
        let Ok(s) = pipeline.summarize(Input::Pdf { bytes, permit: None }, &opts, &mut Ignore, &Cancel::new()).await else { continue };
        for a in &s.sentences {
            assert!(not_prose(&a.text).is_none(), "{}: {:?} is {:?}", f.display(), a.text, not_prose(&a.text));
        }
        checked += 1;
    }
    eprintln!("checked the summaries of {checked} CJK PDFs");
    assert!(checked > 0);
}
