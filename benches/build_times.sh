#!/usr/bin/env bash
# Incremental release build times of two checkouts side by side: touch one file, rebuild the
# binaries, time it; the two trees alternate, ROUNDS times. Each tree builds in its own target
# directory (CARGO_TARGET_DIR of the tree: TARGET_A / TARGET_B, default DIR/target); build
# both once before timing.
#
# usage: benches/build_times.sh DIR_A DIR_B [ROUNDS]
#   env FILES_A="src/service/summarizer.rs src/kernels/attention.rs"   files to touch in A
#   env FILES_B="src/daemon/service/summarizer.rs src/engine/kernels/attention.rs"
set -euo pipefail
A=$1 B=$2 ROUNDS=${3:-3}
FILES_A=${FILES_A:-src/daemon/service/summarizer.rs src/engine/kernels/attention.rs}
FILES_B=${FILES_B:-src/daemon/service/summarizer.rs src/engine/kernels/attention.rs}
TARGET_A=${TARGET_A:-$A/target} TARGET_B=${TARGET_B:-$B/target}
build() { # dir, target, file -> seconds
  touch "$1/$3"
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$1" && CARGO_TARGET_DIR=$2 cargo build --release --bins >/dev/null 2>&1)
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}
read -r -a fa <<<"$FILES_A"
read -r -a fb <<<"$FILES_B"
for r in $(seq "$ROUNDS"); do
  for i in "${!fa[@]}"; do
    a=$(build "$A" "$TARGET_A" "${fa[$i]}")
    b=$(build "$B" "$TARGET_B" "${fb[$i]}")
    printf 'round %s\t%s\tA %.1f s\t%s\tB %.1f s\n' "$r" "${fa[$i]}" "$a" "${fb[$i]}" "$b"
  done
done
