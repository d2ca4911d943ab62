//! Truncated, corrupt and foreign model files give clear errors, never a panic or an
//! out-of-bounds read.

mod common;

use candle_core::Device;
use common::*;
use seqgpt_engine::engine::Engine;
use seqgpt_engine::gguf::{GgmlType, GgufFile};
use std::path::PathBuf;

fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn open_err(bytes: &[u8]) -> String {
    // Tests run in parallel threads: one file per call.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = scratch(&format!("case-{n}.gguf"), bytes);
    let r = std::panic::catch_unwind(|| Engine::open(&p, &Device::Cpu).map(|_| ()));
    let _ = std::fs::remove_file(&p);
    match r {
        Err(_) => panic!("opening panicked"),
        Ok(Ok(())) => String::new(),
        Ok(Err(e)) => e.to_string(),
    }
}

fn tiny_bytes() -> Vec<u8> {
    std::fs::read(gguf("tiny", GgmlType::Q8_0)).unwrap()
}

#[test]
fn every_truncation_is_an_error_naming_the_problem() {
    let full = tiny_bytes();
    // Every cut in the header, then cuts through the data section.
    let header_end = GgufFile::open(gguf("tiny", GgmlType::Q8_0)).unwrap().data_offset as usize;
    let mut cuts: Vec<usize> = (0..header_end.min(4096)).step_by(7).collect();
    cuts.extend((header_end..full.len()).step_by(4099));
    cuts.push(full.len() - 1);
    for cut in cuts {
        let e = open_err(&full[..cut]);
        assert!(!e.is_empty(), "truncated at {cut} of {} opened", full.len());
        assert!(e.contains("truncated") || e.contains("corrupt") || e.contains("GGUF") || e.contains("metadata"), "cut {cut}: {e}");
    }
}

#[test]
fn foreign_files_are_rejected() {
    assert!(open_err(b"").contains("shorter than a GGUF header"));
    assert!(open_err(b"%PDF-1.7\n%....").contains("not a GGUF file"));
    assert!(open_err(&std::fs::read(fixture("tiny").join("model.safetensors")).unwrap()).contains("not a GGUF file"));
    let mut v = tiny_bytes();
    v[4] = 9; // version 9
    assert!(open_err(&v).contains("unsupported GGUF version 9"));
    let e = open_err(&std::fs::read("/dev/null").unwrap());
    assert!(!e.is_empty());
    let missing = Engine::open("/nonexistent/model.gguf", &Device::Cpu).err().unwrap().to_string();
    assert!(missing.contains("cannot open model file"), "{missing}");
}

/// Byte offset of the first occurrence of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).position(|w| w == needle).expect("needle")
}

#[test]
fn corrupt_headers_are_errors() {
    let full = tiny_bytes();
    // Huge tensor and metadata counts.
    for at in [8usize, 16] {
        let mut v = full.clone();
        v[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(open_err(&v).contains("more than the file can hold"), "count at {at}");
    }
    // A string length pointing past the end of the file.
    let mut v = full.clone();
    v[24..32].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    assert!(!open_err(&v).is_empty());
    // Unknown ggml type id for the first tensor, and a misaligned / out-of-file offset.
    let file = GgufFile::open(gguf("tiny", GgmlType::Q8_0)).unwrap();
    let name = b"token_embd.weight";
    let at = find(&full[..file.data_offset as usize], name) + name.len();
    // layout after the name: n_dims u32, dims u64 x n, type u32, offset u64
    let n_dims = u32::from_le_bytes(full[at..at + 4].try_into().unwrap()) as usize;
    let type_at = at + 4 + 8 * n_dims;
    let mut v = full.clone();
    v[type_at..type_at + 4].copy_from_slice(&77u32.to_le_bytes());
    assert!(open_err(&v).contains("unsupported ggml type id 77"));
    let mut v = full.clone();
    v[type_at + 4..type_at + 12].copy_from_slice(&3u64.to_le_bytes());
    assert!(open_err(&v).contains("not aligned"));
    let mut v = full.clone();
    v[type_at + 4..type_at + 12].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(open_err(&v).contains("truncated"));
    // A dimension of zero, and one that overflows the element count.
    let mut v = full.clone();
    v[at + 4..at + 12].copy_from_slice(&0u64.to_le_bytes());
    assert!(open_err(&v).contains("zero-sized"));
    let mut v = full.clone();
    v[at + 4..at + 12].copy_from_slice(&(1u64 << 62).to_le_bytes());
    let e = open_err(&v);
    assert!(e.contains("overflow") || e.contains("truncated"), "{e}");
}

#[test]
fn overlapping_tensors_and_wrong_shapes_are_errors() {
    let full = tiny_bytes();
    let file = GgufFile::open(gguf("tiny", GgmlType::Q8_0)).unwrap();
    // Point the second tensor at the first one's bytes.
    let second = &file.tensors[1].name;
    let at = find(&full[..file.data_offset as usize], second.as_bytes()) + second.len();
    let n_dims = u32::from_le_bytes(full[at..at + 4].try_into().unwrap()) as usize;
    let off_at = at + 4 + 8 * n_dims + 4;
    let mut v = full.clone();
    v[off_at..off_at + 8].copy_from_slice(&0u64.to_le_bytes());
    assert!(open_err(&v).contains("overlap"));
    // A config that disagrees with the tensors: claim 4 layers where there are 3.
    let key = b"bloom.block_count";
    let at = find(&full, key) + key.len();
    let mut v = full.clone();
    v[at + 4..at + 8].copy_from_slice(&4u32.to_le_bytes());
    let e = open_err(&v);
    assert!(e.contains("blk.3") && e.contains("missing"), "{e}");
    // Another architecture.
    let key = b"general.architecture";
    let at = find(&full, key) + key.len() + 4 + 8;
    let mut v = full.clone();
    v[at..at + 5].copy_from_slice(b"llama");
    assert!(open_err(&v).contains("not a BLOOM model"));
}

#[test]
fn random_corruption_never_panics() {
    // A deterministic byte-flipping sweep over the header.
    let full = tiny_bytes();
    let header_end = GgufFile::open(gguf("tiny", GgmlType::Q8_0)).unwrap().data_offset as usize;
    let mut state = 0x9e3779b97f4a7c15u64;
    for _ in 0..400 {
        let mut v = full.clone();
        for _ in 0..4 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let pos = (state as usize) % header_end.min(20_000);
            v[pos] = (state >> 32) as u8;
        }
        let _ = open_err(&v); // Ok or Err: only a panic fails (inside open_err).
    }
}

#[test]
fn out_of_vocabulary_ids_are_errors() {
    let e = engine("tiny", GgmlType::F32);
    let err = e.last_logits(&[5, 99_999]).unwrap_err().to_string();
    assert!(err.contains("outside the vocabulary"), "{err}");
}

#[test]
fn a_corrupt_embedded_tokenizer_is_an_error_at_first_use() {
    let mut v = tiny_bytes();
    let key = b"tokenizer.huggingface.json";
    let at = find(&v, key) + key.len() + 4 + 8; // value type, then string length
    assert_eq!(v[at], b'{');
    v[at] = b'X';
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let p = scratch(&format!("tok-{}.gguf", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)), &v);
    let engine = Engine::open(&p, &Device::Cpu).expect("the model itself is intact");
    let err = engine.encode("hello").unwrap_err().to_string();
    assert!(err.contains("tokenizer"), "{err}");
    // Token ids still run: the model does not need the tokenizer.
    assert!(engine.last_logits(&[5, 6]).is_ok());
}
