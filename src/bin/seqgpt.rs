//! `seqgpt`: the command-line tool (summarize, jobs, classify, extract, generate, ...). The
//! command line itself is `seqgpt::cli::Cli`.

use clap::Parser;
use seqgpt::cli;

fn main() {
    // A closed pipe (`seqgpt ... | head`) ends the process quietly, as for any Unix tool,
    // instead of a panic inside println!.
    // SAFETY: restoring the default disposition of a signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    cli::logging::init("seqgpt", "warn,lopdf=off");
    if let Err(err) = cli::run(cli::Cli::parse()) {
        eprintln!("seqgpt: {err:#}");
        std::process::exit(1);
    }
}
