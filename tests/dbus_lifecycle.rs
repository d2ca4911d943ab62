//! `systemctl reload` and `systemctl stop` as the daemon sees them: SIGHUP reads the config
//! and the model again without touching accepted jobs; SIGTERM lets running jobs finish within
//! `[service] stop_grace_s` while new calls get ShuttingDown, then exits 0. (Past the grace,
//! jobs fail with ShuttingDown: dbus_service.rs, sigterm_fails_running_jobs_and_exits_cleanly.)

mod common;
mod dbus_harness;

use dbus_harness::*;
use seqgpt_daemon::service::client;
use std::time::{Duration, Instant};
use zbus::zvariant::Value;

/// A bound against a hang only: the jobs wait for the test at a [`Hold`], not for the clock.
const T: Duration = Duration::from_secs(600);

fn signal(daemon: &Daemon, sig: i32) {
    // SAFETY: kill(2) on the pid of a child this test started.
    assert_eq!(unsafe { libc::kill(daemon.child.id() as i32, sig) }, 0);
}

/// Waits until the daemon's log has a line containing `needle`.
async fn log_line(daemon: &Daemon, needle: &str) {
    let deadline = Instant::now() + T;
    while !daemon.log().contains(needle) {
        assert!(Instant::now() < deadline, "no '{needle}' in the log:\n{}", daemon.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_running(c: &Client, job: &str) {
    let deadline = Instant::now() + T;
    while c.job_string(job, "State").await == "queued" {
        assert!(Instant::now() < deadline, "{job} never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_keeps_running_jobs_and_serves_new_ones_with_the_new_config() {
    let Some(bus) = Bus::start() else { return };
    let hold = Hold::new(&bus);
    let daemon = Daemon::start_with_env(&bus, &slow_config(""), &[], &[hold.env()]);
    let mut c = Client::connect(&bus.address).await;
    let service = client::summarizer(&c.conn).await.unwrap();
    assert_eq!(service.default_method().await.unwrap(), "model");
    let job = c.summarize_text(ARTICLE, &opts(&[])).await.unwrap();
    wait_running(&c, job.as_str()).await;
    // The config now has no model: new requests are extractive; the running job is not touched.
    let original = std::fs::read_to_string(&daemon.config).unwrap();
    let without_model: String = original.lines().filter(|l| !l.starts_with("model =")).collect::<Vec<_>>().join("\n");
    std::fs::write(&daemon.config, &without_model).unwrap();
    signal(&daemon, libc::SIGHUP);
    log_line(&daemon, "SIGHUP: reloaded the config (extractive only)").await;
    assert_eq!(c.job_string(job.as_str(), "State").await, "running");
    hold.open();
    let events = c.events(job.as_str(), T).await;
    let Some(Event::Finished(_, stats)) = events.last() else { panic!("the running job did not finish: {events:?}") };
    assert_eq!(stat_str(stats, "method"), "model");
    assert_eq!(service.default_method().await.unwrap(), "extractive");
    assert_eq!(service.model().await.unwrap(), "");
    let after = c.summarize_text(ARTICLE, &opts(&[])).await.unwrap();
    let events = c.events(after.as_str(), T).await;
    let Some(Event::Finished(_, stats)) = events.last() else { panic!("{events:?}") };
    assert_eq!(stat_str(stats, "method"), "extractive");
    // A config that does not parse changes nothing, and says so.
    std::fs::write(&daemon.config, "model = [broken").unwrap();
    signal(&daemon, libc::SIGHUP);
    log_line(&daemon, "SIGHUP: reload failed, nothing changed").await;
    assert_eq!(service.default_method().await.unwrap(), "extractive");
    // And back to the model.
    std::fs::write(&daemon.config, &original).unwrap();
    signal(&daemon, libc::SIGHUP);
    log_line(&daemon, "SIGHUP: reloaded the config (model ").await;
    assert_eq!(service.default_method().await.unwrap(), "model");
    let job = c.summarize_text(ARTICLE, &opts(&[("max_words", Value::from(20u32))])).await.unwrap();
    let events = c.events(job.as_str(), T).await;
    let Some(Event::Finished(_, stats)) = events.last() else { panic!("{events:?}") };
    assert_eq!(stat_str(stats, "method"), "model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_lets_running_jobs_finish_and_refuses_new_ones() {
    let Some(bus) = Bus::start() else { return };
    let hold = Hold::new(&bus);
    let daemon = Daemon::start_with_env(&bus, &slow_config("[service]\nstop_grace_s = 300\n"), &[], &[hold.env()]);
    let mut c = Client::connect(&bus.address).await;
    let job = c.summarize_text(ARTICLE, &opts(&[])).await.unwrap();
    wait_running(&c, job.as_str()).await;
    signal(&daemon, libc::SIGTERM);
    let stopped = Instant::now();
    log_line(&daemon, "SIGTERM: shutting down").await;
    // While it drains, a new request is refused with ShuttingDown...
    let e = c.summarize_text(ARTICLE, &opts(&[])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.seqgpt.Summarizer1.Error.ShuttingDown", "{e}");
    // ...and the running job, let go, ends with its summary.
    assert_eq!(c.job_string(job.as_str(), "State").await, "running");
    hold.open();
    let events = c.events(job.as_str(), T).await;
    assert!(matches!(events.last(), Some(Event::Finished(..))), "{events:?}");
    eprintln!("the job ended {:?} after SIGTERM", stopped.elapsed());
    let status = daemon.terminate_async().await;
    assert!(status.0.success(), "exit status {:?}\n{}", status.0, status.1);
}
