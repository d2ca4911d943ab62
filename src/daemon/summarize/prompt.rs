//! Prompt templates per model family, and reading the model's answers.
//!
//! Two kinds of template:
//! - `extract`: SeqGPT's own format. SeqGPT-560M is BLOOM-560M instruction-tuned on two atomic
//!   NLU tasks only, classification and extraction, with one fixed prompt:
//!   `输入: {text}\n{分类|抽取}: {labels}\n输出: [GEN]`. It was never trained to write free text,
//!   and its authors warn that changing the instruction harms it. So the default template asks
//!   it to *extract* spans labelled "key sentence" (关键句 for Chinese text) from each chunk. The
//!   pipeline keeps only the document's sentences that the answer actually quotes (see
//!   [`quoted_sentences`]): the summary is made of the document's own sentences, selected by the
//!   model, and cannot contain invented text. When the answer quotes nothing usable, the job
//!   falls back to the extractive ranker and says so.
//! - `instruction`: a plain instruction ("Write a summary of the text above in N sentences:")
//!   for instruction-following families such as BLOOMZ/mT0, whose answer is the summary; the
//!   partial summaries of several chunks go through a reduce prompt.
//!
//! The family is read from the model file's `general.name` (`[summarize] template = "auto"`):
//! names containing "bloomz" or "mt0" get `bloomz`, everything else (SeqGPT, and BLOOM-shaped
//! models this project does not know) gets `seqgpt`, the model this daemon is built for.
//! `[summarize.templates.NAME]` tables override the built-in templates or add new ones.

use super::text::{is_cjk, is_cjk_letter, split_sentences};
use super::{Language, Length};
use serde::Deserialize;
use std::collections::BTreeMap;

/// SeqGPT's generation marker, part of its trained prompt.
pub const SEQGPT_GEN: &str = "[GEN]";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TemplateKind {
    /// The answer quotes the chunk's key sentences (SeqGPT's extraction prompt); the summary
    /// is the quoted sentences. `extract` is this kind's older name in config files.
    #[serde(alias = "extract")]
    Quote,
    /// An instruction: the answer is the summary.
    Instruction,
}

/// A summary template, as written in the config (`[summarize.templates.NAME]`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Template {
    pub kind: TemplateKind,
    /// Prompt for one chunk. Placeholders: `{text}`; `{label}` (extract); `{sentences}`
    /// (instruction: how many sentences the summary should have).
    pub prompt: String,
    /// The prompt for Chinese documents (default: `prompt`).
    #[serde(default)]
    pub prompt_zh: Option<String>,
    /// Instruction kind: the prompt that merges partial summaries (`{text}`, `{sentences}`);
    /// default: `prompt`.
    #[serde(default)]
    pub reduce_prompt: Option<String>,
    #[serde(default)]
    pub reduce_prompt_zh: Option<String>,
    /// Quote kind: the label of the spans to extract.
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub label_zh: Option<String>,
    /// Longest prompt in tokens (0: the model's context). SeqGPT was trained on prompts cut
    /// to 1024 tokens.
    #[serde(default)]
    pub max_prompt_tokens: usize,
    /// New tokens per chunk for the lengths short, medium and long.
    #[serde(default = "default_new_tokens")]
    pub max_new_tokens: [usize; 3],
    #[serde(default = "one")]
    pub repetition_penalty: f32,
    /// Generation stops at any of these (cut off).
    #[serde(default)]
    pub stop: Vec<String>,
}

fn default_new_tokens() -> [usize; 3] {
    [96, 160, 256]
}

fn one() -> f32 {
    1.0
}

impl Template {
    /// SeqGPT's extraction format (see the module documentation for why).
    pub fn seqgpt() -> Self {
        Template {
            kind: TemplateKind::Quote,
            prompt: format!("输入: {{text}}\n抽取: {{label}}\n输出: {SEQGPT_GEN}"),
            prompt_zh: None,
            reduce_prompt: None,
            reduce_prompt_zh: None,
            label: Some("key sentence".into()),
            label_zh: Some("关键句".into()),
            max_prompt_tokens: 1024,
            max_new_tokens: [128, 192, 256],
            // The authors' generation settings (inference.py): repetition_penalty 2.0.
            repetition_penalty: 2.0,
            stop: Vec::new(),
        }
    }

    /// A plain instruction for BLOOMZ-style instruction-tuned models.
    pub fn bloomz() -> Self {
        Template {
            kind: TemplateKind::Instruction,
            prompt: "{text}\n\nWrite a summary of the text above in {sentences} sentences:".into(),
            prompt_zh: Some("{text}\n\n用{sentences}句话概括上文：".into()),
            reduce_prompt: Some(
                "Summaries of the parts of one document:\n{text}\n\nCombine them into one summary of {sentences} sentences:".into(),
            ),
            reduce_prompt_zh: Some("以下是一篇文档各部分的摘要：\n{text}\n\n把它们合并成{sentences}句话的摘要：".into()),
            label: None,
            label_zh: None,
            max_prompt_tokens: 0,
            max_new_tokens: [96, 160, 256],
            repetition_penalty: 1.1,
            stop: Vec::new(),
        }
    }

