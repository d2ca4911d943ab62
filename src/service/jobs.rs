//! Job objects (`org.seqgpt.Job1` under `/org/seqgpt/Summarizer1/jobs/N`) and the task that
//! runs each job.
//!
//! A job's signals (Progress, Partial, Finished, Failed, and PropertiesChanged) are unicast to
//! the connection that created it: on the system bus other users never see its text. Every
//! accepted job ends in exactly one of Finished and Failed (cancellation is Failed with
//! `org.seqgpt.Summarizer1.Error.Cancelled`), also when the daemon stops. A finished job's
//! object stays on the bus for `job_retention_s` seconds (and at most `max_retained_jobs` of
//! them), so that a client that missed the signals can still read State, Summary or
//! ErrorName, or call Wait.

use super::core::{Core, Slot};
use super::errors::{ErrorKind, ServiceError};
use super::input::DocumentFile;
use crate::summarize::pipeline::{Input, Observer, Stage};
use crate::summarize::{Method, Summary, SummaryOptions, SummaryStats};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use zbus::message::Header;
use zbus::names::{BusName, InterfaceName, OwnedUniqueName};
use zbus::object_server::SignalEmitter;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};
use zbus::{interface, Connection};

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

/// What a job's readers see.
#[derive(Debug, Clone)]
struct View {
    state: JobState,
    stage: &'static str,
    progress: (u32, u32),
    summary: String,
    method: String,
    error: Option<ServiceError>,
    stats: HashMap<String, OwnedValue>,
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
    view: Mutex<View>,
    stop: watch::Sender<Option<Stop>>,
    done: watch::Sender<bool>,
}

impl JobShared {
    pub fn new(id: u64, owner: OwnedUniqueName, owner_uid: Option<u32>, detached: bool) -> Self {
        let path = OwnedObjectPath::try_from(format!("{JOBS_PATH}/{id}")).expect("a valid object path");
        JobShared {
            id,
            path,
            owner,
            owner_uid,
            detached,
            view: Mutex::new(View {
                state: JobState::Queued,
                stage: "",
                progress: (0, 0),
                summary: String::new(),
                method: String::new(),
                error: None,
                stats: HashMap::new(),
            }),
            stop: watch::channel(None).0,
            done: watch::channel(false).0,
        }
    }

    fn view(&self) -> std::sync::MutexGuard<'_, View> {
        self.view.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn state(&self) -> JobState {
        self.view().state
    }

    /// Asks the job to stop; false when it already ended or was already asked.
    pub fn stop(&self, why: Stop) -> bool {
        if self.state().is_terminal() {
            return false;
        }
        let mut changed = false;
        self.stop.send_if_modified(|s| {
            if s.is_none() {
                *s = Some(why);
                changed = true;
            }
            changed
        });
        changed
    }

    /// Waits for the end: (summary, method) or the job's error.
    pub async fn wait(&self) -> Result<(String, String), ServiceError> {
        let mut rx = self.done.subscribe();
        let _ = rx.wait_for(|d| *d).await;
        let v = self.view();
        match &v.error {
            None => Ok((v.summary.clone(), v.method.clone())),
            Some(e) => Err(e.clone()),
        }
    }
}

/// The bus object of a job.
pub struct JobObject {
    pub job: Arc<JobShared>,
    pub core: Arc<Core>,
}

impl JobObject {
    async fn allowed(&self, conn: &Connection, hdr: Option<&Header<'_>>) -> Result<(), ServiceError> {
        let caller = hdr.and_then(|h| h.sender());
        self.core.check_access(conn, caller, &self.job).await
    }
}

/// org.seqgpt.Job1: one summarization job. Its signals are sent to the connection that
/// created it.
#[interface(name = "org.seqgpt.Job1")]
impl JobObject {
    /// Cancel the job. It ends with the Failed signal (org.seqgpt.Summarizer1.Error.Cancelled)
    /// and the state "cancelled". Cancelling a finished job does nothing.
    async fn cancel(&self, #[zbus(header)] hdr: Header<'_>, #[zbus(connection)] conn: &Connection) -> Result<(), ServiceError> {
        self.allowed(conn, Some(&hdr)).await?;
        self.job.stop(Stop::Cancelled);
        Ok(())
    }

