#!/usr/bin/env bash
# The CUDA path's device check, in one run (docs/GPU.md, "The device check"). Steps:
#   unpack       the binaries prepare.sh packed (BIN_DIR/*.xz), or a folder of plain ones
#   device       nvidia-smi and `seqgpt info`
#   correctness  logits and greedy tokens on the device against the CPU, tiny fixture
#                (q8_0, q4_0, f16; fused kernels and candle's ops): tests/gpu/compare.py
#   hf           transformers fp16, eager, use_cache=True, at batch 1/4/8 (tests/gpu/hf_bench.py;
#                on the GPU it also writes the SeqGPT-560M-shaped random model)
#   quantize     that model to q4_0 layers, q8_0 embedding and head
#   bench        `seqgpt bench` at batch 1/4/8, fused kernels
#   unfused      the same at batch 1/8 on candle's ops (SEQGPT_CUDA_FUSED=0)
#   scheduler    8 concurrent requests against the same 8 one at a time (tests/scheduler_load.rs)
# then the table (tests/gpu/table.py), whatever failed: a failed or timed-out step leaves "-"
# in its rows. Each step has a time limit and the whole run stays within BUDGET_S (480 s).
#
# Usage: tests/gpu/check.sh [--dry-run] [--device cpu|cuda:N] [BIN_DIR]
#   On the GPU machine: tests/gpu/check.sh .gpu   (BIN_DIR from prepare.sh; builds nothing)
#   --dry-run: every step on this machine's CPU: the CPU build (target/release, and the
#   scheduler_load test binary) packed as prepare.sh packs, then unpacked; the tiny fixture for
#   the speed runs; prompt 8, 4 new tokens; transformers on the CPU when torch is importable,
#   else skipped (torch is kept out of CI). `--device cpu` with a BIN_DIR does the same with
#   those binaries. The table has the device run's shape, with the CPU's figures (goals not
#   judged). Exit status: 0 when every step passed (or was skipped on the CPU by design).
# Results and logs go to $OUT (a temporary folder when unset); the converted models to a
# temporary work folder, removed at the end. PYTHON: the interpreter with torch.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DRY=0
DEVICE=cuda:0
BIN_ARG=
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) DRY=1; DEVICE=cpu ;;
    --device) DEVICE=$2; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    -*) echo "check.sh: unknown option $1" >&2; exit 2 ;;
    *) BIN_ARG=$1 ;;
  esac
  shift
done
[ "$DEVICE" = cpu ] && ON_CPU=1 || ON_CPU=0
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
PY=${PYTHON:-python3}
BUDGET_S=${BUDGET_S:-480}
# Short lengths on the CPU: the dry run checks that every step runs and parses, not speed.
if [ $DRY = 1 ]; then D_P=8 D_G=4 D_REPEAT=1 D_ROUNDS=1 D_NEW=4; else D_P=128 D_G=64 D_REPEAT=3 D_ROUNDS=3 D_NEW=16; fi
P=${PROMPT_TOKENS:-$D_P}
G=${GEN_TOKENS:-$D_G}
REPEAT=${BENCH_REPEAT:-$D_REPEAT}
ROUNDS=${SCHED_ROUNDS:-$D_ROUNDS}
NEW=${SCHED_NEW:-$D_NEW}

# The lent machine keeps CUDA 13 in PyTorch's venv.
V=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
if [ $ON_CPU = 0 ] && [ -d "$V" ]; then
  S=$(mktemp -d -p "$WORK")
  for f in "$V"/lib*.so.*; do b=$(basename "$f"); ln -sf "$f" "$S/${b%%.so.*}.so"; done
  export LD_LIBRARY_PATH=$S:$V:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
  PY=${PYTHON:-/opt/torch/.venv/bin/python3}
fi

