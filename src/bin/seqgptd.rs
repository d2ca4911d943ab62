//! `seqgptd`: the D-Bus summarization daemon (`org.seqgpt.Summarizer1`).
//!
//! ```text
//! seqgptd [--bus session|system] [--address unix:path=...] [--config FILE] [--model FILE]
//! ```
//! docs/DBUS.md documents the API; systemd starts it as
//! `seqgptd --bus system --config /etc/seqgpt/seqgptd.toml`.

use clap::{Parser, ValueEnum};
use seqgpt::config::Config;
use seqgpt::app::{run_daemon, DaemonOptions};
use seqgpt::service::Bus;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BusArg {
    Session,
    System,
}

#[derive(Parser, Debug)]
#[command(name = "seqgptd", version, about = "Offline PDF summarization daemon on D-Bus (org.seqgpt.Summarizer1)")]
struct Args {
    /// The bus to serve: the user's session bus, or the system bus.
    #[arg(long, value_enum, default_value = "session", conflicts_with = "address")]
    bus: BusArg,
    /// Serve a private bus at this D-Bus address instead (unix sockets only), e.g.
    /// unix:path=/tmp/test-bus.
    #[arg(long)]
    address: Option<String>,
    /// The TOML config file (see docs/OPERATIONS.md). Without it, on the session bus:
    /// $XDG_CONFIG_HOME/seqgpt/seqgptd.toml (~/.config/seqgpt/seqgptd.toml) if it exists;
    /// else every setting is its default (the extractive summarizer, no model).
    #[arg(long)]
    config: Option<PathBuf>,
    /// The GGUF model file (overrides `model` in the config).
    #[arg(long)]
    model: Option<PathBuf>,
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

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("SEQGPT_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    // The per-user daemon cannot read the system's config (0640 seqgpt:seqgpt): its own is
    // the user's, where a user can write one.
    let config_path = args.config.clone().or_else(|| (args.address.is_none() && args.bus == BusArg::Session).then(user_config).flatten());
    let config = match &config_path {
        Some(path) => match Config::load(path) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("seqgptd: {e}");
                std::process::exit(2);
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
            std::process::exit(1);
        }
    };
    let result = runtime.block_on(run_daemon(DaemonOptions { bus, config, model: args.model }));
    if let Err(e) = result {
        eprintln!("seqgptd: {e:#}");
        std::process::exit(1);
    }
}
