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
    /// Print a PDF's text, pages separated by form feeds.
    ExtractText(cli::extract_text::ExtractTextArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::ExtractText(args) => cli::extract_text::run(args),
    };
    if let Err(err) = result {
        eprintln!("seqgpt: {err:#}");
        std::process::exit(1);
    }
}
