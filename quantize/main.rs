//! `seqgpt-quantize`: a Hugging Face BLOOM checkpoint into one GGUF file (plain, RTN or
//! calibrated AWQ INT4; AutoAWQ checkpoints imported), and quality checks of the result.

use anyhow::Context;
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use seqgpt_engine::engine::Engine;
use seqgpt_engine::gguf::{GgmlType, GgufFile};
use seqgpt_quantize::eval::{compare_engines, simulate, SimMethod};
use seqgpt_quantize::pipeline::{self, Method, Options, DEFAULT_EMBD_TYPE};
use seqgpt_quantize::progress::Progress;
use seqgpt_quantize::rtn::GroupQuant;
use std::path::PathBuf;

/// Weight type of AWQ / RTN files unless --wtype says otherwise (docs/QUANTIZATION.md).
const DEFAULT_WTYPE: GgmlType = GgmlType::Q4_0;

#[derive(Parser, Debug)]
#[command(
    name = "seqgpt-quantize",
    version,
    about = "Convert and quantize a BLOOM checkpoint into GGUF (plain, RTN, AWQ INT4, AutoAWQ import)",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    #[command(flatten)]
    quantize: QuantizeArgs,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Compare a quantized GGUF file with a reference (f32) one through the engine: mean KL
    /// of next-token distributions, top-1 agreement, logit differences (JSON).
    Eval(EvalArgs),
    /// Quantize in memory and compare with the full-precision checkpoint (no file written):
    /// quick what-ifs, including settings no runtime supports yet (--scale-down).
    Simulate(SimulateArgs),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum MethodArg {
    Plain,
    Rtn,
    Awq,
    Import,
}

#[derive(Args, Debug)]
struct CalibArgs {
    /// Calibration text (UTF-8, paragraphs separated by blank lines); default: the Vim tutor
    /// in 8 languages shipped with the tool. Every 8th paragraph is held out for evaluation.
    #[arg(long)]
    calib: Option<PathBuf>,
    /// Calibration samples (blocks of --calib-len tokens).
    #[arg(long, default_value_t = 64)]
    calib_samples: usize,
    /// Tokens per calibration sample.
    #[arg(long, default_value_t = 256)]
    calib_len: usize,
}

#[derive(Args, Debug)]
struct AwqArgs {
    /// Points of the alpha grid (0, 1/N, ..., (N-1)/N).
    #[arg(long, default_value_t = 20)]
    grid: usize,
    /// AutoAWQ's duo scaling: s = mean|x|^a / mean|w|^(1-a) instead of mean|x|^a.
    #[arg(long)]
    duo_scaling: bool,
    /// Skip the clipping search.
    #[arg(long)]
    no_clip: bool,
}

#[derive(Args, Debug)]
struct QuantizeArgs {
    /// The Hugging Face checkpoint directory (config.json, tokenizer.json, weights).
    #[arg(long, required = true)]
    model: Option<PathBuf>,
    /// Output GGUF file.
    #[arg(long, required = true)]
    out: Option<PathBuf>,
    /// plain: ggml's reference rounding (default; AutoAWQ checkpoints: import), rtn: group
    /// round-to-nearest, awq: calibrated AWQ, import: an AutoAWQ checkpoint's own INT4.
    #[arg(long, value_enum)]
    method: Option<MethodArg>,
    /// Weight type of the matrices: f32, f16, bf16, q8_0, q6_K, q5_0, q5_1, q4_0, q4_1
    /// (rtn/awq: q4_0, q4_1, q5_0, q5_1, q8_0). Default: f16 (plain), q4_0 (rtn, awq).
    #[arg(long, value_parser = parse_type)]
    wtype: Option<GgmlType>,
    /// Type of the token embedding (and the tied LM head). Default: --wtype (plain), q6_K
    /// (rtn, awq, import).
    #[arg(long, value_parser = parse_type)]
    embd_type: Option<GgmlType>,
    /// Input channels sharing one scale (rtn, awq): a multiple of 32.
    #[arg(long, default_value_t = 32)]
    group_size: usize,
    #[command(flatten)]
    calib: CalibArgs,
    #[command(flatten)]
    awq: AwqArgs,
    /// Type of dense_4h_to_h when an imported AutoAWQ checkpoint's GELU scales are folded
    /// into it (it is then off the 4-bit grid).
    #[arg(long, default_value = "q8_0", value_parser = parse_type)]
    act_scaled_type: GgmlType,
    /// No progress output.
    #[arg(long)]
    quiet: bool,
    /// Print a JSON summary on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct EvalArgs {
    /// The reference file (f32: `seqgpt-quantize --model HF --out ref.gguf --wtype f32`).
    #[arg(long, required_unless_present = "llamacpp_logits")]
    reference: Option<PathBuf>,
    /// Instead of a reference file: llama.cpp's logits for this same file (JSON lines of
    /// tests/llamacpp's seqgpt-llama-harness with --all); the engine runs the same token ids.
    #[arg(long, conflicts_with = "reference")]
    llamacpp_logits: Option<PathBuf>,
    /// The file to judge.
    #[arg(long)]
    model: PathBuf,
    /// Text whose held-out paragraphs are the prompts (default: the shipped text).
    #[arg(long)]
    calib: Option<PathBuf>,
    /// Number of prompts.
    #[arg(long, default_value_t = 32)]
    prompts: usize,
    /// Tokens per prompt at most.
    #[arg(long, default_value_t = 128)]
    prompt_len: usize,
}

