//! The command lines of `seqgpt` (one module per subcommand) and `seqgptd` ([`seqgptd`]),
//! defined here rather than in the binaries so that their man pages and shell completions
//! ([`docs`]) are generated from the same definitions.

pub mod bench;
pub mod common;
pub mod docs;
pub mod extract_text;
pub mod generate;
pub mod info;
pub mod jobs;
pub mod logging;
pub mod logits;
pub mod model;
pub mod remote;
pub mod seqgptd;
pub mod show;
pub mod summarize;
pub mod tasks;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "seqgpt",
    version,
    about = "Offline SeqGPT/BLOOM inference and PDF summarization",
    long_about = "Offline SeqGPT/BLOOM inference and PDF summarization. `seqgpt summarize FILE.pdf` asks the \
                  seqgptd daemon (the system service where it is installed, else the user's own) or, with \
                  --local, summarizes in this process; the other commands run a GGUF model directly."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Summarize a PDF: ask the seqgptd daemon over D-Bus, or run in this process with --local.
    Summarize(summarize::SummarizeArgs),
    /// Show a PDF's summary in the reader: its sentences highlighted where they stand (zathura
    /// live; Okular and Evince through an annotated copy), printed numbered.
    Show(show::ShowArgs),
    /// List your jobs on the daemon, wait for one (reattach) or cancel one.
    Jobs(jobs::JobsArgs),
    /// Ask the daemon's model which of some labels apply to a text.
    Classify(tasks::ClassifyArgs),
    /// Ask the daemon's model for the spans of a text of each kind (people, places, ...).
    Extract(tasks::ExtractArgs),
    /// Print a PDF's text, pages separated by form feeds.
    ExtractText(extract_text::ExtractTextArgs),
    /// Generate text from a prompt (or a batch of prompts).
    Generate(generate::GenerateArgs),
    /// Print the last position's logits for a prompt as JSON.
    Logits(logits::LogitsArgs),
    /// Measure open time, prefill/decode speed and memory on synthetic prompts.
    Bench(bench::BenchArgs),
    /// Show the device, its memory, the Jetson model and a model's placement plan.
    Info(info::InfoArgs),
    /// Model files: `seqgpt model check FILE` says what seqgptd would do with one.
    #[command(subcommand)]
    Model(model::ModelCommand),
}

/// Runs one `seqgpt` command.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Summarize(args) => summarize::run(args),
        Command::Show(args) => show::run(args),
        Command::Jobs(args) => jobs::run(args),
        Command::Classify(args) => tasks::classify(args),
        Command::Extract(args) => tasks::extract(args),
        Command::ExtractText(args) => extract_text::run(args),
        Command::Generate(args) => generate::run(args),
        Command::Logits(args) => logits::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Info(args) => info::run(args),
        Command::Model(cmd) => model::run(cmd),
    }
}
