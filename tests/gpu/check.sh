#!/usr/bin/env bash
# The CUDA path's device check, in one run, on a machine with an NVIDIA GPU (docs/GPU.md):
#   1. correctness: CUDA logits and greedy tokens against the CPU on the tiny fixture
#      (fused kernels and candle's own ops), tests/gpu/compare.py;
#   2. `seqgpt bench` on a SeqGPT-560M-shaped random model at batch 1/4/8 on CUDA;
#   3. transformers fp16 (eager, use_cache=True) on the same GPU, same lengths;
#   4. the ratios: decode batch 1 vs transformers (goal >= 5x), batch 8 vs batch 1 (>= 4x);
#   5. the scheduler's throughput on CUDA: 8 concurrent requests vs one at a time (issue 5,
#      goal >= 3x), tests/scheduler_load.rs as built by prepare.sh (skipped without it).
# Usage: tests/gpu/check.sh BIN_DIR   (seqgpt, seqgpt-quantize and scheduler_load from prepare.sh)
# Logs go to $OUT (or a temporary directory). Builds nothing; needs python3 with torch and
# transformers (PYTHON=...).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${1:-.gpu}")
OUT=${OUT:-$(mktemp -d)}
WORK=$(mktemp -d)
PY=${PYTHON:-python3}
P=${PROMPT_TOKENS:-128}
G=${GEN_TOKENS:-64}
status=0

# The lent machine keeps CUDA 13 in PyTorch's venv (../shared/gpu.md).
V=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
if [ -d "$V" ]; then
  S=$(mktemp -d)
  for f in "$V"/lib*.so.*; do b=$(basename "$f"); ln -sf "$f" "$S/${b%%.so.*}.so"; done
  export LD_LIBRARY_PATH=$S:$V:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
  PY=${PYTHON:-/opt/torch/.venv/bin/python3}
fi

echo "== device"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
"$BIN/seqgpt" info --device cuda:0 2>&1 | tee "$OUT/info.txt"

echo "== 1. correctness (CUDA vs CPU on tests/fixtures/tiny)"
$PY tests/gpu/compare.py "$BIN" "$WORK" 2>&1 | tee "$OUT/correctness.txt" || status=1
cp "$WORK/correctness.json" "$OUT/" 2>/dev/null

echo "== 2. transformers fp16 (also writes the 560M-shaped model)"
$PY tests/gpu/hf_bench.py "$WORK/m560" --prompt-tokens "$P" --gen-tokens "$G" --batch 1,4,8 > "$OUT/hf.json" 2> "$OUT/hf.log" \
  || { status=1; tail -20 "$OUT/hf.log"; }
cat "$OUT/hf.json"

echo "== 3. seqgpt bench on CUDA (q4_0 layers, q8_0 embedding/head)"
"$BIN/seqgpt-quantize" --model "$WORK/m560" --out "$WORK/m560-q4_0.gguf" --wtype q4_0 --embd-type q8_0 2>&1 | tail -1
"$BIN/seqgpt" info --device cuda:0 --model "$WORK/m560-q4_0.gguf" | head -1
"$BIN/seqgpt" bench --model "$WORK/m560-q4_0.gguf" --device cuda:0 --prompt-tokens "$P" --gen-tokens "$G" \
  --batch 1,4,8 --repeat 3 --json > "$OUT/seqgpt.json" 2> "$OUT/seqgpt.log" || { status=1; tail -20 "$OUT/seqgpt.log"; }
SEQGPT_CUDA_FUSED=0 "$BIN/seqgpt" bench --model "$WORK/m560-q4_0.gguf" --device cuda:0 --prompt-tokens "$P" \
  --gen-tokens "$G" --batch 1,8 --json > "$OUT/seqgpt-unfused.json" 2>> "$OUT/seqgpt.log" || status=1
cat "$OUT/seqgpt.json"

echo "== 4. ratios"
$PY - "$OUT" <<'PYEOF' || status=1
import json, sys
out = sys.argv[1]
ours = {r["batch"]: r for r in json.load(open(f"{out}/seqgpt.json"))["runs"]}
hf = {r["batch"]: r for r in json.load(open(f"{out}/hf.json"))["runs"]}
try:
    unf = {r["batch"]: r for r in json.load(open(f"{out}/seqgpt-unfused.json"))["runs"]}
except Exception:
    unf = {}
print(f"{'batch':>5} {'seqgpt tok/s':>13} {'unfused':>9} {'hf fp16 tok/s':>14} {'ratio':>7} {'seqgpt prefill tok/s':>21} {'ttft s':>8}")
for b in sorted(ours):
    o, h = ours[b], hf.get(b)
    u = unf.get(b, {}).get("decode_tok_s", float("nan"))
    print(f"{b:>5} {o['decode_tok_s']:13.1f} {u:9.1f} {h['decode_tok_s'] if h else float('nan'):14.1f} "
          f"{o['decode_tok_s'] / h['decode_tok_s'] if h else float('nan'):7.2f}x {o['prefill_tok_s']:21.1f} {o['ttft_s']:8.4f}")
r1 = ours[1]["decode_tok_s"] / hf[1]["decode_tok_s"]
r8 = ours[8]["decode_tok_s"] / ours[1]["decode_tok_s"]
print(f"decode batch 1 vs transformers fp16: {r1:.2f}x (goal >= 5)")
print(f"batch 8 aggregate vs batch 1: {r8:.2f}x (goal >= 4)")
json.dump({"decode_b1_vs_hf": r1, "b8_vs_b1": r8}, open(f"{out}/ratios.json", "w"))
PYEOF
echo "== 5. scheduler throughput on CUDA (8 concurrent vs one at a time, 16 new tokens)"
if [ -x "$BIN/scheduler_load" ]; then
  SEQGPT_SCHED_DEVICE=cuda:0 SEQGPT_SCHED_MODEL="$WORK/m560-q4_0.gguf" SEQGPT_SCHED_ROUNDS=3 \
    "$BIN/scheduler_load" --ignored --nocapture --test-threads 1 throughput 2>&1 | tee "$OUT/scheduler.txt" \
    | grep -E "round|one at a time|8 concurrent|speed-up|identical" || status=1
  grep -q "test result: ok" "$OUT/scheduler.txt" || status=1
else
  echo "no $BIN/scheduler_load (tests/gpu/prepare.sh builds it); skipped"
fi

echo "logs in $OUT"
exit $status
