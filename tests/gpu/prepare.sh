#!/usr/bin/env bash
# Prepares the device check on this GPU-less machine (../shared/gpu.md's recipe): builds
# seqgpt with --features cuda and seqgpt-quantize, strips and xz-compresses them into .gpu/
# (ignored by git; the device tool carries it: about 6 MB). Then, on the GPU machine:
#   mkdir -p /tmp/b && for f in .gpu/*.xz; do xz -dc "$f" > /tmp/b/$(basename "$f" .xz); done \
#     && chmod +x /tmp/b/* && OUT=$OUT tests/gpu/check.sh /tmp/b
# Environment: CU13 (nvcc 13.0 from PyPI), CUDA_LINK (folder of lib*.so links with a stub
# libcuda), CUDA_TARGET_DIR (keep it between runs: the first build takes ~36 minutes).
set -euo pipefail
cd "$(dirname "$0")/../.."
CU13=${CU13:-/tmp/cuda13/lib/python3.11/site-packages/nvidia/cu13}
CUDA_LINK=${CUDA_LINK:-/tmp/cuda-link}
TD=${CUDA_TARGET_DIR:-/work/cuda-target}
[ -x "$CU13/bin/nvcc" ] || { echo "no nvcc at $CU13 (see ../shared/gpu.md step 1)" >&2; exit 1; }
[ -f "$CUDA_LINK/lib/libcuda.so" ] || { echo "no link folder at $CUDA_LINK (see ../shared/gpu.md step 3)" >&2; exit 1; }
PATH=$CU13/bin:$PATH CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90} CUDARC_CUDA_VERSION=13000 \
  CUDAFORGE_THREADS=2 CUDA_ROOT=$CUDA_LINK cargo build --release --features cuda --target-dir "$TD" --bin seqgpt
# The scheduler's throughput benchmark (issue 5) on CUDA: tests/scheduler_load.rs, built as a
# test binary against the same CUDA library (a minute once the library is built).
SCHED=$(PATH=$CU13/bin:$PATH CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90} CUDARC_CUDA_VERSION=13000 \
  CUDAFORGE_THREADS=2 CUDA_ROOT=$CUDA_LINK cargo test --release --features cuda --target-dir "$TD" \
  --test scheduler_load --no-run --message-format=json \
  | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "scheduler_load":
        print(m["executable"])')
# The converter needs no CUDA: the ordinary build's (its target dir: CARGO_TARGET_DIR or ./target).
cargo build --release -p seqgpt-quantize
CPU_TD=${CARGO_TARGET_DIR:-target}
mkdir -p .gpu
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
strip -o .gpu/seqgpt "$TD/release/seqgpt"
strip -o .gpu/seqgpt-quantize "$CPU_TD/release/seqgpt-quantize"
strip -o .gpu/scheduler_load "$SCHED"
xz -f -T2 -6 .gpu/seqgpt .gpu/seqgpt-quantize .gpu/scheduler_load
ls -la .gpu
