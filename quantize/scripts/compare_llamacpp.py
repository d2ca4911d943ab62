#!/usr/bin/env python3
"""Logits of one GGUF file in llama.cpp and in this engine, on the same token ids.

    quantize/scripts/compare_llamacpp.py MODEL.gguf [--prompts 8] [--chars 300] [--threads 2]
        [--bin path/to/seqgpt-quantize]

Prompts are held-out paragraphs of the shipped calibration text (every 8th paragraph of
each language, as seqgpt_quantize::calib holds them out), cut to --chars characters.
llama.cpp runs them through tests/llamacpp's seqgpt-llama-harness (--all: logits at every
position; built by tests/llamacpp/build.sh into $LLAMA_DIR/bin, default
~/.cache/seqgpt-fast/llama.cpp/bin) with its own tokenizer; `seqgpt-quantize eval
--llamacpp-logits` then runs the engine on the very same ids and prints, as JSON, the
largest and mean |logit difference|, top-1 agreement and the mean KL(llama.cpp || engine)
over all positions.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CALIB = ROOT / "quantize" / "calib"
LANGS = ["en", "zh", "ja", "ko", "fr", "de", "ru", "es"]


def paragraphs(lang):
    text = (CALIB / f"vimtutor.{lang}.txt").read_text(encoding="utf-8")
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = [l.strip() for l in block.splitlines()]
        lines = [l for l in lines if l and not re.fullmatch(r"[=~\-*#^<>|\s]+", l)]
        if lines:
            p = re.sub(r"[ \t]+", " ", ("" if lang in ("zh", "ja") else " ").join(lines))
            if len(p) >= 20:
                out.append(p)
    return out


def held_out(n, chars):
    per = [[p for i, p in enumerate(paragraphs(l)) if i % 8 == 7] for l in LANGS]
    out = []
    for i in range(max(map(len, per))):
        for lst in per:
            if i < len(lst) and len(out) < n:
                out.append(lst[i][:chars])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--chars", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bin", help="seqgpt-quantize binary (default: cargo run --release -p seqgpt-quantize)")
    args = ap.parse_args()
    llama = Path(os.environ.get("LLAMA_DIR", Path.home() / ".cache/seqgpt-fast/llama.cpp")) / "bin" / "seqgpt-llama-harness"
    if not llama.exists():
        sys.exit(f"{llama} is missing: build it with tests/llamacpp/build.sh")
    prompts = "".join(p + "\n" for p in held_out(args.prompts, args.chars))
    with tempfile.TemporaryDirectory() as tmp:
        logits = Path(tmp) / "llamacpp.jsonl"
        with open(logits, "w") as f:
            r = subprocess.run([str(llama), args.model, "--threads", str(args.threads), "--greedy", "0", "--all"],
                               input=prompts.encode(), stdout=f, stderr=subprocess.PIPE)
        if r.returncode != 0:
            sys.exit(f"llama.cpp failed:\n{r.stderr.decode(errors='replace')[-3000:]}")
        cmd = [args.bin] if args.bin else ["cargo", "run", "-q", "--release", "-p", "seqgpt-quantize", "--"]
        out = subprocess.run(cmd + ["eval", "--model", args.model, "--llamacpp-logits", str(logits)],
                             check=True, capture_output=True, text=True, cwd=ROOT)
        print(out.stdout.strip())


if __name__ == "__main__":
    main()