# The dry run's binaries: this checkout's CPU build, packed as prepare.sh packs the CUDA one
# (cargo builds what is missing; after the test suite it only looks).
if [ -z "$BIN_ARG" ]; then
  if [ $DRY = 0 ]; then
    echo "check.sh: give BIN_DIR (prepare.sh's .gpu), or --dry-run" >&2
    exit 2
  fi
  TD=${CARGO_TARGET_DIR:-target}
  {
    cargo build --release -q -p seqgpt-fast --bin seqgpt -p seqgpt-quantize --bin seqgpt-quantize &&
      SCHED=$(cargo test --release -q -p seqgpt-fast --test scheduler_load --no-run --message-format=json |
        python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "scheduler_load":
        print(m["executable"])') &&
      [ -n "$SCHED" ] &&
      XZ_LEVEL=0 bash tests/gpu/pack.sh "$WORK/packed" seqgpt="$TD/release/seqgpt" \
        seqgpt-quantize="$TD/release/seqgpt-quantize" scheduler_load="$SCHED"
  } > "$OUT/pack.log" 2>&1 || { cat "$OUT/pack.log" >&2; echo "check.sh: packing the CPU build failed" >&2; exit 1; }
  BIN_ARG=$WORK/packed
fi
SRC=$(realpath "$BIN_ARG")
B=$WORK/bin
COMMIT=$(cat "$SRC/commit" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ $ON_CPU = 1 ]; then
  SPEED_MODEL=${SPEED_MODEL:-$ROOT/tests/fixtures/tiny}
  SPEED_NAME="the tiny fixture"
else
  SPEED_MODEL=$WORK/m560
  SPEED_NAME="SeqGPT-560M shape, random weights"
fi
python3 -c 'import json, sys; a = sys.argv
json.dump({"dry_run": a[1] == "1", "device": a[2], "commit": a[3], "budget_s": int(a[4]), "prompt_tokens": int(a[5]),
           "gen_tokens": int(a[6]), "speed_model": a[7]}, open(a[8], "w"))' \
  "$ON_CPU" "$DEVICE" "$COMMIT" "$BUDGET_S" "$P" "$G" "$SPEED_NAME" "$OUT/meta.json"
export ROOT OUT WORK PY DEVICE ON_CPU SRC B P G REPEAT ROUNDS NEW SPEED_MODEL
Q=$WORK/speed-q4_0.gguf
export Q

# Exit status 77 from a step: skipped on purpose (its last line says why).
SKIP=77

s_unpack() {
  mkdir -p "$B"
  if compgen -G "$SRC/*.xz" > /dev/null; then
    for f in "$SRC"/*.xz; do xz -dc "$f" > "$B/$(basename "$f" .xz)" || return 1; done
  else
    for f in seqgpt seqgpt-quantize scheduler_load; do [ -e "$SRC/$f" ] && cp "$SRC/$f" "$B/"; done
  fi
  chmod +x "$B"/*
  ls -l "$B"
  for f in seqgpt seqgpt-quantize scheduler_load; do
    [ -x "$B/$f" ] || { echo "no $f in $SRC (tests/gpu/prepare.sh packs it)"; return 1; }
  done
  # Starts at all: the CUDA libraries resolve.
  "$B/seqgpt" --version
}

s_device() {
  if [ "$ON_CPU" = 0 ]; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || return 1
  fi
  "$B/seqgpt" info --device "$DEVICE"
}

s_correctness() {
  SEQGPT_GPU_DEVICE=$DEVICE "$PY" tests/gpu/compare.py "$B" "$WORK" || return 1
  cp "$WORK/correctness.json" "$OUT/"
}

s_hf() {
  if [ "$ON_CPU" = 1 ]; then
    if ! "$PY" -c 'import torch, transformers' 2> /dev/null; then
      echo "no torch and transformers for $PY (kept out of CI)"
      return 77
    fi
    "$PY" tests/gpu/hf_bench.py --from "$SPEED_MODEL" --device cpu --dtype fp32 --threads 2 \
      --prompt-tokens "$P" --gen-tokens "$G" --batch 1,4,8 --repeat 1 > "$OUT/hf.json"
  else
    "$PY" tests/gpu/hf_bench.py "$SPEED_MODEL" --prompt-tokens "$P" --gen-tokens "$G" --batch 1,4,8 > "$OUT/hf.json"
  fi
}

s_quantize() {
  [ -e "$SPEED_MODEL/config.json" ] || { echo "no model at $SPEED_MODEL (the hf step writes it)"; return 1; }
  "$B/seqgpt-quantize" --model "$SPEED_MODEL" --out "$Q" --wtype q4_0 --embd-type q8_0 || return 1
  "$B/seqgpt" info --device "$DEVICE" --model "$Q"
}

s_bench() {
  "$B/seqgpt" bench --model "$Q" --device "$DEVICE" --prompt-tokens "$P" --gen-tokens "$G" \
    --batch 1,4,8 --repeat "$REPEAT" --json > "$OUT/bench.json"
}

s_unfused() {
  SEQGPT_CUDA_FUSED=0 "$B/seqgpt" bench --model "$Q" --device "$DEVICE" --prompt-tokens "$P" \
    --gen-tokens "$G" --batch 1,8 --json > "$OUT/unfused.json"
}

s_scheduler() {
  SEQGPT_SCHED_DEVICE=$DEVICE SEQGPT_SCHED_MODEL=$Q SEQGPT_SCHED_ROUNDS=$ROUNDS SEQGPT_SCHED_NEW=$NEW \
    "$B/scheduler_load" --ignored --nocapture --test-threads 1 throughput || return 1
}
export -f s_unpack s_device s_correctness s_hf s_quantize s_bench s_unfused s_scheduler

# The budget counts from here: the dry run's packing (cargo may build) is not the device run's.
START=$(date +%s)
: > "$OUT/steps.tsv"
status=0
# step NAME LIMIT_S: runs s_NAME with its output in $OUT/NAME.log, for at most LIMIT_S seconds
# and never past the budget (10 s kept for the table); records status and seconds.
step() {
  local name=$1 limit=$2 left rc t0 secs st note
  left=$((BUDGET_S - ($(date +%s) - START) - 10))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -le 0 ]; then
    printf '%s\tno time left\t0\t\n' "$name" >> "$OUT/steps.tsv"
    echo "== $name: no time left"
    status=1
    return
  fi
  echo "== $name (at most ${limit} s)"
  t0=$(date +%s.%N)
  timeout -k 5 "$limit" bash -c "s_$name" > "$OUT/$name.log" 2>&1
  rc=$?
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  note=
  case $rc in
    0) st=ok ;;
    77) st=skipped; note=$(tail -1 "$OUT/$name.log") ;;
    124 | 137) st="timeout ${limit}s"; status=1 ;;
    *) st="failed ($rc)"; status=1 ;;
  esac
  # On a GPU nothing is skipped: a missing torch there is a failure.
  if [ $rc = 77 ] && [ "$ON_CPU" = 0 ]; then st="failed (skip)"; status=1; fi
  [ "$st" = ok ] || [ "$st" = skipped ] || tail -15 "$OUT/$name.log"
  printf '%s\t%s\t%s\t%s\n' "$name" "$st" "$secs" "$note" >> "$OUT/steps.tsv"
}

step unpack 60
step device 30
step correctness 100
step hf 120
step quantize 90
step bench 75
step unfused 45
step scheduler 60
echo "== table"
python3 tests/gpu/table.py "$OUT" || status=1
echo "logs in $OUT"
exit $status
