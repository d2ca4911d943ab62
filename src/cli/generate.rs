//! `seqgpt generate`: run the model on one prompt or a batch of prompts.

use super::common::{open_engine, ModelArgs};
use seqgpt_engine::generate::{GenerationConfig, Sampling};
use anyhow::Context;

#[derive(clap::Args, Debug)]
pub struct GenerateArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The prompt text.
    #[arg(long, conflicts_with = "prompts_file", required_unless_present = "prompts_file")]
    pub prompt: Option<String>,
    /// A file with one JSON string per line; all run as one batch.
    #[arg(long)]
    pub prompts_file: Option<std::path::PathBuf>,
    /// The most tokens to generate per prompt.
    #[arg(long, default_value_t = 64)]
    pub max_new_tokens: usize,
    /// Greedy decoding (the default unless --temperature is given).
    #[arg(long, conflicts_with_all = ["temperature", "top_k", "top_p", "seed"])]
    pub greedy: bool,
    /// Sample with this temperature (0 and up) instead of greedy decoding.
    #[arg(long)]
    pub temperature: Option<f32>,
    /// When sampling: only among the K most likely tokens.
    #[arg(long)]
    pub top_k: Option<usize>,
    /// When sampling: only among the most likely tokens whose probabilities add up to P (0 < P <= 1).
    #[arg(long)]
    pub top_p: Option<f32>,
    /// When sampling: the random seed (the same seed gives the same text).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// 1.0 = off (SeqGPT's own setting is 2.0).
    #[arg(long, default_value_t = 1.0)]
    pub repetition_penalty: f32,
    /// Stop when the generated text contains this (repeatable).
    #[arg(long = "stop")]
    pub stop: Vec<String>,
    /// Do not stop at the end-of-sequence token.
    #[arg(long)]
    pub ignore_eos: bool,
    /// Beam search with this many beams (1: no beam search).
    #[arg(long, default_value_t = 1)]
    pub num_beams: usize,
    /// One JSON object per prompt: {"ids": [...], "text": "..."}.
    #[arg(long)]
    pub json: bool,
}

/// The prompt, or the prompts of a file with one JSON string per line.
pub fn read_prompts(prompt: Option<&str>, file: Option<&std::path::Path>) -> anyhow::Result<Vec<String>> {
    match (prompt, file) {
        (Some(p), _) => Ok(vec![p.to_string()]),
        (None, Some(f)) => {
            let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            text.lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| serde_json::from_str::<String>(l).with_context(|| format!("{} line {}: not a JSON string", f.display(), i + 1)))
                .collect()
        }
        (None, None) => anyhow::bail!("give --prompt or --prompts-file"),
    }
}

pub fn run(args: GenerateArgs) -> anyhow::Result<()> {
    let prompts = read_prompts(args.prompt.as_deref(), args.prompts_file.as_deref())?;
    if let Some(t) = args.temperature {
        anyhow::ensure!(t.is_finite() && t >= 0.0, "--temperature must be >= 0");
    }
    if let Some(p) = args.top_p {
        anyhow::ensure!(p > 0.0 && p <= 1.0, "--top-p must be in (0, 1]");
    }
    anyhow::ensure!(args.repetition_penalty > 0.0, "--repetition-penalty must be > 0");
    anyhow::ensure!(args.num_beams >= 1, "--num-beams must be >= 1");
    let sampling = match args.temperature {
        Some(temperature) if !args.greedy => {
            Sampling::Sample { temperature, top_k: args.top_k, top_p: args.top_p, seed: args.seed }
        }
        _ => Sampling::Greedy,
    };
    let cfg = GenerationConfig {
        max_new_tokens: args.max_new_tokens,
        sampling,
        repetition_penalty: args.repetition_penalty,
        stop_on_eos: !args.ignore_eos,
        stop_strings: args.stop.clone(),
        num_beams: args.num_beams,
        ..GenerationConfig::default()
    };
    let engine = open_engine(&args.model)?;
    let ids = prompts.iter().map(|p| engine.encode(p)).collect::<Result<Vec<_>, _>>()?;
    let out = engine.generate(&ids, &cfg)?;
    for g in out {
        if args.json {
            println!("{}", serde_json::json!({"ids": g.ids, "text": g.text, "finish": g.finish}));
        } else {
            println!("{}", g.text);
        }
    }
    Ok(())
}
