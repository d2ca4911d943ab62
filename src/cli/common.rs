//! Arguments and helpers shared by the subcommands.

use crate::engine::Engine;
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

/// Sets the size of the CPU kernels' thread pool (once per process).
pub fn init_threads(threads: usize) {
    if threads > 0 {
        // Fails only if the pool was already built, which keeps the first setting.
        let _ = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global();
    }
}

pub fn open_engine(args: &ModelArgs) -> anyhow::Result<Engine> {
    init_threads(args.threads);
    let device = crate::device::select(&args.device)?;
    Engine::open(&args.model, &device).with_context(|| format!("loading {}", args.model.display()))
}
