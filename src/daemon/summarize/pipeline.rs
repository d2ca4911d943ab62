//! The pipeline's driver: from an input and options to a [`Summary`], reporting progress and
//! streamed text to an [`Observer`].
//!
//! Every step that costs CPU or disk (hashing, the cache, extraction, cleaning, ranking,
//! chunking, tokenizing) runs on tokio's blocking threads, at most `cpu_concurrency` at once,
//! never on the async threads that serve the bus. Cancelling is dropping the future (the
//! generation handles it holds cancel their prompts when dropped) and setting the [`Cancel`]
//! flag, which the blocking steps check between stages and inside their long loops.

use super::cache::{content_hash, CacheKey, SummaryCache};
use super::chunk::{chunk, Chunk};
use super::clean::Paragraph;
use super::document::{text_pages, Anchor, Document};
use super::extract::{extract_pages, ExtractedPages};
use super::extractive::{render_sentences, Ranker};
use crate::scheduler::{Event, JobHandle, Request, Scheduler, SchedulerError, TextEncoder};
use super::prompt::{
    chunk_sentences, detect_language, parse_classification, parse_extraction, quoted_sentences, seqgpt_task_prompt,
    SeqGptTask, Template, TemplateKind, EXTRACT_LABELS_PER_PROMPT,
};
use super::text::split_sentences;
use super::{Cancel, Language, Method, MethodChoice, Summary, SummaryError, SummaryOptions, SummaryStats};
use crate::generate::{GenerationConfig, Sampling};
use futures_util::stream::{self, StreamExt};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use crate::pdf::Limits as PdfLimits;

/// The version of the extractive ranker, part of cache keys.
const EXTRACTIVE_VERSION: &str = "extractive-v2";

/// What to summarize.
#[derive(Debug)]
pub enum Input {
    /// Plain UTF-8 text; form feeds separate pages.
    Text(String),
    /// A PDF file's bytes. `permit`: a place among the extractions allowed at once
    /// ([`Pipeline::extract_permit`]), when the caller took one before reading the file;
    /// otherwise the pipeline takes one.
    Pdf { bytes: Vec<u8>, permit: Option<OwnedSemaphorePermit> },
}

/// A phase of a job, as reported in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Reading the PDF (pages done of total).
    Extract,
    /// Model prompts for the chunks (chunks done of total).
    Summarize,
    /// Merging partial summaries (prompts done of total).
    Reduce,
    /// The extractive ranker (0 of 1, then 1 of 1).
    Rank,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Extract => "extract",
            Stage::Summarize => "summarize",
            Stage::Reduce => "reduce",
            Stage::Rank => "rank",
        }
    }
}

/// Receives a job's progress and streamed text, in order.
pub trait Observer: Send {
    fn progress(&mut self, stage: Stage, done: u32, total: u32);
    /// Text the model generated for prompt `index` (chunks from 0, then the reduce prompts),
    /// as it grows; for the extractive method, the summary once.
    fn partial(&mut self, index: u32, text: &str);
}

/// An observer that ignores everything.
pub struct Ignore;

impl Observer for Ignore {
    fn progress(&mut self, _: Stage, _: u32, _: u32) {}
    fn partial(&mut self, _: u32, _: &str) {}
}

/// The model side of a pipeline: the scheduler over the model's engine (prompts go to it, and
/// its events come back, as they are), and what the pipeline needs to know of the model.
pub struct ModelSetup {
    pub scheduler: Scheduler,
    /// The model's tokenizer: chunks are measured in its tokens.
    pub tokens: Arc<dyn TextEncoder>,
    /// `general.name` (or the file's stem), and where the model runs.
    pub name: String,
    pub device: String,
    pub template_name: String,
    pub template: Template,
    /// Why this template (logged, and shown in `seqgpt summarize --json`).
    pub reason: String,
    /// Identifies the model for cache keys (name, file size and time, template).
    pub identity: String,
}

impl ModelSetup {
    /// Tokens of `text` in the model's tokenizer (its characters if it cannot be encoded).
    pub fn count_tokens(&self, text: &str) -> usize {
        count_tokens(self.tokens.as_ref(), text)
    }

    /// Tokens of context (prompt and generated) one request may use.
    pub fn context_length(&self) -> usize {
        self.scheduler.context_length()
    }
}

fn count_tokens(tokens: &dyn TextEncoder, text: &str) -> usize {
    tokens.encode(text).map_or_else(|_| text.chars().count(), |ids| ids.len())
}

