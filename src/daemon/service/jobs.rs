//! A job's state: what its readers see, how it is stopped, and how it ends. Shared by its bus
//! object ([`super::job_object`]), its task ([`super::job_task`]) and the job table
//! ([`super::core`]).
//!
//! Every accepted job ends in exactly one of done, failed and cancelled. A `Cancel` that
//! returns without error wins: the job then ends cancelled, even when its work finished in
//! the same instant (the stop request and the end are decided under one lock).

use super::anchors::{self, WireAnchor};
use super::bus_string::BusString;
use super::errors::{ErrorKind, ServiceError};
use super::input::DocumentFile;
use crate::summarize::Anchor;
use crate::summarize::{Cancel, Method, Summary, SummaryStats};
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::watch;
use zbus::names::OwnedUniqueName;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

pub const JOBS_PATH: &str = "/org/seqgpt/Summarizer1/jobs";
pub const JOB_INTERFACE: &str = "org.seqgpt.Job1";

/// A job's state (the `State` property).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Accepted, waiting for the extractor or the model.
    Queued,
    /// Its document is being read or summarized.
    Running,
    Done,
    Failed,
    Cancelled,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, JobState::Done | JobState::Failed | JobState::Cancelled)
    }
}

/// Why a job is being stopped from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Cancelled,
    ShuttingDown,
}

impl Stop {
    pub fn error(self) -> ServiceError {
        match self {
            Stop::Cancelled => ServiceError::new(ErrorKind::Cancelled, "the job was cancelled"),
            Stop::ShuttingDown => {
                ServiceError::new(ErrorKind::ShuttingDown, "the daemon is shutting down, and the job did not finish within [service] stop_grace_s; try again once it runs")
            }
        }
    }
}

/// A job's input.
pub enum Source {
    Text(String),
    /// A checked PDF file (descriptor or path), read in the job.
    Pdf(DocumentFile),
}

/// What a job does.
pub enum Work {
    /// A summary of a document (SummarizeFd, SummarizePath, SummarizeText).
    /// With `annotate_fd`, the annotated copy of the PDF goes there.
    Summarize(Source, crate::summarize::SummaryOptions, Option<super::annotate_fd::AnnotateTarget>),
    /// SeqGPT classification (ClassifyJob): which of `labels` apply to `text`.
    Classify { text: String, labels: Vec<String> },
    /// SeqGPT span extraction (ExtractJob): the spans of `text` of each kind.
    Extract { text: String, kinds: Vec<String> },
}

/// What a job ended with, when it succeeded.
#[derive(Debug)]
pub enum Outcome {
    Summary(Summary),
    /// The labels the model chose (in its order) and its raw answer.
    Labels { labels: Vec<String>, answer: String },
    /// Kind -> spans, and the model's raw answer.
    Spans { spans: std::collections::BTreeMap<String, Vec<String>>, answer: String },
}

impl Outcome {
    /// The text a reader gets as `Summary` and in `Finished`: the summary, or the model's
    /// raw answer of a classification or extraction.
    pub fn text(&self) -> &str {
        match self {
            Outcome::Summary(s) => &s.text,
            Outcome::Labels { answer, .. } | Outcome::Spans { answer, .. } => answer,
        }
    }

    pub fn method(&self) -> Method {
        match self {
            Outcome::Summary(s) => s.method,
            Outcome::Labels { .. } | Outcome::Spans { .. } => Method::Model,
        }
    }

    pub fn cached(&self) -> bool {
        matches!(self, Outcome::Summary(s) if s.stats.cached)
    }

    fn anchors(&self) -> &[Anchor] {
        match self {
            Outcome::Summary(s) => &s.sentences,
            _ => &[],
        }
    }

