//! The summary pipeline: text in, summary out.
//!
//! [`pages`] (the pages of a PDF or a text) -> [`structure::read`]: [`clean`] (lines: running
//! headers/footers, page numbers, footnote marks, hyphenation) -> [`structure`] (block kinds,
//! sections) -> [`document`] (blocks, and the way back to the page: anchors) -> [`chunk`]
//! (prose in pieces that fit the model's prompt, counted in its tokens, CJK-aware) -> one
//! prompt per chunk ([`prompt`]) submitted to the [`crate::scheduler`] (the chunks of one
//! document together, so they decode in one batch; its events come back as they are) -> a
//! reduce step when there are several -> the summary. Without a model, or when it fails, the [`rank`]er answers (the `extractive`
//! method). Every [`Summary`] says which [`Method`] made it. [`cache`] keeps finished
//! summaries; [`annotate`] shows a summary as highlights in a copy of its PDF.
//!
//! docs/SUMMARIZE.md describes the design and the template choice.

pub mod ablation;
pub mod annotate;
pub mod cache;
pub mod chunk;
pub mod clean;
pub mod compress;
pub mod document;
pub mod keyterms;
pub mod logistic;
pub mod rank;
pub mod scorer;
pub mod pages;
pub mod pipeline;
pub mod prompt;
pub mod structure;
pub mod text;
pub mod title;

pub use pipeline::{Input, Observer, Pipeline, PipelineSettings, Stage};

use serde::{Deserialize, Serialize};
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Asks a summary's work to stop. The pipeline checks it between stages and inside long
/// loops, including on the blocking threads that outlive a dropped future; the PDF extractor
/// checks it between pages.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Err(Cancelled)` once cancelled.
    pub fn check(&self) -> Result<(), SummaryError> {
        if self.is_cancelled() {
            Err(SummaryError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// The flag itself, for code below this module (the PDF extractor).
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }
}

/// How long a summary should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Length {
    Short = 0,
    #[default]
    Medium = 1,
    Long = 2,
}

impl Length {
    pub fn as_str(self) -> &'static str {
        match self {
            Length::Short => "short",
            Length::Medium => "medium",
            Length::Long => "long",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "short" => Some(Length::Short),
            "medium" => Some(Length::Medium),
            "long" => Some(Length::Long),
            _ => None,
        }
    }

    /// The word budget of this length (a CJK character counts as a word).
    pub fn words(self) -> usize {
        match self {
            Length::Short => 60,
            Length::Medium => 120,
            Length::Long => 250,
        }
    }
}

/// How a summary is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Style {
    /// Running text.
    #[default]
    Paragraph,
    /// One sentence per line, each starting with "- ".
    Bullets,
}

impl Style {
    pub fn as_str(self) -> &'static str {
        match self {
            Style::Paragraph => "paragraph",
            Style::Bullets => "bullets",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "paragraph" => Some(Style::Paragraph),
            "bullets" => Some(Style::Bullets),
            _ => None,
        }
    }
}

/// The document's language, for the prompt: `Auto` detects it from the letters of the text
/// (Han, kana, hangul, Latin). SeqGPT and BLOOMZ follow instructions in English and Chinese: a
/// Japanese or Korean document gets the template's default (English) prompt, never the
/// Chinese one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Language {
    #[default]
    Auto,
    En,
    Zh,
    Ja,
    Ko,
}

impl Language {
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Auto => "auto",
            Language::En => "en",
            Language::Zh => "zh",
            Language::Ja => "ja",
            Language::Ko => "ko",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(Language::Auto),
            "en" => Some(Language::En),
            "zh" => Some(Language::Zh),
            "ja" => Some(Language::Ja),
            "ko" => Some(Language::Ko),
            _ => None,
        }
    }
}

/// Which summarizer a request wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum MethodChoice {
    /// The model when one is loaded, else the extractive ranker.
    #[default]
    Auto,
    /// The model; `ModelUnavailable` when none is loaded.
    Model,
    /// The extractive ranker, even when a model is loaded (fast).
    Extractive,
}

