#!/usr/bin/env bash
# The test suite: every crate's tests (unit, integration, fixtures against transformers'
# goldens, hostile inputs, D-Bus with a private bus), then the layer, unit-file and test-suite
# checks, the GPU check's dry run, and last the count of tests run against the count defined
# (less the ignored ones that docs/BENCHMARKS.md lists): a test that silently did not run
# shows there.
# On a fresh Debian machine run as root: it installs the Debian packages it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/deps.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --release --workspace 2>&1 | tee "$log"
for check in tests/ops/check_layers.sh tests/ops/check_units.sh tests/ops/check_tests.sh; do
  # A check that is gone or lost its run bit fails the suite instead of being skipped.
  [ -x "$check" ] || { echo "tests/run.sh: $check is missing or not executable" >&2; exit 1; }
  "$check"
done
# The GPU check's dry run: every step the device run takes (unpack, agreement, speed runs,
# transformers where torch is, the scheduler, the table), on the CPU build, at short lengths.
tests/gpu/check.sh --dry-run
# "test result: ok. P passed; F failed; I ignored; ..." per test binary.
ran=$(awk '/^test result:/ {n += $4 + $6} END {print n + 0}' "$log")
ignored=$(awk '/^test result:/ {n += $8} END {print n + 0}' "$log")
defined=$(cargo test --release --workspace -q -- --list 2>/dev/null | grep -c ': test$')
documented=$(awk '/^## Ignored tests/ {on = 1; next} /^## / {on = 0} on && /^\| `/ {n++} END {print n + 0}' docs/BENCHMARKS.md)
echo "tests: $ran run, $defined defined, $ignored ignored ($documented listed in docs/BENCHMARKS.md)"
if [ "$ran" -ne $((defined - documented)) ] || [ "$ignored" -ne "$documented" ]; then
  echo "tests/run.sh: $ran tests ran, but $defined are defined and $documented documented as ignored" >&2
  exit 1
fi
echo "all tests passed"