/// Tunables.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineSettings {
    /// A document that needs more chunks than this is first condensed by the extractive
    /// ranker to what fits this many chunks (CPU time stays bounded for long documents).
    pub max_model_chunks: usize,
    /// How long to wait before submitting again when the model's queue is full.
    pub busy_retry: Duration,
    /// The PDF extractor's limits (file size, pages, decoded streams, operators).
    pub pdf_limits: PdfLimits,
    /// PDFs extracted at once (each holds its file and its decoded streams in memory).
    pub extract_concurrency: usize,
    /// Blocking steps (extraction, cleaning, ranking, chunking, tokenizing, cache I/O) run at
    /// once, all requests together.
    pub cpu_concurrency: usize,
}

impl Default for PipelineSettings {
    fn default() -> Self {
        PipelineSettings {
            max_model_chunks: 16,
            busy_retry: Duration::from_millis(25),
            pdf_limits: PdfLimits::default(),
            extract_concurrency: 2,
            cpu_concurrency: std::thread::available_parallelism().map_or(2, |n| n.get()),
        }
    }
}

pub struct Pipeline {
    model: Option<ModelSetup>,
    cache: Option<Arc<SummaryCache>>,
    settings: PipelineSettings,
    extract_permits: Arc<Semaphore>,
    cpu_permits: Arc<Semaphore>,
}

/// Most bytes of text per token a model prompt may hold before it is worth tokenizing: a
/// text longer than the context times this cannot fit, whatever the tokenizer makes of it
/// (BLOOM's tokens average about 4 bytes of English).
pub const MAX_BYTES_PER_TOKEN: usize = 16;

/// The document read, and what the stats say of it.
struct Prepared {
    doc: Document,
    page_count: u32,
    pages: u32,
    input_chars: u64,
    warnings: Vec<String>,
    /// Detected from the text (used when the request says `auto`).
    language: Language,
    /// Sentences in all the document's blocks.
    sentences: u32,
}

impl Pipeline {
    pub fn new(model: Option<ModelSetup>, cache: Option<SummaryCache>, settings: PipelineSettings) -> Self {
        if let Some(m) = &model {
            tracing::info!("summary template '{}': {}", m.template_name, m.reason);
        }
        let extract_permits = Arc::new(Semaphore::new(settings.extract_concurrency.max(1)));
        let cpu_permits = Arc::new(Semaphore::new(settings.cpu_concurrency.max(1)));
        Pipeline { model, cache: cache.map(Arc::new), settings, extract_permits, cpu_permits }
    }

