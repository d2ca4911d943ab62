//! `seqgpt bench`: open time, prefill and decode speed per batch size, time to first token
//! and peak memory, on synthetic prompts. `--json` prints the contract scripts read:
//! `{"open_s", "peak_rss_bytes", "runs": [{"batch", "prompt_tokens", "gen_tokens",
//! "prefill_tok_s", "decode_tok_s", "ttft_s"}]}` (decode_tok_s aggregates the batch), plus
//! informative fields (`rss_after_open_bytes`, `file_bytes`, `device`, `threads`,
//! `cpu_kernels`: which CPU matmul kernels this machine runs, e.g. "avx2 packed").

use super::common::{init_threads, ModelArgs};
use seqgpt_engine::engine::Engine;
use seqgpt_engine::model::Logits;
use seqgpt_engine::sysinfo::{peak_rss_bytes, rss_bytes};
use anyhow::Context;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Prompt lengths to measure (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [128usize, 512])]
    pub prompt_tokens: Vec<usize>,
    /// Tokens to decode per run.
    #[arg(long, default_value_t = 64)]
    pub gen_tokens: usize,
    /// Batch sizes to measure (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 4, 8])]
    pub batch: Vec<usize>,
    /// Repeat each measurement and keep the best (noise on shared machines).
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Print one JSON object (the fields above) instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct Run {
    batch: usize,
    prompt_tokens: usize,
    gen_tokens: usize,
    prefill_tok_s: f64,
    decode_tok_s: f64,
    ttft_s: f64,
}

/// Deterministic prompt ids spread over the tokenizer's ordinary tokens (never EOS/pad).
fn synthetic_prompt(engine: &Engine, len: usize, row: usize) -> Vec<u32> {
    let known = engine.tokenizer.vocab_size().unwrap_or(engine.model.cfg.vocab);
    let vocab = known.clamp(8, engine.model.cfg.vocab) as u64;
    let specials = [engine.tokenizer.eos_id, engine.tokenizer.bos_id, engine.tokenizer.pad_id];
    let mut x = 0x2545F4914F6CDD1Du64 ^ (row as u64).wrapping_mul(0x9E3779B97F4A7C15);
    (0..len)
        .map(|_| loop {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let id = (x % vocab) as u32;
            if !specials.contains(&Some(id)) {
                break id;
            }
        })
        .collect()
}

fn measure(engine: &Engine, batch: usize, prompt_len: usize, gen: usize) -> anyhow::Result<Run> {
    let m = &engine.model;
    let prompts: Vec<Vec<u32>> = (0..batch).map(|r| synthetic_prompt(engine, prompt_len, r)).collect();
    let mask = vec![vec![1u8; prompt_len]; batch];
    let mut cache = m.new_cache(batch, prompt_len + gen)?;
    let start = Instant::now();
    let logits = m.forward(&prompts, &mask, &mut cache, Logits::Last)?;
    let mut next: Vec<u32> = logits.argmax(candle_core::D::Minus1)?.to_vec1()?;
    let prefill = start.elapsed().as_secs_f64();
    let step_mask = vec![vec![1u8]; batch];
    let start = Instant::now();
    for _ in 1..gen {
        let ids: Vec<Vec<u32>> = next.iter().map(|&t| vec![t]).collect();
        let logits = m.forward(&ids, &step_mask, &mut cache, Logits::Last)?;
        next = logits.argmax(candle_core::D::Minus1)?.to_vec1()?;
    }
    let decode = start.elapsed().as_secs_f64();
    let steps = gen.saturating_sub(1).max(1);
    Ok(Run {
        batch,
        prompt_tokens: prompt_len,
        gen_tokens: gen,
        prefill_tok_s: (batch * prompt_len) as f64 / prefill,
        decode_tok_s: (batch * steps) as f64 / decode,
        ttft_s: prefill,
    })
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    init_threads(args.model.threads);
    let device = seqgpt_engine::device::select(&args.model.device)?;
    let file_bytes = std::fs::metadata(&args.model.model).map(|m| m.len()).unwrap_or(0);
    let start = Instant::now();
    let engine = Engine::open(&args.model.model, &device).with_context(|| format!("loading {}", args.model.model.display()))?;
    let open_s = start.elapsed().as_secs_f64();
    let rss_after_open = rss_bytes();
    // Warm-up: page in weights and initialize kernels outside the timings.
    measure(&engine, 1, 8, 2)?;
    let mut runs = Vec::new();
    for &p in &args.prompt_tokens {
        for &b in &args.batch {
            let mut best: Option<Run> = None;
            for _ in 0..args.repeat.max(1) {
                let r = measure(&engine, b, p, args.gen_tokens)?;
                best = Some(match best {
                    Some(x) if x.decode_tok_s >= r.decode_tok_s => Run { prefill_tok_s: x.prefill_tok_s.max(r.prefill_tok_s), ttft_s: x.ttft_s.min(r.ttft_s), ..x },
                    Some(x) => Run { prefill_tok_s: x.prefill_tok_s.max(r.prefill_tok_s), ttft_s: x.ttft_s.min(r.ttft_s), ..r },
                    None => r,
                });
            }
            let r = best.expect("at least one repeat");
            if !args.json {
                eprintln!(
                    "batch {:>2}  prompt {:>4}  prefill {:>9.1} tok/s  ttft {:>7.3} s  decode {:>8.1} tok/s",
                    r.batch, r.prompt_tokens, r.prefill_tok_s, r.ttft_s, r.decode_tok_s
                );
            }
            runs.push(r);
        }
    }
    let threads = rayon::current_num_threads();
    let out = serde_json::json!({
        "open_s": open_s,
        "peak_rss_bytes": peak_rss_bytes(),
        "rss_after_open_bytes": rss_after_open,
        "file_bytes": file_bytes,
        "device": seqgpt_engine::device::describe(&device),
        "threads": threads,
        "cpu_kernels": seqgpt_engine::kernels::packed::kernel_family(),
        "runs": runs,
    });
    if args.json {
        println!("{out}");
    } else {
        eprintln!(
            "open {:.3} s, RSS after open {:.1} MB (file {:.1} MB), peak RSS {:.1} MB, {} threads, CPU kernels: {}",
            open_s,
            rss_after_open as f64 / 1e6,
            file_bytes as f64 / 1e6,
            peak_rss_bytes() as f64 / 1e6,
            threads,
            seqgpt_engine::kernels::packed::kernel_family()
        );
    }
    Ok(())
}