#[derive(Args, Debug)]
struct SimulateArgs {
    #[arg(long)]
    model: PathBuf,
    #[arg(long, value_enum, default_value = "awq")]
    method: MethodArg,
    /// Block matrix type (f32: left unquantized, to judge --embd-type alone).
    #[arg(long, value_parser = parse_type, default_value = "q4_0")]
    wtype: GgmlType,
    /// Token embedding / tied head type (f32: left as is). With --head-only, a
    /// comma-separated list.
    #[arg(long, value_parser = parse_type, default_value = "f32", value_delimiter = ',')]
    embd_type: Vec<GgmlType>,
    /// Only the LM head: full-precision hidden states, logits through the f32 head vs the
    /// head in each --embd-type (and the embedding rows' relative RMS error).
    #[arg(long)]
    head_only: bool,
    #[arg(long, default_value_t = 32)]
    group_size: usize,
    #[command(flatten)]
    calib: CalibArgs,
    #[command(flatten)]
    awq: AwqArgs,
    /// Also search GELU -> dense_4h_to_h activation scales (AutoAWQ's ScaledActivation).
    #[arg(long)]
    scale_down: bool,
    #[arg(long, default_value_t = 32)]
    prompts: usize,
    #[arg(long, default_value_t = 128)]
    prompt_len: usize,
    #[arg(long)]
    quiet: bool,
}

fn parse_type(s: &str) -> Result<GgmlType, String> {
    GgmlType::from_name(s).ok_or_else(|| format!("unknown type '{s}' (f32, f16, bf16, q8_0, q6_K, q5_0, q5_1, q4_0, q4_1)"))
}

fn main() {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.cmd {
        Some(Cmd::Eval(a)) => eval(a),
        Some(Cmd::Simulate(a)) => simulate_cmd(a),
        None => quantize(cli.quantize, &matches),
    };
    if let Err(e) = result {
        eprintln!("seqgpt-quantize: {e:#}");
        std::process::exit(1);
    }
}

/// Flags that only some methods read, with those methods. A flag given on the command line
/// for another method is refused rather than silently ignored.
const METHOD_FLAGS: [(&str, &str, &[Method]); 9] = [
    ("wtype", "--wtype", &[Method::Plain, Method::Rtn, Method::Awq]),
    ("group_size", "--group-size", &[Method::Rtn, Method::Awq]),
    ("calib", "--calib", &[Method::Awq]),
    ("calib_samples", "--calib-samples", &[Method::Awq]),
    ("calib_len", "--calib-len", &[Method::Awq]),
    ("grid", "--grid", &[Method::Awq]),
    ("duo_scaling", "--duo-scaling", &[Method::Awq]),
    ("no_clip", "--no-clip", &[Method::Awq]),
    ("act_scaled_type", "--act-scaled-type", &[Method::Import]),
];