    /// Runs `work` on a blocking thread once one of the `cpu_concurrency` places is free;
    /// `Cancelled` without running it when `cancel` is already set. The place is held until
    /// `work` returns, also when the caller has stopped waiting (a cancelled job).
    async fn blocking<T: Send + 'static>(
        &self,
        cancel: &Cancel,
        work: impl FnOnce(&Cancel) -> Result<T, SummaryError> + Send + 'static,
    ) -> Result<T, SummaryError> {
        cancel.check()?;
        let permit = self.cpu_permits.clone().acquire_owned().await.expect("the semaphore is never closed");
        let cancel = cancel.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            cancel.check()?;
            work(&cancel)
        })
        .await
        .map_err(|e| SummaryError::Internal(format!("a summary step failed: {e}")))?
    }

    /// Waits for a place among the PDF extractions allowed at once.
    pub async fn extract_permit(&self) -> OwnedSemaphorePermit {
        self.extract_permits.clone().acquire_owned().await.expect("the semaphore is never closed")
    }

    pub fn settings(&self) -> &PipelineSettings {
        &self.settings
    }

    pub fn model(&self) -> Option<&ModelSetup> {
        self.model.as_ref()
    }

    pub fn cache(&self) -> Option<&SummaryCache> {
        self.cache.as_deref()
    }

    /// Whether a request may use the cache (not with a password or no_cache, and only when a
    /// cache is configured).
    pub fn cacheable(&self, opts: &SummaryOptions) -> bool {
        self.cache.is_some() && !opts.no_cache && opts.password.is_none()
    }

    /// The cache key of a request whose input hashes to `content` ([`content_hash`]), or
    /// `None` when it must not be cached.
    pub fn cache_key(&self, content: String, input_kind: &'static str, opts: &SummaryOptions) -> Option<CacheKey> {
        if !self.cacheable(opts) {
            return None;
        }
        let summarizer = match self.chosen_model(opts) {
            Ok(Some(m)) => m.identity.clone(),
            _ => EXTRACTIVE_VERSION.to_string(),
        };
        Some(CacheKey {
            content,
            input_kind,
            summarizer,
            pages: opts.pages.as_ref().map(|r| (*r.start(), *r.end())),
            length: opts.length,
            language: opts.language.as_str().to_string(),
            style: opts.style,
            max_words: opts.word_budget(),
        })
    }


    fn chosen_model(&self, opts: &SummaryOptions) -> Result<Option<&ModelSetup>, SummaryError> {
        match (opts.method, &self.model) {
            (MethodChoice::Extractive, _) => Ok(None),
            (MethodChoice::Auto, m) => Ok(m.as_ref()),
            (MethodChoice::Model, Some(m)) => Ok(Some(m)),
            (MethodChoice::Model, None) => {
                Err(SummaryError::ModelUnavailable("no model is loaded (method=model was asked); the extractive method is available".into()))
            }
        }
    }

    /// Summarizes `input`. The cache is consulted first and written after a deterministic
    /// result. `cancel` stops the work (also the blocking steps left running when the future
    /// is dropped): the result is then `Cancelled`.
    pub async fn summarize(
        &self,
        input: Input,
        opts: &SummaryOptions,
        obs: &mut dyn Observer,
        cancel: &Cancel,
    ) -> Result<Summary, SummaryError> {
        let started = Instant::now();
        let model = self.chosen_model(opts)?;
        let (input, key) = if self.cacheable(opts) {
            // Hashing up to max_pdf_bytes takes a while.
            let (input, hash) = self
                .blocking(cancel, move |_| {
                    let h = match &input {
                        Input::Text(t) => content_hash(t.as_bytes()),
                        Input::Pdf { bytes, .. } => content_hash(bytes),
                    };
                    Ok((input, h))
                })
                .await?;
            let kind = if matches!(input, Input::Text(_)) { "text" } else { "pdf" };
            let key = self.cache_key(hash, kind, opts);
            (input, key)
        } else {
            (input, None)
        };
        if let (Some(k), Some(cache)) = (&key, &self.cache) {
            let (k, cache) = (k.clone(), cache.clone());
            if let Some(mut hit) = self.blocking(cancel, move |_| Ok(cache.get(&k))).await? {
                hit.stats.elapsed_ms = started.elapsed().as_millis() as u64;
                obs.partial(0, &hit.text);
                return Ok(hit);
            }
        }
        let mut extract_ms = 0;
        let pages = match input {
            Input::Text(t) => Pages::Text(t),
            Input::Pdf { bytes, permit } => {
                obs.progress(Stage::Extract, 0, 0);
                let permit = match permit {
                    Some(p) => p,
                    None => self.extract_permit().await,
                };
                let (limits, o) = (self.settings.pdf_limits.clone(), opts.clone());
                let t0 = Instant::now();
                let extracted = self
                    .blocking(cancel, move |cancel| {
                        let r = extract_pages(&bytes, &o, &limits, cancel);
                        drop(permit);
                        r
                    })
                    .await?;
                extract_ms = t0.elapsed().as_millis() as u64;
                let n = extracted.pages.len() as u32;
                obs.progress(Stage::Extract, n, n);
                Pages::Pdf(extracted)
            }
        };
        let o = opts.clone();
        let prep = self.blocking(cancel, move |cancel| prepare(pages, &o, cancel)).await?;
        let mut stats = SummaryStats {
            page_count: prep.page_count,
            pages: prep.pages,
            paragraphs: prep.doc.prose().count() as u32,
            sentences: prep.sentences,
            input_chars: prep.input_chars,
            edge_lines_removed: prep.doc.clean.edge_lines_removed as u32,
            dehyphenated: prep.doc.clean.dehyphenated as u32,
            warnings: prep.warnings.clone(),
            extract_ms,
            ..SummaryStats::default()
        };
        let language = match opts.language {
            Language::Auto => prep.language,
            l => l,
        };
        let doc = Arc::new(prep.doc);
        let mut cacheable = true;
        let ((text, sentences), method) = match model {
            Some(m) => {
                stats.model = m.name.clone();
                stats.template = m.template_name.clone();
                match self.model_summary(m, &doc, opts, language, &mut stats, obs, cancel).await {
                    Ok(ModelOutcome::Summary(text, anchors)) => ((text, anchors), Method::Model),
                    Ok(ModelOutcome::Unusable(reason)) => {
                        tracing::info!("model answer not used: {reason}");
                        stats.fallback = reason;
                        (self.extractive(&doc, opts, obs, cancel).await?, Method::Extractive)
                    }
                    Err(ModelFailure::Stop(e)) => return Err(e),
                    Err(ModelFailure::Failed(reason) | ModelFailure::TooLarge(reason)) => {
                        tracing::warn!("model failed, answering with the extractive method: {reason}");
                        stats.fallback = reason;
                        // A transient failure: the next request may well get the model's answer.
                        cacheable = false;
                        (self.extractive(&doc, opts, obs, cancel).await?, Method::Extractive)
                    }
                }
            }
            None => (self.extractive(&doc, opts, obs, cancel).await?, Method::Extractive),
        };
        stats.elapsed_ms = started.elapsed().as_millis() as u64;
        let summary = Summary { text, method, stats, sentences };
        if let (true, Some(k), Some(cache)) = (cacheable, key, &self.cache) {
            let (cache, entry) = (cache.clone(), summary.clone());
            let stored = self.blocking(cancel, move |_| Ok(cache.put(&k, &entry).map_err(|e| (e, cache.dir().to_path_buf())))).await?;
            if let Err((e, dir)) = stored {
                tracing::warn!("summary cache: cannot store an entry in {}: {e}", dir.display());
            }
        }
        Ok(summary)
    }

    /// The extractive summary and its anchors, reported as the `rank` stage and one partial
    /// text.
    async fn extractive(
        &self,
        doc: &Arc<Document>,
        opts: &SummaryOptions,
        obs: &mut dyn Observer,
        cancel: &Cancel,
    ) -> Result<(String, Vec<Anchor>), SummaryError> {
        obs.progress(Stage::Rank, 0, 1);
        let (d, o) = (doc.clone(), opts.clone());
        let (text, anchors) = self
            .blocking(cancel, move |cancel| {
                let ranker = Ranker::new(&d, cancel)?;
                let budget = o.word_budget();
                let chosen = ranker.select(budget, |_| true);
                Ok((ranker.render(&chosen, o.style, budget), ranker.anchors(&d, &chosen, budget)))
            })
            .await?;
        obs.partial(0, &text);
        obs.progress(Stage::Rank, 1, 1);
        Ok((text, anchors))
    }

    #[allow(clippy::too_many_arguments)]
    async fn model_summary(
        &self,
        m: &ModelSetup,
        doc: &Arc<Document>,
        opts: &SummaryOptions,
        language: Language,
        stats: &mut SummaryStats,
        obs: &mut dyn Observer,
        cancel: &Cancel,
    ) -> Result<ModelOutcome, ModelFailure> {
        let t = &m.template;
        let new_tokens = t.new_tokens(opts.length);
        let budget = chunk_budget(m, t, language, opts, new_tokens).map_err(ModelFailure::Failed)?;
        let count = |s: &str| m.count_tokens(s);
        let (g, d, max_chunks) = (m.tokens.clone(), doc.clone(), self.settings.max_model_chunks);
        // The model reads prose only: no code, formulas, tables or reference lists.
        let (chunks, kept) = self
            .blocking(cancel, move |cancel| {
                let count = |s: &str| count_tokens(g.as_ref(), s);
                let paragraphs = d.prose_paragraphs();
                let chunks = chunk(&paragraphs, budget, &count, cancel)?;
                if chunks.len() <= max_chunks {
                    return Ok((chunks, 0));
                }
                let (condensed, kept) = condense(&d, budget * max_chunks * 9 / 10, &count, cancel)?;
                let mut chunks = chunk(&condensed, budget, &count, cancel)?;
                chunks.truncate(max_chunks);
                Ok((chunks, kept))
            })
            .await
            .map_err(ModelFailure::Stop)?;
        stats.condensed_to_sentences = kept as u32;
        stats.chunks = chunks.len() as u32;
        let config = GenerationConfig {
            max_new_tokens: new_tokens,
            sampling: Sampling::Greedy,
            repetition_penalty: t.repetition_penalty,
            stop_strings: t.stop.clone(),
            ..GenerationConfig::default()
        };
        let prompts: Vec<String> = chunks.iter().map(|c| t.chunk_prompt(&c.text, language, opts.length)).collect();
        obs.progress(Stage::Summarize, 0, prompts.len() as u32);
        let answers = self.run_prompts(m, &prompts, &config, 0, Stage::Summarize, stats, obs, cancel).await?;
        match t.kind {
            TemplateKind::Extract => {
                let (o, d) = (opts.clone(), doc.clone());
                self.blocking(cancel, move |cancel| select_quoted(&d, &chunks, &answers, &o, cancel)).await.map_err(ModelFailure::Stop)
            }
            TemplateKind::Instruction => {
                let mut partials: Vec<String> = answers.iter().map(|a| clean_generated(a)).filter(|a| !a.is_empty()).collect();
                if partials.is_empty() {
                    return Ok(ModelOutcome::Unusable("the model answered with empty text".into()));
                }
                let max_words = opts.word_budget();
                let mut index = prompts.len() as u32;
                // Reduce: merge partial summaries, in groups that fit one prompt, until one is left.
                while partials.len() > 1 {
                    let groups = group_partials(&partials, budget, &count);
                    if groups.len() == partials.len() {
                        // No two partials fit one prompt together: another round could not
                        // shrink them, so the answer is the partial summaries in order.
                        partials = vec![partials.join("\n")];
                        break;
                    }
                    let reduce: Vec<String> =
                        groups.iter().map(|g| t.reduce_prompt(&numbered(g), language, opts.length)).collect();
                    obs.progress(Stage::Reduce, 0, reduce.len() as u32);
                    let out = self.run_prompts(m, &reduce, &config, index, Stage::Reduce, stats, obs, cancel).await?;
                    index += reduce.len() as u32;
                    partials = out.iter().map(|a| clean_generated(a)).filter(|a| !a.is_empty()).collect();
                    if partials.is_empty() {
                        return Ok(ModelOutcome::Unusable("the model's reduce step answered with empty text".into()));
                    }
                }
                let text = super::extractive::cut_to_words(&partials.remove(0), max_words);
                let text = match opts.style {
                    super::Style::Paragraph => text,
                    super::Style::Bullets => {
                        render_sentences(split_sentences(&text).into_iter().map(|r| &text[r]), super::Style::Bullets)
                    }
                };
                Ok(ModelOutcome::Summary(text, Vec::new()))
            }
        }
    }

    /// Submits `prompts` together to the scheduler (retrying while its queue is full),
    /// streams their text to `obs` as prompt `first_index + i`, and returns the answers in
    /// prompt order. Submitting tokenizes, so it runs on a blocking thread. The job handles
    /// are held here: dropping them (a cancelled job) cancels the prompts.
    #[allow(clippy::too_many_arguments)]
    async fn run_prompts(
        &self,
        m: &ModelSetup,
        prompts: &[String],
        config: &GenerationConfig,
        first_index: u32,
        stage: Stage,
        stats: &mut SummaryStats,
        obs: &mut dyn Observer,
        cancel: &Cancel,
    ) -> Result<Vec<String>, ModelFailure> {
        let mut handles: Vec<JobHandle> = Vec::with_capacity(prompts.len());
        for p in prompts {
            loop {
                let (sched, p, c) = (m.scheduler.clone(), p.clone(), config.clone());
                match self.blocking(cancel, move |_| Ok(sched.submit(Request::text(p, c)))).await.map_err(ModelFailure::Stop)? {
                    Ok(h) => {
                        handles.push(h);
                        break;
                    }
                    Err(SchedulerError::Busy) => tokio::time::sleep(self.settings.busy_retry).await,
                    Err(e) => return Err(ModelFailure::from_scheduler(e)),
                }
            }
        }
        let total = prompts.len() as u32;
        let streams = handles.into_iter().enumerate().map(|(i, h)| {
            stream::unfold(Some(h), move |h| async move {
                let mut h = h?;
                match h.next().await {
                    // The scheduler dropped the job without a terminal event: it is gone.
                    None => Some(((i, Event::Failed(SchedulerError::ShuttingDown)), None)),
                    Some(ev) => {
                        let terminal = ev.is_terminal();
                        Some(((i, ev), if terminal { None } else { Some(h) }))
                    }
                }
            })
            .boxed()
        });
        let mut merged = stream::select_all(streams);
        let mut answers: Vec<Option<String>> = vec![None; prompts.len()];
        let mut done = 0u32;
        while let Some((i, ev)) = merged.next().await {
            match ev {
                Event::Tokens { text, .. } if !text.is_empty() => obs.partial(first_index + i as u32, &text),
                Event::Finished(c) => {
                    stats.prompt_tokens += c.prompt_tokens as u64;
                    stats.generated_tokens += c.ids.len() as u64;
                    answers[i] = Some(c.text);
                    done += 1;
                    obs.progress(stage, done, total);
                }
                Event::Failed(e) => return Err(ModelFailure::from_scheduler(e)),
                Event::Queued { .. } | Event::Started { .. } | Event::Tokens { .. } => {}
            }
        }
        Ok(answers.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// SeqGPT classification: the labels of `labels` the model assigns to `text`, and its raw
    /// answer.
    pub async fn classify(&self, text: &str, labels: &[String], cancel: &Cancel) -> Result<(Vec<String>, String), SummaryError> {
        let m = self.task_model()?;
        check_labels(labels)?;
        check_task_text(m, text)?;
        let prompt = seqgpt_task_prompt(SeqGptTask::Classify, text, labels);
        let answer = self.task_answer(m, &prompt, cancel).await?;
        Ok((parse_classification(&answer, labels), answer))
    }

    /// SeqGPT extraction: spans of `text` per kind, and the model's raw answers (one line per
    /// prompt; kinds go six to a prompt, as SeqGPT's authors advise).
    pub async fn extract(
        &self,
        text: &str,
        kinds: &[String],
        cancel: &Cancel,
    ) -> Result<(BTreeMap<String, Vec<String>>, String), SummaryError> {
        let m = self.task_model()?;
        check_labels(kinds)?;
        check_task_text(m, text)?;
        let mut all = BTreeMap::new();
        let mut raw = Vec::new();
        for group in kinds.chunks(EXTRACT_LABELS_PER_PROMPT) {
            let prompt = seqgpt_task_prompt(SeqGptTask::Extract, text, group);
            let answer = self.task_answer(m, &prompt, cancel).await?;
            all.extend(parse_extraction(&answer, group));
            raw.push(answer);
        }
        Ok((all, raw.join("\n")))
    }

    fn task_model(&self) -> Result<&ModelSetup, SummaryError> {
        self.model.as_ref().ok_or_else(|| {
            SummaryError::ModelUnavailable("no model is loaded: Classify and Extract need one (configure `model`)".into())
        })
    }

    async fn task_answer(&self, m: &ModelSetup, prompt: &str, cancel: &Cancel) -> Result<String, SummaryError> {
        let config = GenerationConfig {
            max_new_tokens: 64,
            sampling: Sampling::Greedy,
            repetition_penalty: Template::seqgpt().repetition_penalty,
            ..GenerationConfig::default()
        };
        let mut stats = SummaryStats::default();
        let out = self
            .run_prompts(m, &[prompt.to_string()], &config, 0, Stage::Summarize, &mut stats, &mut Ignore, cancel)
            .await
            .map_err(|f| match f {
                ModelFailure::Stop(e) => e,
                ModelFailure::TooLarge(reason) => SummaryError::TooLarge(reason),
                ModelFailure::Failed(reason) => SummaryError::Internal(reason),
            })?;
        Ok(out.into_iter().next().unwrap_or_default().trim().to_string())
    }
}

/// Longest label (or extraction kind), in bytes.
const MAX_LABEL_BYTES: usize = 256;

fn check_labels(labels: &[String]) -> Result<(), SummaryError> {
    if labels.is_empty() || labels.iter().any(|l| l.trim().is_empty()) {
        return Err(SummaryError::InvalidArgs("give at least one label, none of them empty".into()));
    }
    if labels.len() > 64 {
        return Err(SummaryError::InvalidArgs("at most 64 labels".into()));
    }
    if labels.iter().any(|l| l.len() > MAX_LABEL_BYTES) {
        return Err(SummaryError::InvalidArgs(format!("a label has more than {MAX_LABEL_BYTES} bytes")));
    }
    Ok(())
}

/// Refuses, before any tokenizing, a Classify or Extract text that cannot fit the model's
/// context whatever its tokens (see [`MAX_BYTES_PER_TOKEN`]).
fn check_task_text(m: &ModelSetup, text: &str) -> Result<(), SummaryError> {
    let ctx = m.context_length();
    let max = ctx.saturating_mul(MAX_BYTES_PER_TOKEN);
    if text.len() > max {
        return Err(SummaryError::TooLarge(format!(
            "the text has {} bytes; a prompt of this model holds at most {ctx} tokens, so at most {max} bytes are accepted",
            text.len()
        )));
    }
    Ok(())
}

enum ModelOutcome {
    /// The summary, and the anchors of the document's sentences it quotes.
    Summary(String, Vec<Anchor>),
    /// The model ran but its answer cannot be used (deterministic: cacheable).
    Unusable(String),
}

enum ModelFailure {
    /// End the job with this error (cancelled, shutting down).
    Stop(SummaryError),
    /// The prompt does not fit the model; answer extractively (a summary) or refuse (a task).
    TooLarge(String),
    /// The model failed; answer extractively.
    Failed(String),
}

impl ModelFailure {
    fn from_scheduler(e: SchedulerError) -> Self {
        match e {
            SchedulerError::Cancelled => ModelFailure::Stop(SummaryError::Cancelled),
            SchedulerError::ShuttingDown => ModelFailure::Stop(SummaryError::ShuttingDown),
            SchedulerError::TooLarge(_) => ModelFailure::TooLarge(e.to_string()),
            other => ModelFailure::Failed(other.to_string()),
        }
    }
}

/// Tokens of document text one chunk may hold: the template's prompt limit (or the model's
/// context less the new tokens), less the template's own tokens and a small margin.
fn chunk_budget(m: &ModelSetup, t: &Template, lang: Language, opts: &SummaryOptions, new_tokens: usize) -> Result<usize, String> {
    let ctx = m.context_length();
    let room = ctx.saturating_sub(new_tokens);
    let limit = if t.max_prompt_tokens > 0 { t.max_prompt_tokens.min(room) } else { room };
    let overhead = m.count_tokens(&t.chunk_prompt("", lang, opts.length));
    let reduce_overhead = m.count_tokens(&t.reduce_prompt("", lang, opts.length));
    let budget = limit.saturating_sub(overhead.max(reduce_overhead) + 8);
    if budget < 32 {
        return Err(format!(
            "the model's context ({ctx} tokens) leaves no room for text after the template and {new_tokens} new tokens"
        ));
    }
    Ok(budget)
}

/// The extractive pre-selection of a long document: its best sentences, in order, up to
/// `tokens`; returns them as paragraphs (one per source block) and how many were kept.
fn condense(doc: &Document, tokens: usize, count: &dyn Fn(&str) -> usize, cancel: &Cancel) -> Result<(Vec<Paragraph>, usize), SummaryError> {
    let ranker = Ranker::new(doc, cancel)?;
    let mut order: Vec<usize> = (0..ranker.sentences.len()).collect();
    order.sort_by(|&a, &b| ranker.scores[b].total_cmp(&ranker.scores[a]).then(a.cmp(&b)));
    let mut used = 0;
    let mut keep = Vec::new();
    for (n, i) in order.into_iter().enumerate() {
        if n % 256 == 0 {
            cancel.check()?;
        }
        let t = count(&ranker.sentences[i].text) + 1;
        if used + t > tokens {
            continue;
        }
        used += t;
        keep.push(i);
    }
    keep.sort_unstable();
    let mut out: Vec<Paragraph> = Vec::new();
    let mut last_block = usize::MAX;
    for &i in &keep {
        let s = &ranker.sentences[i];
        if s.block == last_block {
            let p = out.last_mut().expect("a paragraph was started");
            super::text::join_pieces(&mut p.text, &s.text);
        } else {
            out.push(Paragraph { text: s.text.clone(), page: doc.blocks[s.block].page(doc) });
            last_block = s.block;
        }
    }
    Ok((out, keep.len()))
}

/// The summary of an extract-kind template: the document's sentences that the answers quote,
/// reduced to the word budget by the ranker's scores, in document order, with their anchors.
fn select_quoted(
    doc: &Document,
    chunks: &[Chunk],
    answers: &[String],
    opts: &SummaryOptions,
    cancel: &Cancel,
) -> Result<ModelOutcome, SummaryError> {
    let ranker = Ranker::new(doc, cancel)?;
    let mut by_text: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, s) in ranker.sentences.iter().enumerate() {
        by_text.entry(s.text.as_str()).or_default().push(i);
    }
    let mut quoted = vec![false; ranker.sentences.len()];
    let mut any = false;
    for (c, answer) in chunks.iter().zip(answers) {
        cancel.check()?;
        let pieces = chunk_sentences(&c.text);
        for i in quoted_sentences(answer, &pieces) {
            // A piece of an overlong sentence has no exact match: find the sentence containing it.
            let piece = pieces[i];
            let hits: Vec<usize> = match by_text.get(piece) {
                Some(v) => v.clone(),
                None => ranker.sentences.iter().enumerate().filter(|(_, s)| s.text.contains(piece)).map(|(j, _)| j).collect(),
            };
            for j in hits {
                quoted[j] = true;
                any = true;
            }
        }
    }
    if !any {
        return Ok(ModelOutcome::Unusable("the model's answer quotes no sentence of the document".into()));
    }
    let budget = opts.word_budget();
    let chosen = ranker.select(budget, |i| quoted[i]);
    Ok(ModelOutcome::Summary(ranker.render(&chosen, opts.style, budget), ranker.anchors(doc, &chosen, budget)))
}

