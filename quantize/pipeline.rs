//! Checkpoint -> GGUF with each method, on the converter's seams: a `TensorSource` that
//! yields (AWQ-transformed) f32 tensors and an `Encoder` that rounds them.
//!
//! AWQ runs inside the source, streaming: when the writer asks for block `i`'s first
//! tensor, block `i` is run in full precision over the calibration samples, searched,
//! folded and clipped; its tensors are served, and the block is dropped when block `i + 1`
//! starts. Only one block's weights and activations are alive at a time.

use crate::activations::Calibration;
use crate::autoawq::{self, AutoAwqEncoder, AutoAwqSource, AwqTensors};
use crate::awq::{quantize_layer, AwqConfig, LayerReport};
use crate::calib;
use crate::eval::{dims_of, plans_by_name};
use crate::forward::{Dims, LayerWeights};
use crate::progress::Progress;
use crate::rtn::{GroupEncoder, GroupQuant};
use anyhow::{bail, Context};
use crate::convert::{write_gguf, CheckpointSource, ConvertError, HfCheckpoint, TensorPlan, TensorSource, TypePlan};
use seqgpt_engine::gguf::{GgmlType, MetadataValue};
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// ggml's reference rounding per 32-value block (the plain converter).
    Plain,
    /// Round to nearest with groups of `--group-size`.
    Rtn,
    /// Calibrated AWQ.
    Awq,
    /// An AutoAWQ checkpoint's own quantization.
    Import,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Plain => "plain",
            Method::Rtn => "rtn",
            Method::Awq => "awq",
            Method::Import => "autoawq-import",
        }
    }
}

/// Default type of the token embedding (and tied LM head) for quantized files: see
/// docs/QUANTIZATION.md for the measurements behind it.
pub const DEFAULT_EMBD_TYPE: GgmlType = GgmlType::Q6_K;

#[derive(Debug, Clone)]
pub struct Options {
    pub model: PathBuf,
    pub out: PathBuf,
    pub method: Method,
    pub wtype: GgmlType,
    pub embd_type: GgmlType,
    pub group_size: usize,
    pub calib: Option<PathBuf>,
    pub calib_samples: usize,
    pub calib_len: usize,
    pub n_grid: usize,
    pub duo_scaling: bool,
    pub clip: bool,
    /// dense_4h_to_h type when an AutoAWQ checkpoint's GELU scales must be folded.
    pub act_scaled_type: GgmlType,
    pub quiet: bool,
}

#[derive(Debug, Clone)]
pub struct Summary {
    pub tensors: usize,
    pub bytes: u64,
    pub seconds: f64,
    pub peak_rss: u64,
    pub peak_anon: u64,
    pub calib_tokens: usize,
    pub reports: Vec<LayerReport>,
}

/// The AWQ source (see the module docs).
pub struct AwqSource<'a> {
    inner: CheckpointSource<'a>,
    plans: HashMap<String, TensorPlan>,
    calib: Calibration,
    cfg: AwqConfig,
    dims: Dims,
    n_layer: usize,
    current: Option<(usize, LayerWeights)>,
    pub reports: Vec<LayerReport>,
    progress: Progress,
}

impl<'a> AwqSource<'a> {
    pub fn new(ckpt: &'a HfCheckpoint, cfg: AwqConfig, samples: &[Vec<u32>], progress: Progress) -> anyhow::Result<Self> {
        let dims = dims_of(ckpt);
        Ok(Self {
            inner: CheckpointSource { ckpt },
            plans: plans_by_name(ckpt),
            calib: Calibration::new(dims, samples)?,
            cfg,
            dims,
            n_layer: ckpt.config.n_layer,
            current: None,
            reports: Vec::new(),
            progress,
        })
    }

    fn load(&mut self, name: &str) -> anyhow::Result<Vec<f32>> {
        let plan = self.plans.get(name).with_context(|| format!("no tensor {name} in the plan"))?;
        Ok(self.inner.tensor(plan)?)
    }

