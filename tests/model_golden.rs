//! The engine against Hugging Face transformers (BloomForCausalLM, float32) on the random
//! fixtures recorded by tests/fixtures/make_fixtures.py.

mod common;

use candle_core::Device;
use common::*;
use seqgpt_engine::engine::Engine;
use seqgpt_engine::generate::{Batch, GenerationConfig, Sampling, Sequence};
use seqgpt_engine::gguf::GgmlType;
use seqgpt_engine::model::{CpuKv, Logits};

const F32_TOL: f32 = 1e-4;

fn greedy(max_new: usize) -> GenerationConfig {
    GenerationConfig { max_new_tokens: max_new, stop_on_eos: false, ..GenerationConfig::default() }
}

#[test]
fn f32_logits_and_token_ids_match_transformers() {
    let e = engine("tiny", GgmlType::F32);
    for p in golden("tiny")["prompts"].as_array().unwrap() {
        let ids = e.encode(p["text"].as_str().unwrap()).unwrap();
        assert_eq!(ids, u32s(&p["ids"]), "tokenization of {}", p["text"]);
        let logits = e.last_logits(&ids).unwrap();
        let d = max_abs_diff(&logits, &f32s(&p["logits_last"]));
        assert!(d <= F32_TOL, "{}: max |diff| {d:e}", p["text"]);
    }
}

#[test]
fn greedy_continuations_match_transformers() {
    let e = engine("tiny", GgmlType::F32);
    for p in golden("tiny")["prompts"].as_array().unwrap() {
        let ids = u32s(&p["ids"]);
        for (key, penalty) in [("greedy", 1.0), ("greedy_rep2", 2.0)] {
            let want = u32s(&p[key]["ids"]);
            let n = comparable_steps(&f32s(&p[key]["margins"]));
            let cfg = GenerationConfig { repetition_penalty: penalty, ..greedy(want.len()) };
            let got = e.generate(&[ids.clone()], &cfg).unwrap().remove(0).ids;
            assert_eq!(got[..n], want[..n], "{key} for {}", p["text"]);
        }
    }
}

#[test]
fn beam_search_matches_transformers() {
    let e = engine("tiny", GgmlType::F32);
    for p in golden("tiny")["prompts"].as_array().unwrap() {
        let want = u32s(&p["beam4"]["ids"]);
        let cfg = GenerationConfig { num_beams: 4, ..greedy(want.len()) };
        let got = e.generate(&[u32s(&p["ids"])], &cfg).unwrap().remove(0).ids;
        assert_eq!(got, want, "beam search for {}", p["text"]);
    }
}

#[test]
fn left_padded_batch_matches_transformers() {
    let e = engine("tiny", GgmlType::F32);
    let g = golden("tiny");
    let b = &g["batch"];
    let ids: Vec<Vec<u32>> = b["input_ids"].as_array().unwrap().iter().map(u32s).collect();
    let mask: Vec<Vec<u8>> =
        b["attention_mask"].as_array().unwrap().iter().map(|r| u32s(r).into_iter().map(|x| x as u8).collect()).collect();
    // Logits of the padded batch, exactly as transformers ran it.
    let mut cache = e.model.new_cache(ids.len(), ids[0].len()).unwrap();
    let logits: Vec<Vec<f32>> = e.model.forward(&ids, &mask, &mut cache, Logits::Last).unwrap().to_vec2().unwrap();
    for (row, want) in logits.iter().zip(b["logits_last"].as_array().unwrap()) {
        let d = max_abs_diff(row, &f32s(want));
        assert!(d <= F32_TOL, "batch row: max |diff| {d:e}");
    }
    // Greedy continuation of the batch (the engine pads the prompts itself).
    let prompts: Vec<Vec<u32>> =
        ids.iter().zip(&mask).map(|(r, m)| r.iter().zip(m).filter(|(_, &m)| m == 1).map(|(&t, _)| t).collect()).collect();
    let want: Vec<Vec<u32>> = b["greedy"].as_array().unwrap().iter().map(u32s).collect();
    let out = e.generate(&prompts, &greedy(want[0].len())).unwrap();
    for ((got, want), margins) in out.iter().zip(&want).zip(b["margins"].as_array().unwrap()) {
        let n = comparable_steps(&f32s(margins));
        assert_eq!(got.ids[..n], want[..n]);
    }
}