/// The first flag in `matches` (given on the command line) that `method` does not read.
fn flag_not_for(method: Method, matches: &ArgMatches) -> Option<String> {
    let (_, flag, methods) = METHOD_FLAGS
        .iter()
        .find(|(id, _, methods)| matches.value_source(id) == Some(ValueSource::CommandLine) && !methods.contains(&method))?;
    let for_methods: Vec<&str> = methods.iter().map(|&m| cli_name(m)).collect();
    let why = match method {
        Method::Import => " (import keeps the checkpoint's own 4-bit weights and groups)",
        Method::Plain => " (plain rounds each tensor to its ggml type, in that type's fixed blocks)",
        _ => "",
    };
    Some(format!("{flag} does not apply to --method {}{why}; it is read by: {}", cli_name(method), for_methods.join(", ")))
}

/// The method's `--method` value.
fn cli_name(m: Method) -> &'static str {
    match m {
        Method::Plain => "plain",
        Method::Rtn => "rtn",
        Method::Awq => "awq",
        Method::Import => "import",
    }
}

fn quantize(a: QuantizeArgs, matches: &ArgMatches) -> anyhow::Result<()> {
    let model = a.model.context("--model is required")?;
    let out = a.out.context("--out is required")?;
    let is_awq_ckpt = seqgpt_quantize::autoawq::detect(&model)?.is_some();
    let method = match a.method {
        Some(MethodArg::Plain) => Method::Plain,
        Some(MethodArg::Rtn) => Method::Rtn,
        Some(MethodArg::Awq) => Method::Awq,
        Some(MethodArg::Import) => Method::Import,
        None if is_awq_ckpt => Method::Import,
        None => Method::Plain,
    };
    if let Some(msg) = flag_not_for(method, matches) {
        anyhow::bail!(msg);
    }
    let wtype = a.wtype.unwrap_or(match method {
        Method::Plain => GgmlType::F16,
        _ => DEFAULT_WTYPE,
    });
    let embd_type = a.embd_type.unwrap_or(if method == Method::Plain { wtype } else { DEFAULT_EMBD_TYPE });
    let opts = Options {
        model,
        out,
        method,
        wtype,
        embd_type,
        group_size: a.group_size,
        calib: a.calib.calib,
        calib_samples: a.calib.calib_samples,
        calib_len: a.calib.calib_len,
        n_grid: a.awq.grid,
        duo_scaling: a.awq.duo_scaling,
        clip: !a.awq.no_clip,
        act_scaled_type: a.act_scaled_type,
        quiet: a.quiet,
    };
    let s = pipeline::run(&opts).with_context(|| format!("quantizing {}", opts.model.display()))?;
    eprintln!(
        "wrote {} ({} tensors, {:.1} MB, {}, embedding {}) in {:.1}s, peak RSS {} MB (anonymous {} MB)",
        opts.out.display(),
        s.tensors,
        s.bytes as f64 / 1e6,
        method.name(),
        opts.embd_type,
        s.seconds,
        s.peak_rss >> 20,
        s.peak_anon >> 20
    );
    if a.json {
        let layers: Vec<serde_json::Value> = s
            .reports
            .iter()
            .map(|r| {
                serde_json::json!({
                    "qkv_alpha": r.qkv.alpha, "qkv_loss_rtn": r.qkv.loss_rtn, "qkv_loss": r.qkv.loss_best,
                    "up_alpha": r.up.alpha, "up_loss_rtn": r.up.loss_rtn, "up_loss": r.up.loss_best,
                })
            })
            .collect();
        let j = serde_json::json!({
            "out": opts.out, "method": method.name(), "wtype": opts.wtype.name(), "embd_type": opts.embd_type.name(),
            "group_size": opts.group_size, "bytes": s.bytes, "tensors": s.tensors, "seconds": s.seconds,
            "peak_rss_bytes": s.peak_rss, "peak_anon_bytes": s.peak_anon, "calib_tokens": s.calib_tokens, "layers": layers,
        });
        println!("{j}");
    }
    Ok(())
}

