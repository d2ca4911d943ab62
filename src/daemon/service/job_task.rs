//! The task that runs a job: reads its input, runs the pipeline (or stops when asked), sends
//! its signals in order to the connection that created it, and removes its objects after the
//! retention time.

use super::annotate_fd::{AnnotateTarget, WRITE_TIMEOUT};
use super::bus_string::BusString;
use super::core::{Core, Slot};
use super::errors::{ErrorKind, ServiceError};
use super::job_object::{JobObject, JobProperties};
use super::jobs::{job_path, token_path, JobShared, JobState, Outcome, Source, Work, JOB_INTERFACE};
use super::options::RequestOptions;
use crate::summarize::pipeline::{Input, Observer, Stage};
use crate::summarize::{Method, Summary};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use zbus::names::{BusName, InterfaceName, OwnedUniqueName};
use zbus::object_server::SignalEmitter;
use zbus::zvariant::{OwnedObjectPath, Value};
use zbus::Connection;

/// What the pipeline reports while it works, in order: [`publish`] turns each into the job's
/// properties and signals.
enum JobUpdate {
    Running,
    Progress(Stage, u32, u32),
    Partial(u32, String),
}

struct ChannelObserver(mpsc::UnboundedSender<JobUpdate>);

impl Observer for ChannelObserver {
    fn progress(&mut self, stage: Stage, done: u32, total: u32) {
        let _ = self.0.send(JobUpdate::Progress(stage, done, total));
    }
    fn partial(&mut self, index: u32, text: &str) {
        let _ = self.0.send(JobUpdate::Partial(index, text.to_string()));
    }
}

/// Who asked for a job.
pub struct Requester {
    pub owner: OwnedUniqueName,
    /// The caller's Unix user (system bus only).
    pub uid: Option<u32>,
}

/// Creates a job doing `work`, puts its objects on the bus and starts it. `slot` is the place
/// [`Core::admit`] gave the caller; it is released when the job ends (or here, on failure).
pub async fn start(
    core: &Arc<Core>,
    conn: &Connection,
    who: Requester,
    slot: Slot,
    work: Work,
    options: RequestOptions,
) -> Result<OwnedObjectPath, ServiceError> {
    let path = match &options.handle_token {
        Some(token) => match token_path(who.owner.as_str(), token) {
            Ok(p) => p,
            Err(e) => {
                core.release(slot);
                return Err(e);
            }
        },
        None => job_path(),
    };
    let mut job = JobShared::new(core.next_id(), path, who.owner, who.uid, options.detach);
    job.ignored_options = options.ignored;
    let job = Arc::new(job);
    if !core.register(job.clone()) {
        core.release(slot);
        let token = options.handle_token.unwrap_or_default();
        return Err(ServiceError::invalid_args(format!("handle_token '{token}' is already the path of one of your jobs")));
    }
    let object = JobObject { job: job.clone(), core: core.clone() };
    let properties = JobProperties { object: JobObject { job: job.clone(), core: core.clone() } };
    let server = conn.object_server();
    // The job's own Properties replaces zbus's built-in one (access checks on GetAll).
    let added = async {
        server.at(job.path.clone(), object).await?;
        server.remove::<zbus::fdo::Properties, _>(job.path.clone()).await?;
        server.at(job.path.clone(), properties).await
    }
    .await;
    if let Err(e) = added {
        remove(core, conn, job.id).await;
        core.release(slot);
        return Err(e.into());
    }
    core.counters.accepted.fetch_add(1, Ordering::Relaxed);
    let path = job.path.clone();
    tokio::spawn(run(core.clone(), conn.clone(), job, slot, work));
    Ok(path)
}

