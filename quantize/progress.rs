//! Progress of long work: a bar with ETA on a terminal, a log line every few seconds
//! otherwise; and memory: the peak RSS (VmHWM) and the peak of anonymous memory (RssAnon,
//! sampled at every step), which excludes the mapped checkpoint's page cache.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Inner {
    bar: ProgressBar,
    tty: bool,
    quiet: bool,
    start: Instant,
    last_log: Mutex<Instant>,
    peak_anon: AtomicU64,
}

/// Cheap to clone; every clone drives the same bar.
#[derive(Clone)]
pub struct Progress(Arc<Inner>);

/// Anonymous resident memory now (`RssAnon` of /proc/self/status), 0 if unknown.
pub fn rss_anon_bytes() -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return 0 };
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

impl Progress {
    /// A bar of `total` units. `quiet`: no output at all.
    pub fn new(total: u64, quiet: bool) -> Self {
        let tty = std::io::stderr().is_terminal() && !quiet;
        let bar = if tty { ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr()) } else { ProgressBar::hidden() };
        bar.set_length(total);
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% ETA {eta_precise} {msg}")
                .expect("valid template"),
        );
        if tty {
            bar.enable_steady_tick(Duration::from_millis(250));
        }
        let now = Instant::now();
        Self(Arc::new(Inner { bar, tty, quiet, start: now, last_log: Mutex::new(now), peak_anon: AtomicU64::new(rss_anon_bytes()) }))
    }

    fn sample(&self) {
        self.0.peak_anon.fetch_max(rss_anon_bytes(), Ordering::Relaxed);
    }

    pub fn inc(&self, n: u64) {
        self.0.bar.inc(n);
        self.sample();
        self.maybe_log(false);
    }

    pub fn set_message(&self, msg: impl Into<String>) {
        let msg = msg.into();
        self.0.bar.set_message(msg);
        self.sample();
        self.maybe_log(false);
    }

    /// A line that stays (above the bar on a terminal).
    pub fn println(&self, line: impl AsRef<str>) {
        if self.0.quiet {
            return;
        }
        if self.0.tty {
            self.0.bar.println(line.as_ref());
        } else {
            eprintln!("{}", line.as_ref());
        }
    }

    fn maybe_log(&self, force: bool) {
        if self.0.tty || self.0.quiet {
            return;
        }
        let mut last = self.0.last_log.lock().unwrap_or_else(|e| e.into_inner());
        if !force && last.elapsed() < Duration::from_secs(10) {
            return;
        }
        *last = Instant::now();
        let (pos, len) = (self.0.bar.position(), self.0.bar.length().unwrap_or(0).max(1));
        let elapsed = self.0.start.elapsed().as_secs_f64();
        let eta = if pos > 0 { elapsed * (len - pos.min(len)) as f64 / pos as f64 } else { f64::NAN };
        eprintln!(
            "[{elapsed:7.1}s] {:5.1}% ETA {:.0}s, RSS {} MB: {}",
            100.0 * pos as f64 / len as f64,
            eta,
            seqgpt_engine::sysinfo::rss_bytes() >> 20,
            self.0.bar.message()
        );
    }

    pub fn finish(&self) {
        self.sample();
        self.maybe_log(true);
        self.0.bar.finish_and_clear();
    }

    pub fn elapsed(&self) -> Duration {
        self.0.start.elapsed()
    }

    /// Peak anonymous memory seen at the steps so far.
    pub fn peak_anon_bytes(&self) -> u64 {
        self.sample();
        self.0.peak_anon.load(Ordering::Relaxed)
    }
}
