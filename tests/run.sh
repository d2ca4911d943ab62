#!/usr/bin/env bash
# The test suite: every crate's tests (unit, integration, fixtures against transformers'
# goldens, hostile inputs, D-Bus with a private bus), then the systemd unit checks.
# On a fresh Debian machine run as root: it installs the Debian packages it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/deps.sh
cargo test --release --workspace
for check in tests/ops/check_layers.sh tests/ops/check_units.sh; do
  # A check that is gone or lost its run bit fails the suite instead of being skipped.
  [ -x "$check" ] || { echo "tests/run.sh: $check is missing or not executable" >&2; exit 1; }
  "$check"
done
echo "all tests passed"
