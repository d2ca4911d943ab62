//! The service's limits: the `[service]` table of the daemon's config (defaults here,
//! documented with the other limits in docs/OPERATIONS.md).

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServiceConfig {
    /// Jobs accepted and not yet finished, all clients together; one more is refused with
    /// `org.freedesktop.DBus.Error.LimitsExceeded`.
    pub max_jobs: usize,
    /// The same, per client: per connection on a session bus, per Unix user on the system
    /// bus (where one user could otherwise open many connections).
    pub max_jobs_per_client: usize,
    /// Seconds a finished job's object stays on the bus.
    pub job_retention_s: u64,
    /// Finished job objects kept at most (the oldest go first).
    pub max_retained_jobs: usize,
    /// Bytes the finished job objects keep at most, summaries and stats together (the oldest
    /// go first).
    pub max_retained_bytes: usize,
    /// Seconds reading a client's file may take (a file on a stalled network file system).
    pub read_timeout_s: u64,
    /// Largest PDF accepted (bytes); larger is `TooLarge`.
    pub max_pdf_bytes: u64,
    /// Largest text accepted by SummarizeText, Classify and Extract (bytes).
    pub max_text_bytes: u64,
    /// Most pages a PDF may have.
    pub max_pages: u32,
    /// PDFs read and extracted at once (each holds its file in memory).
    pub extract_concurrency: usize,
    /// Seconds a stopping daemon (SIGTERM, `systemctl stop`) lets unfinished jobs run on
    /// before it fails the rest with ShuttingDown; keep it under the unit's TimeoutStopSec.
    pub stop_grace_s: u64,
    /// Blocking summary steps (extraction, cleaning, ranking, chunking, tokenizing, cache
    /// I/O) run at once, all requests together; 0 = the number of CPUs.
    pub cpu_concurrency: usize,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            max_jobs: 16,
            max_jobs_per_client: 4,
            job_retention_s: 300,
            max_retained_jobs: 256,
            max_retained_bytes: 16 << 20,
            read_timeout_s: 60,
            max_pdf_bytes: 100 << 20,
            max_text_bytes: 8 << 20,
            max_pages: 2000,
            extract_concurrency: 2,
            cpu_concurrency: 0,
            stop_grace_s: 20,
        }
    }
}
