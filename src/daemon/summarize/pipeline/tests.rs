//! The pipeline against a real scheduler over a scripted backend.

use super::super::{Length, Style};
use super::*;
use seqgpt_engine::generate::{FinishReason, Generated};
use crate::scheduler::backend::{Backend, ModelInfo as BackendInfo, NewSequence, Update};
use crate::scheduler::memory::{BatchState, MemoryModel};
use crate::scheduler::{SchedulerConfig, StartOptions};
use std::sync::Mutex;

/// The texts the test tokenizer has seen: a text's tokens are its index here, repeated
/// once per whitespace-separated word or CJK character (so the backend can tell which
/// prompt it runs, and counts are what a tokenizer would roughly give).
#[derive(Default)]
struct Texts(Mutex<Vec<String>>);

struct Encoder(Arc<Texts>);

impl TextEncoder for Encoder {
    fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        let mut texts = self.0 .0.lock().unwrap();
        texts.push(text.to_string());
        let n: usize = text.split_whitespace().map(|w| w.chars().filter(|c| super::super::text::is_cjk(*c)).count().max(1)).sum();
        Ok(vec![(texts.len() - 1) as u32; n.max(1)])
    }
}

/// A backend that answers every prompt with a fixed function of its text, in two pieces
/// and at once.
struct Echo {
    texts: Arc<Texts>,
    answer: Box<dyn Fn(&str) -> String + Send>,
}

impl Backend for Echo {
    fn info(&self) -> BackendInfo {
        let memory = MemoryModel { n_layer: 1, hidden: 8, n_head: 1, ffn: 8, vocab: 1 << 20, kv_elem_bytes: 1, act_elem_bytes: 1 };
        BackendInfo { context_length: 256, memory, free_memory: Arc::new(|| None) }
    }
    fn admit(&mut self, seqs: Vec<NewSequence>) -> Result<Vec<Update>, String> {
        let mut out = Vec::new();
        for s in seqs {
            let prompt = self.texts.0.lock().unwrap()[s.prompt[0] as usize].clone();
            let answer = (self.answer)(&prompt);
            let half = answer.char_indices().nth(answer.chars().count() / 2).map_or(answer.len(), |(i, _)| i);
            out.push(Update::Token { id: s.id, token: 1, text: answer[..half].to_string() });
            out.push(Update::Token { id: s.id, token: 2, text: answer[half..].to_string() });
            let done = Generated { id: s.id, prompt_tokens: s.prompt.len(), ids: vec![1, 2], text: answer, finish: FinishReason::Length };
            out.push(Update::Finished(done));
        }
        Ok(out)
    }
    fn step(&mut self) -> Result<Vec<Update>, String> {
        Ok(Vec::new())
    }
    fn cancel(&mut self, _ids: &[u64]) -> Result<Vec<Update>, String> {
        Ok(Vec::new())
    }
    fn run_solo(&mut self, seq: NewSequence) -> Result<Generated, String> {
        Err(format!("no beams here ({})", seq.id))
    }
    fn state(&self) -> BatchState {
        BatchState { rows: Vec::new(), cache_len: 0, cache_capacity: 0, cache_bytes: 0, free_memory: None }
    }
    fn reset(&mut self) {}
}

/// A pipeline whose model answers `answer(prompt)`, through a real scheduler with a queue
/// of `queue` prompts (a small queue makes the pipeline retry after Busy).
fn pipeline_with(answer: impl Fn(&str) -> String + Send + 'static, template: Template, queue: usize) -> Pipeline {
    let texts = Arc::new(Texts::default());
    let echo = Echo { texts: texts.clone(), answer: Box::new(answer) };
    let cfg = SchedulerConfig { queue_capacity: queue, ..SchedulerConfig::default() };
    let encoder: Arc<dyn TextEncoder> = Arc::new(Encoder(texts));
    let scheduler = Scheduler::start_with(echo, Some(encoder.clone()), cfg, StartOptions::default()).unwrap();
    let setup = ModelSetup {
        scheduler,
        tokens: encoder,
        name: "echo".into(),
        device: "cpu".into(),
        template_name: "test".into(),
        template,
        reason: "test".into(),
        identity: "echo".into(),
    };
    Pipeline::new(Some(setup), None, PipelineSettings::default())
}

