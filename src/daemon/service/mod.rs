//! The D-Bus service `seqgptd`: `org.seqgpt.Summarizer1` on the session, system or a private
//! bus. docs/DBUS.md is the API reference.
//!
//! Modules: [`summarizer`] (the service object), [`jobs`] (a job's state), [`job_object`]
//! (its objects on the bus), [`job_task`] (the task that runs it), [`core`] (shared state,
//! limits, access checks), [`intake`] (a call's arguments checked into a request), [`options`]
//! (the `a{sv}` options), [`input`] (reading client files safely), [`errors`] (the D-Bus error names), [`bus_string`] (the one string type that goes
//! on the bus), [`introspection`] (what the service object shows of itself).
//!
//! Start-up: config -> [`crate::app::pipeline`] (model, scheduler, cache; a missing or broken
//! model file leaves the extractive summarizer) -> the bus name -> ready (`READY=1` under
//! systemd). SIGTERM or SIGINT: stop taking
//! requests, release the name, end every unfinished job with
//! `org.seqgpt.Summarizer1.Error.ShuttingDown`, stop the engine, exit 0.

pub mod bus_string;
pub mod client;
pub mod core;
pub mod errors;
pub mod input;
pub mod intake;
pub mod introspection;
pub mod job_object;
pub mod job_task;
pub mod jobs;
pub mod options;
pub mod summarizer;

use crate::app;
use crate::config::Config;
use crate::sd_notify::{watchdog_interval, Notifier};
use anyhow::{bail, Context};
use futures_util::StreamExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use self::core::BusKind;
pub use summarizer::{SERVICE_NAME, SERVICE_PATH};

/// Which bus to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bus {
    Session,
    System,
    /// A D-Bus address (`unix:path=...`); only unix sockets are accepted.
    Address(String),
}

impl Bus {
    pub fn kind(&self) -> BusKind {
        match self {
            Bus::Session => BusKind::Session,
            Bus::System => BusKind::System,
            Bus::Address(_) => BusKind::Private,
        }
    }
}

/// Checks that a D-Bus address list names unix sockets only: the daemon opens no network
/// socket, ever.
pub fn check_unix_address(address: &str) -> anyhow::Result<()> {
    for part in address.split(';').filter(|p| !p.trim().is_empty()) {
        if !part.trim().starts_with("unix:") {
            bail!("D-Bus address '{part}' is not a unix socket; seqgptd talks over unix sockets only");
        }
    }
    Ok(())
}

/// A zbus connection builder for `bus` (unix transports only).
pub fn connection_builder(bus: &Bus) -> anyhow::Result<zbus::connection::Builder<'static>> {
    Ok(match bus {
        Bus::Address(a) => {
            check_unix_address(a)?;
            zbus::connection::Builder::address(a.as_str())?
        }
        Bus::Session => {
            if let Ok(a) = std::env::var("DBUS_SESSION_BUS_ADDRESS") {
                check_unix_address(&a)?;
            }
            zbus::connection::Builder::session()?
        }
        Bus::System => {
            if let Ok(a) = std::env::var("DBUS_SYSTEM_BUS_ADDRESS") {
                check_unix_address(&a)?;
            }
            zbus::connection::Builder::system()?
        }
    })
}

/// What `seqgptd` was asked to do.
pub struct DaemonOptions {
    pub bus: Bus,
    pub config: Config,
    pub model: Option<PathBuf>,
}

/// A watchdog ping for the engine loop's tick: sends `WATCHDOG=1` once `every` has passed
/// since the last one.
fn watchdog_tick(notifier: Arc<Notifier>, every: Duration) -> Box<dyn FnMut() + Send> {
    let mut last = std::time::Instant::now();
    Box::new(move || {
        if last.elapsed() >= every {
            last = std::time::Instant::now();
            if let Err(e) = notifier.watchdog() {
                tracing::warn!("sd_notify WATCHDOG=1: {e}");
            }
        }
    })
}

/// One `STATUS=` line for `systemctl status`.
fn status_line(core: &core::Core) -> String {
    let (queued, running, _) = core.job_counts();
    let c = &core.counters;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    let method = if core.pipeline.model().is_some() { "model" } else { "extractive" };
    format!(
        "{method} summaries; jobs: {running} running, {queued} queued; {} done, {} failed, {} cancelled, {} busy refusals",
        load(&c.done),
        load(&c.failed),
        load(&c.cancelled),
        load(&c.busy)
    )
}