impl MethodChoice {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(MethodChoice::Auto),
            "model" => Some(MethodChoice::Model),
            "extractive" => Some(MethodChoice::Extractive),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            MethodChoice::Auto => "auto",
            MethodChoice::Model => "model",
            MethodChoice::Extractive => "extractive",
        }
    }
}

/// What made a summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Model,
    Extractive,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Model => "model",
            Method::Extractive => "extractive",
        }
    }
}

/// The options of one summary request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SummaryOptions {
    /// 1-based inclusive page range (PDF pages, or form-feed pages of text).
    pub pages: Option<RangeInclusive<u32>>,
    pub length: Length,
    pub language: Language,
    pub style: Style,
    /// For encrypted PDFs.
    pub password: Option<String>,
    pub method: MethodChoice,
    /// Skip the cache (neither read nor written).
    pub no_cache: bool,
    /// The most words the summary may have (a CJK character counts as one); `None`: the
    /// `length` option's ([`Length::words`]).
    pub max_words: Option<u32>,
}

impl SummaryOptions {
    /// The word budget of a summary.
    pub fn word_budget(&self) -> usize {
        self.max_words.map_or_else(|| self.length.words(), |n| n as usize)
    }
}

/// Numbers about how a summary was made (D-Bus: the `stats` of `Finished`; CLI: `--json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SummaryStats {
    /// Pages of the document, and pages summarized.
    pub page_count: u32,
    pub pages: u32,
    pub paragraphs: u32,
    pub sentences: u32,
    /// Chunks sent to the model (0 for the extractive method).
    pub chunks: u32,
    pub input_chars: u64,
    pub prompt_tokens: u64,
    pub generated_tokens: u64,
    /// Running headers/footers and page numbers removed; words rejoined across hyphens.
    pub edge_lines_removed: u32,
    pub dehyphenated: u32,
    /// The model's name and the template (empty for the extractive method).
    pub model: String,
    pub template: String,
    /// Why the model's answer was not used, when the method is extractive although a model
    /// is loaded.
    pub fallback: String,
    /// The document's language as the summary took it: the `language` option, or what `auto`
    /// detected ("en", "zh", "ja", "ko"); empty in entries cached before it was recorded.
    #[serde(default)]
    pub language: String,
    /// Sentences kept by the extractive pre-selection of a document too long for
    /// `max_model_chunks` (0: not condensed).
    pub condensed_to_sentences: u32,
    pub extract_ms: u64,
    pub elapsed_ms: u64,
    /// Answered from the cache.
    pub cached: bool,
    /// Repairs made to a damaged PDF, one line each.
    pub warnings: Vec<String>,
}

/// A finished summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub text: String,
    pub method: Method,
    pub stats: SummaryStats,
    /// Where each sentence of the summary stands in the document, in summary order: every
    /// sentence of an extractive summary, every quoted sentence of a SeqGPT-template summary;
    /// empty for a free-text model summary.
    pub sentences: Vec<Anchor>,
}

/// Where a sentence of a summary stands in the document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Anchor {
    /// The sentence as the summary shows it.
    pub text: String,
    /// 1-based page number where it starts.
    pub page: u32,
    /// Character (Unicode scalar value) range in that page's extracted text, end exclusive:
    /// the sentence as it stands on the page (line breaks, and any footnote marks the summary
    /// leaves out, included). A sentence that runs on to the next page ends with its page.
    pub start: u32,
    pub end: u32,
    /// Its boxes on that page, one per line it spans, in PDF user space: x0, y0, x1, y1
    /// (empty for plain text).
    pub boxes: Vec<[f32; 4]>,
}

/// Why a summary could not be made. The daemon maps each to a D-Bus error name
/// (docs/DBUS.md).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SummaryError {
    #[error("{0}")]
    InvalidPdf(String),
    #[error("{0}")]
    Encrypted(String),
    #[error("{0}")]
    NoText(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    InvalidArgs(String),
    #[error("{0}")]
    ModelUnavailable(String),
    #[error("cancelled")]
    Cancelled,
    #[error("the daemon is shutting down; the job was not finished")]
    ShuttingDown,
    #[error("{0}")]
    Internal(String),
}
