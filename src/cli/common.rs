//! Arguments and helpers shared by the subcommands.

use seqgpt_engine::engine::Engine;
use anyhow::Context;

#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// The GGUF model file.
    #[arg(long)]
    pub model: std::path::PathBuf,
    /// auto, cpu or cuda:N.
    #[arg(long, default_value = "auto")]
    pub device: String,
    /// Worker threads for the CPU kernels (0 = all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

pub use seqgpt_engine::device::init_threads;

pub fn open_engine(args: &ModelArgs) -> anyhow::Result<Engine> {
    init_threads(args.threads);
    let device = seqgpt_engine::device::select(&args.device)?;
    Engine::open(&args.model, &device).with_context(|| format!("loading {}", args.model.display()))
}
