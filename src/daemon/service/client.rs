//! The daemon's D-Bus API as seen by a client: zbus proxies of `org.seqgpt.Summarizer1` and
//! `org.seqgpt.Job1`, used by `seqgpt summarize` (without `--local`), the examples and the
//! tests. The server side is summarizer.rs and job_object.rs; the D-Bus tests run the two
//! against each other, so a change to one that the other misses fails there. Options go on
//! the wire through [`options::encode`](super::options::encode), the inverse of what the
//! daemon parses.

use super::anchors::WireAnchor;
use super::summarizer::{SERVICE_NAME, SERVICE_PATH};
use std::collections::HashMap;
use zbus::zvariant::{Fd, OwnedObjectPath, OwnedValue, Value};
use zbus::{proxy, Connection};

pub use super::jobs::JOBS_PATH;
pub use super::options::encode as encode_options;

#[proxy(
    interface = "org.seqgpt.Summarizer1",
    default_service = "org.seqgpt.Summarizer1",
    default_path = "/org/seqgpt/Summarizer1",
    gen_blocking = false
)]
pub trait Summarizer {
    /// A PDF by descriptor (a regular file or memfd); returns the job.
    fn summarize_fd(&self, fd: Fd<'_>, options: &HashMap<&str, Value<'_>>) -> zbus::Result<OwnedObjectPath>;
    /// A PDF by absolute path (session bus only).
    fn summarize_path(&self, path: &str, options: &HashMap<&str, Value<'_>>) -> zbus::Result<OwnedObjectPath>;
    /// UTF-8 text (form feeds separate pages).
    fn summarize_text(&self, text: &str, options: &HashMap<&str, Value<'_>>) -> zbus::Result<OwnedObjectPath>;
    /// SeqGPT classification: the labels the model chose, and its raw answer.
    fn classify(&self, text: &str, labels: &[&str]) -> zbus::Result<(Vec<String>, String)>;
    /// SeqGPT span extraction: kind -> spans, and the model's raw answer.
    fn extract(&self, text: &str, kinds: &[&str]) -> zbus::Result<(HashMap<String, Vec<String>>, String)>;
    /// Classification as a job: its Finished has the raw answer and stats {labels}.
    fn classify_job(&self, text: &str, labels: &[&str], options: &HashMap<&str, Value<'_>>) -> zbus::Result<OwnedObjectPath>;
    /// Span extraction as a job: its Finished has the raw answer and stats {spans}.
    fn extract_job(&self, text: &str, kinds: &[&str], options: &HashMap<&str, Value<'_>>) -> zbus::Result<OwnedObjectPath>;
    /// The caller's own jobs: (path, state).
    fn list_jobs(&self) -> zbus::Result<Vec<(OwnedObjectPath, String)>>;

    #[zbus(property)]
    fn interface_version(&self) -> zbus::Result<u32>;
    #[zbus(property)]
    fn capabilities(&self) -> zbus::Result<Vec<String>>;

    #[zbus(property)]
    fn version(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn model(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn device(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn default_method(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn template(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn queue_length(&self) -> zbus::Result<u32>;
    #[zbus(property)]
    fn stats(&self) -> zbus::Result<HashMap<String, OwnedValue>>;
}

#[proxy(interface = "org.seqgpt.Job1", default_service = "org.seqgpt.Summarizer1", gen_blocking = false)]
pub trait Job {
    fn cancel(&self) -> zbus::Result<()>;
    /// Blocks until the job ends: (summary, method), or the job's error.
    fn wait(&self) -> zbus::Result<(String, String)>;

    #[zbus(property)]
    fn state(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn stage(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn progress(&self) -> zbus::Result<(u32, u32)>;
    #[zbus(property)]
    fn summary(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn method(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn error_name(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn error_message(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn anchors(&self) -> zbus::Result<Vec<WireAnchor>>;
    #[zbus(property)]
    fn stats(&self) -> zbus::Result<HashMap<String, OwnedValue>>;

    #[zbus(signal, name = "Progress")]
    fn progress_signal(&self, stage: String, done: u32, total: u32) -> zbus::Result<()>;
    #[zbus(signal)]
    fn partial(&self, index: u32, text: String) -> zbus::Result<()>;
    #[zbus(signal)]
    fn finished(&self, summary: String, stats: HashMap<String, OwnedValue>) -> zbus::Result<()>;
    #[zbus(signal)]
    fn failed(&self, error_name: String, message: String) -> zbus::Result<()>;
}

/// A job's signal, read from any message (`None` for other messages): for a client that
/// watches many jobs on one raw message stream (the D-Bus tests); one job's client uses the
/// Job1 proxy's `receive_*` streams.
#[derive(Debug)]
pub enum JobSignal {
    Progress { stage: String, done: u32, total: u32 },
    Partial { index: u32, text: String },
    Finished { summary: String, stats: HashMap<String, OwnedValue> },
    Failed { error_name: String, message: String },
}

impl JobSignal {
    /// The signal `msg` carries, through the Job1 proxy's signal types.
    pub fn from_message(msg: &zbus::Message) -> Option<JobSignal> {
        if let Some(s) = Progress::from_message(msg.clone()) {
            let a = s.args().ok()?;
            return Some(JobSignal::Progress { stage: a.stage, done: a.done, total: a.total });
        }
        if let Some(s) = Partial::from_message(msg.clone()) {
            let a = s.args().ok()?;
            return Some(JobSignal::Partial { index: a.index, text: a.text });
        }
        if let Some(s) = Finished::from_message(msg.clone()) {
            let a = s.args().ok()?;
            return Some(JobSignal::Finished { summary: a.summary, stats: a.stats });
        }
        if let Some(s) = Failed::from_message(msg.clone()) {
            let a = s.args().ok()?;
            return Some(JobSignal::Failed { error_name: a.error_name, message: a.message });
        }
        None
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self, JobSignal::Finished { .. } | JobSignal::Failed { .. })
    }
}

/// The proxy of job `path` (properties read fresh on every access: a job changes).
pub async fn job<'a>(conn: &Connection, path: OwnedObjectPath) -> zbus::Result<JobProxy<'a>> {
    JobProxy::builder(conn).path(path)?.cache_properties(zbus::proxy::CacheProperties::No).build().await
}

/// The service proxy, on `conn` (properties read fresh: `QueueLength` and `Stats` change).
pub async fn summarizer<'a>(conn: &Connection) -> zbus::Result<SummarizerProxy<'a>> {
    SummarizerProxy::builder(conn).cache_properties(zbus::proxy::CacheProperties::No).build().await
}

/// Whether the daemon on `conn`'s bus is there (running or activatable) and answers this
/// caller: a `Peer.Ping`, which a system bus's policy refuses to users who may not call the
/// service, and which starts an installed service that is not running. Err says why not.
pub async fn serves_caller(conn: &Connection) -> Result<(), String> {
    let dbus = zbus::fdo::DBusProxy::new(conn).await.map_err(|e| e.to_string())?;
    let name = zbus::names::BusName::try_from(SERVICE_NAME).map_err(|e| e.to_string())?;
    let present = dbus.name_has_owner(name).await.unwrap_or(false)
        || dbus.list_activatable_names().await.is_ok_and(|names| names.iter().any(|n| n.as_str() == SERVICE_NAME));
    if !present {
        return Err(format!("{SERVICE_NAME} is neither running nor installed there"));
    }
    let ping = async {
        let peer = zbus::fdo::PeerProxy::builder(conn).destination(SERVICE_NAME)?.path(SERVICE_PATH)?.build().await?;
        Ok::<(), zbus::Error>(peer.ping().await?)
    };
    match ping.await {
        Ok(()) => Ok(()),
        Err(zbus::Error::MethodError(n, _, _)) if n.as_str() == "org.freedesktop.DBus.Error.AccessDenied" => {
            Err("the service does not take calls from this user (root and members of the group seqgpt-users may call it)".into())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Starts the daemon by D-Bus activation if it is not running (a `Peer.Ping` to its name)
/// and returns its unique name, which a job's signals come from.
pub async fn owner(conn: &Connection) -> zbus::Result<zbus::names::OwnedUniqueName> {
    let dbus = zbus::fdo::DBusProxy::new(conn).await?;
    let name = zbus::names::BusName::try_from(SERVICE_NAME)?;
    if let Ok(o) = dbus.get_name_owner(name.clone()).await {
        return Ok(o);
    }
    zbus::fdo::PeerProxy::builder(conn).destination(SERVICE_NAME)?.path(SERVICE_PATH)?.build().await?.ping().await?;
    Ok(dbus.get_name_owner(name).await?)
}
