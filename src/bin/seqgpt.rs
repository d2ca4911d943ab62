//! `seqgpt`: the command-line tool (generate, logits, extract-text, bench, ...).

use clap::{Parser, Subcommand};
use seqgpt::cli;

#[derive(Parser)]
#[command(name = "seqgpt", version, about = "Offline SeqGPT/BLOOM inference and PDF summarization")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate text from a prompt (or a batch of prompts).
    Generate(cli::generate::GenerateArgs),
    /// Print the last position's logits for a prompt as JSON.
    Logits(cli::logits::LogitsArgs),
    /// Measure open time, prefill/decode speed and memory on synthetic prompts.
    Bench(cli::bench::BenchArgs),
    /// Show the device, its memory, the Jetson model and a model's placement plan.
    Info(cli::info::InfoArgs),
    /// Print a PDF's text, pages separated by form feeds.
    ExtractText(cli::extract_text::ExtractTextArgs),
    /// Summarize a PDF: ask the seqgptd daemon over D-Bus, or run in this process with --local.
    Summarize(cli::summarize::SummarizeArgs),
    /// List your jobs on the daemon, wait for one (reattach) or cancel one.
    Jobs(cli::jobs::JobsArgs),
    /// Ask the daemon's model which of some labels apply to a text.
    Classify(cli::tasks::ClassifyArgs),
    /// Ask the daemon's model for the spans of a text of each kind (people, places, ...).
    Extract(cli::tasks::ExtractArgs),
}

fn main() {
    // A closed pipe (`seqgpt ... | head`) ends the process quietly, as for any Unix tool,
    // instead of a panic inside println!.
    // SAFETY: restoring the default disposition of a signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("SEQGPT_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Generate(args) => cli::generate::run(args),
        Command::Logits(args) => cli::logits::run(args),
        Command::Bench(args) => cli::bench::run(args),
        Command::Info(args) => cli::info::run(args),
        Command::ExtractText(args) => cli::extract_text::run(args),
        Command::Summarize(args) => cli::summarize::run(args),
        Command::Jobs(args) => cli::jobs::run(args),
        Command::Classify(args) => cli::tasks::classify(args),
        Command::Extract(args) => cli::tasks::extract(args),
    };
    if let Err(err) = result {
        eprintln!("seqgpt: {err:#}");
        std::process::exit(1);
    }
}
