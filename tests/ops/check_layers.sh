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
# The cycle check itself must see a parent <-> child cycle (the child uses an item of its
# parent, which names the child back) and let a parent that only re-exports its child pass.
t=$(mktemp -d); mkdir -p $t/bad/a $t/good/a
printf 'mod b;\npub struct P;\nfn f() { b::g(); }\n' > $t/bad/a/mod.rs
printf 'use super::P;\npub fn g() {}\n' > $t/bad/a/b.rs
printf 'pub mod a;\n' > $t/bad/lib.rs
printf 'mod b;\nmod p;\npub use b::g;\npub use p::P;\n' > $t/good/a/mod.rs
printf 'use super::P;\npub fn g() {}\n' > $t/good/a/b.rs
printf 'pub struct P;\n' > $t/good/a/p.rs
printf 'pub mod a;\n' > $t/good/lib.rs
if python3 tests/ops/module_cycles.py $t/bad 2>/dev/null; then echo "FAIL: module_cycles.py missed a parent <-> child cycle" >&2; fail=1; fi
python3 tests/ops/module_cycles.py $t/good || { echo "FAIL: module_cycles.py saw a cycle in re-exports" >&2; fail=1; }
rm -rf $t
[ $fail -eq 0 ] && echo "layers: seqgpt-engine has no tokio, zbus or lopdf; seqgpt-pdf has no candle-core, tokio or zbus; no import cycles"
exit $fail
