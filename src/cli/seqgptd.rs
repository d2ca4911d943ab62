//! `seqgptd`'s command line: which bus, which config, which model; then [`seqgpt_daemon::app`].

use seqgpt_daemon::app::{run_daemon, DaemonOptions};
use seqgpt_daemon::config::Config;
use seqgpt_daemon::service::Bus;
use clap::{Parser, ValueEnum};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BusArg {
    /// The user's session bus (one daemon per user; may open paths it is given).
    Session,
    /// The system bus (one daemon per machine, under systemd; descriptors only).
    System,
}

#[derive(Parser, Debug)]
#[command(
    name = "seqgptd",
    version,
    about = "Offline PDF summarization daemon on D-Bus (org.seqgpt.Summarizer1)",
    long_about = "Offline PDF summarization daemon on D-Bus (org.seqgpt.Summarizer1). It summarizes \
                  PDFs and texts for local clients with a SeqGPT/BLOOM model in one GGUF file, or \
                  extractively without one, and opens no network socket. Under systemd it runs as \
                  seqgptd.service on the system bus; the D-Bus API is in \
                  /usr/share/doc/seqgpt-fast/DBUS.md, operations in OPERATIONS.md."
)]
pub struct DaemonArgs {
    /// The bus to serve.
    #[arg(long, value_enum, default_value = "session", conflicts_with = "address")]
    pub bus: BusArg,
    /// Serve a private bus at this D-Bus address instead (unix sockets only), e.g.
    /// unix:path=/run/user/1000/test-bus.
    #[arg(long, value_name = "ADDRESS")]
    pub address: Option<String>,
    /// The TOML config file (/etc/seqgpt/seqgptd.toml for the system service). Without it,
    /// on the session bus: $XDG_CONFIG_HOME/seqgpt/seqgptd.toml (~/.config/seqgpt/seqgptd.toml)
    /// if it exists; else every setting is its default (the extractive summarizer, no model).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The GGUF model file (overrides `model` in the config).
    #[arg(long, value_name = "FILE")]
    pub model: Option<PathBuf>,
}

/// The session daemon's config file, if the user wrote one.
fn user_config() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    let path = base.join("seqgpt/seqgptd.toml");
    path.exists().then_some(path)
}

/// Runs the daemon until SIGTERM or SIGINT; returns the process's exit status.
pub fn run(args: DaemonArgs) -> i32 {
    // The per-user daemon cannot read the system's config (0640 seqgpt:seqgpt): its own is
    // the user's, where a user can write one.
    let session = args.address.is_none() && args.bus == BusArg::Session;
    let config_path = args.config.clone().or_else(|| session.then(user_config).flatten());
    let config = match &config_path {
        Some(path) => match Config::load(path) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("seqgptd: {e}");
                return 2;
            }
        },
        None => Config::default(),
    };
    let bus = match (&args.address, args.bus) {
        (Some(a), _) => Bus::Address(a.clone()),
        (None, BusArg::Session) => Bus::Session,
        (None, BusArg::System) => Bus::System,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().thread_name("seqgptd").build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("seqgptd: cannot start the runtime: {e}");
            return 1;
        }
    };
    match runtime.block_on(run_daemon(DaemonOptions { bus, config, config_path, model: args.model })) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("seqgptd: {e:#}");
            1
        }
    }
}