    /// Wait until the job ends; returns the summary and the method that made it, or fails
    /// with the job's error. A convenience for clients that do not follow signals (busctl:
    /// give it a --timeout).
    #[zbus(out_args("summary", "method"))]
    async fn wait(&self, #[zbus(header)] hdr: Header<'_>, #[zbus(connection)] conn: &Connection) -> Result<(String, String), ServiceError> {
        self.allowed(conn, Some(&hdr)).await?;
        self.job.wait().await
    }

    /// queued, running, done, failed or cancelled.
    #[zbus(property)]
    async fn state(&self, #[zbus(header)] hdr: Option<Header<'_>>, #[zbus(connection)] conn: &Connection) -> zbus::fdo::Result<String> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(self.job.state().as_str().to_string())
    }

    /// The current stage: extract (pages), summarize (chunks), reduce, rank; empty before
    /// the first.
    #[zbus(property(emits_changed_signal = "false"))]
    async fn stage(&self, #[zbus(header)] hdr: Option<Header<'_>>, #[zbus(connection)] conn: &Connection) -> zbus::fdo::Result<String> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(self.job.view().stage.to_string())
    }

    /// (done, total) of the current stage: pages while extracting, chunks while summarizing.
    #[zbus(property(emits_changed_signal = "false"))]
    async fn progress(&self, #[zbus(header)] hdr: Option<Header<'_>>, #[zbus(connection)] conn: &Connection) -> zbus::fdo::Result<(u32, u32)> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(self.job.view().progress)
    }

    /// The summary, once the state is done (empty before).
    #[zbus(property(emits_changed_signal = "invalidates"))]
    async fn summary(&self, #[zbus(header)] hdr: Option<Header<'_>>, #[zbus(connection)] conn: &Connection) -> zbus::fdo::Result<String> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(self.job.view().summary.clone())
    }

    /// model or extractive, once the state is done (empty before).
    #[zbus(property)]
    async fn method(&self, #[zbus(header)] hdr: Option<Header<'_>>, #[zbus(connection)] conn: &Connection) -> zbus::fdo::Result<String> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(self.job.view().method.clone())
    }

    /// The D-Bus error name once the state is failed or cancelled (empty otherwise).
    #[zbus(property)]
    async fn error_name(&self, #[zbus(header)] hdr: Option<Header<'_>>, #[zbus(connection)] conn: &Connection) -> zbus::fdo::Result<String> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(self.job.view().error.as_ref().map_or(String::new(), |e| e.name().to_string()))
    }

    /// The error message once the state is failed or cancelled (empty otherwise).
    #[zbus(property)]
    async fn error_message(&self, #[zbus(header)] hdr: Option<Header<'_>>, #[zbus(connection)] conn: &Connection) -> zbus::fdo::Result<String> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(self.job.view().error.as_ref().map_or(String::new(), |e| e.message.clone()))
    }

