//! AWQ against round-to-nearest on a random BLOOM with realistic activation outliers
//! (tests/fixtures/outliers: a few LayerNorm channels 20-100x the rest, weights reading
//! them scaled down, made by `make_fixtures.py outliers`), judged through the engine
//! against the f32 file: mean KL of next-token distributions over held-out prompts.
//! Everything is deterministic: fixed calibration blocks, fixed prompts, no sampling.

mod common;

use candle_core::Device;
use common::*;
use seqgpt_quantize::convert::HfCheckpoint;
use seqgpt_engine::engine::Engine;
use seqgpt_engine::gguf::{GgmlType, GgufFile};
use seqgpt_quantize::eval::{compare_engines, simulate, Metrics, SimMethod};
use seqgpt_quantize::pipeline::{calibration_samples, eval_prompts, run, Method};
use seqgpt_quantize::progress::Progress;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// Quantizes the outlier fixture once per setting (tests share the files).
fn quantize(method: Method, wtype: GgmlType, embd: GgmlType) -> PathBuf {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let out = tmp_dir().join(format!("outliers-{}-{wtype}-{embd}.gguf", method.name()));
    if !out.exists() {
        let mut o = options(&fixture("outliers"), &out, method, wtype);
        o.embd_type = embd;
        run(&o).expect("quantize");
    }
    out
}

fn reference() -> &'static PathBuf {
    static F32: OnceLock<PathBuf> = OnceLock::new();
    F32.get_or_init(|| quantize(Method::Plain, GgmlType::F32, GgmlType::F32))
}

fn prompts() -> Vec<Vec<u32>> {
    let ckpt = HfCheckpoint::open(fixture("outliers")).unwrap();
    eval_prompts(&ckpt.tokenizer_json, None, 16, 64).unwrap()
}

fn kl_against_f32(path: &PathBuf) -> Metrics {
    let cpu = Device::Cpu;
    let r = Engine::open(reference(), &cpu).unwrap();
    let q = Engine::open(path, &cpu).unwrap();
    compare_engines(&r, &q, &prompts(), None).unwrap()
}

fn assert_awq_beats_rtn(wtype: GgmlType) {
    // The embedding stays f32 in both files: only the block matrices differ.
    let rtn = kl_against_f32(&quantize(Method::Rtn, wtype, GgmlType::F32));
    let awq = kl_against_f32(&quantize(Method::Awq, wtype, GgmlType::F32));
    eprintln!(
        "{wtype} group 32 over {} positions: mean KL RTN {:.4}, AWQ {:.4} (x{:.2}); top-1 RTN {:.3}, AWQ {:.3}",
        rtn.positions,
        rtn.mean_kl,
        awq.mean_kl,
        awq.mean_kl / rtn.mean_kl,
        rtn.top1_agreement,
        awq.top1_agreement
    );
    assert!(rtn.positions > 500);
    assert!(awq.mean_kl < 0.6 * rtn.mean_kl, "AWQ {awq:?} vs RTN {rtn:?}");
    assert!(awq.top1_agreement > rtn.top1_agreement, "AWQ {awq:?} vs RTN {rtn:?}");
}

#[test]
fn awq_beats_rtn_q4_1() {
    assert_awq_beats_rtn(GgmlType::Q4_1);
}

#[test]
fn awq_beats_rtn_q4_0() {
    assert_awq_beats_rtn(GgmlType::Q4_0);
}

/// The in-memory simulation measures what the file holds: the same KL through the engine.
#[test]
fn simulation_matches_the_written_file() {
    let path = quantize(Method::Awq, GgmlType::Q4_1, GgmlType::Q8_0);
    let file_m = kl_against_f32(&path);
    let ckpt = HfCheckpoint::open(fixture("outliers")).unwrap();
    let o = options(&fixture("outliers"), &path, Method::Awq, GgmlType::Q4_1);
    let samples = calibration_samples(&ckpt, None, o.calib_samples, o.calib_len).unwrap();
    let cfg = seqgpt_quantize::awq::AwqConfig::new(seqgpt_quantize::rtn::GroupQuant::new(GgmlType::Q4_1, 32).unwrap());
    let (sim_m, reports) = simulate(&ckpt, SimMethod::Awq(cfg), GgmlType::Q8_0, &samples, &prompts(), &Progress::new(1, true)).unwrap();
    eprintln!("file: {file_m:?}\nsimulated: {sim_m:?}");
    assert_eq!(reports.len(), 2);
    assert_eq!(sim_m.positions, file_m.positions);
    assert!((sim_m.mean_kl - file_m.mean_kl).abs() <= 0.01 * file_m.mean_kl, "{sim_m:?} vs {file_m:?}");
    assert!((sim_m.top1_agreement - file_m.top1_agreement).abs() <= 0.01);
}

/// An AWQ file carries exactly the tensors of a plain conversion (so llama.cpp loads it),
/// the requested types, and its provenance in `seqgpt.quantization.*` keys.
#[test]
fn awq_file_has_only_llama_cpp_tensors() {
    let awq = GgufFile::open(quantize(Method::Awq, GgmlType::Q4_1, GgmlType::Q8_0)).unwrap();
    let plain = GgufFile::open(reference()).unwrap();
    let names = |f: &GgufFile| f.tensors.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&awq), names(&plain));
    for t in &awq.tensors {
        let want = match (t.dims.len(), t.name.as_str()) {
            (1, _) => GgmlType::F32,
            (_, "token_embd.weight") => GgmlType::Q8_0,
            _ => GgmlType::Q4_1,
        };
        assert_eq!(t.dtype, want, "{}", t.name);
    }
    assert_eq!(awq.get_str("seqgpt.quantization.method").unwrap(), "awq");
    assert_eq!(awq.get_str("seqgpt.quantization.calibration").unwrap(), "vimtutor-8lang");
    assert_eq!(awq.get_u64("general.file_type").unwrap(), 3);
}
