//! The daemon's configuration: one TOML file (`seqgptd --config FILE`, installed as
//! /etc/seqgpt/seqgptd.toml). Every key is optional; unknown keys are errors (a typo must not
//! silently fall back to a default). Relative paths are relative to the file's directory.
//! Each table is read into the settings type of the layer it configures (the scheduler's
//! `SchedulerConfig`, the service's `ServiceConfig`, the templates of `summarize::prompt`): this module is the file format,
//! used only by `app` and the binaries, so it may depend on every layer and none on it.
//!
//! ```toml
//! model = "/var/lib/seqgpt/models/seqgpt-560m-q4.gguf"  # absent file: extractive only
//! device = "auto"              # auto | cpu | cuda:N
//! threads = 0                  # CPU threads for inference, 0 = all
//!
//! [scheduler]                  # the engine's queue and batching (see docs/DBUS.md)
//! queue_capacity = 8
//!
//! [cache]
//! enabled = true
//! # dir = "/var/lib/seqgpt/summaries"  # default: $STATE_DIRECTORY, $XDG_STATE_HOME/seqgpt
//! #                                    # or ~/.local/state/seqgpt, then /summaries
//! max_entries = 1000
//!
//! [service]
//! max_jobs = 16                # unfinished jobs at once; one more gets LimitsExceeded
//! max_jobs_per_client = 4      # per connection; per Unix user on the system bus
//! job_retention_s = 300        # finished job objects stay this long on the bus
//! max_retained_jobs = 256
//! max_retained_bytes = 16777216
//! max_pdf_bytes = 104857600
//! max_text_bytes = 8388608
//! max_pages = 2000
//! extract_concurrency = 2
//! cpu_concurrency = 0          # blocking summary steps at once; 0 = the number of CPUs
//! read_timeout_s = 60          # reading a client's file (stalled network file systems)
//! stop_grace_s = 20            # on SIGTERM, running jobs may finish within this
//!
//! [summarize]
//! template = "auto"            # auto | seqgpt | bloomz | a name under [summarize.templates]
//! max_model_chunks = 16
//! ```

use crate::scheduler::SchedulerConfig;
pub use crate::service::limits::ServiceConfig;
use crate::summarize::prompt::{auto_template, templates, Template};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config file {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("config file {path}: {message}")]
    Parse { path: String, message: String },
    #[error("config: {0}")]
    Invalid(String),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The GGUF model file. Absent, or a file that does not exist: the daemon answers with
    /// its extractive summarizer.
    #[serde(default)]
    pub model: Option<PathBuf>,
    #[serde(default = "default_device")]
    pub device: String,
    #[serde(default)]
    pub threads: usize,
    /// The scheduler's own settings type: the file format composes each layer's settings,
    /// so a typo in `[scheduler]` is caught where the file is read.
    #[serde(default)]
    pub scheduler: SchedulerConfig,
    #[serde(default)]
    pub cache: CacheConfig,
    #[serde(default)]
    pub service: ServiceConfig,
    #[serde(default)]
    pub summarize: SummarizeConfig,
}

fn default_device() -> String {
    "auto".into()
}