#[test]
fn batched_generation_equals_one_at_a_time() {
    let e = engine("tiny", GgmlType::F32);
    let prompts: Vec<Vec<u32>> = golden("tiny")["prompts"].as_array().unwrap().iter().map(|p| u32s(&p["ids"])).collect();
    let cfg = greedy(10);
    let batched = e.generate(&prompts, &cfg).unwrap();
    for (p, b) in prompts.iter().zip(&batched) {
        let single = e.generate(&[p.clone()], &cfg).unwrap().remove(0);
        assert_eq!(single.ids, b.ids);
    }
}

#[test]
fn cached_decoding_equals_recomputing_from_scratch() {
    let e = engine("tiny", GgmlType::F32);
    let prompt = u32s(&golden("tiny")["prompts"][2]["ids"]);
    let out = e.generate(&[prompt.clone()], &greedy(8)).unwrap().remove(0);
    // Each generated token must also be the argmax of a fresh, cache-less forward over
    // the whole prefix, and the logits of both paths must agree.
    let mut cache = e.model.new_cache(1, prompt.len() + 8).unwrap();
    let mut cached = e.model.forward(&[prompt.clone()], &[vec![1; prompt.len()]], &mut cache, Logits::Last).unwrap();
    let mut prefix = prompt.clone();
    for &tok in &out.ids {
        let fresh = e.last_logits(&prefix).unwrap();
        let c: Vec<f32> = cached.squeeze(0).unwrap().to_vec1().unwrap();
        assert!(max_abs_diff(&c, &fresh) <= F32_TOL);
        assert_eq!(argmax(&fresh) as u32, tok);
        prefix.push(tok);
        cached = e.model.forward(&[vec![tok]], &[vec![1]], &mut cache, Logits::Last).unwrap();
    }
}

#[test]
fn all_position_logits_equal_last_position_logits() {
    let e = engine("tiny", GgmlType::F32);
    let prompt = u32s(&golden("tiny")["prompts"][0]["ids"]);
    let mut cache = e.model.new_cache(1, prompt.len()).unwrap();
    let all = e.model.forward(&[prompt.clone()], &[vec![1; prompt.len()]], &mut cache, Logits::All).unwrap();
    let last: Vec<f32> = all.squeeze(0).unwrap().get(prompt.len() - 1).unwrap().to_vec1().unwrap();
    assert!(max_abs_diff(&last, &e.last_logits(&prompt).unwrap()) <= 1e-5);
}

#[test]
fn continuous_batching_joins_give_the_same_tokens() {
    let e = engine("tiny", GgmlType::F32);
    let prompts: Vec<Vec<u32>> = golden("tiny")["prompts"].as_array().unwrap().iter().map(|p| u32s(&p["ids"])).collect();
    let cfg = greedy(6);
    let mut batch = Batch::new();
    let mut done = batch.admit(&e.model, &e.tokenizer, vec![Sequence::new(0, prompts[0].clone(), cfg.clone())]).unwrap();
    done.extend(batch.step(&e.model, &e.tokenizer).unwrap());
    // A longer and a shorter prompt join a running batch at a token boundary.
    let joiners = vec![Sequence::new(1, prompts[2].clone(), cfg.clone()), Sequence::new(2, prompts[4].clone(), cfg.clone())];
    done.extend(batch.admit(&e.model, &e.tokenizer, joiners).unwrap());
    while !batch.is_empty() {
        done.extend(batch.step(&e.model, &e.tokenizer).unwrap());
    }
    done.sort_by_key(|g| g.id);
    for (g, p) in done.iter().zip([&prompts[0], &prompts[2], &prompts[4]]) {
        assert_eq!(g.ids, e.generate(&[p.clone()], &cfg).unwrap()[0].ids);
    }
}

#[test]
fn shared_prefix_rows_equal_private_rows() {
    let e = engine("tiny", GgmlType::F32);
    let prompt = u32s(&golden("tiny")["prompts"][1]["ids"]);
    let mut one = e.model.new_cache(1, prompt.len()).unwrap();
    e.model.forward(&[prompt.clone()], &[vec![1; prompt.len()]], &mut one, Logits::Last).unwrap();
    let mut shared = one.into_shared(2, 4).unwrap();
    let next = [vec![5u32, 9], vec![7u32, 9]];
    let got: Vec<Vec<f32>> = e.model.forward(&next, &[vec![1, 1], vec![1, 1]], &mut shared, Logits::Last).unwrap().to_vec2().unwrap();
    for (row, cont) in got.iter().zip(&next) {
        let want = e.last_logits(&[prompt.clone(), cont.clone()].concat()).unwrap();
        assert!(max_abs_diff(row, &want) <= F32_TOL);
    }
}

