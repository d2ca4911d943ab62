#!/usr/bin/env python3
"""CUDA against CPU on the tiny fixture: logits and greedy tokens (part of tests/gpu/check.sh).

    compare.py BIN_DIR WORK_DIR  ->  prints a table, writes WORK_DIR/correctness.json, exits 1 on failure

The CPU path is checked against transformers by the test suite; here the GPU (f16
activations, quantized matmuls with q8_1 activations like llama.cpp) must agree with it on
the same file: relative logit error (max |diff| / max |logit|) within f16 tolerance (2e-2),
and the same top-1 token. Greedy agreement (how many of 12 tokens match before the first
difference) is reported: a random model's small top-2 margins let f16 rounding swap tokens.
"""
import json, os, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN, WORK = Path(sys.argv[1]), Path(sys.argv[2])
REL_TOL = 2e-2
GPU = os.environ.get("SEQGPT_GPU_DEVICE", "cuda:0")  # "cpu" for a dry run of this script


def run(args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([str(BIN / "seqgpt"), *args], capture_output=True, text=True, env=e, check=True).stdout


def logits(model, device, prompts, env=None):
    out = run(["logits", "--model", model, "--device", device, "--prompts-file", prompts], env)
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def greedy(model, device, prompts, env=None, n=12):
    out = run(["generate", "--model", model, "--device", device, "--prompts-file", prompts,
               "--max-new-tokens", str(n), "--greedy", "--ignore-eos", "--json"], env)
    return [json.loads(l)["ids"] for l in out.splitlines() if l.strip()]


def main():
    golden = json.loads((ROOT / "tests/fixtures/tiny/golden.json").read_text())
    prompts = WORK / "prompts.jsonl"
    prompts.write_text("".join(json.dumps(p["text"], ensure_ascii=False) + "\n" for p in golden["prompts"]))
    ok = True
    report = []
    for wtype in ("q8_0", "q4_0", "f16"):
        model = str(WORK / f"tiny-{wtype}.gguf")
        subprocess.run([str(BIN / "seqgpt-quantize"), "--model", str(ROOT / "tests/fixtures/tiny"), "--out", model,
                        "--wtype", wtype], check=True, capture_output=True)
        cpu = logits(model, "cpu", str(prompts))
        cpu_greedy = greedy(model, "cpu", str(prompts))
        for mode, env in (("fused", {}), ("candle-ops", {"SEQGPT_CUDA_FUSED": "0"})):
            gpu = logits(model, GPU, str(prompts), env)
            gpu_greedy = greedy(model, GPU, str(prompts), env)
            for i, (c, g) in enumerate(zip(cpu, gpu)):
                cl, gl = c["logits"], g["logits"]
                scale = max(abs(v) for v in cl)
                rel = max(abs(a - b) for a, b in zip(cl, gl)) / scale
                top_c = max(range(len(cl)), key=cl.__getitem__)
                top_g = max(range(len(gl)), key=gl.__getitem__)
                # Compare greedy tokens up to the first step the CPU itself finds close.
                row_ok = rel <= REL_TOL and top_c == top_g
                same = 0
                for a, b in zip(cpu_greedy[i], gpu_greedy[i]):
                    if a != b:
                        break
                    same += 1
                report.append({"wtype": wtype, "mode": mode, "prompt": i, "rel_err": rel,
                               "top1_same": top_c == top_g, "greedy_same_prefix": same,
                               "greedy_len": len(cpu_greedy[i])})
                ok &= row_ok
    (WORK / "correctness.json").write_text(json.dumps(report, indent=1))
    print(f"{'type':6} {'mode':10} {'max rel err':>12} {'top-1 same':>10} {'greedy same (of 12)':>20}")
    for wtype in ("q8_0", "q4_0", "f16"):
        for mode in ("fused", "candle-ops"):
            rows = [r for r in report if r["wtype"] == wtype and r["mode"] == mode]
            print(f"{wtype:6} {mode:10} {max(r['rel_err'] for r in rows):12.2e} "
                  f"{sum(r['top1_same'] for r in rows):>7}/{len(rows)} "
                  f"{min(r['greedy_same_prefix'] for r in rows):>12} (min)")
    print("correctness:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
