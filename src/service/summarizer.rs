//! The service object `/org/seqgpt/Summarizer1`, interface `org.seqgpt.Summarizer1`.

use super::core::{BusKind, Core};
use super::errors::{ErrorKind, ServiceError};
use super::input::DocumentFile;
use super::jobs::{self, dbus_string, Source};
use super::options;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use zbus::message::Header;
use zbus::names::OwnedUniqueName;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};
use zbus::{interface, Connection};

pub const SERVICE_NAME: &str = "org.seqgpt.Summarizer1";
pub const SERVICE_PATH: &str = "/org/seqgpt/Summarizer1";

pub struct Summarizer {
    pub core: Arc<Core>,
}

fn caller(hdr: &Header<'_>) -> Result<OwnedUniqueName, ServiceError> {
    hdr.sender()
        .map(|s| OwnedUniqueName::from(s.to_owned()))
        .ok_or_else(|| ServiceError::new(ErrorKind::Failed, "the call has no sender (peer-to-peer connections are not served)"))
}

impl Summarizer {
    fn check_text(&self, text: &str) -> Result<(), ServiceError> {
        let max = self.core.limits.max_text_bytes;
        if text.len() as u64 > max {
            return Err(ServiceError::new(
                ErrorKind::TooLarge,
                format!("the text has {} bytes; this daemon accepts at most {max} ([service] max_text_bytes)", text.len()),
            ));
        }
        Ok(())
    }

    /// Runs a short model call (Classify, Extract) under the job limits, ending it with
    /// ShuttingDown when the daemon stops.
    async fn model_call<T>(
        &self,
        hdr: &Header<'_>,
        call: impl std::future::Future<Output = Result<T, crate::summarize::SummaryError>>,
    ) -> Result<T, ServiceError> {
        let owner = caller(hdr)?;
        let slot = self.core.admit(&owner)?;
        let result = tokio::select! {
            r = call => r.map_err(ServiceError::from),
            _ = self.core.stopping() => Err(ServiceError::new(ErrorKind::ShuttingDown, "the daemon is shutting down")),
        };
        self.core.release(slot);
        result
    }
}

/// org.seqgpt.Summarizer1: summaries of PDFs and texts, computed on this machine.
/// Summarize* return a job object (org.seqgpt.Job1) at once; its signals report progress and
/// the result. Errors: org.freedesktop.DBus.Error.LimitsExceeded (busy), AccessDenied,
/// InvalidArgs, and org.seqgpt.Summarizer1.Error.{InvalidPdf, Encrypted, NoText, TooLarge,
/// Cancelled, ModelUnavailable, ShuttingDown}.
#[interface(name = "org.seqgpt.Summarizer1")]
impl Summarizer {
    /// Summarize the PDF behind `fd` (a regular file or memfd open for reading; the daemon
    /// reads it from offset 0 and never needs its path). Options (a{sv}): pages ("A-B"),
    /// length (short|medium|long), language (auto|en|zh), style (paragraph|bullets),
    /// password, method (auto|model|extractive), no_cache (b), detach (b). Returns the job.
    async fn summarize_fd(
        &self,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &Connection,
        fd: zbus::zvariant::OwnedFd,
        options: HashMap<String, OwnedValue>,
    ) -> Result<OwnedObjectPath, ServiceError> {
        let opts = options::parse(&options)?;
        let file = DocumentFile::from_fd(std::os::fd::OwnedFd::from(fd), self.core.limits.max_pdf_bytes)?;
        let owner = caller(&hdr)?;
        let slot = self.core.admit(&owner)?;
        jobs::start(&self.core, conn, owner, slot, Source::Pdf(file), opts.summary, opts.detach).await
    }

    /// Summarize the PDF at an absolute `path`, opened by the daemon. Session bus only: on
    /// the system bus this is AccessDenied (pass a descriptor with SummarizeFd).
    async fn summarize_path(
        &self,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &Connection,
        path: String,
        options: HashMap<String, OwnedValue>,
    ) -> Result<OwnedObjectPath, ServiceError> {
        if !path_allowed(self.core.bus) {
            return Err(ServiceError::access_denied(
                "SummarizePath is not available on the system bus: open the file and pass its descriptor to SummarizeFd",
            ));
        }
        let opts = options::parse(&options)?;
        let file = DocumentFile::open_path(std::path::Path::new(&path), self.core.limits.max_pdf_bytes)?;
        let owner = caller(&hdr)?;
        let slot = self.core.admit(&owner)?;
        jobs::start(&self.core, conn, owner, slot, Source::Pdf(file), opts.summary, opts.detach).await
    }

    /// Summarize a UTF-8 text (form feeds separate pages). Options as for SummarizeFd, but
    /// no password.
    async fn summarize_text(
        &self,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &Connection,
        text: String,
        options: HashMap<String, OwnedValue>,
    ) -> Result<OwnedObjectPath, ServiceError> {
        let opts = options::parse(&options)?;
        if opts.summary.password.is_some() {
            return Err(ServiceError::invalid_args("the password option applies to PDFs only"));
        }
        self.check_text(&text)?;
        let owner = caller(&hdr)?;
        let slot = self.core.admit(&owner)?;
        jobs::start(&self.core, conn, owner, slot, Source::Text(text), opts.summary, opts.detach).await
    }

