//! The wiring: from a [`Config`] to a running daemon. The engine (the model file on its
//! device), the scheduler over it, the summary cache and the pipeline's settings are built
//! here and nowhere else ([`pipeline`], also what `seqgpt summarize --local` runs), and so is
//! the D-Bus service on top of them with its systemd protocol ([`run_daemon`], `seqgptd`).
//!
//! Start-up: config -> pipeline (a missing or broken model file leaves the extractive
//! summarizer) -> the service object on the bus -> the name -> ready (`READY=1` under
//! systemd). SIGTERM or SIGINT: stop taking requests, release the name, end every unfinished
//! job with `org.seqgpt.Summarizer1.Error.ShuttingDown`, stop the engine, exit 0.

use crate::config::Config;
use seqgpt_engine::engine::Engine;
use crate::sd_notify::{watchdog_interval, Notifier};
use crate::service::{connection_builder, core, introspection, summarizer, Bus, SERVICE_NAME, SERVICE_PATH};
use anyhow::{bail, Context};
use futures_util::StreamExt;
use std::time::Duration;
use crate::summarize::cache::SummaryCache;
use crate::scheduler::{EngineEncoder, Scheduler, StartOptions};
use crate::summarize::pipeline::{ModelSetup, Pipeline, PipelineSettings};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A pipeline and what runs under it.
pub struct Built {
    pub pipeline: Pipeline,
    /// The scheduler over the model's engine, when a model loaded (shut it down at the end).
    pub scheduler: Option<Scheduler>,
    /// Where the model runs ("cpu" for the extractive summarizer alone).
    pub device: String,
}

/// Builds the pipeline of `cfg`: the model of `cfg.model` (or `model_override`) on its device
/// with the scheduler over it (its engine thread calls `on_tick` after every operation: the
/// watchdog's place), the summary cache, the settings. Call within a tokio runtime.
pub fn pipeline(cfg: &Config, model_override: Option<&Path>, on_tick: Option<Box<dyn FnMut() + Send>>) -> anyhow::Result<Built> {
    let loaded = load_model(cfg, model_override, on_tick)?;
    let device = loaded.as_ref().map_or_else(|| "cpu".to_string(), |m| m.device.clone());
    let (scheduler, setup) = match loaded {
        Some(m) => (Some(m.setup.scheduler.clone()), Some(m.setup)),
        None => (None, None),
    };
    Ok(Built { pipeline: Pipeline::new(setup, open_cache(cfg), pipeline_settings(cfg)), scheduler, device })
}

/// The model side of the daemon, when a model is configured and loads.
struct LoadedModel {
    setup: ModelSetup,
    device: String,
}

/// Opens the model of `cfg` (or `model_override`) and starts its engine thread. `Ok(None)`
/// when no model is configured or the file does not exist; a file that fails to load is
/// logged and also gives `Ok(None)` (the extractive summarizer answers).
fn load_model(
    cfg: &Config,
    model_override: Option<&Path>,
    on_tick: Option<Box<dyn FnMut() + Send>>,
) -> anyhow::Result<Option<LoadedModel>> {
    let Some(path) = model_override.map(Path::to_path_buf).or_else(|| cfg.model.clone()) else {
        tracing::info!("no model configured: summaries are extractive");
        return Ok(None);
    };
    if !path.exists() {
        tracing::warn!("model file {} does not exist: summaries are extractive", path.display());
        return Ok(None);
    }
    seqgpt_engine::device::init_threads(cfg.threads);
    let device = seqgpt_engine::device::select(&cfg.device)?;
    let engine = match Engine::open(&path, &device) {
        Ok(e) => e,
        Err(e) => {
            tracing::error!("cannot load the model {}: {e}; summaries are extractive", path.display());
            return Ok(None);
        }
    };
    let name = engine
        .file
        .get(seqgpt_engine::arch::key::NAME)
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| path.file_stem().map_or("model".into(), |s| s.to_string_lossy().into_owned()));
    let device_name = seqgpt_engine::device::describe(&device);
    let context_length = engine.model.cfg.context_length;
    let (template_name, template, reason) = cfg.template_for(&name);
    let identity = model_identity(&path, &name, &template_name, &template);
    let engine = Arc::new(engine);
    let hold = std::env::var_os("SEQGPT_TEST_HOLD").map(PathBuf::from);
    if let Some(gate) = &hold {
        tracing::warn!("SEQGPT_TEST_HOLD is set: model jobs wait after their first token until {} exists", gate.display());
    }
    let scheduler = Scheduler::start_engine(engine.clone(), cfg.scheduler.clone(), StartOptions { on_tick, hold })
        .map_err(|e| anyhow::anyhow!("starting the scheduler: {e}"))?;
    tracing::info!("model {} ({name}) on {device_name}, context {context_length} tokens", path.display());
    let setup = ModelSetup {
        scheduler,
        tokens: Arc::new(EngineEncoder(engine)),
        name,
        device: device_name.clone(),
        template_name,
        template,
        reason,
        identity,
    };
    Ok(Some(LoadedModel { setup, device: device_name }))
}

