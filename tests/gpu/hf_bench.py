#!/usr/bin/env python3
"""Hugging Face transformers (eager attention, use_cache=True) generation speed, SeqGPT-560M
shape with random weights: fp16 on the GPU (and saves the model for our converter), or fp32
on the CPU from an existing model directory.

    hf_bench.py OUT_DIR --prompt-tokens 128 --gen-tokens 64 --batch 1,4,8            # GPU, fp16
    hf_bench.py --from MODEL_DIR --device cpu --dtype fp32 --threads 2 --batch 1     # CPU, fp32

Prints one JSON object: {"runs": [{"batch", "prompt_tokens", "gen_tokens", "prefill_s",
"total_s", "decode_tok_s"}]}, decode_tok_s = batch * (gen - 1) / (total - prefill), the
definition `seqgpt bench` uses.
"""
import argparse, json, shutil, sys, time
from pathlib import Path

import torch
from transformers import BloomConfig, BloomForCausalLM

ROOT = Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--from", dest="src", help="load this model directory instead of making one")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "fp32"])
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--batch", default="1,4,8")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.src:
        model = BloomForCausalLM.from_pretrained(a.src, attn_implementation="eager").eval()
    else:
        out = Path(a.out)
        cfg = BloomConfig(vocab_size=250880, hidden_size=1024, n_layer=24, n_head=16, layer_norm_epsilon=1e-5,
                          bos_token_id=1, eos_token_id=2, pad_token_id=3, seq_length=2048)
        try:
            cfg._attn_implementation = "eager"
        except Exception:  # transformers versions differ in how this is set; eager is BLOOM's default
            pass
        torch.manual_seed(0)
        model = BloomForCausalLM(cfg).eval()
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out)
        for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            shutil.copy(ROOT / "tests/fixtures/tiny" / f, out / f)
    model = (model.half() if a.dtype == "fp16" else model.float()).to(a.device).eval()
    sync = torch.cuda.synchronize if a.device.startswith("cuda") else (lambda: None)
    runs = []
    for b in [int(x) for x in a.batch.split(",")]:
        ids = torch.randint(10, 1000, (b, a.prompt_tokens), device=a.device)
        mask = torch.ones_like(ids)
        kw = dict(attention_mask=mask, do_sample=False, use_cache=True, eos_token_id=None, pad_token_id=3)
        with torch.no_grad():
            model.generate(ids, max_new_tokens=4, min_new_tokens=4, **kw)  # warm-up
            best = None
            for _ in range(a.repeat):
                sync()
                t0 = time.perf_counter()
                model(input_ids=ids, attention_mask=mask, use_cache=True)
                sync()
                prefill = time.perf_counter() - t0
                t0 = time.perf_counter()
                model.generate(ids, max_new_tokens=a.gen_tokens, min_new_tokens=a.gen_tokens, **kw)
                sync()
                total = time.perf_counter() - t0
                dec = b * (a.gen_tokens - 1) / max(total - prefill, 1e-9)
                if best is None or dec > best["decode_tok_s"]:
                    best = {"batch": b, "prompt_tokens": a.prompt_tokens, "gen_tokens": a.gen_tokens,
                            "prefill_s": prefill, "total_s": total, "decode_tok_s": dec}
        runs.append(best)
    dev = torch.cuda.get_device_name(0) if a.device.startswith("cuda") else "cpu"
    print(json.dumps({"runs": runs, "torch": torch.__version__, "device": dev, "dtype": a.dtype}))


if __name__ == "__main__":
    sys.exit(main())