impl Default for Config {
    fn default() -> Self {
        Config {
            model: None,
            device: default_device(),
            threads: 0,
            scheduler: SchedulerConfig::default(),
            cache: CacheConfig::default(),
            service: ServiceConfig::default(),
            summarize: SummarizeConfig::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    pub enabled: bool,
    pub dir: Option<PathBuf>,
    pub max_entries: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig { enabled: true, dir: None, max_entries: 1000 }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SummarizeConfig {
    /// `auto` (by the model's family, from its `general.name`), or a template's name.
    pub template: String,
    /// Longer documents are condensed extractively to this many chunks first.
    pub max_model_chunks: usize,
    /// Templates added or replacing the built-in `seqgpt` and `bloomz`.
    pub templates: BTreeMap<String, Template>,
}

impl Default for SummarizeConfig {
    fn default() -> Self {
        SummarizeConfig { template: "auto".into(), max_model_chunks: 16, templates: BTreeMap::new() }
    }
}

impl Config {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.display().to_string(), source })?;
        let mut cfg = Self::from_toml(&text).map_err(|e| match e {
            ConfigError::Invalid(message) => ConfigError::Parse { path: path.display().to_string(), message },
            other => other,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let resolve = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        if let Some(m) = cfg.model.as_mut() {
            resolve(m);
        }
        if let Some(d) = cfg.cache.dir.as_mut() {
            resolve(d);
        }
        Ok(cfg)
    }

    /// Parses and checks a config document.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let cfg: Config = toml::from_str(text).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        let s = &self.service;
        if s.max_jobs == 0 || s.max_jobs_per_client == 0 {
            return bad("[service] max_jobs and max_jobs_per_client must be at least 1".into());
        }
        if s.max_pdf_bytes == 0 || s.max_text_bytes == 0 || s.max_pages == 0 {
            return bad("[service] max_pdf_bytes, max_text_bytes and max_pages must be at least 1".into());
        }
        if s.extract_concurrency == 0 {
            return bad("[service] extract_concurrency must be at least 1".into());
        }
        if self.cache.max_entries == 0 {
            return bad("[cache] max_entries must be at least 1".into());
        }
        if self.summarize.max_model_chunks == 0 {
            return bad("[summarize] max_model_chunks must be at least 1".into());
        }
        for (name, t) in &self.summarize.templates {
            t.validate(name).map_err(ConfigError::Invalid)?;
        }
        let known = templates(&self.summarize.templates);
        if self.summarize.template != "auto" && !known.contains_key(&self.summarize.template) {
            return bad(format!(
                "[summarize] template '{}' is neither auto nor a known template ({})",
                self.summarize.template,
                known.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        self.scheduler.validate().map_err(|e| ConfigError::Invalid(format!("[scheduler]: {e}")))?;
        Ok(())
    }


    /// The summary template for a model called `general_name`: (name, template, why).
    pub fn template_for(&self, general_name: &str) -> (String, Template, String) {
        let all = templates(&self.summarize.templates);
        let (name, why) = if self.summarize.template == "auto" {
            let (n, why) = auto_template(general_name);
            (n.to_string(), format!("template = \"auto\": {why}"))
        } else {
            (self.summarize.template.clone(), "chosen in the config ([summarize] template)".to_string())
        };
        let t = all.get(&name).cloned().unwrap_or_else(Template::seqgpt);
        (name, t, why)
    }

    /// Where summaries are cached, `None` when the cache is off or no directory is known.
    pub fn cache_dir(&self) -> Option<PathBuf> {
        if !self.cache.enabled {
            return None;
        }
        self.cache.dir.clone().or_else(|| crate::summarize::cache::default_state_dir().map(|d| d.join("summaries")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file the systemd units install, as shipped.
    const OPS_CONFIG: &str = include_str!("../../systemd/seqgptd.toml");

    #[test]
    fn the_installed_config_parses() {
        let c = Config::from_toml(OPS_CONFIG).unwrap();
        assert_eq!(c.model.as_deref(), Some(Path::new("/var/lib/seqgpt/models/seqgpt-560m-q4.gguf")));
        assert_eq!(c.device, "auto");
        assert_eq!(c.scheduler.queue_capacity, 8);
        assert!(c.cache.enabled);
        assert_eq!(c.service, ServiceConfig::default());
    }

    #[test]
    fn empty_config_is_all_defaults() {
        assert_eq!(Config::from_toml("").unwrap(), Config::default());
    }

    #[test]
    fn typos_and_bad_values_are_errors() {
        assert!(Config::from_toml("modle = \"x\"").is_err());
        assert!(Config::from_toml("[cache]\nenable = true").is_err());
        assert!(Config::from_toml("[service]\nmax_jobs = 0").is_err());
        assert!(Config::from_toml("[summarize]\ntemplate = \"nope\"").is_err());
        assert!(Config::from_toml("[scheduler]\nqueue_capacity = -1").is_err());
        assert!(Config::from_toml("[scheduler]\nqueue_capasity = 3").is_err());
        assert!(Config::from_toml("[scheduler]\nmin_batch = 0").is_err());
        let bad_template = "[summarize.templates.mine]\nkind = \"instruction\"\nprompt = \"no placeholder\"";
        assert!(Config::from_toml(bad_template).is_err());
    }

    #[test]
    fn custom_templates_and_auto_choice() {
        let c = Config::from_toml(
            "[summarize]\ntemplate = \"mine\"\n[summarize.templates.mine]\nkind = \"instruction\"\nprompt = \"TL;DR {text}\"\n",
        )
        .unwrap();
        let (name, t, _) = c.template_for("SeqGPT-560M");
        assert_eq!(name, "mine");
        assert_eq!(t.prompt, "TL;DR {text}");
        let auto = Config::default();
        assert_eq!(auto.template_for("bloomz-560m").0, "bloomz");
        assert_eq!(auto.template_for("SeqGPT-560M").0, "seqgpt");
    }

    #[test]
    fn relative_paths_follow_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.toml");
        std::fs::write(&path, "model = \"m.gguf\"\n[cache]\ndir = \"cache\"\n").unwrap();
        let c = Config::load(&path).unwrap();
        assert_eq!(c.model.unwrap(), dir.path().join("m.gguf"));
        assert_eq!(c.cache.dir.clone().unwrap(), dir.path().join("cache"));
        assert!(Config::load(&dir.path().join("missing.toml")).is_err());
    }
}
