//! Shared helpers for the integration tests: fixture conversion and golden files.
#![allow(dead_code)]

use seqgpt_quantize::convert::convert_plain;
use seqgpt_engine::engine::Engine;
use seqgpt_engine::gguf::GgmlType;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

pub fn golden(name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(fixture(name).join("golden.json")).expect("golden.json");
    serde_json::from_str(&text).expect("golden json")
}

static CONVERT_LOCK: Mutex<()> = Mutex::new(());

/// The fixture `name` converted to GGUF with `wtype` matrices (cached per test binary run).
pub fn gguf(name: &str, wtype: GgmlType) -> PathBuf {
    let _guard = CONVERT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fixtures-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{name}-{wtype}.gguf"));
    if !out.exists() {
        convert_plain(&fixture(name), &out, wtype, wtype, |_, _| {}).expect("convert fixture");
    }
    out
}

pub fn engine(name: &str, wtype: GgmlType) -> Engine {
    Engine::open(gguf(name, wtype), &candle_core::Device::Cpu).expect("open engine")
}

pub fn f32s(v: &serde_json::Value) -> Vec<f32> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
}

pub fn u32s(v: &serde_json::Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect()
}

pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

pub fn argmax(v: &[f32]) -> usize {
    seqgpt_engine::generate::sampler::argmax(v) as usize
}

/// Number of leading greedy steps whose top-2 margin (in the reference) is safe to compare:
/// below 1e-3 the two engines may legitimately pick different tokens.
pub fn comparable_steps(margins: &[f32]) -> usize {
    margins.iter().position(|&m| m < 1e-3).unwrap_or(margins.len())
}

/// A command for one of this package's programs. Under emulation (jetson/check.sh runs the
/// aarch64 tests with qemu, without binfmt_misc) `SEQGPT_TEST_RUNNER` names the emulator that
/// must start it.
pub fn program(exe: &str) -> std::process::Command {
    match std::env::var_os("SEQGPT_TEST_RUNNER") {
        Some(runner) => {
            // By its full path: a test may give the program a PATH without the emulator.
            let runner = std::path::PathBuf::from(&runner);
            let runner = if runner.components().count() > 1 {
                runner
            } else {
                std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                    .map(|d| d.join(&runner))
                    .find(|p| p.is_file())
                    .unwrap_or(runner)
            };
            let mut cmd = std::process::Command::new(runner);
            cmd.arg(exe);
            cmd
        }
        None => std::process::Command::new(exe),
    }
}
