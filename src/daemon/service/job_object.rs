//! A job's objects on the bus: `org.seqgpt.Job1` (methods, properties, signals), and the
//! job's own `org.freedesktop.DBus.Properties`.
//!
//! zbus's built-in Properties answers `GetAll` with an empty dictionary when a getter fails,
//! so on the system bus another user's `GetAll` would succeed (with `{}`) where `Get` is
//! refused. The job's Properties object checks access first and answers AccessDenied for
//! both, then hands the call to the Job1 getters.

use super::bus_string::BusString;
use super::core::Core;
use super::errors::ServiceError;
use super::jobs::{JobShared, Stop, JOB_INTERFACE};
use std::collections::HashMap;
use std::sync::Arc;
use zbus::message::Header;
use zbus::names::InterfaceName;
use zbus::object_server::{Interface, SignalEmitter};
use zbus::zvariant::{OwnedValue, Value};
use zbus::{interface, Connection, ObjectServer};

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
    async fn wait(
        &self,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &Connection,
    ) -> Result<(BusString, BusString), ServiceError> {
        self.allowed(conn, Some(&hdr)).await?;
        self.job.wait().await
    }

    /// queued, running, done, failed or cancelled.
    #[zbus(property)]
    async fn state(&self, #[zbus(header)] hdr: Option<Header<'_>>, #[zbus(connection)] conn: &Connection) -> zbus::fdo::Result<BusString> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(BusString::message(self.job.state().as_str()))
    }

    /// The current stage: extract (pages), summarize (chunks), reduce, rank; empty before
    /// the first.
    #[zbus(property(emits_changed_signal = "false"))]
    async fn stage(&self, #[zbus(header)] hdr: Option<Header<'_>>, #[zbus(connection)] conn: &Connection) -> zbus::fdo::Result<BusString> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(BusString::message(self.job.view().stage))
    }

    /// (done, total) of the current stage: pages while extracting, chunks while summarizing.
    #[zbus(property(emits_changed_signal = "false"))]
    async fn progress(&self, #[zbus(header)] hdr: Option<Header<'_>>, #[zbus(connection)] conn: &Connection) -> zbus::fdo::Result<(u32, u32)> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(self.job.view().progress)
    }

    /// The summary, once the state is done (empty before).
    #[zbus(property(emits_changed_signal = "invalidates"))]
    async fn summary(&self, #[zbus(header)] hdr: Option<Header<'_>>, #[zbus(connection)] conn: &Connection) -> zbus::fdo::Result<BusString> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(self.job.view().summary.clone())
    }

    /// model or extractive, once the state is done (empty before).
    #[zbus(property)]
    async fn method(&self, #[zbus(header)] hdr: Option<Header<'_>>, #[zbus(connection)] conn: &Connection) -> zbus::fdo::Result<BusString> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(BusString::message(self.job.view().method))
    }

    /// The D-Bus error name once the state is failed or cancelled (empty otherwise).
    #[zbus(property)]
    async fn error_name(&self, #[zbus(header)] hdr: Option<Header<'_>>, #[zbus(connection)] conn: &Connection) -> zbus::fdo::Result<BusString> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(BusString::message(self.job.view().error.as_ref().map_or("", |e| e.name())))
    }

    /// The error message once the state is failed or cancelled (empty otherwise).
    #[zbus(property)]
    async fn error_message(&self, #[zbus(header)] hdr: Option<Header<'_>>, #[zbus(connection)] conn: &Connection) -> zbus::fdo::Result<BusString> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(self.job.view().error.as_ref().map_or_else(BusString::default, |e| e.message.clone()))
    }

    /// Where each sentence of the summary stands, once done: (text, page, start, end, boxes),
    /// start and end in characters of the page's extracted text, boxes (x0, y0, x1, y1) in
    /// PDF user space (docs/DBUS.md); empty for a free-text model summary.
    #[zbus(property(emits_changed_signal = "invalidates"))]
    async fn anchors(
        &self,
        #[zbus(header)] hdr: Option<Header<'_>>,
        #[zbus(connection)] conn: &Connection,
    ) -> zbus::fdo::Result<Vec<super::anchors::WireAnchor<BusString>>> {
        self.allowed(conn, hdr.as_ref()).await?;
        Ok(self.job.view().anchors.clone())
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
    pub(super) async fn progress_signal(emitter: &SignalEmitter<'_>, stage: &BusString, done: u32, total: u32) -> zbus::Result<()>;

    /// Text as the model generates it for prompt `index` (the chunks from 0, then the
    /// reduce prompts); the extractive method sends its summary once, as index 0.
    #[zbus(signal)]
    pub(super) async fn partial(emitter: &SignalEmitter<'_>, index: u32, text: &BusString) -> zbus::Result<()>;

    /// The job is done: the summary and its stats (method, pages, chunks, tokens, cached, ...).
    #[zbus(signal)]
    pub(super) async fn finished(emitter: &SignalEmitter<'_>, summary: &BusString, stats: HashMap<String, OwnedValue>) -> zbus::Result<()>;

    /// The job failed or was cancelled: a D-Bus error name and a message.
    #[zbus(signal)]
    pub(super) async fn failed(emitter: &SignalEmitter<'_>, error_name: &BusString, message: &BusString) -> zbus::Result<()>;
}

pub(super) fn clone_dict(d: &HashMap<String, OwnedValue>) -> HashMap<String, OwnedValue> {
    d.iter().filter_map(|(k, v)| v.try_clone().ok().map(|v| (k.clone(), v))).collect()
}

/// `org.freedesktop.DBus.Properties` of a job object: access is checked before any property
/// is read (see the module's notes).
pub struct JobProperties {
    pub object: JobObject,
}

impl JobProperties {
    async fn check(&self, interface: &InterfaceName<'_>, conn: &Connection, hdr: &Header<'_>) -> zbus::fdo::Result<()> {
        self.object.allowed(conn, Some(hdr)).await?;
        if interface.as_str() != JOB_INTERFACE {
            return Err(zbus::fdo::Error::UnknownInterface(format!("Unknown interface '{interface}'")));
        }
        Ok(())
    }
}

#[interface(name = "org.freedesktop.DBus.Properties")]
impl JobProperties {
    async fn get(
        &self,
        interface_name: InterfaceName<'_>,
        property_name: &str,
        #[zbus(connection)] conn: &Connection,
        #[zbus(object_server)] server: &ObjectServer,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> zbus::fdo::Result<OwnedValue> {
        self.check(&interface_name, conn, &hdr).await?;
        Interface::get(&self.object, property_name, server, conn, Some(&hdr), &emitter)
            .await
            .unwrap_or_else(|| Err(zbus::fdo::Error::UnknownProperty(format!("Unknown property '{property_name}'"))))
    }

    async fn get_all(
        &self,
        interface_name: InterfaceName<'_>,
        #[zbus(connection)] conn: &Connection,
        #[zbus(object_server)] server: &ObjectServer,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> zbus::fdo::Result<HashMap<String, OwnedValue>> {
        self.check(&interface_name, conn, &hdr).await?;
        Interface::get_all(&self.object, server, conn, Some(&hdr), &emitter).await
    }

    /// Every property of a job is read-only.
    async fn set(
        &self,
        interface_name: InterfaceName<'_>,
        property_name: &str,
        _value: Value<'_>,
        #[zbus(connection)] conn: &Connection,
        #[zbus(header)] hdr: Header<'_>,
    ) -> zbus::fdo::Result<()> {
        self.check(&interface_name, conn, &hdr).await?;
        Err(zbus::fdo::Error::PropertyReadOnly(format!("'{property_name}' is read-only")))
    }

    /// Sent to the job's owner when State (and, at the end, Method, ErrorName,
    /// ErrorMessage) change; Summary and Stats are invalidated.
    #[zbus(signal)]
    pub(super) async fn properties_changed(
        emitter: &SignalEmitter<'_>,
        interface_name: InterfaceName<'_>,
        changed_properties: HashMap<&str, Value<'_>>,
        invalidated_properties: &[&str],
    ) -> zbus::Result<()>;
}
