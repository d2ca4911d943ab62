//! The seqgpt-quantize command line: methods, group sizes, summaries, errors.

mod common;

use common::*;
use seqgpt_engine::gguf::{GgmlType, GgufFile};

fn path_str(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

fn tensor_bytes<'a>(f: &'a GgufFile, name: &str) -> &'a [u8] {
    let t = f.require(name).unwrap();
    &f.mmap()[t.file_offset as usize..(t.file_offset + t.byte_len) as usize]
}

/// Without --method, a checkpoint is converted as before (ggml's reference rounding): the
/// tensors are those of the library's plain converter.
#[test]
fn plain_conversion_is_unchanged() {
    let dir = tmp_dir();
    let cli_out = dir.join("cli-tiny-q8_0.gguf");
    let o = run_cli(&["--model", path_str(&fixture("tiny")), "--out", path_str(&cli_out), "--wtype", "q8_0", "--quiet"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lib_out = dir.join("lib-tiny-q8_0.gguf");
    seqgpt_quantize::convert::convert_plain(&fixture("tiny"), &lib_out, GgmlType::Q8_0, GgmlType::Q8_0, |_, _| {}).unwrap();
    let (a, b) = (GgufFile::open(&cli_out).unwrap(), GgufFile::open(&lib_out).unwrap());
    assert_eq!(a.tensors.len(), b.tensors.len());
    for t in &b.tensors {
        assert_eq!(tensor_bytes(&a, &t.name), tensor_bytes(&b, &t.name), "{}", t.name);
    }
    assert_eq!(a.get_str("seqgpt.quantization.method").unwrap(), "plain");
}

/// RTN with groups of 64: every pair of Q4_1 blocks repeats its (d, m); with groups of 32
/// Q4_0 is byte for byte ggml's reference quantizer.
#[test]
fn rtn_group_sizes() {
    let dir = tmp_dir();
    let out = dir.join("rtn-g64.gguf");
    let o = run_cli(&[
        "--model", path_str(&fixture("outliers")), "--out", path_str(&out), "--method", "rtn", "--wtype", "q4_1",
        "--group-size", "64", "--quiet", "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((j["method"].as_str(), j["group_size"].as_u64(), j["wtype"].as_str()), (Some("rtn"), Some(64), Some("q4_1")));
    let f = GgufFile::open(&out).unwrap();
    assert_eq!(f.get_u64("seqgpt.quantization.group_size").unwrap(), 64);
    let w = tensor_bytes(&f, "blk.0.ffn_up.weight");
    for pair in w.chunks_exact(40) {
        assert_eq!(pair[..4], pair[20..24]);
    }
    // The embedding: the CLI default for quantized methods is q6_K, which needs rows of
    // 256; this 128-wide fixture falls back to f16.
    assert_eq!(f.require("token_embd.weight").unwrap().dtype, GgmlType::F16);

    let out32 = dir.join("rtn-q4_0-g32.gguf");
    let o = run_cli(&[
        "--model", path_str(&fixture("outliers")), "--out", path_str(&out32), "--method", "rtn", "--wtype", "q4_0",
        "--embd-type", "q8_0", "--quiet",
    ]);
    assert!(o.status.success());
    let plain = dir.join("plain-q4_0.gguf");
    seqgpt_quantize::convert::convert_plain(&fixture("outliers"), &plain, GgmlType::Q4_0, GgmlType::Q8_0, |_, _| {}).unwrap();
    let (a, b) = (GgufFile::open(&out32).unwrap(), GgufFile::open(&plain).unwrap());
    for t in &b.tensors {
        assert_eq!(tensor_bytes(&a, &t.name), tensor_bytes(&b, &t.name), "{}", t.name);
    }
}

/// AWQ from the command line: JSON summary with per-layer alphas, time and peak memory;
/// a --calib file is used and named in the metadata.
#[test]
fn awq_summary_and_custom_calibration() {
    let dir = tmp_dir();
    let calib = dir.join("my-calib.txt");
    let text: String = (0..200)
        .map(|i| format!("Paragraph {i}: the quick brown fox jumps over the lazy dog, again and again.\n\n"))
        .collect();
    std::fs::write(&calib, text).unwrap();
    let out = dir.join("awq-custom.gguf");
    let o = run_cli(&[
        "--model", path_str(&fixture("outliers")), "--out", path_str(&out), "--method", "awq", "--calib", path_str(&calib),
        "--calib-samples", "4", "--calib-len", "64", "--grid", "5", "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("layer  0: qkv alpha") && stderr.contains("peak RSS"), "{stderr}");
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["layers"].as_array().unwrap().len(), 2);
    assert_eq!(j["calib_tokens"], 256);
    assert!(j["peak_rss_bytes"].as_u64().unwrap() > 0 && j["seconds"].as_f64().unwrap() > 0.0);
    for l in j["layers"].as_array().unwrap() {
        assert!(l["qkv_loss"].as_f64().unwrap() <= l["qkv_loss_rtn"].as_f64().unwrap());
        assert!(l["up_loss"].as_f64().unwrap() <= l["up_loss_rtn"].as_f64().unwrap());
    }
    let f = GgufFile::open(&out).unwrap();
    assert_eq!(f.get_str("seqgpt.quantization.calibration").unwrap(), "my-calib.txt");
    assert_eq!(j["bytes"].as_u64().unwrap(), std::fs::metadata(&out).unwrap().len());
}

#[test]
fn eval_prints_metrics() {
    let dir = tmp_dir();
    let (reference, quant) = (dir.join("eval-f32.gguf"), dir.join("eval-q8_0.gguf"));
    for (p, w) in [(&reference, "f32"), (&quant, "q8_0")] {
        assert!(run_cli(&["--model", path_str(&fixture("tiny")), "--out", path_str(p), "--wtype", w, "--quiet"]).status.success());
    }
    let o = run_cli(&["eval", "--reference", path_str(&reference), "--model", path_str(&quant), "--prompts", "4", "--prompt-len", "32"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["prompts"], 4);
    assert!(j["positions"].as_u64().unwrap() > 50);
    let kl = j["mean_kl"].as_f64().unwrap();
    assert!(kl > 0.0 && kl < 0.5, "{j}");
    // A file against itself: nothing differs.
    let o = run_cli(&["eval", "--reference", path_str(&quant), "--model", path_str(&quant), "--prompts", "2"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["max_abs_logit_diff"], 0.0);
    assert_eq!(j["top1_agreement"], 1.0);
}

#[test]
fn bad_requests_are_explained() {
    let out = tmp_dir().join("never.gguf");
    let cases: [(&[&str], &str); 8] = [
        (&["--method", "rtn", "--group-size", "48"], "multiple of 32"),
        // Flags the chosen method would ignore (plain is the default).
        (&["--group-size", "64"], "--group-size does not apply to --method plain"),
        (&["--method", "rtn", "--calib-samples", "8"], "--calib-samples does not apply to --method rtn"),
        (&["--method", "plain", "--no-clip"], "--no-clip does not apply to --method plain"),
        (&["--method", "awq", "--wtype", "q6_K"], "group-quantized"),
        (&["--method", "import"], "not an AutoAWQ checkpoint"),
        (&["--method", "awq", "--calib-samples", "100000"], "fewer than --calib-samples"),
        (&["--method", "awq", "--group-size", "96"], "does not divide"),
    ];
    let model = fixture("outliers");
    for (extra, want) in cases {
        let mut args = vec!["--model", path_str(&model), "--out", path_str(&out)];
        args.extend_from_slice(extra);
        let o = run_cli(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && stderr.contains(want), "{extra:?}: {stderr}");
        assert!(!out.exists(), "{extra:?} left a file");
    }
}