/// The job task: runs the pipeline (or stops when asked), then publishes the end and
/// schedules the objects' removal.
async fn run(
    core: Arc<Core>,
    conn: Connection,
    job: Arc<JobShared>,
    slot: Slot,
    work: Work,
) {
    let emitter = SignalEmitter::new(&conn, job.path.clone())
        .expect("a valid path")
        .set_destination(BusName::Unique(job.owner.as_ref().clone()))
        .into_owned();
    let (tx, mut rx) = mpsc::unbounded_channel();

    // A client may have left before its job was registered: then nobody would cancel it.
    if !job.detached {
        if let Ok(dbus) = zbus::fdo::DBusProxy::new(&conn).await {
            if let Ok(false) = dbus.name_has_owner(BusName::Unique(job.owner.as_ref().clone())).await {
                job.stop(super::jobs::Stop::Cancelled);
            }
        }
    }

    // The pipeline of this moment serves the job to its end, whatever a reload does meanwhile.
    let served = core.served();
    let work = {
        let tx = tx.clone();
        let core = core.clone();
        let cancel = job.cancel.clone();
        async move {
            let pipeline = &served.pipeline;
            let (source, options, annotate_to) = match work {
                Work::Summarize(source, options, annotate_to) => (source, options, annotate_to),
                Work::Classify { text, labels } => {
                    let _ = tx.send(JobUpdate::Running);
                    let (labels, answer) = pipeline.classify(&text, &labels, &cancel).await?;
                    return Ok(Outcome::Labels { labels, answer });
                }
                Work::Extract { text, kinds } => {
                    let _ = tx.send(JobUpdate::Running);
                    let (spans, answer) = pipeline.find_spans(&text, &kinds, &cancel).await?;
                    return Ok(Outcome::Spans { spans, answer });
                }
            };
            let mut original = None;
            let input = match source {
                Source::Text(t) => {
                    let _ = tx.send(JobUpdate::Running);
                    Input::Text(t)
                }
                Source::Pdf(file) => {
                    // One place among the extractions, taken before the file is read: it
                    // bounds the PDFs held in memory at once.
                    let permit = pipeline.extract_permit().await;
                    let _ = tx.send(JobUpdate::Running);
                    let bytes = read_file(&core, file).await?;
                    if annotate_to.is_some() {
                        original = Some(bytes.clone());
                    }
                    Input::Pdf { bytes, permit: Some(permit) }
                }
            };
            let mut obs = ChannelObserver(tx);
            let mut summary = pipeline.summarize(input, &options, &mut obs, &cancel).await.map_err(ServiceError::from)?;
            if let (Some(target), Some(pdf)) = (annotate_to, original) {
                // Before the end is published: a client that gets Finished has the whole copy.
                if let Err(why) = write_annotated(target, pdf, &summary).await {
                    summary.stats.warnings.push(format!("annotate_fd: no annotated copy: {why}"));
                }
            }
            Ok(Outcome::Summary(summary))
        }
    };
    // One task: the work runs, and its updates go out as signals in the order they come. A
    // stop request ends the job at once; the pipeline's blocking work sees the cancel flag.
    drop(tx);
    tokio::pin!(work);
    let stopped = job.stopped();
    tokio::pin!(stopped);
    let result = loop {
        tokio::select! {
            biased;
            why = &mut stopped => break Err(why.error()),
            Some(u) = rx.recv() => publish(&job, &emitter, u, &mut rx).await,
            r = &mut work => break r,
        }
    };
    while let Ok(u) = rx.try_recv() {
        publish(&job, &emitter, u, &mut rx).await;
    }
    publish_end(&core, &job, &emitter, result).await;
    core.release(slot);

    // Retention: the objects stay readable for a while, then go.
    for id in core.finished(&job) {
        remove(&core, &conn, id).await;
    }
    let retention = Duration::from_secs(core.served().limits.job_retention_s);
    let (core2, conn2, id) = (core.clone(), conn.clone(), job.id);
    tokio::spawn(async move {
        tokio::time::sleep(retention).await;
        remove(&core2, &conn2, id).await;
    });
}

/// Reads a client's document on a blocking thread, within `read_timeout_s`: a file on a
/// stalled network or FUSE file system must not hold the job forever. (The thread itself
/// stays blocked until the kernel returns; the reads in flight are capped.)
async fn read_file(core: &Core, file: super::input::DocumentFile) -> Result<Vec<u8>, ServiceError> {
    let limits = core.served().limits.clone();
    let max = limits.max_pdf_bytes;
    let permit = core.read_permit().await;
    within(Duration::from_secs(limits.read_timeout_s.max(1)), move || {
        let _permit = permit;
        file.read_all(max)
    })
    .await
}

/// The annotated copy of `pdf` for `summary`, written to the client's descriptor (which is
/// closed after, so that a pipe's reader sees its end).
async fn write_annotated(target: AnnotateTarget, pdf: Vec<u8>, summary: &Summary) -> Result<(), String> {
    let method = summary.method.as_str();
    if let Some(why) = crate::summarize::annotate::unplaceable(&summary.sentences, method) {
        return Err(why);
    }
    let made_by = format!("seqgptd {}, {method} summary", env!("CARGO_PKG_VERSION"));
    let (text, sentences) = (summary.text.clone(), summary.sentences.clone());
    tokio::task::spawn_blocking(move || {
        let copy = crate::summarize::annotate::annotated_copy(&pdf, &text, &sentences, &made_by).map_err(|e| e.to_string())?;
        target.write(&copy, WRITE_TIMEOUT)
    })
    .await
    .map_err(|e| e.to_string())?
}

