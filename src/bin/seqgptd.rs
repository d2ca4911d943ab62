//! `seqgptd`: the D-Bus summarization daemon (`org.seqgpt.Summarizer1`).
//!
//! ```text
//! seqgptd [--bus session|system] [--address unix:path=...] [--config FILE] [--model FILE]
//! ```
//! docs/DBUS.md documents the API; systemd starts it as
//! `seqgptd --bus system --config /etc/seqgpt/seqgptd.toml`. The command line is
//! `seqgpt::cli::seqgptd` (where the man page is generated from too).

use clap::Parser;
use seqgpt::cli;

fn main() {
    cli::logging::init("seqgptd", "info,lopdf=off");
    let args = cli::seqgptd::DaemonArgs::parse();
    std::process::exit(cli::seqgptd::run(args));
}