#[test]
fn sampling_is_reproducible_and_stops_on_stop_strings() {
    let e = engine("tiny", GgmlType::F32);
    let prompt = u32s(&golden("tiny")["prompts"][0]["ids"]);
    let cfg = GenerationConfig {
        sampling: Sampling::Sample { temperature: 0.9, top_k: Some(40), top_p: Some(0.95), seed: 11 },
        ..greedy(12)
    };
    let a = e.generate(&[prompt.clone()], &cfg).unwrap().remove(0);
    let b = e.generate(&[prompt.clone()], &cfg).unwrap().remove(0);
    assert_eq!(a.ids, b.ids);
    // Stop at the text of the 4th greedy token onwards.
    let g = e.generate(&[prompt.clone()], &greedy(12)).unwrap().remove(0);
    let stop = e.tokenizer.decode(&g.ids[3..5]).unwrap();
    if !stop.trim().is_empty() && !e.tokenizer.decode(&g.ids[..3]).unwrap().contains(&stop) {
        let cfg = GenerationConfig { stop_strings: vec![stop.clone()], ..greedy(12) };
        let s = e.generate(&[prompt], &cfg).unwrap().remove(0);
        assert_eq!(s.finish, seqgpt_engine::generate::FinishReason::StopString);
        assert!(!s.text.contains(&stop));
        assert!(s.ids.len() < 12);
    }
}

#[test]
fn other_checkpoint_layouts_convert_identically() {
    // pytorch_model.bin without the `transformer.` prefix, and sharded safetensors.
    for name in ["micro-bin", "micro-sharded"] {
        let e = engine(name, GgmlType::F32);
        for p in golden(name)["prompts"].as_array().unwrap() {
            let logits = e.last_logits(&u32s(&p["ids"])).unwrap();
            let d = max_abs_diff(&logits, &f32s(&p["logits_last"]));
            assert!(d <= F32_TOL, "{name}: max |diff| {d:e}");
        }
    }
}

/// f16 and q8_0 against transformers' f32 logits. These bounds are the stated tolerances:
/// the random fixture is chaotic (weights of std 3/sqrt(fan_in)), so weight rounding is
/// amplified layer after layer; measured: f16 0.055, q8_0 1.5 max |diff| over a logit
/// range of about 20, with the same top-1 token everywhere.
#[test]
fn reduced_precision_stays_within_stated_tolerances() {
    for (wtype, tol) in [(GgmlType::F16, 0.15f32), (GgmlType::Q8_0, 3.0)] {
        let e = engine("tiny", wtype);
        for p in golden("tiny")["prompts"].as_array().unwrap() {
            let logits = e.last_logits(&u32s(&p["ids"])).unwrap();
            let want = f32s(&p["logits_last"]);
            let d = max_abs_diff(&logits, &want);
            assert!(d <= tol, "{wtype}: max |diff| {d} > {tol}");
            assert_eq!(argmax(&logits), argmax(&want), "{wtype}: top-1 differs for {}", p["text"]);
        }
    }
}

/// The quantized paths compute on the weights they store: a file holding the dequantized
/// values as f32 gives the same logits. f16 matches exactly; q8_0/q4_0/q4_1 matmuls use
/// 8-bit activations (as llama.cpp does; the integer arithmetic itself is checked exactly in
/// kernels::qdot), which the chaotic random fixture amplifies into a bounded difference (a
/// top-1 with a small margin may flip, so only f16 checks the top-1 too).
#[test]
fn quantized_kernels_are_exact_on_their_decoded_weights() {
    use seqgpt_engine::gguf::{GgufFile, GgufWriter, MetadataValue, TensorSpec};
    use seqgpt_engine::quant::{dequantize_row, quantize_row};
    for wtype in [GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1] {
        let src_path = gguf("tiny", wtype);
        let src = GgufFile::open(&src_path).unwrap();
        let meta: Vec<(String, MetadataValue)> = src.metadata.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let specs: Vec<TensorSpec> =
            src.tensors.iter().map(|t| TensorSpec { name: t.name.clone(), dims: t.dims.clone(), dtype: GgmlType::F32 }).collect();
        let out = src_path.with_extension(format!("{wtype}-as-f32.gguf"));
        let mut w = GgufWriter::new(std::fs::File::create(&out).unwrap(), &meta, specs).unwrap();
        for t in &src.tensors {
            let mut vals = vec![0f32; t.elem_count() as usize];
            dequantize_row(t.dtype, src.tensor_bytes(t), &mut vals).unwrap();
            let mut bytes = Vec::new();
            quantize_row(GgmlType::F32, &vals, &mut bytes).unwrap();
            w.write_tensor(&t.name, &bytes).unwrap();
        }
        w.finish().unwrap();
        // Both with an f32 key/value cache: only the matmuls differ.
        let q = Engine::open_with(&src_path, &Device::Cpu, CpuKv::F32).unwrap();
        let f = Engine::open(&out, &Device::Cpu).unwrap();
        let tol = if wtype == GgmlType::F16 { F32_TOL } else { 3.0 };
        for p in golden("tiny")["prompts"].as_array().unwrap() {
            let ids = u32s(&p["ids"]);
            let (ql, fl) = (q.last_logits(&ids).unwrap(), f.last_logits(&ids).unwrap());
            let d = max_abs_diff(&ql, &fl);
            assert!(d <= tol, "{wtype}: {d:e}");
            if wtype == GgmlType::F16 {
                assert_eq!(argmax(&ql), argmax(&fl), "{wtype}: top-1");
            }
        }
    }
}