/// Runs the blocking `read` and waits at most `timeout` for it.
async fn within<T: Send + 'static>(
    timeout: Duration,
    read: impl FnOnce() -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ServiceError> {
    match tokio::time::timeout(timeout, tokio::task::spawn_blocking(read)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Err(ServiceError::new(ErrorKind::Failed, format!("reading the document failed: {e}"))),
        Err(_) => Err(ServiceError::new(
            ErrorKind::Failed,
            format!("reading the document took longer than {} s ([service] read_timeout_s)", timeout.as_secs()),
        )),
    }
}

/// Takes job `id` off the bus and out of the table.
async fn remove(core: &Core, conn: &Connection, id: u64) {
    if let Some(job) = core.forget(id) {
        let server = conn.object_server();
        let _ = server.remove::<JobProperties, _>(job.path.clone()).await;
        let _ = server.remove::<JobObject, _>(job.path.clone()).await;
    }
}

/// Publishes `update` (and, for streamed text, the text of the same prompt already waiting
/// behind it, as one signal): signals to the job's owner, and the view its properties read.
async fn publish(job: &JobShared, emitter: &SignalEmitter<'_>, update: JobUpdate, rx: &mut mpsc::UnboundedReceiver<JobUpdate>) {
    let mut next = Some(update);
    while let Some(update) = next.take() {
        match update {
            JobUpdate::Running => set_running(job, emitter).await,
            JobUpdate::Progress(stage, done, total) => {
                set_running(job, emitter).await;
                {
                    let mut v = job.view();
                    v.stage = stage.as_str();
                    v.progress = (done, total);
                }
                let _ = JobObject::progress_signal(emitter, &BusString::message(stage.as_str()), done, total).await;
            }
            JobUpdate::Partial(index, mut text) => {
                set_running(job, emitter).await;
                while let Ok(u) = rx.try_recv() {
                    match u {
                        JobUpdate::Partial(i, t) if i == index => text.push_str(&t),
                        other => {
                            next = Some(other);
                            break;
                        }
                    }
                }
                let _ = JobObject::partial(emitter, index, &BusString::text(&text)).await;
            }
        }
    }
}

async fn set_running(job: &JobShared, emitter: &SignalEmitter<'_>) {
    if job.set_running() {
        let changed: HashMap<&str, Value<'_>> = [("State", BusString::message(JobState::Running.as_str()).into())].into_iter().collect();
        let _ = JobProperties::properties_changed(emitter, interface_name(), changed, &[]).await;
    }
}

fn interface_name() -> InterfaceName<'static> {
    InterfaceName::from_static_str_unchecked(JOB_INTERFACE)
}

async fn publish_end(core: &Core, job: &JobShared, emitter: &SignalEmitter<'_>, result: Result<Outcome, ServiceError>) {
    let (result, state) = job.finish(result);
    let c = &core.counters;
    match (&result, state) {
        (Ok(s), _) => {
            c.done.fetch_add(1, Ordering::Relaxed);
            if s.cached() {
                c.cache_hits.fetch_add(1, Ordering::Relaxed);
            }
            match s.method() {
                Method::Model => c.by_model.fetch_add(1, Ordering::Relaxed),
                Method::Extractive => c.by_extractive.fetch_add(1, Ordering::Relaxed),
            };
        }
        (Err(_), JobState::Cancelled) => {
            c.cancelled.fetch_add(1, Ordering::Relaxed);
        }
        (Err(_), _) => {
            c.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
    let mut changed: HashMap<&str, Value<'_>> = HashMap::new();
    changed.insert("State", BusString::message(state.as_str()).into());
    let invalidated: &[&str] = match &result {
        Ok(s) => {
            changed.insert("Method", BusString::message(s.method().as_str()).into());
            &["Summary", "Stats", "Anchors"]
        }
        Err(e) => {
            changed.insert("ErrorName", BusString::message(e.name()).into());
            changed.insert("ErrorMessage", (&e.message).into());
            &[]
        }
    };
    let _ = JobProperties::properties_changed(emitter, interface_name(), changed, invalidated).await;
    match &result {
        Ok(s) => {
            let _ = JobObject::finished(emitter, &BusString::text(s.text()), job.stats_of(s)).await;
        }
        Err(e) => {
            let _ = JobObject::failed(emitter, &BusString::message(e.name()), &e.message).await;
        }
    }
    job.mark_done();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_read_that_stalls_ends_in_an_error() {
        let t0 = std::time::Instant::now();
        let e = within(Duration::from_millis(100), || {
            std::thread::sleep(Duration::from_secs(2));
            Ok(())
        })
        .await
        .unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(1));
        assert!(e.message.contains("read_timeout_s"), "{}", e.message);
        assert_eq!(within(Duration::from_secs(5), || Ok(7)).await.unwrap(), 7);
    }
}
