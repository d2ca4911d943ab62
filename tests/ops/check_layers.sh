#!/usr/bin/env bash
# The layers' dependency rules (docs/ARCHITECTURE.md), checked on the resolved dependency trees:
# the inference crate reaches no async runtime, no D-Bus and no PDF parser; the PDF crate no
# tensor library, no async runtime and no D-Bus; no module of a library crate imports one that
# imports it back. A dependency that breaks a rule fails CI.
set -euo pipefail
cd "$(dirname "$0")/../.."
fail=0
check() { # crate, forbidden crates...
  local crate=$1
  shift
  local tree
  tree=$(cargo tree --offline -e normal -p "$crate" --prefix none --format '{p}' 2>/dev/null || cargo tree -e normal -p "$crate" --prefix none --format '{p}')
  for bad in "$@"; do
    if echo "$tree" | awk '{print $1}' | grep -qx "$bad"; then
      echo "FAIL: $crate depends on $bad (normal dependencies, transitively)" >&2
      fail=1
    fi
  done
}
check seqgpt-engine tokio zbus lopdf
check seqgpt-pdf candle-core tokio zbus
# No import cycles between the modules of a library crate.
python3 tests/ops/module_cycles.py src/engine src/pdf src/daemon quantize || fail=1
[ $fail -eq 0 ] && echo "layers: seqgpt-engine has no tokio, zbus or lopdf; seqgpt-pdf has no candle-core, tokio or zbus; no import cycles"
exit $fail