    /// Checks the placeholders.
    pub fn validate(&self, name: &str) -> Result<(), String> {
        let prompts = [Some(&self.prompt), self.prompt_zh.as_ref(), self.reduce_prompt.as_ref(), self.reduce_prompt_zh.as_ref()];
        for p in prompts.into_iter().flatten() {
            if !p.contains("{text}") {
                return Err(format!("template '{name}': every prompt needs a {{text}} placeholder: {p:?}"));
            }
        }
        if self.kind == TemplateKind::Quote && self.label.as_deref().is_none_or(|l| l.trim().is_empty()) {
            return Err(format!("template '{name}': a quote template needs a label"));
        }
        if self.max_new_tokens.contains(&0) {
            return Err(format!("template '{name}': max_new_tokens must be at least 1"));
        }
        if self.repetition_penalty.is_nan() || self.repetition_penalty <= 0.0 {
            return Err(format!("template '{name}': repetition_penalty must be > 0"));
        }
        Ok(())
    }

    pub fn new_tokens(&self, length: Length) -> usize {
        self.max_new_tokens[length as usize]
    }

    /// The prompt for one chunk of a document in `lang`.
    pub fn chunk_prompt(&self, text: &str, lang: Language, length: Length) -> String {
        let p = match lang {
            Language::Zh => self.prompt_zh.as_ref().unwrap_or(&self.prompt),
            _ => &self.prompt,
        };
        self.fill(p, text, lang, length)
    }

    /// The prompt merging partial summaries (instruction kind).
    pub fn reduce_prompt(&self, text: &str, lang: Language, length: Length) -> String {
        let p = match lang {
            Language::Zh => self.reduce_prompt_zh.as_ref().or(self.reduce_prompt.as_ref()).or(self.prompt_zh.as_ref()),
            _ => self.reduce_prompt.as_ref(),
        }
        .unwrap_or(&self.prompt);
        self.fill(p, text, lang, length)
    }

    fn fill(&self, p: &str, text: &str, lang: Language, length: Length) -> String {
        let label = match lang {
            Language::Zh => self.label_zh.as_ref().or(self.label.as_ref()),
            _ => self.label.as_ref(),
        };
        let sentences = match length {
            Length::Short => 2,
            Length::Medium => 4,
            Length::Long => 8,
        };
        // {text} last, so that braces inside the document are never taken as placeholders.
        p.replace("{label}", label.map_or("", String::as_str))
            .replace("{sentences}", &sentences.to_string())
            .replace("{text}", text)
    }
}

/// The built-in templates, overridden or extended by the config's.
pub fn templates(configured: &BTreeMap<String, Template>) -> BTreeMap<String, Template> {
    let mut all = BTreeMap::new();
    all.insert("seqgpt".to_string(), Template::seqgpt());
    all.insert("bloomz".to_string(), Template::bloomz());
    for (k, v) in configured {
        all.insert(k.clone(), v.clone());
    }
    all
}

/// The template name `template = "auto"` chooses for a model called `general_name`, and why.
pub fn auto_template(general_name: &str) -> (&'static str, String) {
    let name = general_name.to_lowercase();
    if name.contains("bloomz") || name.contains("mt0") {
        ("bloomz", format!("model name '{general_name}' is an instruction-tuned BLOOMZ/mT0 family model"))
    } else if name.contains("seqgpt") {
        ("seqgpt", format!("model name '{general_name}' is SeqGPT (trained on extraction and classification prompts)"))
    } else {
        ("seqgpt", format!("model name '{general_name}' names no known family; using SeqGPT's format, this daemon's model"))
    }
}