/// Runs the daemon until SIGTERM or SIGINT (exit 0), or until the bus goes away (error).
///
/// Under systemd (`Type=notify`): `READY=1` once the model is mapped and the name is owned;
/// `WATCHDOG=1` from the engine loop (or, without a model, from the runtime) at the interval
/// `$WATCHDOG_USEC` asks for; `STATUS=` lines; `STOPPING=1` on SIGTERM.
pub async fn run(opts: DaemonOptions) -> anyhow::Result<()> {
    let cfg = opts.config;
    let notifier = Notifier::from_env().map(Arc::new);
    let watchdog = watchdog_interval();
    let engine_tick = match (&notifier, watchdog) {
        (Some(n), Some(every)) => Some(watchdog_tick(n.clone(), every)),
        _ => None,
    };
    let built = tokio::task::block_in_place(|| app::pipeline(&cfg, opts.model.as_deref(), engine_tick))?;
    let (scheduler, device) = (built.scheduler, built.device);
    let pipeline = Arc::new(built.pipeline);
    let core = Arc::new(core::Core::new(opts.bus.kind(), pipeline, cfg.service.clone(), device));

    let conn = connection_builder(&opts.bus)?
        .serve_at(SERVICE_PATH, summarizer::Summarizer { core: core.clone() })?
        .build()
        .await
        .with_context(|| format!("connecting to the {} bus", opts.bus.kind().as_str()))?;
    introspection::install(&conn).await.context("setting up the service object")?;
    // Without replacement, and without queueing: a second daemon must not take the name
    // from a running one (nor wait for it), but say so and exit.
    let flags = zbus::fdo::RequestNameFlags::DoNotQueue.into();
    match conn.request_name_with_flags(SERVICE_NAME, flags).await {
        Ok(_) => {}
        Err(zbus::Error::NameTaken) => bail!(
            "{SERVICE_NAME} is already owned on the {} bus: another seqgptd is running there (this one exits)",
            opts.bus.kind().as_str()
        ),
        Err(e) => return Err(e).with_context(|| format!("owning {SERVICE_NAME} on the {} bus", opts.bus.kind().as_str())),
    }
    tracing::info!("serving {SERVICE_NAME} on the {} bus as {}", opts.bus.kind().as_str(), conn.unique_name().map_or("?".into(), |n| n.to_string()));

    // Clients that leave the bus lose their (non-detached) jobs.
    let dbus = zbus::fdo::DBusProxy::new(&conn).await?;
    let mut owners = dbus.receive_name_owner_changed().await?;
    let watcher = {
        let core = core.clone();
        tokio::spawn(async move {
            while let Some(signal) = owners.next().await {
                if let Ok(args) = signal.args() {
                    if args.name().starts_with(':') && args.new_owner().is_none() {
                        core.client_gone(args.name());
                    }
                }
            }
        })
    };
    // Without an engine loop, the runtime itself proves it turns.
    let runtime_watchdog = match (&notifier, watchdog, scheduler.is_some()) {
        (Some(n), Some(every), false) => {
            let mut tick = watchdog_tick(n.clone(), every);
            Some(tokio::spawn(async move {
                let mut interval = tokio::time::interval(every / 2);
                loop {
                    interval.tick().await;
                    tick();
                }
            }))
        }
        _ => None,
    };
    let status = notifier.clone().map(|n| {
        let core = core.clone();
        tokio::spawn(async move {
            let mut last = String::new();
            loop {
                let line = status_line(&core);
                if line != last {
                    let _ = n.status(&line);
                    last = line;
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        })
    });
    if let Some(n) = &notifier {
        if let Err(e) = n.ready() {
            tracing::warn!("sd_notify READY=1: {e}");
        }
    }
    // The readiness line tests and scripts wait for.
    eprintln!("seqgptd: ready on the {} bus", opts.bus.kind().as_str());

    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let bus_lost = tokio::select! {
        _ = term.recv() => { tracing::info!("SIGTERM: shutting down"); false }
        _ = int.recv() => { tracing::info!("SIGINT: shutting down"); false }
        _ = conn.closed() => true,
    };
    if let Some(n) = &notifier {
        let _ = n.stopping();
        let _ = n.status("stopping: ending unfinished jobs");
    }
    if let Some(t) = status {
        t.abort();
    }
    if bus_lost {
        core.shutdown(Duration::from_secs(1)).await;
        bail!("the connection to the bus was closed");
    }
    let _ = conn.release_name(SERVICE_NAME).await;
    core.shutdown(Duration::from_secs(10)).await;
    watcher.abort();
    if let Some(t) = runtime_watchdog {
        t.abort();
    }
    if let Some(g) = scheduler {
        g.shutdown().await;
    }
    // Every job's last signal was written when its emitter returned; retention timers still
    // hold clones of the connection, so close it rather than wait for them.
    let _ = tokio::time::timeout(Duration::from_secs(2), conn.close()).await;
    tracing::info!("stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unix_addresses() {
        assert!(check_unix_address("unix:path=/run/dbus/system_bus_socket").is_ok());
        assert!(check_unix_address("unix:abstract=/tmp/x,guid=1;unix:path=/a").is_ok());
        assert!(check_unix_address("tcp:host=localhost,port=1").is_err());
        assert!(check_unix_address("unix:path=/a;tcp:host=x,port=2").is_err());
    }
}
