//! Shared helpers of the quantizer's integration tests.
#![allow(dead_code)]

use seqgpt_engine::gguf::GgmlType;
use seqgpt_quantize::pipeline::{Method, Options};
use std::path::{Path, PathBuf};

/// A fixture under the repository's tests/fixtures.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures").join(name)
}

/// A scratch directory for this test process.
pub fn tmp_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("quantize-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Options for `pipeline::run` with the test defaults: small calibration, quiet.
pub fn options(model: &Path, out: &Path, method: Method, wtype: GgmlType) -> Options {
    Options {
        model: model.to_path_buf(),
        out: out.to_path_buf(),
        method,
        wtype,
        embd_type: GgmlType::Q8_0,
        group_size: 32,
        calib: None,
        calib_samples: 16,
        calib_len: 128,
        n_grid: 20,
        duo_scaling: false,
        clip: true,
        act_scaled_type: GgmlType::Q8_0,
        quiet: true,
    }
}

/// Runs the seqgpt-quantize binary.
pub fn run_cli(args: &[&str]) -> std::process::Output {
    // Under emulation (jetson/check.sh: aarch64 tests under qemu, no binfmt_misc)
    // SEQGPT_TEST_RUNNER names the emulator that must start the program.
    let exe = env!("CARGO_BIN_EXE_seqgpt-quantize");
    let mut cmd = match std::env::var_os("SEQGPT_TEST_RUNNER") {
        Some(runner) => {
            let mut cmd = std::process::Command::new(runner);
            cmd.arg(exe);
            cmd
        }
        None => std::process::Command::new(exe),
    };
    cmd.args(args).output().expect("run seqgpt-quantize")
}

pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

pub fn argmax(v: &[f32]) -> usize {
    v.iter().enumerate().fold((0, f32::NEG_INFINITY), |(bi, bv), (i, &x)| if x > bv { (i, x) } else { (bi, bv) }).0
}
