//! `seqgpt-quantize`: convert a Hugging Face BLOOM checkpoint into one GGUF file.

use anyhow::Context;
use clap::Parser;
use seqgpt::convert::convert_plain;
use seqgpt::gguf::GgmlType;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(name = "seqgpt-quantize", version, about = "Convert and quantize a BLOOM checkpoint into GGUF")]
struct Args {
    /// The Hugging Face checkpoint directory (config.json, tokenizer.json, weights).
    #[arg(long)]
    model: PathBuf,
    /// Output GGUF file.
    #[arg(long)]
    out: PathBuf,
    /// Weight type of the matrices: f32, f16, bf16, q8_0, q4_0, q4_1.
    #[arg(long, default_value = "f16", value_parser = parse_type)]
    wtype: GgmlType,
    /// Type of the token embedding (and tied head); default: the same as --wtype.
    #[arg(long, value_parser = parse_type)]
    embd_type: Option<GgmlType>,
}

fn parse_type(s: &str) -> Result<GgmlType, String> {
    GgmlType::from_name(s).ok_or_else(|| format!("unknown type '{s}' (f32, f16, bf16, q8_0, q4_0, q4_1)"))
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("seqgpt-quantize: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let embd = args.embd_type.unwrap_or(args.wtype);
    let started = std::time::Instant::now();
    let summary = convert_plain(&args.model, &args.out, args.wtype, embd, |_, _| {})
        .with_context(|| format!("converting {}", args.model.display()))?;
    eprintln!(
        "wrote {} ({} tensors, {:.1} MB) in {:.1}s",
        args.out.display(),
        summary.tensors,
        summary.bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