    /// Its stats dictionary (`Finished`, the `Stats` property).
    fn stats(&self) -> HashMap<String, OwnedValue> {
        let mut d = HashMap::new();
        let mut put = |k: &str, v: Value<'_>| {
            if let Ok(v) = OwnedValue::try_from(v) {
                d.insert(k.to_string(), v);
            }
        };
        match self {
            Outcome::Summary(s) => return stats_dict(s),
            Outcome::Labels { labels, .. } => {
                put("method", BusString::message(Method::Model.as_str()).into());
                put("task", BusString::message("classify").into());
                let labels: Vec<String> = labels.iter().map(|l| BusString::message(l).into_string()).collect();
                put("labels", Value::from(labels));
            }
            Outcome::Spans { spans, .. } => {
                put("method", BusString::message(Method::Model.as_str()).into());
                put("task", BusString::message("extract").into());
                let spans: HashMap<String, Vec<String>> = spans
                    .iter()
                    .map(|(k, v)| (BusString::message(k).into_string(), v.iter().map(|s| BusString::message(s).into_string()).collect()))
                    .collect();
                put("spans", Value::from(spans));
            }
        }
        d
    }
}

/// What a job's readers see.
#[derive(Debug, Clone)]
pub(super) struct View {
    pub(super) state: JobState,
    pub(super) stage: &'static str,
    pub(super) progress: (u32, u32),
    pub(super) summary: BusString,
    pub(super) method: &'static str,
    pub(super) error: Option<ServiceError>,
    pub(super) stats: HashMap<String, OwnedValue>,
    pub(super) anchors: Vec<WireAnchor<BusString>>,
    /// Set by the first accepted stop request.
    stop: Option<Stop>,
}

/// A job, shared by its bus object, its task and the job table.
pub struct JobShared {
    pub id: u64,
    pub path: OwnedObjectPath,
    /// The connection that created it.
    pub owner: OwnedUniqueName,
    /// Its Unix user (system bus only).
    pub owner_uid: Option<u32>,
    pub detached: bool,
    /// Option keys of the request this daemon does not know (listed in the result's stats).
    pub ignored_options: Vec<String>,
    view: Mutex<View>,
    stopped: watch::Sender<Option<Stop>>,
    done: watch::Sender<bool>,
    /// Stops the job's blocking work too (which outlives its dropped future).
    pub cancel: Cancel,
}

impl JobShared {
    /// A job with internal number `id` at `path` (unguessable: see [`job_path`]).
    pub fn new(id: u64, path: OwnedObjectPath, owner: OwnedUniqueName, owner_uid: Option<u32>, detached: bool) -> Self {
        JobShared {
            id,
            path,
            owner,
            owner_uid,
            detached,
            ignored_options: Vec::new(),
            view: Mutex::new(View {
                state: JobState::Queued,
                stage: "",
                progress: (0, 0),
                summary: BusString::default(),
                method: "",
                error: None,
                stats: HashMap::new(),
                anchors: Vec::new(),
                stop: None,
            }),
            stopped: watch::channel(None).0,
            done: watch::channel(false).0,
            cancel: Cancel::new(),
        }
    }

    pub(super) fn view(&self) -> std::sync::MutexGuard<'_, View> {
        self.view.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn state(&self) -> JobState {
        self.view().state
    }

    /// Asks the job to stop; false when it already ended or was already asked. Once this
    /// returned true the job ends with `why`'s error.
    pub fn stop(&self, why: Stop) -> bool {
        {
            let mut v = self.view();
            if v.state.is_terminal() || v.stop.is_some() {
                return false;
            }
            v.stop = Some(why);
        }
        self.cancel.cancel();
        self.stopped.send_replace(Some(why));
        true
    }

    /// Resolves with the reason once the job was asked to stop.
    pub async fn stopped(&self) -> Stop {
        let mut rx = self.stopped.subscribe();
        let why = match rx.wait_for(|s| s.is_some()).await {
            Ok(s) => s.unwrap_or(Stop::Cancelled),
            // The sender lives as long as `self`.
            Err(_) => Stop::Cancelled,
        };
        why
    }

    /// Marks the job running; true when it was queued.
    pub(super) fn set_running(&self) -> bool {
        let mut v = self.view();
        if v.state == JobState::Queued {
            v.state = JobState::Running;
            true
        } else {
            false
        }
    }

