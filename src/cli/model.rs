//! `seqgpt model check FILE`: what seqgptd would do with a model file, without starting it:
//! whether it loads (header, tensor table, every tensor the architecture needs, the embedded
//! tokenizer), its shape and quantization, the summary template it would pick and why, and
//! where its parts would run. Exit status 1 when the daemon could not use the file (it would
//! then summarize extractively).

use seqgpt_engine::arch::key;
use seqgpt_daemon::config::Config;
use seqgpt_engine::engine::Engine;
use seqgpt_engine::gguf::GgufFile;
use seqgpt_engine::model::BloomConfig;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(clap::Subcommand, Debug)]
pub enum ModelCommand {
    /// Say what seqgptd would do with a GGUF model file: load it or not, its architecture,
    /// size and quantization, the template it would pick, where it would run.
    Check(CheckArgs),
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The GGUF model file.
    pub file: PathBuf,
    /// Decide as the daemon with this config would (its device, threads and templates);
    /// default: the built-in defaults.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// auto, cpu or cuda:N (overrides the config's `device`).
    #[arg(long)]
    pub device: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cmd: ModelCommand) -> anyhow::Result<()> {
    match cmd {
        ModelCommand::Check(args) => check(args),
    }
}

fn check(args: CheckArgs) -> anyhow::Result<()> {
    let cfg = match &args.config {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    };
    let device_spec = args.device.clone().unwrap_or_else(|| cfg.device.clone());
    let report = match inspect(&args, &cfg, &device_spec) {
        Ok(r) => r,
        Err(why) => {
            let v = serde_json::json!({"file": args.file, "usable": false, "problem": why,
                "daemon": "would log the problem and summarize extractively"});
            if args.json {
                println!("{v}");
            } else {
                println!("{}: not usable: {why}", args.file.display());
                println!("seqgptd would log this and summarize extractively.");
            }
            std::process::exit(1);
        }
    };
    if args.json {
        println!("{report}");
        return Ok(());
    }
    let r = &report;
    println!("{}: usable", args.file.display());
    println!("  name          {}", r["name"].as_str().unwrap_or(""));
    println!("  architecture  {} ({} layers, hidden {}, {} heads, vocabulary {}, context {} tokens)",
        r["architecture"].as_str().unwrap_or(""), r["layers"], r["hidden"], r["heads"], r["vocabulary"], r["context_length"]);
    println!("  parameters    {:.1} M; file {:.1} MB", r["parameters"].as_f64().unwrap_or(0.0) / 1e6, r["file_bytes"].as_f64().unwrap_or(0.0) / 1e6);
    let types: Vec<String> = r["tensor_types"].as_object().map_or_else(Vec::new, |m| {
        m.iter().map(|(t, v)| format!("{t} x{} ({:.1} MB)", v["tensors"], v["bytes"].as_f64().unwrap_or(0.0) / 1e6)).collect()
    });
    println!("  tensors       {}", types.join(", "));
    println!("  tokenizer     {} ({} tokens)", r["tokenizer"].as_str().unwrap_or(""), r["tokenizer_tokens"]);
    println!("  template      {} ({})", r["template"].as_str().unwrap_or(""), r["template_reason"].as_str().unwrap_or(""));
    println!("  device        {}: {}", r["device"].as_str().unwrap_or(""), r["placement"].as_str().unwrap_or(""));
    println!("seqgptd would summarize with this model.");
    Ok(())
}

/// The report, or why the daemon could not use the file.
fn inspect(args: &CheckArgs, cfg: &Config, device_spec: &str) -> Result<serde_json::Value, String> {
    let path = &args.file;
    if !path.exists() {
        return Err("no such file".into());
    }
    let file = GgufFile::open(path).map_err(|e| format!("not a readable GGUF file: {e}"))?;
    let arch = file.get_str(key::ARCHITECTURE).map_err(|e| e.to_string())?.to_string();
    let shape = BloomConfig::from_gguf(&file).map_err(|e| format!("not a BLOOM-family model this daemon runs: {e}"))?;
    let device = seqgpt_engine::device::select(device_spec).map_err(|e| e.to_string())?;
    seqgpt_engine::device::init_threads(cfg.threads);
    // What the daemon does at start: the whole model is built (every tensor checked against
    // the architecture's table, the tokenizer read) on the device.
    let engine = Engine::open(path, &device).map_err(|e| format!("the daemon could not load it: {e}"))?;
    let name = file
        .get(key::NAME)
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| path.file_stem().map_or("model".into(), |s| s.to_string_lossy().into_owned()));
    let (template, _, reason) = cfg.template_for(&name);
    let mut types: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut parameters = 0u64;
    for t in &file.tensors {
        let e = types.entry(t.dtype.name().to_string()).or_default();
        e.0 += 1;
        e.1 += t.byte_len;
        parameters += t.elem_count();
    }
    let types: serde_json::Map<String, serde_json::Value> =
        types.into_iter().map(|(k, (n, b))| (k, serde_json::json!({"tensors": n, "bytes": b}))).collect();
    let tokens = file.get(key::TOKENS).and_then(|v| v.as_array()).map_or(0, |a| a.len());
    let tokenizer = file.get(key::TOKENIZER_MODEL).and_then(|v| v.as_str()).unwrap_or("?").to_string();
    let described = seqgpt_engine::device::describe(&device);
    let placement = if device.is_cpu() {
        "everything on the CPU, weights read from the mapped file".to_string()
    } else {
        let on_gpu = seqgpt_engine::model::placement::plan(&file.tensors, true).gpu_bytes;
        format!("token embeddings on the CPU, layers and head on the GPU ({:.1} MB)", on_gpu as f64 / 1e6)
    };
    drop(engine);
    Ok(serde_json::json!({
        "file": path, "usable": true, "name": name, "architecture": arch,
        "layers": shape.n_layer, "hidden": shape.hidden, "heads": shape.n_head, "vocabulary": shape.vocab,
        "context_length": shape.context_length, "parameters": parameters, "file_bytes": file.file_len(),
        "tensor_types": types, "tokenizer": tokenizer, "tokenizer_tokens": tokens,
        "template": template, "template_reason": reason, "device": described, "placement": placement,
    }))
}