    /// The stats of the Finished signal, once done (empty before).
    #[zbus(property(emits_changed_signal = "invalidates"))]
    async fn stats(
        &self,
        #[zbus(header)] hdr: Option<Header<'_>>,
        #[zbus(connection)] conn: &Connection,
    ) -> zbus::fdo::Result<HashMap<String, OwnedValue>> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(clone_dict(&self.job.view().stats))
    }

    /// Progress of a stage: extract (pages), summarize (chunks), reduce (prompts), rank.
    #[zbus(signal, name = "Progress")]
    async fn progress_signal(emitter: &SignalEmitter<'_>, stage: &str, done: u32, total: u32) -> zbus::Result<()>;

    /// Text as the model generates it for prompt `index` (the chunks from 0, then the
    /// reduce prompts); the extractive method sends its summary once, as index 0.
    #[zbus(signal)]
    async fn partial(emitter: &SignalEmitter<'_>, index: u32, text: &str) -> zbus::Result<()>;

    /// The job is done: the summary and its stats (method, pages, chunks, tokens, cached, ...).
    #[zbus(signal)]
    async fn finished(emitter: &SignalEmitter<'_>, summary: &str, stats: HashMap<String, OwnedValue>) -> zbus::Result<()>;

    /// The job failed or was cancelled: a D-Bus error name and a message.
    #[zbus(signal)]
    async fn failed(emitter: &SignalEmitter<'_>, error_name: &str, message: &str) -> zbus::Result<()>;
}

fn clone_dict(d: &HashMap<String, OwnedValue>) -> HashMap<String, OwnedValue> {
    d.iter().filter_map(|(k, v)| v.try_clone().ok().map(|v| (k.clone(), v))).collect()
}

/// A job's input.
pub enum Source {
    Text(String),
    /// A checked PDF file (descriptor or path), read in the job.
    Pdf(DocumentFile),
}

/// What the job task tells its emitter, in order.
enum Update {
    Running,
    Progress(Stage, u32, u32),
    Partial(u32, String),
    End(Result<Summary, ServiceError>),
}

struct ChannelObserver(mpsc::UnboundedSender<Update>);

impl Observer for ChannelObserver {
    fn progress(&mut self, stage: Stage, done: u32, total: u32) {
        let _ = self.0.send(Update::Progress(stage, done, total));
    }
    fn partial(&mut self, index: u32, text: &str) {
        let _ = self.0.send(Update::Partial(index, text.to_string()));
    }
}

/// Creates a job for `source`, puts its object on the bus and starts it. `slot` is the place
/// [`Core::admit`] gave the caller; it is released when the job ends (or here, on failure).
pub async fn start(
    core: &Arc<Core>,
    conn: &Connection,
    owner: OwnedUniqueName,
    slot: Slot,
    source: Source,
    options: SummaryOptions,
    detached: bool,
) -> Result<OwnedObjectPath, ServiceError> {
    let owner_uid = if core.bus == super::core::BusKind::System {
        match core.uid_of(conn, owner.as_str()).await {
            Ok(uid) => Some(uid),
            Err(e) => {
                core.release(slot);
                return Err(e);
            }
        }
    } else {
        None
    };
    let job = Arc::new(JobShared::new(core.next_id(), owner, owner_uid, detached));
    core.register(job.clone());
    let object = JobObject { job: job.clone(), core: core.clone() };
    if let Err(e) = conn.object_server().at(job.path.clone(), object).await {
        core.forget(job.id);
        core.release(slot);
        return Err(e.into());
    }
    core.counters.accepted.fetch_add(1, Ordering::Relaxed);
    let path = job.path.clone();
    tokio::spawn(run(core.clone(), conn.clone(), job, slot, source, options));
    Ok(path)
}

/// The job task: runs the pipeline (or stops when asked), then publishes the end and
/// schedules the object's removal.
async fn run(core: Arc<Core>, conn: Connection, job: Arc<JobShared>, slot: Slot, source: Source, options: SummaryOptions) {
    let emitter = SignalEmitter::new(&conn, job.path.clone())
        .expect("a valid path")
        .set_destination(BusName::Unique(job.owner.as_ref().clone()))
        .into_owned();
    let (tx, rx) = mpsc::unbounded_channel();
    let emit = tokio::spawn(emit_updates(core.clone(), job.clone(), emitter, rx));

    // A client may have left before its job was registered: then nobody would cancel it.
    if !job.detached {
        if let Ok(dbus) = zbus::fdo::DBusProxy::new(&conn).await {
            if let Ok(false) = dbus.name_has_owner(BusName::Unique(job.owner.as_ref().clone())).await {
                job.stop(Stop::Cancelled);
            }
        }
    }

    let mut stop_rx = job.stop.subscribe();
    let work = {
        let tx = tx.clone();
        let core = core.clone();
        async move {
            let input = match source {
                Source::Text(t) => {
                    let _ = tx.send(Update::Running);
                    Input::Text(t)
                }
                Source::Pdf(file) => {
                    // One place among the extractions, taken before the file is read: it
                    // bounds the PDFs held in memory at once.
                    let permit = core.pipeline.extract_permit().await;
                    let _ = tx.send(Update::Running);
                    let max = core.limits.max_pdf_bytes;
                    let bytes = tokio::task::spawn_blocking(move || file.read_all(max))
                        .await
                        .map_err(|e| ServiceError::new(ErrorKind::Failed, format!("reading the document failed: {e}")))??;
                    Input::Pdf { bytes, permit: Some(permit) }
                }
            };
            let mut obs = ChannelObserver(tx);
            core.pipeline.summarize(input, &options, &mut obs).await.map_err(ServiceError::from)
        }
    };
    let result = tokio::select! {
        r = work => r,
        why = stop_rx.wait_for(|s| s.is_some()) => {
            let why = why.ok().and_then(|s| *s).unwrap_or(Stop::Cancelled);
            Err(match why {
                Stop::Cancelled => ServiceError::new(ErrorKind::Cancelled, "the job was cancelled"),
                Stop::ShuttingDown => ServiceError::new(ErrorKind::ShuttingDown, "the daemon is shutting down (SIGTERM); the job was not finished"),
            })
        }
    };
    let _ = tx.send(Update::End(result));
    drop(tx);
    let _ = emit.await;
    core.release(slot);

    // Retention: the object stays readable for a while, then goes.
    let evict = core.finished(&job);
    for id in evict {
        remove(&core, &conn, id).await;
    }
    let retention = Duration::from_secs(core.limits.job_retention_s);
    let (core2, conn2, id) = (core.clone(), conn.clone(), job.id);
    tokio::spawn(async move {
        tokio::time::sleep(retention).await;
        remove(&core2, &conn2, id).await;
    });
}

async fn remove(core: &Core, conn: &Connection, id: u64) {
    if let Some(job) = core.forget(id) {
        let _ = conn.object_server().remove::<JobObject, _>(job.path.clone()).await;
    }
}

/// Publishes a job's updates in order: signals to its owner, and the view its properties read.
async fn emit_updates(core: Arc<Core>, job: Arc<JobShared>, emitter: SignalEmitter<'static>, mut rx: mpsc::UnboundedReceiver<Update>) {
    let mut pending: Option<Update> = None;
    loop {
        let update = match pending.take() {
            Some(u) => u,
            None => match rx.recv().await {
                Some(u) => u,
                None => break,
            },
        };
        match update {
            Update::Running => set_running(&job, &emitter).await,
            Update::Progress(stage, done, total) => {
                set_running(&job, &emitter).await;
                {
                    let mut v = job.view();
                    v.stage = stage.as_str();
                    v.progress = (done, total);
                }
                let _ = JobObject::progress_signal(&emitter, stage.as_str(), done, total).await;
            }
            Update::Partial(index, mut text) => {
                set_running(&job, &emitter).await;
                // Merge what is already waiting for the same prompt into one signal.
                while let Ok(next) = rx.try_recv() {
                    match next {
                        Update::Partial(i, t) if i == index => text.push_str(&t),
                        other => {
                            pending = Some(other);
                            break;
                        }
                    }
                }
                let _ = JobObject::partial(&emitter, index, &dbus_string(&text)).await;
            }
            Update::End(result) => {
                publish_end(&core, &job, &emitter, result).await;
            }
        }
    }
}

async fn set_running(job: &JobShared, emitter: &SignalEmitter<'_>) {
    let changed = {
        let mut v = job.view();
        if v.state == JobState::Queued {
            v.state = JobState::Running;
            true
        } else {
            false
        }
    };
    if changed {
        let changed: HashMap<&str, Value<'_>> = [("State", Value::from(JobState::Running.as_str()))].into_iter().collect();
        let _ = zbus::fdo::Properties::properties_changed(emitter, interface_name(), changed, std::borrow::Cow::Borrowed(&[])).await;
    }
}

fn interface_name() -> InterfaceName<'static> {
    InterfaceName::from_static_str_unchecked(JOB_INTERFACE)
}

async fn publish_end(core: &Core, job: &JobShared, emitter: &SignalEmitter<'_>, result: Result<Summary, ServiceError>) {
    let c = &core.counters;
    let state = match &result {
        Ok(s) => {
            c.done.fetch_add(1, Ordering::Relaxed);
            if s.stats.cached {
                c.cache_hits.fetch_add(1, Ordering::Relaxed);
            }
            match s.method {
                Method::Model => c.by_model.fetch_add(1, Ordering::Relaxed),
                Method::Extractive => c.by_extractive.fetch_add(1, Ordering::Relaxed),
            };
            JobState::Done
        }
        Err(e) if e.kind == ErrorKind::Cancelled => {
            c.cancelled.fetch_add(1, Ordering::Relaxed);
            JobState::Cancelled
        }
        Err(_) => {
            c.failed.fetch_add(1, Ordering::Relaxed);
            JobState::Failed
        }
    };
    {
        let mut v = job.view();
        v.state = state;
        match &result {
            Ok(s) => {
                v.summary = dbus_string(&s.text).into_owned();
                v.method = s.method.as_str().to_string();
                v.stats = stats_dict(s.method, &s.stats);
                v.progress = (v.progress.1.max(v.progress.0), v.progress.1.max(v.progress.0));
            }
            Err(e) => v.error = Some(e.clone()),
        }
    }
    let mut changed: HashMap<&str, Value<'_>> = HashMap::new();
    changed.insert("State", Value::from(state.as_str()));
    let invalidated: &[&str] = match &result {
        Ok(s) => {
            changed.insert("Method", Value::from(s.method.as_str()));
            &["Summary", "Stats"]
        }
        Err(e) => {
            changed.insert("ErrorName", Value::from(e.name()));
            changed.insert("ErrorMessage", Value::from(e.message.as_str()));
            &[]
        }
    };
    let _ = zbus::fdo::Properties::properties_changed(emitter, interface_name(), changed, std::borrow::Cow::Borrowed(invalidated)).await;
    match &result {
        Ok(s) => {
            let _ = JobObject::finished(emitter, &dbus_string(&s.text), stats_dict(s.method, &s.stats)).await;
        }
        Err(e) => {
            let _ = JobObject::failed(emitter, e.name(), &e.message).await;
        }
    }
    job.done.send_replace(true);
}

/// `text` as a D-Bus string may be: without NUL characters (a message with one is invalid,
/// and the bus would disconnect the daemon for sending it). Model output can contain any byte.
pub fn dbus_string(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') {
        std::borrow::Cow::Owned(text.replace('\0', "\u{FFFD}"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// A summary's stats as the `a{sv}` of the Finished signal.
pub fn stats_dict(method: Method, s: &SummaryStats) -> HashMap<String, OwnedValue> {
    let mut d: HashMap<String, OwnedValue> = HashMap::new();
    let mut put = |k: &str, v: Value<'_>| {
        if let Ok(v) = OwnedValue::try_from(v) {
            d.insert(k.to_string(), v);
        }
    };
    put("method", Value::from(method.as_str()));
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
    put("model", Value::from(dbus_string(&s.model).as_ref()));
    put("template", Value::from(s.template.as_str()));
    put("fallback", Value::from(s.fallback.as_str()));
    put("condensed_to_sentences", Value::from(s.condensed_to_sentences));
    put("extract_ms", Value::from(s.extract_ms));
    put("elapsed_ms", Value::from(s.elapsed_ms));
    put("cached", Value::from(s.cached));
    put("warnings", Value::from(s.warnings.iter().map(|w| dbus_string(w).into_owned()).collect::<Vec<_>>()));
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_for_the_bus_have_no_nul() {
        assert_eq!(dbus_string("a\0b"), "a\u{FFFD}b");
        assert!(matches!(dbus_string("plain"), std::borrow::Cow::Borrowed("plain")));
        let mut stats = SummaryStats::default();
        stats.warnings.push("x\0".into());
        let d = stats_dict(Method::Model, &stats);
        assert_eq!(d.len(), 19);
    }
}