/// Partial summaries grouped so that each group's reduce prompt fits `budget`.
fn group_partials(partials: &[String], budget: usize, count: &dyn Fn(&str) -> usize) -> Vec<Vec<String>> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut used = 0;
    for p in partials {
        let t = count(p) + 4;
        match groups.last_mut() {
            Some(g) if used + t <= budget => {
                g.push(p.clone());
                used += t;
            }
            _ => {
                groups.push(vec![p.clone()]);
                used = t;
            }
        }
    }
    groups
}

/// Generated text as a summary: control characters (which byte-level tokens can produce)
/// dropped, except line breaks and tabs; trimmed.
fn clean_generated(text: &str) -> String {
    text.chars().filter(|c| !c.is_control() || matches!(c, '\n' | '\t')).collect::<String>().trim().to_string()
}

fn numbered(parts: &[String]) -> String {
    parts.iter().enumerate().map(|(i, p)| format!("{}. {}", i + 1, p)).collect::<Vec<_>>().join("\n")
}

/// A document's pages: text to split at form feeds, or what the PDF extractor gave.
enum Pages {
    Text(String),
    Pdf(ExtractedPages),
}

/// Pages -> selected pages -> the document read (lines, blocks, sections), its language.
fn prepare(input: Pages, opts: &SummaryOptions, cancel: &Cancel) -> Result<Prepared, SummaryError> {
    let (page_count, pages, warnings, title, pdf) = match input {
        Pages::Text(t) => {
            let pages = text_pages(&t);
            (pages.len() as u32, pages, Vec::new(), None, false)
        }
        Pages::Pdf(e) => (e.page_count, e.pages, e.warnings, e.title, true),
    };
    // PDF pages arrive already selected by the extractor; text pages are selected here.
    let selected: Vec<_> = match (&opts.pages, pdf) {
        (Some(r), false) => {
            let (a, b) = (*r.start(), *r.end());
            if a == 0 || a > b || a > page_count {
                return Err(SummaryError::InvalidArgs(format!(
                    "pages {a}-{b} do not select any of the text's {page_count} pages (pages are separated by form feeds)"
                )));
            }
            pages.into_iter().filter(|p| (a..=b).contains(&p.number)).collect()
        }
        _ => pages,
    };
    let input_chars = selected.iter().map(|p| p.text.chars().count() as u64).sum();
    let page_total = selected.len() as u32;
    cancel.check()?;
    let doc = Document::read(selected, title.as_deref().unwrap_or(""), cancel)?;
    if !doc.blocks.iter().any(|b| !b.text.trim().is_empty()) {
        return Err(SummaryError::NoText("there is no text to summarize (empty after cleaning)".into()));
    }
    let language = detect_language(doc.blocks.iter().map(|b| b.text.as_str()));
    let sentences = doc.blocks.iter().map(|b| split_sentences(&b.text).len()).sum::<usize>() as u32;
    Ok(Prepared { doc, page_count, pages: page_total, input_chars, warnings, language, sentences })
}