/// Files with quantized matrices keep keys and values in f16 on the CPU, f32 and f16 files in
/// f32. Measured against an f32 cache: max |diff| 0.059 on the f32 fixture (f16 weights:
/// 0.055), 0.56 on q8_0; batches still decode exactly like single sequences.
#[test]
fn quantized_files_keep_an_f16_cache_on_the_cpu() {
    use candle_core::DType;
    // The default where decoding reads f16 directly (x86 with AVX-512), else f32.
    let auto = engine("tiny", GgmlType::Q8_0);
    let direct = seqgpt_engine::kernels::attention::reads_f16_directly(auto.model.cfg.head_dim());
    assert_eq!(auto.model.kv_dtype(), if direct { DType::F16 } else { DType::F32 });
    let q = Engine::open_with(gguf("tiny", GgmlType::Q8_0), &Device::Cpu, CpuKv::F16).unwrap();
    assert_eq!(q.model.kv_dtype(), DType::F16);
    assert_eq!(engine("tiny", GgmlType::F16).model.kv_dtype(), DType::F32);
    assert_eq!(engine("tiny", GgmlType::F32).model.kv_dtype(), DType::F32);
    let q32 = Engine::open_with(gguf("tiny", GgmlType::Q8_0), &Device::Cpu, CpuKv::F32).unwrap();
    assert_eq!(q32.model.kv_dtype(), DType::F32);
    let prompts: Vec<Vec<u32>> = golden("tiny")["prompts"].as_array().unwrap().iter().map(|p| u32s(&p["ids"])).collect();
    let mut worst = 0f32;
    for ids in &prompts {
        worst = worst.max(max_abs_diff(&q.last_logits(ids).unwrap(), &q32.last_logits(ids).unwrap()));
    }
    println!("f16 against f32 cache, q8_0 fixture: max |diff| {worst}");
    let f = engine("tiny", GgmlType::F32);
    let f16kv = Engine::open_with(gguf("tiny", GgmlType::F32), &Device::Cpu, CpuKv::F16).unwrap();
    let mut direct = 0f32;
    for p in golden("tiny")["prompts"].as_array().unwrap() {
        let ids = u32s(&p["ids"]);
        let (a, b) = (f16kv.last_logits(&ids).unwrap(), f.last_logits(&ids).unwrap());
        direct = direct.max(max_abs_diff(&a, &b));
        assert_eq!(argmax(&a), argmax(&b), "f16 cache: top-1 for {}", p["text"]);
    }
    println!("f16 against f32 cache, f32 fixture: max |diff| {direct}");
    // On f32 weights the f16 cache moves the logits as little as f16 weights do (the same
    // bound as `reduced_precision_stays_within_stated_tolerances`); on q8_0 the 8-bit
    // activations amplify it, still below that file's own distance from transformers (1.5).
    assert!(direct > 0.0 && direct <= 0.15, "f16 cache on f32 weights: max |diff| {direct}");
    assert!(worst > 0.0 && worst <= 1.5, "f16 cache on q8_0 weights: max |diff| {worst}");
    let cfg = greedy(10);
    let batched = q.generate(&prompts, &cfg).unwrap();
    for (p, b) in prompts.iter().zip(&batched) {
        assert_eq!(q.generate(&[p.clone()], &cfg).unwrap().remove(0).ids, b.ids);
    }
}
