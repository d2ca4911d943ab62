//! The pipeline's driver: from an input and options to a [`Summary`], reporting progress and
//! streamed text to an [`Observer`].
//!
//! Every step that costs CPU or disk (hashing, the cache, extraction, cleaning, ranking,
//! chunking, tokenizing) runs on tokio's blocking threads, at most `cpu_concurrency` at once,
//! never on the async threads that serve the bus. Cancelling is dropping the future (the
//! generation handles it holds cancel their prompts when dropped) and setting the [`Cancel`]
//! flag, which the blocking steps check between stages and inside their long loops.
//!
//! One file per concern: [`progress`] (what a job reports), [`prepare`] (pages to document),
//! [`model_summary`] (chunks, prompts, map-reduce), [`submit`] (prompts on the scheduler),
//! [`tasks`] (SeqGPT's classification and span extraction); this file holds the pipeline,
//! its settings and the summary's driver, with the cache and the ranker's fallback.

mod model_summary;
mod progress;
mod prepare;
mod submit;
mod tasks;
#[cfg(test)]
mod tests;

pub use progress::{Ignore, Observer, Stage};
pub use prepare::explain;

use super::cache::{content_hash, CacheKey, SummaryCache};
use super::document::Document;
use super::Anchor;
use super::prompt::Template;
use super::rank::Ranker;
use super::{pages, Cancel, Language, Method, MethodChoice, Summary, SummaryError, SummaryOptions, SummaryStats};
use crate::scheduler::{Scheduler, SchedulerError, TextEncoder};
use prepare::{document_stats, language_of, read_document};
use seqgpt_pdf::ExtractedDocument;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};


