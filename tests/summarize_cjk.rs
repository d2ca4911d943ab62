//! CJK documents: the same structure stage as Latin ones (no code, table or formula lines in
//! their summaries), whole sentences (brackets, quotes and URLs kept together), paragraphs kept
//! whole at any line spacing, their language detected, look-alike ideographs unified. Checked on
//! Chinese texts and PDFs made here, and also on the CJK PDFs of the shared PDF corpus when
//! `SEQGPT_PDF_CORPUS` names it (../shared/pdf/build_corpus.sh).

#[path = "pdf/builder.rs"]
mod builder;

use seqgpt_daemon::summarize::pipeline::{Ignore, Input, Pipeline, PipelineSettings};
use seqgpt_daemon::summarize::{Cancel, Length, SummaryOptions};
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

/// A one-page PDF of CJK lines set in a Type0 font (Identity-H, each distinct character one
/// CID, a ToUnicode map): (size, x, y, text) per line.
fn cjk_pdf(lines: &[(f32, f32, f32, &str)]) -> Vec<u8> {
    let mut chars: Vec<char> = lines.iter().flat_map(|l| l.3.chars()).collect();
    chars.sort_unstable();
    chars.dedup();
    let cid = |c: char| chars.binary_search(&c).unwrap() + 1;
    let mut map = String::new();
    for group in chars.chunks(100) {
        map.push_str(&format!("{} beginbfchar\n", group.len()));
        for &c in group {
            let mut u = [0u16; 2];
            let hex: String = c.encode_utf16(&mut u).iter().map(|w| format!("{w:04X}")).collect();
            map.push_str(&format!("<{:04X}> <{hex}>\n", cid(c)));
        }
        map.push_str("endbfchar\n");
    }
    let cmap = format!("begincmap 1 begincodespacerange <0000> <FFFF> endcodespacerange\n{map}endcmap");
    let mut pdf = builder::Pdf::new();
    let tu = pdf.stream("", cmap.as_bytes());
    let desc = pdf.add("<< /Type /Font /Subtype /CIDFontType0 /BaseFont /Song /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 1000 >>");
    let font = pdf.add(format!("<< /Type /Font /Subtype /Type0 /BaseFont /Song /Encoding /Identity-H /DescendantFonts [{desc} 0 R] /ToUnicode {tu} 0 R >>"));
    let mut content = String::new();
    for (size, x, y, text) in lines {
        let codes: String = text.chars().map(|c| format!("{:04X}", cid(c))).collect();
        content.push_str(&format!("BT /F1 {size} Tf {x} {y} Td <{codes}> Tj ET\n"));
    }
    builder::doc_with_pages(&mut pdf, &[(content.into_bytes(), format!("<< /Font << /F1 {font} 0 R >> >>"))])
}

