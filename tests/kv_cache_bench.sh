#!/usr/bin/env bash
# f32 against f16 key/value cache on the CPU, alternating, twice (docs/BENCHMARKS.md, CPU
# speed item 8): long prompts, where the cache is read as many bytes per step as the weights,
# and short ones. Usage: tests/kv_cache_bench.sh [MODEL.gguf]  (default: the 4-bit 560M file
# in ~/.cache/seqgpt-fast). Builds seqgpt in release first.
set -euo pipefail
cd "$(dirname "$0")/.."
M=${1:-$HOME/.cache/seqgpt-fast/bloom-560m-q4_0-embd-q6_K.gguf}
cargo build --release --bin seqgpt
B=${CARGO_TARGET_DIR:-target}/release/seqgpt
date
for r in 1 2; do
  for kv in f32 f16; do
    echo "== kv $kv (round $r) long"
    SEQGPT_CPU_KV=$kv "$B" bench --model "$M" --threads 2 --prompt-tokens 1024 --gen-tokens 32 --batch 1,4 2>&1 | grep -E "batch"
    echo "== kv $kv (round $r) short"
    SEQGPT_CPU_KV=$kv "$B" bench --model "$M" --threads 2 --prompt-tokens 31 --gen-tokens 16 --batch 1,8 --repeat 2 2>&1 | grep -E "batch"
  done
done
date