    /// Records the end: `result`, unless a stop was accepted first (then its error). Returns
    /// what the job ended with and its state.
    pub(super) fn finish(&self, result: Result<Outcome, ServiceError>) -> (Result<Outcome, ServiceError>, JobState) {
        let mut v = self.view();
        let result = match v.stop {
            Some(why) => Err(why.error()),
            None => result,
        };
        let state = match &result {
            Ok(_) => JobState::Done,
            Err(e) if e.kind == ErrorKind::Cancelled => JobState::Cancelled,
            Err(_) => JobState::Failed,
        };
        v.state = state;
        match &result {
            Ok(s) => {
                v.summary = BusString::text(s.text());
                v.method = s.method().as_str();
                v.stats = self.stats_of(s);
                v.anchors = anchors::to_wire(s.anchors());
                let end = v.progress.1.max(v.progress.0);
                v.progress = (end, end);
            }
            Err(e) => v.error = Some(e.clone()),
        }
        (result, state)
    }

    /// The stats of a result as this job reports them: the outcome's, and the request's
    /// unknown option keys when there were any.
    pub fn stats_of(&self, outcome: &Outcome) -> HashMap<String, OwnedValue> {
        let mut d = outcome.stats();
        if !self.ignored_options.is_empty() {
            let keys: Vec<String> = self.ignored_options.iter().map(|k| BusString::message(k).into_string()).collect();
            if let Ok(v) = OwnedValue::try_from(Value::from(keys)) {
                d.insert("ignored_options".to_string(), v);
            }
        }
        d
    }

    /// Wakes the callers of [`JobShared::wait`].
    pub(super) fn mark_done(&self) {
        self.done.send_replace(true);
    }

    /// Bytes a finished job keeps for its readers (summary and stats).
    pub fn retained_bytes(&self) -> usize {
        let v = self.view();
        v.summary.len()
            + v.error.as_ref().map_or(0, |e| e.message.len())
            + 64 * v.stats.len()
            + v.anchors.iter().map(|a| 2 * a.0.len() + 32 * a.4.len() + 16).sum::<usize>()
    }

    /// Waits until the job ends: (summary, method) or the job's error.
    pub async fn wait(&self) -> Result<(BusString, BusString), ServiceError> {
        let mut rx = self.done.subscribe();
        let _ = rx.wait_for(|d| *d).await;
        let v = self.view();
        match &v.error {
            None => Ok((v.summary.clone(), BusString::message(v.method))),
            Some(e) => Err(e.clone()),
        }
    }
}

/// A new job's object path: a random 128-bit name, so that paths tell nothing of other
/// callers' jobs and cannot be guessed.
pub fn job_path() -> OwnedObjectPath {
    let token: u128 = rand::random();
    OwnedObjectPath::try_from(format!("{JOBS_PATH}/j{token:032x}")).expect("a valid object path")
}

/// The path of a job asked for with `handle_token`: `JOBS_PATH/SENDER/TOKEN`, SENDER being
/// the caller's unique name without its ':' and with '_' for '.' (as the XDG desktop portals
/// do), so that a client knows the path before its call and can subscribe to the job's
/// signals first. `token` was checked by the options parser (`[A-Za-z0-9_]{1,64}`).
pub fn token_path(sender: &str, token: &str) -> Result<OwnedObjectPath, ServiceError> {
    let sender: String = sender.trim_start_matches(':').chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    OwnedObjectPath::try_from(format!("{JOBS_PATH}/{sender}/{token}"))
        .map_err(|_| ServiceError::invalid_args("handle_token: no job path can be made from this caller's name and token"))
}

/// A summary's stats as the `a{sv}` of the Finished signal and the Stats property, with its
/// anchors under `anchors`. Every string in it is a [`BusString`].
pub fn stats_dict(summary: &Summary) -> HashMap<String, OwnedValue> {
    let mut d = stats_only(summary.method, &summary.stats);
    if let Ok(v) = OwnedValue::try_from(Value::from(anchors::to_wire(&summary.sentences))) {
        d.insert("anchors".to_string(), v);
    }
    d
}