fn pipeline(answer: impl Fn(&str) -> String + Send + 'static, template: Template) -> Pipeline {
    pipeline_with(answer, template, 8)
}

#[derive(Default)]
struct Record(Vec<String>);

impl Observer for Record {
    fn progress(&mut self, stage: Stage, done: u32, total: u32) {
        self.0.push(format!("{} {done}/{total}", stage.as_str()));
    }
    fn partial(&mut self, index: u32, text: &str) {
        self.0.push(format!("partial {index} {text}"));
    }
}

const DOC: &str = "Solar panels convert sunlight into electricity. The cells are made of silicon.\n\n\
                   Installing solar panels lowers the electricity bill. Many households recover the cost within ten years.";

#[tokio::test]
async fn extract_template_keeps_quoted_sentences() {
    let p = pipeline(|_| "key sentence: installing solar panels lowers the electricity bill".into(), Template::seqgpt());
    let mut rec = Record::default();
    let s = p.summarize(Input::Text(DOC.into()), &SummaryOptions::default(), &mut rec, &Cancel::new()).await.unwrap();
    assert_eq!(s.method, Method::Model);
    assert_eq!(s.text, "Installing solar panels lowers the electricity bill.");
    assert_eq!(s.stats.chunks, 1);
    assert_eq!(s.stats.template, "test");
    assert_eq!(rec.0.first().unwrap(), "summarize 0/1");
    assert_eq!(rec.0.last().unwrap(), "summarize 1/1");
    assert!(rec.0.iter().any(|e| e.starts_with("partial 0 ")));
    // The quoted sentence says where it stands.
    assert_eq!(s.sentences.len(), 1);
    let a = &s.sentences[0];
    assert_eq!((a.text.as_str(), a.page), ("Installing solar panels lowers the electricity bill.", 1));
    let on_page: String = DOC.chars().skip(a.start as usize).take((a.end - a.start) as usize).collect();
    assert_eq!(on_page, a.text);
}

#[tokio::test]
async fn a_free_text_summary_has_no_anchors() {
    let p = pipeline(|_| "A summary in other words.".into(), Template::bloomz());
    let s = p.summarize(Input::Text(DOC.into()), &SummaryOptions::default(), &mut Ignore, &Cancel::new()).await.unwrap();
    assert_eq!(s.method, Method::Model);
    assert!(s.sentences.is_empty());
}

#[tokio::test]
async fn extract_template_with_an_unusable_answer_falls_back() {
    let p = pipeline(|_| "zz qq xx".into(), Template::seqgpt());
    let s = p.summarize(Input::Text(DOC.into()), &SummaryOptions::default(), &mut Ignore, &Cancel::new()).await.unwrap();
    assert_eq!(s.method, Method::Extractive);
    assert!(s.stats.fallback.contains("quotes no sentence"), "{}", s.stats.fallback);
    assert!(!s.text.is_empty());
}

#[tokio::test]
async fn instruction_template_reduces_several_chunks() {
    let answer = |p: &str| if p.starts_with("Summaries") { "Final summary.".to_string() } else { "Part summary.".to_string() };
    let mut t = Template::bloomz();
    // A small prompt limit forces several chunks; a queue of one makes the pipeline retry
    // after Busy.
    t.max_prompt_tokens = 60;
    let long: String = (0..30).map(|i| format!("Sentence number {i} talks about topic {i}.\n\n")).collect();
    let p = pipeline_with(answer, t, 1);
    let mut rec = Record::default();
    let s = p.summarize(Input::Text(long), &SummaryOptions { length: Length::Short, ..Default::default() }, &mut rec, &Cancel::new()).await.unwrap();
    assert_eq!(s.method, Method::Model, "{}", s.stats.fallback);
    assert_eq!(s.text, "Final summary.");
    assert!(s.stats.chunks > 1);
    assert!(rec.0.iter().any(|e| e.starts_with("reduce ")), "{:?}", rec.0);
    // Chunk partials first, then the reduce prompt's, numbered after the chunks.
    let reduce_partial = format!("partial {} ", s.stats.chunks);
    assert!(rec.0.iter().any(|e| e.starts_with(&reduce_partial)), "{:?}", rec.0);
}

