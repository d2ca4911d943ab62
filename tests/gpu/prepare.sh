#!/usr/bin/env bash
# Prepares the device check on a machine without a GPU (docs/GPU.md, "Building the CUDA binary
# on a machine without a GPU"): builds seqgpt and the scheduler_load test binary with
# --features cuda, and seqgpt-quantize (no CUDA), then packs them into .gpu/ (tests/gpu/pack.sh:
# stripped, xz; ignored by git; the device tool carries it). Run it whenever CUDA code changed:
# it is the only build of the cuda feature. Then, on the GPU machine: tests/gpu/check.sh .gpu
# Prints one verdict line last:
#   prepare.sh: PASS: commit C, built in N s; packed .gpu/: seqgpt.xz X MB, ... (T MB in all)
#   prepare.sh: FAIL: STAGE (exit E) after N s
# Environment: CU13 (nvcc 13.0 from PyPI), CUDA_LINK (folder of lib*.so links with a stub
# libcuda), CUDA_TARGET_DIR (keep it between runs: the first build takes ~36 minutes),
# CUDA_COMPUTE_CAP (90: H200; 87: Jetson Orin).
set -euo pipefail
cd "$(dirname "$0")/../.."
START=$(date +%s)
stage=setup
verdict() {
  local rc=$?
  trap - EXIT
  if [ $rc -ne 0 ]; then
    echo "prepare.sh: FAIL: $stage (exit $rc) after $(($(date +%s) - START)) s"
  fi
  exit $rc
}
trap verdict EXIT
CU13=${CU13:-/tmp/cuda13/lib/python3.11/site-packages/nvidia/cu13}
CUDA_LINK=${CUDA_LINK:-/tmp/cuda-link}
TD=${CUDA_TARGET_DIR:-target/cuda}
[ -x "$CU13/bin/nvcc" ] || { echo "no nvcc at $CU13 (docs/GPU.md, step 1)" >&2; exit 1; }
[ -f "$CUDA_LINK/lib/libcuda.so" ] || { echo "no link folder at $CUDA_LINK (docs/GPU.md, step 2)" >&2; exit 1; }
cuda_env=(env PATH="$CU13/bin:$PATH" CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}" CUDARC_CUDA_VERSION=13000
  CUDAFORGE_THREADS=2 CUDA_ROOT="$CUDA_LINK")

stage="cargo build --features cuda (seqgpt)"
"${cuda_env[@]}" cargo build --release --features cuda --target-dir "$TD" --bin seqgpt
# The scheduler's throughput benchmark on CUDA: tests/scheduler_load.rs as a test binary
# against the same CUDA library (a minute once the library is built).
stage="cargo test --features cuda --no-run (scheduler_load)"
SCHED=$("${cuda_env[@]}" cargo test --release --features cuda --target-dir "$TD" \
  --test scheduler_load --no-run --message-format=json \
  | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "scheduler_load":
        print(m["executable"])')
[ -n "$SCHED" ] || { echo "cargo named no scheduler_load test binary" >&2; exit 1; }
# The converter needs no CUDA: the ordinary build's (its target dir: CARGO_TARGET_DIR or ./target).
stage="cargo build (seqgpt-quantize)"
cargo build --release -p seqgpt-quantize
BUILD_S=$(($(date +%s) - START))
CPU_TD=${CARGO_TARGET_DIR:-target}

stage="pack"
# .gpu/ stays out of git, also in a worktree (whose .git is a file naming the shared one).
EXCLUDE=$(git rev-parse --git-path info/exclude 2>/dev/null || echo .git/info/exclude)
grep -qx '/.gpu/' "$EXCLUDE" 2>/dev/null || echo '/.gpu/' >> "$EXCLUDE" 2>/dev/null || true
rm -rf .gpu
bash tests/gpu/pack.sh .gpu seqgpt="$TD/release/seqgpt" seqgpt-quantize="$CPU_TD/release/seqgpt-quantize" \
  scheduler_load="$SCHED"
ls -la .gpu
sizes=$(cd .gpu && for f in *.xz; do printf '%s %s\n' "$f" "$(stat -c %s "$f")"; done \
  | awk '{ t += $2; s = s sep sprintf("%s %.1f MB", $1, $2 / 1e6); sep = ", " } END { printf "%s (%.1f MB in all)", s, t / 1e6 }')
trap - EXIT
echo "prepare.sh: PASS: commit $(cat .gpu/commit), built in $BUILD_S s; packed .gpu/: $sizes"
