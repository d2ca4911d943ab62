//! The service's shared state: what it serves with ([`Served`]: the pipeline, the limits, the
//! device; replaced whole on reload), the job table, counters, the bus kind (which decides
//! what callers may do) and the shutdown flag.

use super::errors::{ErrorKind, ServiceError};
use super::jobs::{JobShared, JobState, Stop};
use super::limits::ServiceConfig;
use crate::summarize::Pipeline;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use zbus::names::UniqueName;
use zbus::Connection;

/// Which bus the daemon serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusKind {
    Session,
    System,
    /// `--address`: a private bus (tests, containers); treated like a session bus.
    Private,
}

impl BusKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BusKind::Session => "session",
            BusKind::System => "system",
            BusKind::Private => "private",
        }
    }
}

/// Service-wide counters (the `Stats` property).
#[derive(Default)]
pub struct Counters {
    pub accepted: AtomicU64,
    pub busy: AtomicU64,
    pub done: AtomicU64,
    pub failed: AtomicU64,
    pub cancelled: AtomicU64,
    pub cache_hits: AtomicU64,
    pub by_model: AtomicU64,
    pub by_extractive: AtomicU64,
    pub client_disconnects: AtomicU64,
    pub tasks: AtomicU64,
}

struct Table {
    jobs: BTreeMap<u64, Arc<JobShared>>,
    /// Unfinished jobs per client ([`Client::key`]).
    per_client: HashMap<String, usize>,
    /// Finished jobs, oldest first, with the bytes each keeps (for `max_retained_jobs` and
    /// `max_retained_bytes`).
    finished: VecDeque<(u64, usize)>,
    retained_bytes: usize,
}

/// Who a request counts against for the per-client quota: its connection on a session or
/// private bus (one user), its Unix user on the system bus (one user may open any number of
/// connections).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Client {
    Connection(String),
    User(u32),
}

impl Client {
    fn key(&self) -> String {
        match self {
            Client::Connection(name) => name.clone(),
            Client::User(uid) => format!("uid {uid}"),
        }
    }

    fn describe(&self) -> &'static str {
        match self {
            Client::Connection(_) => "this client",
            Client::User(_) => "this user",
        }
    }
}

/// What the service serves with. A reload (SIGHUP) replaces it whole; a job keeps the one it
/// started with to its end, so that a reload never fails or changes an accepted job.
pub struct Served {
    pub pipeline: Arc<Pipeline>,
    pub limits: ServiceConfig,
    /// Where the model runs ("cpu" for the extractive summarizer alone).
    pub device: String,
}

pub struct Core {
    pub bus: BusKind,
    served: std::sync::RwLock<Arc<Served>>,
    pub counters: Counters,
    table: Mutex<Table>,
    /// Unfinished jobs (and running Classify/Extract calls).
    active: watch::Sender<usize>,
    next_id: AtomicU64,
    shutting_down: AtomicBool,
    /// Turns true on shutdown (for calls that are not jobs: Classify, Extract).
    stop_all: watch::Sender<bool>,
    started: Instant,
    uids: Mutex<HashMap<String, u32>>,
    /// Client files being read at once (a read on a stalled file system can block its thread
    /// for good; this caps how many threads that can take).
    reads: Arc<Semaphore>,
}

/// A place taken by an admitted request; released explicitly with [`Core::release`].
#[derive(Debug)]
pub struct Slot {
    client: String,
}

/// Client-file reads in flight at most (see `Core::reads`).
const MAX_READS: usize = 8;

impl Core {
    pub fn new(bus: BusKind, served: Served) -> Self {
        Core {
            bus,
            served: std::sync::RwLock::new(Arc::new(served)),
            counters: Counters::default(),
            table: Mutex::new(Table {
                jobs: BTreeMap::new(),
                per_client: HashMap::new(),
                finished: VecDeque::new(),
                retained_bytes: 0,
            }),
            active: watch::channel(0).0,
            next_id: AtomicU64::new(1),
            shutting_down: AtomicBool::new(false),
            stop_all: watch::channel(false).0,
            started: Instant::now(),
            uids: Mutex::new(HashMap::new()),
            reads: Arc::new(Semaphore::new(MAX_READS)),
        }
    }