    fn process(&mut self, i: usize) -> anyhow::Result<()> {
        self.current = None;
        let p = self.progress.clone();
        p.set_message(format!("layer {}/{}: full-precision pass", i + 1, self.n_layer));
        {
            let (inner, plans) = (&mut self.inner, &self.plans);
            let get = |name: &str| -> anyhow::Result<Vec<f32>> {
                Ok(inner.tensor(plans.get(name).with_context(|| format!("no tensor {name}"))?)?)
            };
            self.calib.ensure_started(get)?;
        }
        let mut w = LayerWeights::load(i, |n| self.load(n))?;
        let caps = self.calib.layer(&w)?;
        p.set_message(format!("layer {}/{}: scale and clip search", i + 1, self.n_layer));
        let mut tick = || p.inc(1);
        let rep = quantize_layer(&self.cfg, self.dims, &mut w, &caps, self.calib.s, self.calib.t, &self.calib.bias, &mut tick)?;
        drop(caps);
        let clip = rep.clip.map_or(String::new(), |c| {
            let gain = |c: &crate::awq::ClipReport| if c.err_before > 0.0 { c.err_after / c.err_before } else { 1.0 };
            format!(", clip error x{:.2}/{:.2}/{:.2}", gain(&c[0]), gain(&c[1]), gain(&c[2]))
        });
        p.println(format!(
            "layer {:>2}: qkv alpha {:.2} (loss x{:.3} of RTN), up alpha {:.2} (x{:.3}){clip}",
            i,
            rep.qkv.alpha,
            rep.qkv.loss_best / rep.qkv.loss_rtn.max(1e-30),
            rep.up.alpha,
            rep.up.loss_best / rep.up.loss_rtn.max(1e-30),
        ));
        self.reports.push(rep);
        self.current = Some((i, w));
        Ok(())
    }
}

impl TensorSource for AwqSource<'_> {
    fn tensor(&mut self, plan: &TensorPlan) -> Result<Vec<f32>, ConvertError> {
        if plan.tensor.in_block() {
            let i = plan.block;
            if self.current.as_ref().map(|c| c.0) != Some(i) {
                self.process(i).map_err(|e| ConvertError::Other(format!("AWQ, block {i}: {e:#}")))?;
            }
            let (_, w) = self.current.as_ref().expect("processed");
            return w.tensor(plan.tensor, plan.part).map(<[f32]>::to_vec).ok_or_else(|| ConvertError::Other(format!("no tensor {}", plan.name)));
        }
        let data = self.inner.tensor(plan)?;
        self.calib.observe(&plan.name, &data);
        Ok(data)
    }
}

/// Calibration samples from `--calib` (or the shipped text) with the checkpoint's tokenizer.
pub fn calibration_samples(ckpt: &HfCheckpoint, path: Option<&std::path::Path>, n: usize, len: usize) -> anyhow::Result<Vec<Vec<u32>>> {
    let corpus = calib::load_corpus(path)?;
    let split = calib::split(&corpus);
    let tok = calib::Tokenizer::from_json(&ckpt.tokenizer_json)?;
    let samples = calib::calibration_samples(&tok, &split.calib, n, len)?;
    let vocab = ckpt.config.vocab_size;
    if let Some(bad) = samples.iter().flatten().find(|&&id| id as usize >= vocab) {
        bail!("the tokenizer yields id {bad}, outside the model's vocabulary of {vocab}");
    }
    Ok(samples)
}

/// Held-out prompts of the same text, for evaluation.
pub fn eval_prompts(tokenizer_json: &str, path: Option<&std::path::Path>, n: usize, len: usize) -> anyhow::Result<Vec<Vec<u32>>> {
    let corpus = calib::load_corpus(path)?;
    let split = calib::split(&corpus);
    let tok = calib::Tokenizer::from_json(tokenizer_json)?;
    calib::eval_prompts(&tok, &split.held_out, n, len)
}