    /// SeqGPT classification: which of `labels` apply to `text`. Returns the labels the
    /// model chose (in its order) and its raw answer. Needs a model (else ModelUnavailable).
    #[zbus(out_args("labels", "answer"))]
    async fn classify(
        &self,
        #[zbus(header)] hdr: Header<'_>,
        text: String,
        labels: Vec<String>,
    ) -> Result<(Vec<String>, String), ServiceError> {
        self.check_text(&text)?;
        let pipeline = self.core.pipeline.clone();
        let (labels, raw) = self.model_call(&hdr, async move { pipeline.classify(&text, &labels).await }).await?;
        Ok((labels, dbus_string(&raw).into_owned()))
    }

    /// SeqGPT extraction: the spans of `text` of each kind in `kinds` (e.g. "person",
    /// "地名"). Returns kind -> spans and the model's raw answer. Needs a model.
    #[zbus(out_args("spans", "answer"))]
    async fn extract(
        &self,
        #[zbus(header)] hdr: Header<'_>,
        text: String,
        kinds: Vec<String>,
    ) -> Result<(HashMap<String, Vec<String>>, String), ServiceError> {
        self.check_text(&text)?;
        let pipeline = self.core.pipeline.clone();
        let (spans, raw) = self.model_call(&hdr, async move { pipeline.extract(&text, &kinds).await }).await?;
        let spans = spans.into_iter().map(|(k, v)| (k, v.iter().map(|s| dbus_string(s).into_owned()).collect())).collect();
        Ok((spans, dbus_string(&raw).into_owned()))
    }

    /// The daemon's version.
    #[zbus(property(emits_changed_signal = "const"))]
    fn version(&self) -> String {
        env!("CARGO_PKG_VERSION").to_string()
    }

    /// The loaded model's name (general.name), or "" when summaries are extractive only.
    #[zbus(property(emits_changed_signal = "const"))]
    fn model(&self) -> String {
        self.core.pipeline.model().map_or(String::new(), |m| dbus_string(&m.generator.info().name).into_owned())
    }

    /// Where the model runs: cpu or cuda:N ("cpu" for the extractive summarizer).
    #[zbus(property(emits_changed_signal = "const"))]
    fn device(&self) -> String {
        self.core.device.clone()
    }

    /// The method a summary gets by default: model, or extractive when no model is loaded.
    #[zbus(property(emits_changed_signal = "const"))]
    fn default_method(&self) -> String {
        if self.core.pipeline.model().is_some() { "model" } else { "extractive" }.to_string()
    }

    /// The summary template in use (see docs/SUMMARIZE.md), "" without a model.
    #[zbus(property(emits_changed_signal = "const"))]
    fn template(&self) -> String {
        self.core.pipeline.model().map_or(String::new(), |m| m.template_name.clone())
    }

    /// Unfinished jobs (queued or running), which count against the limit past which calls
    /// fail with LimitsExceeded.
    #[zbus(property(emits_changed_signal = "false"))]
    fn queue_length(&self) -> u32 {
        self.core.active() as u32
    }

    /// Counters: jobs accepted, done, failed, cancelled, busy refusals, cache hits, methods,
    /// prompts waiting for the model, memory, uptime.
    #[zbus(property(emits_changed_signal = "false"))]
    fn stats(&self) -> HashMap<String, OwnedValue> {
        let c = &self.core.counters;
        let (queued, running, retained) = self.core.job_counts();
        let mut d = HashMap::new();
        let mut put = |k: &str, v: Value<'_>| {
            if let Ok(v) = OwnedValue::try_from(v) {
                d.insert(k.to_string(), v);
            }
        };
        let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        put("jobs_accepted", Value::from(load(&c.accepted)));
        put("jobs_done", Value::from(load(&c.done)));
        put("jobs_failed", Value::from(load(&c.failed)));
        put("jobs_cancelled", Value::from(load(&c.cancelled)));
        put("busy_refusals", Value::from(load(&c.busy)));
        put("cache_hits", Value::from(load(&c.cache_hits)));
        put("summaries_model", Value::from(load(&c.by_model)));
        put("summaries_extractive", Value::from(load(&c.by_extractive)));
        put("client_disconnects", Value::from(load(&c.client_disconnects)));
        put("jobs_queued", Value::from(queued));
        put("jobs_running", Value::from(running));
        put("jobs_retained", Value::from(retained));
        put("model_queue", Value::from(self.core.pipeline.model().map_or(0, |m| m.generator.queue_len()) as u32));
        put("rss_bytes", Value::from(crate::sysinfo::rss_bytes()));
        put("peak_rss_bytes", Value::from(crate::sysinfo::peak_rss_bytes()));
        put("uptime_s", Value::from(self.core.uptime_s()));
        put("bus", Value::from(self.core.bus.as_str()));
        d
    }
}

/// Whether SummarizePath may be used on this bus (not on the system bus: the daemon runs as
/// another user there, and a path would make it open files on the caller's behalf).
pub fn path_allowed(bus: BusKind) -> bool {
    bus != BusKind::System
}