    /// The pipeline, limits and device in force now (a job holds on to the one it started with).
    pub fn served(&self) -> Arc<Served> {
        self.served.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Serves with `next` from now on (a reload); what runs keeps what it started with.
    pub fn replace(&self, next: Served) {
        *self.served.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
    }

    /// Waits for a place among the client-file reads in flight.
    pub async fn read_permit(&self) -> OwnedSemaphorePermit {
        self.reads.clone().acquire_owned().await.expect("the semaphore is never closed")
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub fn uptime_s(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// Resolves when the daemon starts shutting down.
    pub async fn stopping(&self) {
        let mut rx = self.stop_all.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Takes a place for a request of `client`, or refuses: ShuttingDown, or Busy
    /// (`org.freedesktop.DBus.Error.LimitsExceeded`) past `max_jobs` or `max_jobs_per_client`.
    pub fn admit(&self, client: &Client) -> Result<Slot, ServiceError> {
        if self.is_shutting_down() {
            return Err(ServiceError::new(ErrorKind::ShuttingDown, "the daemon is shutting down"));
        }
        let key = client.key();
        let limits = self.served().limits.clone();
        let mut t = self.table();
        let active = *self.active.borrow();
        let mine = t.per_client.get(&key).copied().unwrap_or(0);
        if active >= limits.max_jobs {
            drop(t);
            self.counters.busy.fetch_add(1, Ordering::Relaxed);
            return Err(ServiceError::new(
                ErrorKind::Busy,
                format!("busy: {active} jobs are unfinished (limit {}); try again later", limits.max_jobs),
            ));
        }
        if mine >= limits.max_jobs_per_client {
            drop(t);
            self.counters.busy.fetch_add(1, Ordering::Relaxed);
            return Err(ServiceError::new(
                ErrorKind::Busy,
                format!("busy: {} has {mine} unfinished jobs (limit {})", client.describe(), limits.max_jobs_per_client),
            ));
        }
        *t.per_client.entry(key.clone()).or_default() += 1;
        self.active.send_modify(|n| *n += 1);
        Ok(Slot { client: key })
    }

    /// The quota key of `caller`: its Unix user on the system bus, else its connection.
    pub async fn client(&self, conn: &Connection, caller: &UniqueName<'_>) -> Result<(Client, Option<u32>), ServiceError> {
        if self.bus == BusKind::System {
            let uid = self.uid_of(conn, caller.as_str()).await?;
            Ok((Client::User(uid), Some(uid)))
        } else {
            Ok((Client::Connection(caller.to_string()), None))
        }
    }

    pub fn release(&self, slot: Slot) {
        let mut t = self.table();
        if let Some(n) = t.per_client.get_mut(&slot.client) {
            *n -= 1;
            if *n == 0 {
                t.per_client.remove(&slot.client);
            }
        }
        drop(t);
        let mut now_idle = false;
        self.active.send_modify(|n| {
            *n = n.saturating_sub(1);
            now_idle = *n == 0;
        });
        if now_idle {
            give_back_memory();
        }
    }

    /// Unfinished jobs and running Classify/Extract calls.
    pub fn active(&self) -> usize {
        *self.active.borrow()
    }

    /// Adds `job` to the table; false (and nothing added) when a job, running or retained,
    /// already has its path (a `handle_token` used twice).
    pub fn register(&self, job: Arc<JobShared>) -> bool {
        let mut t = self.table();
        if t.jobs.values().any(|j| j.path == job.path) {
            return false;
        }
        t.jobs.insert(job.id, job);
        true
    }

    /// Records that `job` ended; returns the ids of finished jobs to remove now to respect
    /// `max_retained_jobs` and `max_retained_bytes` (the oldest go first).
    pub fn finished(&self, job: &JobShared) -> Vec<u64> {
        let bytes = job.retained_bytes();
        let limits = self.served().limits.clone();
        let mut t = self.table();
        t.finished.push_back((job.id, bytes));
        t.retained_bytes += bytes;
        let mut evict = Vec::new();
        while t.finished.len() > limits.max_retained_jobs
            || (t.retained_bytes > limits.max_retained_bytes && t.finished.len() > 1)
        {
            let Some((id, b)) = t.finished.pop_front() else { break };
            t.retained_bytes -= b;
            evict.push(id);
        }
        evict
    }

    /// Forgets `id` (its object is being removed from the bus).
    pub fn forget(&self, id: u64) -> Option<Arc<JobShared>> {
        let mut t = self.table();
        if let Some(pos) = t.finished.iter().position(|&(f, _)| f == id) {
            if let Some((_, b)) = t.finished.remove(pos) {
                t.retained_bytes -= b;
            }
        }
        t.jobs.remove(&id)
    }

    /// Bytes the retained finished jobs hold.
    pub fn retained_bytes(&self) -> usize {
        self.table().retained_bytes
    }

    pub fn jobs(&self) -> Vec<Arc<JobShared>> {
        self.table().jobs.values().cloned().collect()
    }

    /// Jobs in each state: (queued, running, finished and retained).
    pub fn job_counts(&self) -> (u32, u32, u32) {
        let (mut q, mut r, mut f) = (0, 0, 0);
        for j in self.table().jobs.values() {
            match j.state() {
                JobState::Queued => q += 1,
                JobState::Running => r += 1,
                _ => f += 1,
            }
        }
        (q, r, f)
    }

    /// A client left the bus: cancel its jobs (unless detached) and forget its uid.
    pub fn client_gone(&self, name: &str) {
        self.uids.lock().unwrap_or_else(|e| e.into_inner()).remove(name);
        let mut n = 0;
        for job in self.jobs() {
            if job.owner.as_str() == name && !job.detached && !job.state().is_terminal() && job.stop(Stop::Cancelled) {
                n += 1;
            }
        }
        if n > 0 {
            self.counters.client_disconnects.fetch_add(1, Ordering::Relaxed);
            tracing::info!("client {name} left the bus: cancelled {n} job(s)");
        }
    }

    /// The Unix user of a connection (system bus access checks), cached per unique name.
    pub async fn uid_of(&self, conn: &Connection, name: &str) -> Result<u32, ServiceError> {
        if let Some(uid) = self.uids.lock().unwrap_or_else(|e| e.into_inner()).get(name) {
            return Ok(*uid);
        }
        let dbus = zbus::fdo::DBusProxy::new(conn).await?;
        let bus_name = zbus::names::BusName::try_from(name).map_err(|e| ServiceError::new(ErrorKind::Failed, e.to_string()))?;
        let uid = dbus.get_connection_unix_user(bus_name).await?;
        self.uids.lock().unwrap_or_else(|e| e.into_inner()).insert(name.to_string(), uid);
        Ok(uid)
    }

    /// Whether `caller` may see and cancel `job`: anyone on a session or private bus (one
    /// user); on the system bus its creator's connection, the same Unix user, or root.
    pub async fn check_access(&self, conn: &Connection, caller: Option<&UniqueName<'_>>, job: &JobShared) -> Result<(), ServiceError> {
        if self.bus != BusKind::System {
            return Ok(());
        }
        let Some(caller) = caller else { return Ok(()) };
        if caller.as_str() == job.owner.as_str() {
            return Ok(());
        }
        let uid = self.uid_of(conn, caller.as_str()).await?;
        if uid == 0 || Some(uid) == job.owner_uid {
            return Ok(());
        }
        Err(ServiceError::access_denied("this job belongs to another user"))
    }

    /// Stops taking requests (they get ShuttingDown) and waits, at most `grace`, for the
    /// unfinished jobs and calls to end on their own; true when they all did.
    pub async fn drain(&self, grace: std::time::Duration) -> bool {
        self.shutting_down.store(true, Ordering::SeqCst);
        let mut rx = self.active.subscribe();
        let drained = tokio::time::timeout(grace, rx.wait_for(|n| *n == 0)).await.is_ok();
        drained
    }

    /// Stops taking requests and ends every unfinished job with ShuttingDown; waits (at most
    /// `grace`) for their Failed signals to go out.
    pub async fn shutdown(&self, grace: std::time::Duration) {
        self.shutting_down.store(true, Ordering::SeqCst);
        self.stop_all.send_replace(true);
        for job in self.jobs() {
            job.stop(Stop::ShuttingDown);
        }
        let mut rx = self.active.subscribe();
        let _ = tokio::time::timeout(grace, rx.wait_for(|n| *n == 0)).await;
    }
}

/// Returns freed heap memory to the system once the daemon is idle: glibc keeps what a burst
/// of large requests freed, so without this the resident size never comes back down.
fn give_back_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    std::thread::spawn(|| {
        // SAFETY: malloc_trim only releases free memory of the allocator's own arenas.
        unsafe {
            libc::malloc_trim(0);
        }
    });
}