/// The language of a document from its letters: Korean when hangul makes up a third of them,
/// Japanese when Han and kana do and kana is at least a twentieth of those (Japanese prose
/// writes its endings and particles in kana; Chinese has none), Chinese when Han letters make
/// up a third, else English (the template's default prompt).
pub fn detect_language<'a>(texts: impl IntoIterator<Item = &'a str>) -> Language {
    let (mut han, mut kana, mut hangul, mut letters) = (0usize, 0usize, 0usize, 0usize);
    for t in texts {
        for c in t.chars() {
            match script(c) {
                Some(Script::Han) => han += 1,
                Some(Script::Kana) => kana += 1,
                Some(Script::Hangul) => hangul += 1,
                None if c.is_alphabetic() => {}
                None => continue,
            }
            letters += 1;
        }
    }
    let share = |n: usize| letters > 0 && n * 3 > letters;
    if share(hangul) {
        Language::Ko
    } else if share(han + kana) && kana * 20 >= han + kana {
        Language::Ja
    } else if share(han + kana) {
        Language::Zh
    } else {
        Language::En
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    Han,
    Kana,
    Hangul,
}

/// The CJK script of a letter (the katakana middle dot and the prolonged sound mark, which
/// Chinese text borrows, are no kana).
fn script(c: char) -> Option<Script> {
    match c as u32 {
        0x30FB | 0x30FC => None,
        0x3040..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9D => Some(Script::Kana),
        0xAC00..=0xD7AF | 0x1100..=0x11FF | 0x3130..=0x318F => Some(Script::Hangul),
        _ if is_cjk_letter(c) => Some(Script::Han),
        _ => None,
    }
}

/// SeqGPT's prompt for classification (`分类`) or extraction (`抽取`) with `labels` (joined
/// with the full-width comma, as in the authors' code).
pub fn seqgpt_task_prompt(task: SeqGptTask, text: &str, labels: &[String]) -> String {
    let task = match task {
        SeqGptTask::Classify => "分类",
        SeqGptTask::Spans => "抽取",
    };
    format!("输入: {}\n{}: {}\n输出: {SEQGPT_GEN}", text.trim(), task, labels.join("，"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqGptTask {
    /// `分类`: which of the labels apply (the D-Bus method `Classify`).
    Classify,
    /// `抽取`: the spans of the text of each kind (the D-Bus method `Extract`).
    Spans,
}

/// SeqGPT's extraction prompts take at most this many labels each (the authors split longer
/// label sets: "smaller N results higher recall").
pub const SPAN_KINDS_PER_PROMPT: usize = 6;

/// Labels of `labels` that the classification answer names, in answer order, without repeats.
pub fn parse_classification(answer: &str, labels: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for piece in answer.split(['，', ',', '\n', ';', '；', '、']) {
        let piece = piece.trim().trim_end_matches(['.', '。']);
        if let Some(l) = labels.iter().find(|l| l.trim().eq_ignore_ascii_case(piece)) {
            if !out.contains(l) {
                out.push(l.clone());
            }
        }
    }
    out
}

/// Spans per label from an extraction answer. SeqGPT answers one line per label,
/// `label: span1，span2` (`None`/`无` for nothing); lines for labels that were not asked are
/// ignored, and spans are kept only once.
pub fn parse_spans(answer: &str, labels: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = labels.iter().map(|l| (l.clone(), Vec::new())).collect();
    for line in answer.lines() {
        let Some((label, rest)) = line.split_once(':').or_else(|| line.split_once('：')) else { continue };
        let Some(key) = labels.iter().find(|l| l.trim().eq_ignore_ascii_case(label.trim())) else { continue };
        let spans = out.get_mut(key).expect("every label has an entry");
        for span in rest.split(['，', ',']) {
            let span = span.trim().trim_matches(['[', ']', '"', '\'']).trim();
            if span.is_empty() || span.eq_ignore_ascii_case("none") || span == "无" || span == "null" {
                continue;
            }
            if !spans.iter().any(|s| s == span) {
                spans.push(span.to_string());
            }
        }
    }
    out
}

/// Indices of the sentences of `chunk_sentences` that `answer` quotes: the answer contains a
/// run of at least half of the sentence (and at least 12 characters, or 6 for CJK text, or the
/// whole sentence when it is shorter), after folding case and whitespace. Robust to the answer's
/// format (labels, separators, partial spans).
pub fn quoted_sentences(answer: &str, chunk_sentences: &[&str]) -> Vec<usize> {
    let answer = fold(answer);
    if answer.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, s) in chunk_sentences.iter().enumerate() {
        let s = fold(s);
        if s.is_empty() {
            continue;
        }
        let cjk = s.iter().filter(|c| is_cjk(**c)).count() * 2 > s.len();
        let floor = if cjk { 6 } else { 12 };
        let need = (s.len() / 2).max(floor).min(s.len());
        if longest_common_run(&s, &answer) >= need {
            out.push(i);
        }
    }
    out
}

/// The sentences of a chunk's text (the units [`quoted_sentences`] matches).
pub fn chunk_sentences(text: &str) -> Vec<&str> {
    text.split("\n\n").flat_map(|p| split_sentences(p).into_iter().map(move |r| &p[r])).collect()
}

/// Lowercase characters with whitespace runs as one space and no leading/trailing space.
fn fold(text: &str) -> Vec<char> {
    let mut out = Vec::new();
    for c in text.chars() {
        if c.is_whitespace() {
            if out.last().is_some_and(|l: &char| *l != ' ') {
                out.push(' ');
            }
        } else {
            out.extend(c.to_lowercase());
        }
    }
    if out.last() == Some(&' ') {
        out.pop();
    }
    out
}

/// Length of the longest common substring of `a` and `b` (dynamic programming, one row).
fn longest_common_run(a: &[char], b: &[char]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    let mut cur = vec![0usize; b.len() + 1];
    let mut best = 0;
    for &x in a {
        for (j, &y) in b.iter().enumerate() {
            cur[j + 1] = if x == y { prev[j] + 1 } else { 0 };
            best = best.max(cur[j + 1]);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn japanese_and_korean_are_not_chinese() {
        assert_eq!(detect_language(["機械学習は、データから規則を学ぶ方法です。本書ではその基本を説明します。"]), Language::Ja);
        assert_eq!(detect_language(["기계 학습은 데이터에서 규칙을 배우는 방법입니다. 이 문서는 그 기초를 설명합니다."]), Language::Ko);
        assert_eq!(detect_language(["机器学习是从数据中学习规则的方法。本文介绍它的基础・概念。"]), Language::Zh);
        assert_eq!(detect_language(["Machine learning learns rules from data (机器学习)."]), Language::En);
        // The Chinese prompt is for Chinese only: Japanese and Korean get the default one.
        let t = Template::seqgpt();
        assert!(t.chunk_prompt("テキスト。", Language::Ja, Length::Short).contains("key sentence"));
        assert!(t.chunk_prompt("텍스트.", Language::Ko, Length::Short).contains("key sentence"));
    }

    #[test]
    fn seqgpt_prompt_is_the_trained_format() {
        let t = Template::seqgpt();
        assert_eq!(t.chunk_prompt("天气很好。", Language::Zh, Length::Short), "输入: 天气很好。\n抽取: 关键句\n输出: [GEN]");
        assert_eq!(t.chunk_prompt("It rains.", Language::En, Length::Short), "输入: It rains.\n抽取: key sentence\n输出: [GEN]");
        assert_eq!(
            seqgpt_task_prompt(SeqGptTask::Classify, " good film ", &["pos".into(), "neg".into()]),
            "输入: good film\n分类: pos，neg\n输出: [GEN]"
        );
    }

    #[test]
    fn placeholders_in_the_document_are_left_alone() {
        let t = Template::bloomz();
        let p = t.chunk_prompt("a {sentences} b {label}", Language::En, Length::Medium);
        assert_eq!(p, "a {sentences} b {label}\n\nWrite a summary of the text above in 4 sentences:");
        assert!(t.reduce_prompt("x", Language::Zh, Length::Long).contains("8句话"));
    }

    #[test]
    fn auto_family_from_the_model_name() {
        assert_eq!(auto_template("SeqGPT-560M").0, "seqgpt");
        assert_eq!(auto_template("bloomz-560m").0, "bloomz");
        assert_eq!(auto_template("tiny").0, "seqgpt");
    }

    #[test]
    fn validation_catches_missing_placeholders() {
        let mut t = Template::bloomz();
        assert!(t.validate("bloomz").is_ok());
        t.prompt = "Summarize:".into();
        assert!(t.validate("x").is_err());
        let mut t = Template::seqgpt();
        t.label = None;
        assert!(t.validate("y").is_err());
    }

    #[test]
    fn classification_and_extraction_answers() {
        let labels = vec!["pos".to_string(), "neg".to_string()];
        assert_eq!(parse_classification("neg", &labels), vec!["neg"]);
        assert_eq!(parse_classification("Pos，neg，maybe", &labels), vec!["pos", "neg"]);
        assert!(parse_classification("garbage", &labels).is_empty());
        let kinds = vec!["地名".to_string(), "人名".to_string()];
        let got = parse_spans("地名: 中国，北京\n人名: None\n其他: x", &kinds);
        assert_eq!(got["地名"], vec!["中国", "北京"]);
        assert!(got["人名"].is_empty());
        assert!(!got.contains_key("其他"));
    }

    #[test]
    fn quoted_sentences_match_partial_spans() {
        let text = "Solar panels convert sunlight into electricity. The cat is grey.\n\n太阳能电池板把阳光转换成电能。猫是灰色的。";
        let sentences = chunk_sentences(text);
        assert_eq!(sentences.len(), 4);
        let answer = "key sentence: solar panels convert sunlight into electricity，太阳能电池板把阳光转换";
        assert_eq!(quoted_sentences(answer, &sentences), vec![0, 2]);
        assert!(quoted_sentences("zq xv unrelated tokens", &sentences).is_empty());
        assert!(quoted_sentences("", &sentences).is_empty());
    }
}