/// The stats part of [`stats_dict`].
fn stats_only(method: Method, s: &SummaryStats) -> HashMap<String, OwnedValue> {
    /// Warnings listed at most (a damaged file can have many repairs).
    const MAX_WARNINGS: usize = 32;
    let mut d: HashMap<String, OwnedValue> = HashMap::new();
    let mut put = |k: &str, v: Value<'static>| {
        if let Ok(v) = OwnedValue::try_from(v) {
            d.insert(k.to_string(), v);
        }
    };
    put("method", BusString::message(method.as_str()).into());
    put("page_count", Value::from(s.page_count));
    put("pages", Value::from(s.pages));
    put("paragraphs", Value::from(s.paragraphs));
    put("sentences", Value::from(s.sentences));
    put("chunks", Value::from(s.chunks));
    put("input_chars", Value::from(s.input_chars));
    put("prompt_tokens", Value::from(s.prompt_tokens));
    put("generated_tokens", Value::from(s.generated_tokens));
    put("edge_lines_removed", Value::from(s.edge_lines_removed));
    put("dehyphenated", Value::from(s.dehyphenated));
    put("model", BusString::message(&s.model).into());
    put("template", BusString::message(&s.template).into());
    put("fallback", BusString::message(&s.fallback).into());
    put("language", BusString::message(&s.language).into());
    put("condensed_to_sentences", Value::from(s.condensed_to_sentences));
    put("extract_ms", Value::from(s.extract_ms));
    put("elapsed_ms", Value::from(s.elapsed_ms));
    put("cached", Value::from(s.cached));
    let warnings: Vec<String> = s.warnings.iter().take(MAX_WARNINGS).map(|w| BusString::message(w).into_string()).collect();
    put("warnings", Value::from(warnings));
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_strings_are_bus_strings() {
        let stats = SummaryStats {
            model: "m\0".into(),
            fallback: "x".repeat(1 << 20),
            warnings: (0..100).map(|i| format!("w{i}\0")).collect(),
            ..Default::default()
        };
        let d = stats_only(Method::Model, &stats);
        assert_eq!(d.len(), 20);
        let model = String::try_from(d["model"].try_clone().unwrap()).unwrap();
        assert_eq!(model, "m\u{FFFD}");
        let fallback = String::try_from(d["fallback"].try_clone().unwrap()).unwrap();
        assert!(fallback.len() <= super::super::bus_string::MESSAGE_MAX);
        let warnings = <Vec<String>>::try_from(d["warnings"].try_clone().unwrap()).unwrap();
        assert_eq!(warnings.len(), 32);
        assert!(warnings.iter().all(|w| !w.contains('\0')));
    }

    #[test]
    fn an_accepted_cancel_wins_over_a_finished_result() {
        let job = JobShared::new(1, job_path(), OwnedUniqueName::try_from(":1.1").unwrap(), None, false);
        assert!(job.stop(Stop::Cancelled));
        assert!(!job.stop(Stop::Cancelled), "asked once");
        assert!(job.cancel.is_cancelled());
        let ok = Summary { text: "s".into(), method: Method::Extractive, stats: SummaryStats::default(), sentences: Vec::new() };
        let (r, state) = job.finish(Ok(Outcome::Summary(ok)));
        assert_eq!(state, JobState::Cancelled);
        assert_eq!(r.unwrap_err().kind, ErrorKind::Cancelled);
        assert!(!job.stop(Stop::Cancelled), "a finished job is not stopped");
    }

    #[test]
    fn token_paths_are_computable() {
        assert_eq!(token_path(":1.42", "t_1").unwrap().as_str(), "/org/seqgpt/Summarizer1/jobs/1_42/t_1");
        assert!(token_path(":", "t").is_err(), "an empty sender element is not a path");
    }

    #[test]
    fn job_paths_are_random() {
        let (a, b) = (job_path(), job_path());
        assert_ne!(a, b);
        assert!(a.as_str().starts_with(JOBS_PATH));
        assert_eq!(a.as_str().len(), JOBS_PATH.len() + 34);
    }
}