/// What identifies a model for the cache: its name, file size and modification time, and
/// the template (a new file or a changed template gives new keys).
fn model_identity(path: &Path, name: &str, template_name: &str, template: &crate::summarize::prompt::Template) -> String {
    let meta = std::fs::metadata(path).ok();
    let size = meta.as_ref().map_or(0, |m| m.len());
    let mtime = meta
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let fingerprint = crate::summarize::cache::content_hash(format!("{template:?}").as_bytes());
    format!("model:{name}:{size}:{mtime}:{template_name}:{}", &fingerprint[..16])
}

/// Opens the summary cache of `cfg`, or none (disabled, no directory, or not writable).
pub fn open_cache(cfg: &Config) -> Option<SummaryCache> {
    let dir: PathBuf = cfg.cache_dir()?;
    match SummaryCache::open(&dir, cfg.cache.max_entries) {
        Ok(c) => {
            tracing::info!("summary cache in {}", c.dir().display());
            Some(c)
        }
        Err(e) => {
            tracing::warn!("summary cache disabled: cannot use {}: {e}", dir.display());
            None
        }
    }
}

/// The pipeline's settings from the config: chunk cap, PDF limits, extraction concurrency.
pub fn pipeline_settings(cfg: &Config) -> PipelineSettings {
    let pdf_limits = seqgpt_pdf::Limits {
        max_file_bytes: usize::try_from(cfg.service.max_pdf_bytes).unwrap_or(usize::MAX),
        max_pages: cfg.service.max_pages,
        ..seqgpt_pdf::Limits::default()
    };
    PipelineSettings {
        max_model_chunks: cfg.summarize.max_model_chunks,
        pdf_limits,
        extract_concurrency: cfg.service.extract_concurrency,
        cpu_concurrency: match cfg.service.cpu_concurrency {
            0 => PipelineSettings::default().cpu_concurrency,
            n => n,
        },
        ..PipelineSettings::default()
    }
}

