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

#[derive(Clone, Copy, Debug, ValueEnum)]
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
    /// The TOML config file (see docs/DBUS.md); without it, every setting is its default.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The GGUF model file (overrides `model` in the config).
    #[arg(long)]
    model: Option<PathBuf>,
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("SEQGPT_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config = match &args.config {
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
