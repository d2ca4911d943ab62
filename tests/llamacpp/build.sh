#!/usr/bin/env bash
# Builds llama.cpp (the copy vendored in the llama-cpp-python sdist from PyPI) and our
# harness into a cache directory, once: llama-bench, llama-perplexity,
# llama-quantize and seqgpt-llama-harness end up in $LLAMA_DIR/bin.
#   tests/llamacpp/build.sh            (LLAMA_DIR defaults to ~/.cache/seqgpt-fast/llama.cpp)
# About 12 CPU-minutes. Needs cmake (pip's if the system has none) and a C++ compiler.
set -euo pipefail
VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
LLAMA_DIR=${LLAMA_DIR:-$HOME/.cache/seqgpt-fast/llama.cpp}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$LLAMA_DIR"
cd "$LLAMA_DIR"
STAMP="$VERSION $(cat "$HERE/harness.cpp" "$HERE/build.sh" | sha256sum | cut -c1-16)"
if [ -x bin/seqgpt-llama-harness ] && [ "$(cat bin/.stamp 2>/dev/null)" = "$STAMP" ]; then
  echo "llama.cpp $VERSION already built in $LLAMA_DIR/bin"; exit 0
fi
SDIST=llama_cpp_python-$VERSION.tar.gz
if [ ! -f "$SDIST" ]; then
  python3 -m pip download --no-deps --no-binary llama-cpp-python "llama-cpp-python==$VERSION" -d . \
    || { echo "pip download failed" >&2; exit 1; }
fi
[ -d "llama_cpp_python-$VERSION" ] || tar xzf "$SDIST"
SRC=$PWD/llama_cpp_python-$VERSION/vendor/llama.cpp
command -v cmake >/dev/null || python3 -m pip install -q cmake
# The harness builds inside llama.cpp's tree as one more example target.
mkdir -p "$SRC/examples/seqgpt-harness"
cp "$HERE/harness.cpp" "$SRC/examples/seqgpt-harness/harness.cpp"
cat > "$SRC/examples/seqgpt-harness/CMakeLists.txt" <<'CM'
add_executable(seqgpt-llama-harness harness.cpp)
target_link_libraries(seqgpt-llama-harness PRIVATE llama)
CM
grep -q seqgpt-harness "$SRC/examples/CMakeLists.txt" || echo 'add_subdirectory(seqgpt-harness)' >> "$SRC/examples/CMakeLists.txt"
# Native code (AVX-512/VNNI where the CPU has them: llama.cpp at its best), but no AMX: CPUs
# that list AMX in cpuid may still refuse it (virtual machines without the kernel's XSTATE
# permission), which kills the process with SIGILL.
NOAMX=""
if grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then NOAMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"; fi
cmake -S "$SRC" -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_NATIVE=ON \
  -DCMAKE_C_FLAGS="$NOAMX" -DCMAKE_CXX_FLAGS="$NOAMX" > cmake.log
cmake --build build -j "$(nproc)" --target llama-bench llama-perplexity llama-quantize seqgpt-llama-harness > build.log 2>&1 \
  || { tail -30 build.log; exit 1; }
mkdir -p bin
for t in llama-bench llama-perplexity llama-quantize seqgpt-llama-harness; do cp "build/bin/$t" bin/; done
echo "$STAMP" > bin/.stamp
echo "built llama.cpp $VERSION into $LLAMA_DIR/bin"