/// Why the extractive summary of `input` is what it is: every block with its kind and
/// section, and every sentence with its features, score and whether it was chosen
/// (`seqgpt summarize --local --explain`). Runs on the calling thread.
pub fn explain(input: Input, opts: &SummaryOptions, limits: &PdfLimits) -> Result<serde_json::Value, SummaryError> {
    let cancel = Cancel::new();
    let pages = match input {
        Input::Text(t) => Pages::Text(t),
        Input::Pdf { bytes, .. } => Pages::Pdf(extract_pages(&bytes, opts, limits, &cancel)?),
    };
    let prep = prepare(pages, opts, &cancel)?;
    let doc = &prep.doc;
    let ranker = Ranker::new(doc, &cancel)?;
    let chosen = ranker.select(opts.word_budget(), |_| true);
    let blocks: Vec<serde_json::Value> = doc
        .blocks
        .iter()
        .map(|b| {
            let section = &doc.sections[b.section];
            serde_json::json!({
                "kind": b.kind.as_str(),
                "page": b.page(doc),
                "section": section.title,
                "section_kind": section.kind,
                "text": b.text.chars().take(160).collect::<String>(),
            })
        })
        .collect();
    let sentences: Vec<serde_json::Value> = ranker
        .sentences
        .iter()
        .enumerate()
        .map(|(i, s)| {
            serde_json::json!({
                "text": s.text,
                "block": s.block,
                "words": s.words,
                "candidate": s.candidate,
                "features": ranker.features[i],
                "score": ranker.scores[i],
                "chosen": chosen.binary_search(&i).is_ok(),
            })
        })
        .collect();
    Ok(serde_json::json!({"title": doc.title, "blocks": blocks, "sentences": sentences}))
}

#[cfg(test)]
mod tests {
    use super::super::{Length, Style};
    use super::*;
    use crate::generate::{FinishReason, Generated};
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
        let (spans, _) = p.extract("我在北京", &["地名".into()], &Cancel::new()).await.unwrap();
        assert_eq!(spans["地名"], vec!["北京"]);
        assert!(matches!(p.classify("x", &[], &Cancel::new()).await, Err(SummaryError::InvalidArgs(_))));
        let none = Pipeline::new(None, None, PipelineSettings::default());
        assert!(matches!(none.classify("x", &["a".into()], &Cancel::new()).await, Err(SummaryError::ModelUnavailable(_))));
    }

    #[test]
    fn condense_keeps_the_best_sentences_in_order() {
        let text: String = (0..40).map(|i| format!("Solar energy fact number {i} about panels. Unrelated filler {i} here.\n\n")).collect();
        let doc = Document::read(text_pages(&text), "", &Cancel::new()).unwrap();
        let count = |s: &str| s.split_whitespace().count();
        let (out, kept) = condense(&doc, 100, &count, &Cancel::new()).unwrap();
        assert!(kept > 0 && kept < 80);
        assert!(out.iter().map(|p| count(&p.text)).sum::<usize>() <= 100);
    }
}