fn eval(a: EvalArgs) -> anyhow::Result<()> {
    let cpu = candle_core::Device::Cpu;
    if let Some(path) = &a.llamacpp_logits {
        let quant = Engine::open(&a.model, &cpu).with_context(|| format!("loading {}", a.model.display()))?;
        let reader = std::io::BufReader::new(std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?);
        let m = seqgpt_quantize::eval::compare_with_llamacpp(&quant, reader, None)?;
        let mut j = m.to_json();
        j["model"] = a.model.display().to_string().into();
        j["reference"] = "llama.cpp".into();
        println!("{j}");
        return Ok(());
    }
    let reference_path = a.reference.context("--reference or --llamacpp-logits is required")?;
    let file = GgufFile::open(&reference_path)?;
    let tok = file
        .get("tokenizer.huggingface.json")
        .and_then(|v| v.as_str())
        .context("the reference file has no tokenizer.huggingface.json")?
        .to_string();
    drop(file);
    let prompts = pipeline::eval_prompts(&tok, a.calib.as_deref(), a.prompts, a.prompt_len)?;
    let reference = Engine::open(&reference_path, &cpu).with_context(|| format!("loading {}", reference_path.display()))?;
    let quant = Engine::open(&a.model, &cpu).with_context(|| format!("loading {}", a.model.display()))?;
    let progress = Progress::new(prompts.len() as u64, false);
    let m = compare_engines(&reference, &quant, &prompts, Some(&progress))?;
    progress.finish();
    let mut j = m.to_json();
    j["prompts"] = prompts.len().into();
    j["model"] = a.model.display().to_string().into();
    j["reference"] = reference_path.display().to_string().into();
    println!("{j}");
    Ok(())
}

fn simulate_cmd(a: SimulateArgs) -> anyhow::Result<()> {
    let ckpt = seqgpt_quantize::convert::HfCheckpoint::open(&a.model)?;
    if a.head_only {
        let prompts = pipeline::eval_prompts(&ckpt.tokenizer_json, a.calib.calib.as_deref(), a.prompts, a.prompt_len)?;
        let progress = Progress::new((ckpt.config.n_layer + a.embd_type.len()) as u64, a.quiet);
        let rows = seqgpt_quantize::eval::head_sweep(&ckpt, &a.embd_type, &prompts, &progress)?;
        progress.finish();
        for (t, m, rel) in rows {
            let mut j = m.to_json();
            j["head_type"] = t.name().into();
            j["embedding_rel_rms_error"] = rel.into();
            j["prompts"] = prompts.len().into();
            println!("{j}");
        }
        return Ok(());
    }
    let [embd_type] = a.embd_type[..] else { anyhow::bail!("--embd-type takes one type unless --head-only") };
    let gq = || GroupQuant::new(a.wtype, a.group_size);
    let method = match a.method {
        _ if a.wtype == GgmlType::F32 => SimMethod::Full,
        MethodArg::Rtn => SimMethod::Rtn(gq()?),
        MethodArg::Awq => {
            let mut c = seqgpt_quantize::awq::AwqConfig::new(gq()?);
            c.n_grid = a.awq.grid.max(1);
            c.duo_scaling = a.awq.duo_scaling;
            c.clip = !a.awq.no_clip;
            c.scale_down = a.scale_down;
            SimMethod::Awq(c)
        }
        other => anyhow::bail!("simulate runs rtn or awq, not {other:?}"),
    };
    let samples = match method {
        SimMethod::Awq(_) => pipeline::calibration_samples(&ckpt, a.calib.calib.as_deref(), a.calib.calib_samples, a.calib.calib_len)?,
        SimMethod::Rtn(_) | SimMethod::Full => Vec::new(),
    };
    let prompts = pipeline::eval_prompts(&ckpt.tokenizer_json, a.calib.calib.as_deref(), a.prompts, a.prompt_len)?;
    let units = match method {
        SimMethod::Awq(c) => ckpt.config.n_layer * c.units_per_layer(),
        SimMethod::Rtn(_) | SimMethod::Full => ckpt.config.n_layer,
    };
    let progress = Progress::new(units as u64, a.quiet);
    let started = std::time::Instant::now();
    let (m, reports) = simulate(&ckpt, method, embd_type, &samples, &prompts, &progress)?;
    progress.finish();
    let mut j = m.to_json();
    j["method"] = format!("{:?}", a.method).to_lowercase().into();
    j["wtype"] = a.wtype.name().into();
    j["embd_type"] = embd_type.name().into();
    j["group_size"] = a.group_size.into();
    j["scale_down"] = a.scale_down.into();
    j["duo_scaling"] = a.awq.duo_scaling.into();
    j["clip"] = (!a.awq.no_clip).into();
    j["prompts"] = prompts.len().into();
    j["seconds"] = started.elapsed().as_secs_f64().into();
    j["alphas"] = reports.iter().map(|r| serde_json::json!([r.qkv.alpha, r.up.alpha, r.down.map(|d| d.alpha)])).collect::<Vec<_>>().into();
    println!("{j}");
    Ok(())
}
