//! The wiring: from a [`Config`] to a running summary pipeline. The engine (the model file on
//! its device), the scheduler over it, the summary cache and the pipeline's settings are built
//! here and nowhere else; `seqgptd` ([`crate::service::run`]) and `seqgpt summarize --local`
//! both call [`pipeline`].

use crate::config::Config;
use crate::engine::Engine;
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
    crate::device::init_threads(cfg.threads);
    let device = crate::device::select(&cfg.device)?;
    let engine = match Engine::open(&path, &device) {
        Ok(e) => e,
        Err(e) => {
            tracing::error!("cannot load the model {}: {e}; summaries are extractive", path.display());
            return Ok(None);
        }
    };
    let name = engine
        .file
        .get(crate::arch::key::NAME)
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| path.file_stem().map_or("model".into(), |s| s.to_string_lossy().into_owned()));
    let device_name = crate::device::describe(&device);
    let context_length = engine.model.cfg.context_length;
    let (template_name, template, reason) = cfg.template_for(&name);
    let identity = model_identity(&path, &name, &template_name, &template);
    let engine = Arc::new(engine);
    let scheduler = Scheduler::start_engine(engine.clone(), cfg.scheduler_config()?, StartOptions { on_tick })
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
    let pdf_limits = crate::pdf::Limits {
        max_file_bytes: usize::try_from(cfg.service.max_pdf_bytes).unwrap_or(usize::MAX),
        max_pages: cfg.service.max_pages,
        ..crate::pdf::Limits::default()
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