async fn summarize(input: Input, opts: &SummaryOptions) -> seqgpt_daemon::summarize::Summary {
    Pipeline::new(None, None, PipelineSettings::default()).summarize(input, opts, &mut Ignore, &Cancel::new()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_spaced_chinese_page_keeps_its_paragraphs_whole() {
    // 10-point text on a 24-point pitch (a thesis's double spacing); the second paragraph
    // starts with an indent and a slightly wider gap. Each line ends inside a sentence.
    let lines = [
        "多准则推荐系统可以被定义为包含多标准偏好信息的推荐系统，它在用户",
        "对物品的多个方面分别评分的平台上向用户推荐物品，本文研究这类系统在",
        "大型在线点评平台上的应用，这些平台上的每个用户都会从价格、质量和服",
        "务等几个方面给商家打分。",
        "本文提出一种从每个用户的评分中学习各个准则权重的方法，并在从该平台",
        "收集的三个评分数据集上把它与经典方法比较，这些数据集覆盖了平台运行",
        "的好几年时间，结果表明学到的权重改善了大多数用户得到的推荐，对评分",
        "较少的新用户也同样有效。",
    ];
    let mut page = vec![(14.0, 72.0, 740.0, "第一章 绪论")];
    for (i, t) in lines.iter().enumerate() {
        let gap = if i >= 4 { 30.0 } else { 0.0 };
        page.push((10.0, if i == 4 { 92.0 } else { 72.0 }, 710.0 - 24.0 * i as f32 - gap, *t));
    }
    let bytes = cjk_pdf(&page);
    let text = seqgpt_pdf::extract_text(&bytes, &seqgpt_pdf::ExtractOptions::default()).unwrap().pages[0].text.clone();
    assert!(text.contains(&lines[..4].join("\n")), "the paragraph's lines were split:\n{text}");
    assert!(text.contains(&lines[4..].join("\n")), "the paragraph's lines were split:\n{text}");
    let s = summarize(Input::Pdf { bytes, permit: None }, &SummaryOptions { max_words: Some(120), ..Default::default() }).await;
    assert!(!s.sentences.is_empty());
    for a in &s.sentences {
        assert!(a.text.starts_with("多准则推荐系统") || a.text.starts_with("本文提出"), "a fragment of a sentence: {:?}", a.text);
    }
    assert_eq!(s.stats.language, "zh");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chinese_sentences_keep_their_brackets_urls_and_asides() {
    let text = "\
本文介绍排版工具的表格命令，说明如何在表格中插入额外的内容（这时可以使用 \\noalign 命令。将该参数的值用作其他命令的参量。）并保持表格的对齐。\
用户可以参考扩展文档 http://asymptote.sourceforge.net/doc/ 了解更多的绘图命令，其中给出了大量的例子。\
在检查磁盘之前先卸载文件系统。（对未挂载的文件系统这么做。）检查完成后重新挂载文件系统，就可以继续使用其中的数据了。\
本工具的主要功能是排版表格、绘制插图和生成目录，它适合编写篇幅较长的技术文档和学位论文。

添加 dh_pysupport 命令的支持。

通过下列命令安装旧版本的 foo 软件包。";
    let s = summarize(Input::Text(text.into()), &SummaryOptions { max_words: Some(400), ..Default::default() }).await;
    assert!(!s.sentences.is_empty());
    for a in &s.sentences {
        let t = a.text.as_str();
        assert!(t.ends_with(['。', '！', '？', '）']), "not a whole sentence: {t:?}");
        assert_eq!(t.matches('（').count(), t.matches('）').count(), "unbalanced: {t:?}");
        assert!(!t.starts_with('（'), "a parenthetical standing alone: {t:?}");
        assert!(!t.ends_with("http://asymptote.") && !t.contains("dh_pysupport") && !t.contains("下列命令"), "{t:?}");
        if t.contains("http://") {
            assert!(t.contains("http://asymptote.sourceforge.net/doc/ 了解更多"), "a cut URL: {t:?}");
        }
    }
    assert!(s.sentences.iter().any(|a| a.text.contains("（这时可以使用 \\noalign 命令。将该参数的值用作其他命令的参量。）并保持")), "{:?}", s.sentences);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn japanese_and_korean_documents_are_told_from_chinese() {
    let ja = "機械学習は、データから規則を自動的に学ぶための方法です。本書では、その基本的な考え方と代表的な手法を説明します。最後に、実際のデータを使った例を紹介します。";
    let ko = "기계 학습은 데이터에서 규칙을 자동으로 배우는 방법입니다. 이 문서는 그 기본적인 생각과 대표적인 방법을 설명합니다. 마지막으로 실제 데이터를 사용한 예를 소개합니다.";
    let zh = "机器学习是从数据中自动学习规则的方法。本书介绍它的基本思想和代表性的方法。最后，本书给出使用实际数据的例子。";
    for (text, lang) in [(ja, "ja"), (ko, "ko"), (zh, "zh")] {
        let s = summarize(Input::Text(text.into()), &SummaryOptions::default()).await;
        assert_eq!(s.stats.language, lang, "{text}");
        assert!(!s.sentences.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kangxi_radicals_are_read_as_the_ideographs_they_look_like() {
    // "⽂档" with U+2F42 KANGXI RADICAL SCRIPT for 文, and U+F9B4 (a compatibility form of 零).
    let text = "本⽂档介绍一个在边缘设备上离线运行的摘要工具，它读取⽂档并找出说明要点的句子。数值从\u{F9B4}开始计数，每一页都有编号。";
    let s = summarize(Input::Text(text.into()), &SummaryOptions::default()).await;
    let all: String = s.sentences.iter().map(|a| a.text.as_str()).collect();
    assert!(all.contains("本文档介绍"), "{all}");
    assert!(!all.contains('\u{2F42}') && !all.contains('\u{F9B4}'), "{all}");
}

/// The CJK PDFs of the shared corpus that `SEQGPT_PDF_CORPUS` names: every one summarizes and
/// its summary holds no code (a failure to summarize fails the test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the shared PDF corpus (the made CJK PDFs above run everywhere): SEQGPT_PDF_CORPUS=/tmp/pdfcorpus cargo test --release --test summarize_cjk -- --ignored"]
async fn cjk_pdfs_of_the_shared_corpus() {
    let root = std::env::var("SEQGPT_PDF_CORPUS").expect("SEQGPT_PDF_CORPUS: the folder ../shared/pdf/build_corpus.sh built");
    let dir = PathBuf::from(root).join("corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("SEQGPT_PDF_CORPUS: {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("zh") && n.ends_with(".pdf")))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no zh*.pdf in {}", dir.display());
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let opts = SummaryOptions { length: Length::Long, ..Default::default() };
        let s = Pipeline::new(None, None, PipelineSettings::default())
            .summarize(Input::Pdf { bytes, permit: None }, &opts, &mut Ignore, &Cancel::new())
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(!s.sentences.is_empty(), "{}: an empty summary", f.display());
        for a in &s.sentences {
            assert!(not_prose(&a.text).is_none(), "{}: {:?} is {:?}", f.display(), a.text, not_prose(&a.text));
        }
    }
    eprintln!("checked the summaries of {} CJK PDFs", files.len());
}