/// The version of the extractive ranker, part of cache keys: raise it whenever the same document
/// and options can give another summary (v3: the learned scorer, CJK sentences and headings).
const RANKER_VERSION: &str = "extractive-v3";

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
    pub pdf_limits: seqgpt_pdf::Limits,
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
            pdf_limits: seqgpt_pdf::Limits::default(),
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
            _ => RANKER_VERSION.to_string(),
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

    /// Summarizes `input`: its cache key, a cached summary if there is one, else the input's
    /// pages, the document read from them, the summary composed, and the result stored.
    /// `cancel` stops the work (also the blocking steps left running when the future is
    /// dropped): the result is then `Cancelled`.
    pub async fn summarize(
        &self,
        input: Input,
        opts: &SummaryOptions,
        obs: &mut dyn Observer,
        cancel: &Cancel,
    ) -> Result<Summary, SummaryError> {
        let started = Instant::now();
        let model = self.chosen_model(opts)?;
        let (input, key) = self.key_of(input, opts, cancel).await?;
        if let Some(mut hit) = self.cached(key.as_ref(), cancel).await? {
            hit.stats.elapsed_ms = started.elapsed().as_millis() as u64;
            obs.partial(0, &hit.text);
            return Ok(hit);
        }
        let (extracted, extract_ms) = self.read_input(input, opts, obs, cancel).await?;
        let (doc, mut stats, detected) = self
            .blocking(cancel, move |cancel| {
                let doc = read_document(extracted, cancel)?;
                let stats = document_stats(&doc, extract_ms);
                let language = language_of(&doc);
                Ok((doc, stats, language))
            })
            .await?;
        let language = match opts.language {
            Language::Auto => detected,
            l => l,
        };
        stats.language = language.as_str().to_string();
        let composed = self.compose(model, Arc::new(doc), opts, language, &mut stats, obs, cancel).await?;
        stats.elapsed_ms = started.elapsed().as_millis() as u64;
        let summary = Summary { text: composed.text, method: composed.method, stats, sentences: composed.sentences };
        if composed.cacheable {
            self.store(key, &summary, cancel).await?;
        }
        Ok(summary)
    }

    /// The input back with its cache key (`None` when it must not be cached). Hashing up to
    /// max_pdf_bytes takes a while: it runs on a blocking thread.
    async fn key_of(&self, input: Input, opts: &SummaryOptions, cancel: &Cancel) -> Result<(Input, Option<CacheKey>), SummaryError> {
        if !self.cacheable(opts) {
            return Ok((input, None));
        }
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
        Ok((input, key))
    }

    /// The cached summary under `key`, if any.
    async fn cached(&self, key: Option<&CacheKey>, cancel: &Cancel) -> Result<Option<Summary>, SummaryError> {
        let (Some(k), Some(cache)) = (key, &self.cache) else { return Ok(None) };
        let (k, cache) = (k.clone(), cache.clone());
        self.blocking(cancel, move |_| Ok(cache.get(&k))).await
    }

    /// The input's selected pages that have text, and the milliseconds a PDF's extraction
    /// took (0 for text), reported as the `extract` stage. A PDF waits for a place among the
    /// extractions allowed at once unless the caller holds one.
    async fn read_input(
        &self,
        input: Input,
        opts: &SummaryOptions,
        obs: &mut dyn Observer,
        cancel: &Cancel,
    ) -> Result<(ExtractedDocument, u64), SummaryError> {
        let o = opts.clone();
        match input {
            Input::Text(t) => Ok((self.blocking(cancel, move |_| pages::of_text(&t, &o)).await?, 0)),
            Input::Pdf { bytes, permit } => {
                obs.progress(Stage::Extract, 0, 0);
                let permit = match permit {
                    Some(p) => p,
                    None => self.extract_permit().await,
                };
                let limits = self.settings.pdf_limits.clone();
                let t0 = Instant::now();
                let extracted = self
                    .blocking(cancel, move |cancel| {
                        let r = pages::of_pdf(&bytes, &o, &limits, cancel);
                        drop(permit);
                        r
                    })
                    .await?;
                let extract_ms = t0.elapsed().as_millis() as u64;
                let n = extracted.pages.len() as u32;
                obs.progress(Stage::Extract, n, n);
                Ok((extracted, extract_ms))
            }
        }
    }

    /// The summary of `doc`: the model's when one is chosen and its answer is usable, else
    /// the extractive ranker's (the reason in `stats.fallback`). A model that failed (not one
    /// whose answer was unusable) makes the result uncacheable: the next request may well get
    /// the model's answer.
    #[allow(clippy::too_many_arguments)]
    async fn compose(
        &self,
        model: Option<&ModelSetup>,
        doc: Arc<Document>,
        opts: &SummaryOptions,
        language: Language,
        stats: &mut SummaryStats,
        obs: &mut dyn Observer,
        cancel: &Cancel,
    ) -> Result<Composed, SummaryError> {
        let Some(m) = model else {
            return Ok(Composed::extractive(self.extractive(&doc, opts, &mut stats.warnings, obs, cancel).await?, true));
        };
        stats.model = m.name.clone();
        stats.template = m.template_name.clone();
        match self.model_summary(m, &doc, opts, language, stats, obs, cancel).await {
            Ok(ModelOutcome::Summary(text, sentences)) => Ok(Composed { text, sentences, method: Method::Model, cacheable: true }),
            Ok(ModelOutcome::Unusable(reason)) => {
                tracing::info!("model answer not used: {reason}");
                stats.fallback = reason;
                Ok(Composed::extractive(self.extractive(&doc, opts, &mut stats.warnings, obs, cancel).await?, true))
            }
            Err(ModelFailure::Stop(e)) => Err(e),
            Err(ModelFailure::Failed(reason) | ModelFailure::TooLarge(reason)) => {
                tracing::warn!("model failed, answering with the extractive method: {reason}");
                stats.fallback = reason;
                Ok(Composed::extractive(self.extractive(&doc, opts, &mut stats.warnings, obs, cancel).await?, false))
            }
        }
    }

    /// Stores `summary` under `key` (nothing without a key); a cache that cannot store it is
    /// logged, not an error: the summary is still the answer.
    async fn store(&self, key: Option<CacheKey>, summary: &Summary, cancel: &Cancel) -> Result<(), SummaryError> {
        let (Some(k), Some(cache)) = (key, &self.cache) else { return Ok(()) };
        let (cache, entry) = (cache.clone(), summary.clone());
        let stored = self.blocking(cancel, move |_| Ok(cache.put(&k, &entry).map_err(|e| (e, cache.dir().to_path_buf())))).await?;
        if let Err((e, dir)) = stored {
            tracing::warn!("summary cache: cannot store an entry in {}: {e}", dir.display());
        }
        Ok(())
    }

    /// The extractive summary and its anchors, reported as the `rank` stage and one partial
    /// text.
    async fn extractive(
        &self,
        doc: &Arc<Document>,
        opts: &SummaryOptions,
        warnings: &mut Vec<String>,
        obs: &mut dyn Observer,
        cancel: &Cancel,
    ) -> Result<(String, Vec<Anchor>), SummaryError> {
        obs.progress(Stage::Rank, 0, 1);
        let (d, o) = (doc.clone(), opts.clone());
        let (text, anchors, warning) = self
            .blocking(cancel, move |cancel| {
                let ranker = Ranker::new(&d, cancel)?;
                let budget = o.word_budget();
                let choice = ranker.choose(budget);
                if choice.chosen.is_empty() {
                    return Err(SummaryError::NoText(NO_PROSE.into()));
                }
                let warning = if choice.cut {
                    Some(format!("no whole sentence fits the budget of {budget} words: the best sentence is cut at a word boundary (marked with \"…\")"))
                } else {
                    choice.phrases.then(|| NO_SENTENCE.to_string())
                };
                Ok((ranker.render(&choice.chosen, o.style, budget), ranker.anchors(&d, &choice.chosen, budget), warning))
            })
            .await?;
        warnings.extend(warning);
        obs.partial(0, &text);
        obs.progress(Stage::Rank, 1, 1);
        Ok((text, anchors))
    }
}

/// The warning of a summary of a document without whole sentences (docs/SUMMARIZE.md).
pub(crate) const NO_SENTENCE: &str = "the document has no whole sentence: the summary quotes its phrases as they stand";

/// The `NoText` error of a document whose text has no prose (docs/DBUS.md, "Errors").
pub(crate) const NO_PROSE: &str = "the document has no prose to summarize: its text is code, tables, formulas or lists without sentences";

/// A summary's text, the anchors of the document's sentences it quotes, how it was made, and
/// whether it may be cached.
struct Composed {
    text: String,
    sentences: Vec<Anchor>,
    method: Method,
    cacheable: bool,
}

impl Composed {
    fn extractive((text, sentences): (String, Vec<Anchor>), cacheable: bool) -> Self {
        Composed { text, sentences, method: Method::Extractive, cacheable }
    }
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
