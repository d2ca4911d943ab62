//! The service object `/org/seqgpt/Summarizer1`, interface `org.seqgpt.Summarizer1`.

use super::bus_string::BusString;
use super::core::{BusKind, Core, Slot};
use super::errors::{ErrorKind, ServiceError};
use super::intake;
use super::job_task::{self, Requester};
use super::jobs::Work;
use super::options::RequestOptions;
use crate::summarize::Cancel;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use zbus::message::Header;
use zbus::names::OwnedUniqueName;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};
use zbus::{interface, Connection};

pub const SERVICE_NAME: &str = "org.seqgpt.Summarizer1";
pub const SERVICE_PATH: &str = "/org/seqgpt/Summarizer1";

/// The interface's version: raised whenever a method, property, option or signal is added,
/// so that a client can tell what an older daemon lacks. 1 was the first published API; 2
/// added InterfaceVersion, Capabilities, ListJobs, ClassifyJob, ExtractJob, the `handle_token`
/// option, ignoring unknown options, and the FileNotFound and PermissionDenied errors of
/// SummarizePath.
pub const INTERFACE_VERSION: u32 = 2;

/// What this daemon offers, for clients that test a feature rather than a version.
pub fn capabilities(bus: BusKind) -> Vec<&'static str> {
    let mut c = vec!["summarize-fd", "summarize-text"];
    if path_allowed(bus) {
        c.push("summarize-path");
    }
    c.extend(["classify", "extract", "classify-job", "extract-job", "anchors", "max-words", "handle-token", "list-jobs", "ignore-unknown-options"]);
    c
}

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
        intake::check_text_size(text, &self.core.served().limits)
    }

    /// Starts the job of a checked request for its caller.
    async fn start(&self, conn: &Connection, hdr: &Header<'_>, request: intake::Request) -> Result<OwnedObjectPath, ServiceError> {
        let work = Work::Summarize(request.source, request.options.summary.clone(), request.options.annotate_to.clone());
        self.start_work(conn, hdr, work, request.options).await
    }

    async fn start_work(
        &self,
        conn: &Connection,
        hdr: &Header<'_>,
        work: Work,
        options: RequestOptions,
    ) -> Result<OwnedObjectPath, ServiceError> {
        let (who, slot) = self.admit(conn, hdr).await?;
        job_task::start(&self.core, conn, who, slot, work, options).await
    }

    /// The checks of ClassifyJob and ExtractJob before a job exists: the text's size, a
    /// model to answer, and the options (only detach and handle_token mean anything here).
    fn task_request(&self, text: &str, options: &HashMap<String, OwnedValue>) -> Result<RequestOptions, ServiceError> {
        let options = super::options::parse(options)?;
        self.check_text(text)?;
        if self.core.served().pipeline.model().is_none() {
            return Err(ServiceError::new(ErrorKind::ModelUnavailable, "no model is loaded: classification and extraction need one"));
        }
        Ok(options)
    }

    /// The caller and a place for its request under the limits (per connection, or per
    /// Unix user on the system bus).
    async fn admit(&self, conn: &Connection, hdr: &Header<'_>) -> Result<(Requester, Slot), ServiceError> {
        let owner = caller(hdr)?;
        let (client, uid) = self.core.client(conn, owner.inner()).await?;
        let slot = self.core.admit(&client)?;
        Ok((Requester { owner, uid }, slot))
    }

    /// After a reload: the properties that follow the model are invalidated (clients read them
    /// again).
    pub async fn served_changed(&self, emitter: &zbus::object_server::SignalEmitter<'_>) -> zbus::Result<()> {
        self.model_invalidate(emitter).await?;
        self.device_invalidate(emitter).await?;
        self.default_method_invalidate(emitter).await?;
        self.template_invalidate(emitter).await
    }

    /// Runs a short model call (Classify, Extract) under the job limits, ending it with
    /// ShuttingDown when the daemon stops; its blocking work stops too.
    async fn model_call<T, F>(&self, conn: &Connection, hdr: &Header<'_>, call: impl FnOnce(Cancel) -> F) -> Result<T, ServiceError>
    where
        F: std::future::Future<Output = Result<T, crate::summarize::SummaryError>>,
    {
        let (_, slot) = self.admit(conn, hdr).await?;
        let cancel = Cancel::new();
        let result = tokio::select! {
            r = call(cancel.clone()) => r.map_err(ServiceError::from),
            _ = self.core.stopping() => Err(ServiceError::new(ErrorKind::ShuttingDown, "the daemon is shutting down")),
        };
        cancel.cancel();
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
    /// length (short|medium|long), max_words (u), language (auto|en|zh|ja|ko), style
    /// (paragraph|bullets), password, method (auto|model|extractive), no_cache (b), detach
    /// (b), handle_token (s: the job's path is jobs/SENDER/TOKEN), annotate_fd (h: a pipe or
    /// file open for writing; the job writes the PDF's annotated copy into it before
    /// Finished). Unknown keys are ignored and listed in the result's stats
    /// (ignored_options). Returns the job.
    async fn summarize_fd(
        &self,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &Connection,
        fd: zbus::zvariant::OwnedFd,
        options: HashMap<String, OwnedValue>,
    ) -> Result<OwnedObjectPath, ServiceError> {
        let request = intake::fd(std::os::fd::OwnedFd::from(fd), &options, &self.core.served().limits)?;
        self.start(conn, &hdr, request).await
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
        let request = intake::path(&path, &options, &self.core.served().limits)?;
        self.start(conn, &hdr, request).await
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
        let request = intake::text(text, &options, &self.core.served().limits)?;
        self.start(conn, &hdr, request).await
    }

    /// SeqGPT classification: which of `labels` apply to `text`. Returns the labels the
    /// model chose (in its order) and its raw answer. Needs a model (else ModelUnavailable).
    #[zbus(out_args("labels", "answer"))]
    async fn classify(
        &self,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &Connection,
        text: String,
        labels: Vec<String>,
    ) -> Result<(Vec<BusString>, BusString), ServiceError> {
        self.check_text(&text)?;
        let pipeline = self.core.served().pipeline.clone();
        let (labels, raw) =
            self.model_call(conn, &hdr, |cancel| async move { pipeline.classify(&text, &labels, &cancel).await }).await?;
        Ok((labels.iter().map(|l| BusString::message(l)).collect(), BusString::text(&raw)))
    }

    /// SeqGPT extraction: the spans of `text` of each kind in `kinds` (e.g. "person",
    /// "地名"). Returns kind -> spans and the model's raw answer. Needs a model.
    #[zbus(out_args("spans", "answer"))]
    async fn extract(
        &self,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &Connection,
        text: String,
        kinds: Vec<String>,
    ) -> Result<(HashMap<BusString, Vec<BusString>>, BusString), ServiceError> {
        self.check_text(&text)?;
        let pipeline = self.core.served().pipeline.clone();
        let (spans, raw) =
            self.model_call(conn, &hdr, |cancel| async move { pipeline.find_spans(&text, &kinds, &cancel).await }).await?;
        let spans = spans
            .into_iter()
            .map(|(k, v)| (BusString::message(&k), v.iter().map(|s| BusString::message(s)).collect()))
            .collect();
        Ok((spans, BusString::text(&raw)))
    }

    /// SeqGPT classification as a job (with Cancel, and no call timeout to outlast): which of
    /// `labels` apply to `text`. Options: detach (b), handle_token (s). The job's Finished
    /// carries the model's raw answer and stats {method, task = "classify", labels (as)}.
    async fn classify_job(
        &self,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &Connection,
        text: String,
        labels: Vec<String>,
        options: HashMap<String, OwnedValue>,
    ) -> Result<OwnedObjectPath, ServiceError> {
        let options = self.task_request(&text, &options)?;
        self.start_work(conn, &hdr, Work::Classify { text, labels }, options).await
    }

    /// SeqGPT extraction as a job: the spans of `text` of each kind in `kinds`. Options as for
    /// ClassifyJob. Finished carries the raw answer and stats {method, task = "extract",
    /// spans (a{sas})}.
    async fn extract_job(
        &self,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &Connection,
        text: String,
        kinds: Vec<String>,
        options: HashMap<String, OwnedValue>,
    ) -> Result<OwnedObjectPath, ServiceError> {
        let options = self.task_request(&text, &options)?;
        self.start_work(conn, &hdr, Work::Extract { text, kinds }, options).await
    }

    /// The caller's own jobs, unfinished and retained: (path, state). On the system bus the
    /// jobs of the caller's Unix user (root: all); elsewhere every job (one user). A client
    /// that restarted finds its detached jobs here.
    #[zbus(out_args("jobs"))]
    async fn list_jobs(
        &self,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &Connection,
    ) -> Result<Vec<(OwnedObjectPath, BusString)>, ServiceError> {
        let caller = caller(&hdr)?;
        let mut out = Vec::new();
        for job in self.core.jobs() {
            if self.core.check_access(conn, Some(&caller.as_ref()), &job).await.is_ok() {
                out.push((job.path.clone(), BusString::message(job.state().as_str())));
            }
        }
        Ok(out)
    }

    /// The daemon's version (its package's).
    #[zbus(property(emits_changed_signal = "const"))]
    fn version(&self) -> BusString {
        BusString::message(env!("CARGO_PKG_VERSION"))
    }

    /// The interface's version (see docs/DBUS.md for what each added).
    #[zbus(property(emits_changed_signal = "const"))]
    fn interface_version(&self) -> u32 {
        INTERFACE_VERSION
    }

    /// Features this daemon offers (summarize-path only off the system bus).
    #[zbus(property(emits_changed_signal = "const"))]
    fn capabilities(&self) -> Vec<BusString> {
        capabilities(self.core.bus).into_iter().map(BusString::message).collect()
    }

    /// The loaded model's name (general.name), or "" when summaries are extractive only.
    #[zbus(property(emits_changed_signal = "invalidates"))]
    fn model(&self) -> BusString {
        self.core.served().pipeline.model().map_or_else(BusString::default, |m| BusString::message(&m.name))
    }

    /// Where the model runs: cpu or cuda:N ("cpu" for the extractive summarizer).
    #[zbus(property(emits_changed_signal = "invalidates"))]
    fn device(&self) -> BusString {
        BusString::message(&self.core.served().device)
    }

    /// The method a summary gets by default: model, or extractive when no model is loaded.
    #[zbus(property(emits_changed_signal = "invalidates"))]
    fn default_method(&self) -> BusString {
        BusString::message(if self.core.served().pipeline.model().is_some() { "model" } else { "extractive" })
    }

    /// The summary template in use (see docs/SUMMARIZE.md), "" without a model.
    #[zbus(property(emits_changed_signal = "invalidates"))]
    fn template(&self) -> BusString {
        self.core.served().pipeline.model().map_or_else(BusString::default, |m| BusString::message(&m.template_name))
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
        put("model_queue", Value::from(self.core.served().pipeline.model().map_or(0, |m| m.scheduler.queue_len()) as u32));
        put("rss_bytes", Value::from(seqgpt_engine::sysinfo::rss_bytes()));
        put("peak_rss_bytes", Value::from(seqgpt_engine::sysinfo::peak_rss_bytes()));
        put("uptime_s", Value::from(self.core.uptime_s()));
        put("retained_bytes", Value::from(self.core.retained_bytes() as u64));
        put("bus", BusString::message(self.core.bus.as_str()).into());
        d
    }
}

/// Whether SummarizePath may be used on this bus (not on the system bus: the daemon runs as
/// another user there, and a path would make it open files on the caller's behalf).
pub fn path_allowed(bus: BusKind) -> bool {
    bus != BusKind::System
}