#[tokio::test]
async fn bullets_and_method_choice() {
    let p = pipeline(|_| "First point. Second point.".into(), Template::bloomz());
    let opts = SummaryOptions { style: Style::Bullets, ..Default::default() };
    let s = p.summarize(Input::Text(DOC.into()), &opts, &mut Ignore, &Cancel::new()).await.unwrap();
    assert_eq!(s.text, "- First point.\n- Second point.");
    let opts = SummaryOptions { method: MethodChoice::Extractive, ..Default::default() };
    let s = p.summarize(Input::Text(DOC.into()), &opts, &mut Ignore, &Cancel::new()).await.unwrap();
    assert_eq!(s.method, Method::Extractive);
    assert!(s.stats.fallback.is_empty());
    let none = Pipeline::new(None, None, PipelineSettings::default());
    let opts = SummaryOptions { method: MethodChoice::Model, ..Default::default() };
    let err = none.summarize(Input::Text(DOC.into()), &opts, &mut Ignore, &Cancel::new()).await.unwrap_err();
    assert!(matches!(err, SummaryError::ModelUnavailable(_)));
}

#[tokio::test]
async fn text_pages_and_errors() {
    let none = Pipeline::new(None, None, PipelineSettings::default());
    let text = "Page one has a sentence about rivers.\u{000C}Page two talks about mountains and valleys.";
    let opts = SummaryOptions { pages: Some(2..=2), ..Default::default() };
    let s = none.summarize(Input::Text(text.into()), &opts, &mut Ignore, &Cancel::new()).await.unwrap();
    assert!(s.text.contains("mountains") && !s.text.contains("rivers"));
    assert_eq!((s.stats.page_count, s.stats.pages), (2, 1));
    let opts = SummaryOptions { pages: Some(3..=4), ..Default::default() };
    assert!(matches!(none.summarize(Input::Text(text.into()), &opts, &mut Ignore, &Cancel::new()).await, Err(SummaryError::InvalidArgs(_))));
    assert!(matches!(none.summarize(Input::Text(" \n\n ".into()), &SummaryOptions::default(), &mut Ignore, &Cancel::new()).await, Err(SummaryError::NoText(_))));
}

#[tokio::test]
async fn cache_hits_skip_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let cache = SummaryCache::open(dir.path(), 10).unwrap();
    let p = Pipeline::new(None, Some(cache), PipelineSettings::default());
    let first = p.summarize(Input::Text(DOC.into()), &SummaryOptions::default(), &mut Ignore, &Cancel::new()).await.unwrap();
    assert!(!first.stats.cached);
    let again = p.summarize(Input::Text(DOC.into()), &SummaryOptions::default(), &mut Ignore, &Cancel::new()).await.unwrap();
    assert!(again.stats.cached);
    assert_eq!(again.text, first.text);
    let opts = SummaryOptions { no_cache: true, ..Default::default() };
    assert!(!p.summarize(Input::Text(DOC.into()), &opts, &mut Ignore, &Cancel::new()).await.unwrap().stats.cached);
    let opts = SummaryOptions { password: Some("x".into()), ..Default::default() };
    assert!(p.cache_key(content_hash(DOC.as_bytes()), "text", &opts).is_none());
}

#[tokio::test]
async fn classify_and_extract_use_seqgpt_prompts() {
    let p = pipeline(|p| if p.contains("分类") { "neg".into() } else { "地名: 北京".into() }, Template::seqgpt());
    let (labels, raw) = p.classify("bad film", &["pos".into(), "neg".into()], &Cancel::new()).await.unwrap();
    assert_eq!((labels, raw.as_str()), (vec!["neg".to_string()], "neg"));
    let (spans, _) = p.find_spans("我在北京", &["地名".into()], &Cancel::new()).await.unwrap();
    assert_eq!(spans["地名"], vec!["北京"]);
    assert!(matches!(p.classify("x", &[], &Cancel::new()).await, Err(SummaryError::InvalidArgs(_))));
    let none = Pipeline::new(None, None, PipelineSettings::default());
    assert!(matches!(none.classify("x", &["a".into()], &Cancel::new()).await, Err(SummaryError::ModelUnavailable(_))));
}
