//! `seqgpt logits`: the last position's logits for a prompt, as JSON.

use super::common::{open_engine, ModelArgs};

#[derive(clap::Args, Debug)]
pub struct LogitsArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The prompt (or --prompts-file).
    #[arg(long, conflicts_with = "prompts_file", required_unless_present = "prompts_file")]
    pub prompt: Option<String>,
    /// One JSON string per line; prints one JSON object per line, in order.
    #[arg(long)]
    pub prompts_file: Option<std::path::PathBuf>,
    /// Only the N largest logits (`top_ids`, `top_logits`).
    #[arg(long)]
    pub top: Option<usize>,
    /// Print JSON (the only format; accepted for symmetry with `generate`).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: LogitsArgs) -> anyhow::Result<()> {
    let prompts = super::generate::read_prompts(args.prompt.as_deref(), args.prompts_file.as_deref())?;
    let engine = open_engine(&args.model)?;
    for prompt in &prompts {
        print_logits(&engine, prompt, args.top)?;
    }
    Ok(())
}

fn print_logits(engine: &seqgpt_engine::engine::Engine, prompt: &str, top: Option<usize>) -> anyhow::Result<()> {
    let ids = engine.encode(prompt)?;
    let logits = engine.last_logits(&ids)?;
    let out = match top {
        None => serde_json::json!({"ids": ids, "logits": logits}),
        Some(n) => {
            let mut order: Vec<usize> = (0..logits.len()).collect();
            order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]).then(a.cmp(&b)));
            order.truncate(n);
            let top_logits: Vec<f32> = order.iter().map(|&i| logits[i]).collect();
            serde_json::json!({"ids": ids, "top_ids": order, "top_logits": top_logits})
        }
    };
    println!("{out}");
    Ok(())
}