/// Quantizes (or imports) `opts.model` into `opts.out`.
pub fn run(opts: &Options) -> anyhow::Result<Summary> {
    let ckpt = HfCheckpoint::open(&opts.model).with_context(|| format!("opening {}", opts.model.display()))?;
    let awq_ckpt = autoawq::detect(&opts.model)?;
    match (opts.method, &awq_ckpt) {
        (Method::Import, None) => bail!("{} is not an AutoAWQ checkpoint (no quantization_config with quant_method awq)", opts.model.display()),
        (Method::Plain | Method::Rtn | Method::Awq, Some(_)) => {
            bail!("{} is already quantized by AutoAWQ: import it with --method import", opts.model.display())
        }
        _ => {}
    }
    let cfg = &ckpt.config;
    if matches!(opts.method, Method::Rtn | Method::Awq) {
        GroupQuant::new(opts.wtype, opts.group_size)?;
        if cfg.hidden % opts.group_size != 0 {
            bail!("--group-size {} does not divide the hidden size {}", opts.group_size, cfg.hidden);
        }
    }
    let started = std::time::Instant::now();
    let n_tensors = plans_by_name(&ckpt).len() as u64;
    let mut meta = vec![("seqgpt.quantization.method".to_string(), MetadataValue::from(opts.method.name()))];
    let mut calib_tokens = 0;
    let (summary, reports, progress) = match opts.method {
        Method::Plain => {
            let progress = Progress::new(n_tensors, opts.quiet);
            let p = progress.clone();
            let s = crate::convert::write_gguf(
                &ckpt,
                &opts.out,
                &mut CheckpointSource { ckpt: &ckpt },
                &mut TypePlan { wtype: opts.wtype, embd_type: opts.embd_type },
                meta,
                |_, _| p.inc(1),
            )?;
            (s, Vec::new(), progress)
        }
        Method::Rtn => {
            let gq = GroupQuant::new(opts.wtype, opts.group_size)?;
            meta.push(("seqgpt.quantization.group_size".into(), MetadataValue::U32(opts.group_size as u32)));
            let progress = Progress::new(n_tensors, opts.quiet);
            let p = progress.clone();
            let s = write_gguf(
                &ckpt,
                &opts.out,
                &mut CheckpointSource { ckpt: &ckpt },
                &mut GroupEncoder { weights: gq, embd_type: opts.embd_type },
                meta,
                |_, _| p.inc(1),
            )?;
            (s, Vec::new(), progress)
        }
        Method::Awq => {
            let gq = GroupQuant::new(opts.wtype, opts.group_size)?;
            let mut acfg = AwqConfig::new(gq);
            acfg.n_grid = opts.n_grid.max(1);
            acfg.duo_scaling = opts.duo_scaling;
            acfg.clip = opts.clip;
            let samples = calibration_samples(&ckpt, opts.calib.as_deref(), opts.calib_samples, opts.calib_len)?;
            calib_tokens = samples.len() * opts.calib_len;
            let calib_name = opts.calib.as_ref().map_or("vimtutor-8lang".to_string(), |p| {
                p.file_name().map_or("file".into(), |n| n.to_string_lossy().into_owned())
            });
            meta.extend([
                ("seqgpt.quantization.group_size".to_string(), MetadataValue::U32(opts.group_size as u32)),
                ("seqgpt.quantization.calibration".to_string(), MetadataValue::from(calib_name.as_str())),
                ("seqgpt.quantization.calibration_tokens".to_string(), MetadataValue::U32(calib_tokens as u32)),
                ("seqgpt.quantization.duo_scaling".to_string(), MetadataValue::Bool(opts.duo_scaling)),
                ("seqgpt.quantization.clip".to_string(), MetadataValue::Bool(opts.clip)),
            ]);
            let units = cfg.n_layer as u64 * acfg.units_per_layer() as u64 + n_tensors;
            let progress = Progress::new(units, opts.quiet);
            progress.println(format!(
                "AWQ {} group {} over {} calibration samples of {} tokens; embedding {}",
                opts.wtype, opts.group_size, samples.len(), opts.calib_len, opts.embd_type
            ));
            let mut source = AwqSource::new(&ckpt, acfg, &samples, progress.clone())?;
            let p = progress.clone();
            let s = write_gguf(
                &ckpt,
                &opts.out,
                &mut source,
                &mut GroupEncoder { weights: gq, embd_type: opts.embd_type },
                meta,
                |_, _| p.inc(1),
            )?;
            (s, source.reports, progress)
        }
        Method::Import => {
            let awq = Rc::new(AwqTensors::open(&opts.model, awq_ckpt.expect("checked"))?);
            let progress = Progress::new(n_tensors, opts.quiet);
            let p = progress.clone();
            let s = write_gguf(
                &ckpt,
                &opts.out,
                &mut AutoAwqSource { ckpt: &ckpt, awq: awq.clone() },
                &mut AutoAwqEncoder { ckpt: &ckpt, awq, embd_type: opts.embd_type, act_scaled_type: opts.act_scaled_type },
                meta,
                |_, _| p.inc(1),
            )?;
            (s, Vec::new(), progress)
        }
    };
    progress.finish();
    Ok(Summary {
        tensors: summary.tensors,
        bytes: summary.bytes,
        seconds: started.elapsed().as_secs_f64(),
        peak_rss: seqgpt_engine::sysinfo::peak_rss_bytes(),
        peak_anon: progress.peak_anon_bytes(),
        calib_tokens,
        reports,
    })
}
