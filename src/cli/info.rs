//! `seqgpt info`: the device, its memory, the Jetson model if any, and where each part of a
//! model would run (the placement plan).

use seqgpt_engine::gguf::GgufFile;
use seqgpt_engine::model::BloomConfig;
use anyhow::Context;

#[derive(clap::Args, Debug)]
pub struct InfoArgs {
    /// auto, cpu or cuda:N.
    #[arg(long, default_value = "auto")]
    pub device: String,
    /// A model file whose placement plan to print.
    #[arg(long)]
    pub model: Option<std::path::PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: InfoArgs) -> anyhow::Result<()> {
    let device = seqgpt_engine::device::select(&args.device)?;
    let info = seqgpt_engine::device::info(&device);
    let jetson = seqgpt_engine::sysinfo::jetson_model();
    let mut plan = Vec::new();
    if let Some(path) = &args.model {
        let file = GgufFile::open(path).with_context(|| format!("reading {}", path.display()))?;
        let cfg = BloomConfig::from_gguf(&file)?;
        let gpu = !device.is_cpu();
        let placement = seqgpt_engine::model::placement::plan(&file.tensors, gpu);
        for (t, place) in &placement.tensors {
            plan.push(serde_json::json!({"tensor": t.name, "type": t.dtype.name(), "bytes": t.byte_len, "device": place.describe()}));
        }
        if let Some(head) = placement.tied_head {
            plan.push(serde_json::json!({"tensor": "output (tied head)", "device": head.describe()}));
        }
        if !args.json {
            println!(
                "model: {} layers, hidden {}, {} heads, vocab {}; {:.1} MB of weights on the {}",
                cfg.n_layer,
                cfg.hidden,
                cfg.n_head,
                cfg.vocab,
                if gpu { placement.gpu_bytes } else { file.file_len() } as f64 / 1e6,
                if gpu { "gpu" } else { "cpu" }
            );
        }
    }
    if args.json {
        println!("{}", serde_json::json!({"device": info, "jetson": jetson, "placement": plan}));
        return Ok(());
    }
    println!("device: {} ({})", info.device, info.name);
    if let Some((major, minor)) = info.compute_capability {
        println!("compute capability: {major}.{minor}");
    }
    if let (Some(total), Some(free)) = (info.total_memory_bytes, info.free_memory_bytes) {
        println!("memory: {:.1} GiB total, {:.1} GiB free", total as f64 / (1u64 << 30) as f64, free as f64 / (1u64 << 30) as f64);
    }
    match jetson {
        Some((model, release)) => println!("jetson: {model}{}", release.map(|r| format!(" ({r})")).unwrap_or_default()),
        None => println!("jetson: no"),
    }
    println!("cuda support in this build: {}", candle_core::utils::cuda_is_available());
    for p in plan {
        println!("  {:<28} {:<6} {:>12} {}", p["tensor"].as_str().unwrap_or(""), p["type"].as_str().unwrap_or(""), p["bytes"].as_u64().map(|b| b.to_string()).unwrap_or_default(), p["device"].as_str().unwrap_or(""));
    }
    Ok(())
}
