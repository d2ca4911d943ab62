#!/usr/bin/env bash
# Side by side with llama.cpp on the same GGUF files: builds what is missing, then runs
# benches/vs_llamacpp.py (see its docstring). Example: benches/vs_llamacpp.sh --threads 2 --rounds 3
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/llamacpp/build.sh
cargo build --release --workspace --bins
exec python3 benches/vs_llamacpp.py "$@"
