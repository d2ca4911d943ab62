#!/usr/bin/env python3
"""Our GGUF files in llama.cpp: the same prompt tokens, close logits, the same greedy tokens.

    tests/llamacpp/check.py [--llama-dir DIR] [--seqgpt BIN] [--quantize BIN]

Converts tests/fixtures/tiny with seqgpt-quantize (f32, f16, q8_0, q4_0), runs each file
through llama.cpp (tests/llamacpp/harness.cpp, built by tests/llamacpp/build.sh) and through
`seqgpt`, and prints a table: prompt-token agreement, max |logit diff| at the last position,
top-1 agreement, and how many of 12 greedy tokens agree. Exit status 1 if f32/f16 greedy
tokens or any tokenization differ. Random models have flat logits: for 4-bit files compare
logits, not text (the greedy column is informative there).
"""
import argparse, json, os, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-dir", default=os.environ.get("LLAMA_DIR", str(Path.home() / ".cache/seqgpt-fast/llama.cpp")))
    ap.add_argument("--seqgpt", default=str(ROOT / "target/release/seqgpt"))
    ap.add_argument("--quantize", default=str(ROOT / "target/release/seqgpt-quantize"))
    ap.add_argument("--types", default="f32,f16,q8_0,q4_0")
    a = ap.parse_args()
    harness = Path(a.llama_dir) / "bin/seqgpt-llama-harness"
    golden = json.loads((ROOT / "tests/fixtures/tiny/golden.json").read_text())
    texts = [p["text"] for p in golden["prompts"]]
    work = Path(tempfile.mkdtemp())
    (work / "prompts.txt").write_text("".join(t + "\n" for t in texts))
    (work / "prompts.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts))
    ok = True
    print(f"{'type':6} {'tokens same':>11} {'max |dlogit|':>13} {'top-1 same':>10} {'greedy same (of 12)':>20}")
    for t in a.types.split(","):
        model = work / f"tiny-{t}.gguf"
        subprocess.run([a.quantize, "--model", str(ROOT / "tests/fixtures/tiny"), "--out", str(model), "--wtype", t],
                       check=True, capture_output=True)
        ll = [json.loads(l) for l in subprocess.run([str(harness), str(model), "--threads", "2", "--greedy", "12"],
              input=(work / "prompts.txt").read_text(), capture_output=True, text=True, check=True).stdout.splitlines()]
        ours_l = [json.loads(l) for l in subprocess.run([a.seqgpt, "logits", "--model", str(model), "--device", "cpu",
                  "--prompts-file", str(work / "prompts.jsonl")], capture_output=True, text=True, check=True).stdout.splitlines()]
        ours_g = [json.loads(l)["ids"] for l in subprocess.run([a.seqgpt, "generate", "--model", str(model), "--device", "cpu",
                  "--prompts-file", str(work / "prompts.jsonl"), "--max-new-tokens", "12", "--greedy", "--ignore-eos",
                  "--json"], capture_output=True, text=True, check=True).stdout.splitlines()]
        # A batch of prompts runs left-padded in one pass; compare prompt by prompt.
        tok_same = sum(l["ids"] == o["ids"] for l, o in zip(ll, ours_l))
        diff = max(max(abs(x - y) for x, y in zip(l["logits_last"], o["logits"])) for l, o in zip(ll, ours_l))
        top1 = sum(max(range(len(l["logits_last"])), key=l["logits_last"].__getitem__) ==
                   max(range(len(o["logits"])), key=o["logits"].__getitem__) for l, o in zip(ll, ours_l))
        greedy_same = []
        for l, g in zip(ll, ours_g):
            n = 0
            for x, y in zip(l["greedy"], g):
                if x != y:
                    break
                n += 1
            greedy_same.append(n)
        print(f"{t:6} {tok_same:>7}/{len(texts)} {diff:13.2e} {top1:>7}/{len(texts)} {min(greedy_same):>12} (min), all: {greedy_same}")
        ok &= tok_same == len(texts)
        if t in ("f32", "f16"):
            ok &= min(greedy_same) == 12
    print("llama.cpp check:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