/// What `seqgptd` was asked to do.
pub struct DaemonOptions {
    pub bus: Bus,
    pub config: Config,
    /// The file `config` was read from; SIGHUP reads it again.
    pub config_path: Option<PathBuf>,
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

/// SIGHUP (`systemctl reload`): reads the config file again and loads its model, then serves
/// new requests with them; accepted jobs finish with what they started with. A config that
/// does not parse, or a model that fails to load, leaves everything as it was (and says why in
/// the log). Returns the new scheduler, if the new config has a model.
async fn reload(
    opts: &DaemonOptions,
    core: &core::Core,
    conn: &zbus::Connection,
    notifier: Option<&Arc<Notifier>>,
    watchdog: Option<Duration>,
) -> Option<Option<Scheduler>> {
    if let Some(n) = notifier {
        let _ = n.reloading();
    }
    let cfg = match &opts.config_path {
        Some(path) => Config::load(path),
        None => Ok(opts.config.clone()),
    };
    let result = match cfg {
        Err(e) => Err(anyhow::anyhow!(e)),
        Ok(cfg) => {
            let tick = match (notifier, watchdog) {
                (Some(n), Some(every)) => Some(watchdog_tick(n.clone(), every)),
                _ => None,
            };
            tokio::task::block_in_place(|| pipeline(&cfg, opts.model.as_deref(), tick)).map(|built| (cfg, built))
        }
    };
    let outcome = match result {
        Ok((cfg, built)) => {
            let what = built.pipeline.model().map_or_else(|| "extractive only".to_string(), |m| format!("model {}", m.name));
            core.replace(core::Served { pipeline: Arc::new(built.pipeline), limits: cfg.service.clone(), device: built.device });
            tracing::info!("SIGHUP: reloaded the config ({what}); accepted jobs finish as they started");
            if let Ok(iface) = conn.object_server().interface::<_, summarizer::Summarizer>(SERVICE_PATH).await {
                let _ = iface.get().await.served_changed(iface.signal_emitter()).await;
            }
            Some(built.scheduler)
        }
        Err(e) => {
            tracing::error!("SIGHUP: reload failed, nothing changed: {e:#}");
            None
        }
    };
    if let Some(n) = notifier {
        let _ = n.ready();
    }
    outcome
}

/// One `STATUS=` line for `systemctl status`.
fn status_line(core: &core::Core) -> String {
    let (queued, running, _) = core.job_counts();
    let c = &core.counters;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    let method = if core.served().pipeline.model().is_some() { "model" } else { "extractive" };
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
pub async fn run_daemon(opts: DaemonOptions) -> anyhow::Result<()> {
    let cfg = opts.config.clone();
    let notifier = Notifier::from_env().map(Arc::new);
    let watchdog = watchdog_interval();
    let engine_tick = match (&notifier, watchdog) {
        (Some(n), Some(every)) => Some(watchdog_tick(n.clone(), every)),
        _ => None,
    };
    let built = tokio::task::block_in_place(|| pipeline(&cfg, opts.model.as_deref(), engine_tick))?;
    let mut scheduler = built.scheduler;
    let served = core::Served { pipeline: Arc::new(built.pipeline), limits: cfg.service.clone(), device: built.device };
    let core = Arc::new(core::Core::new(opts.bus.kind(), served));

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
    // Without an engine loop (no model, or not since a reload), the runtime itself proves it
    // turns; with one, the engine thread does (a hung engine must be noticed).
    let runtime_watchdog = match (&notifier, watchdog) {
        (Some(n), Some(every)) => {
            let mut tick = watchdog_tick(n.clone(), every);
            let core = core.clone();
            Some(tokio::spawn(async move {
                let mut interval = tokio::time::interval(every / 2);
                loop {
                    interval.tick().await;
                    if core.served().pipeline.model().is_none() {
                        tick();
                    }
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
    // The handlers exist before anyone hears that the daemon is ready: a SIGHUP or SIGTERM
    // that came earlier would otherwise kill it (their default action).
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    if let Some(n) = &notifier {
        if let Err(e) = n.ready() {
            tracing::warn!("sd_notify READY=1: {e}");
        }
    }
    // The readiness line tests and scripts wait for.
    eprintln!("seqgptd: ready on the {} bus", opts.bus.kind().as_str());

    let bus_lost = loop {
        tokio::select! {
            _ = term.recv() => { tracing::info!("SIGTERM: shutting down"); break false }
            _ = int.recv() => { tracing::info!("SIGINT: shutting down"); break false }
            _ = conn.closed() => break true,
            _ = hup.recv() => {
                if let Some(s) = reload(&opts, &core, &conn, notifier.as_ref(), watchdog).await {
                    // The old scheduler stops once the jobs that hold it have ended.
                    scheduler = s;
                }
            }
        }
    };
    if let Some(n) = &notifier {
        let _ = n.stopping();
        let _ = n.status("stopping: letting running jobs finish");
    }
    if let Some(t) = status {
        t.abort();
    }
    if bus_lost {
        core.shutdown(Duration::from_secs(1)).await;
        bail!("the connection to the bus was closed");
    }
    // Running jobs may finish (within [service] stop_grace_s); new calls get ShuttingDown.
    let grace = Duration::from_secs(core.served().limits.stop_grace_s);
    if !core.drain(grace).await {
        tracing::warn!("jobs still unfinished after {} s ([service] stop_grace_s): failing them", grace.as_secs());
        if let Some(n) = &notifier {
            let _ = n.status("stopping: failing unfinished jobs");
        }
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
