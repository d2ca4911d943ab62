#!/usr/bin/env bash
# Tests that can fail: a test that gives up early because a tool, a path or a privilege is
# missing must fail under CI=1 instead of passing unseen, and an ignored test must say why.
#   1. Every early `return` in a test file that follows a guard on a missing tool, path or
#      privilege (`.exists()`, `.is_err()`, `Command::new`, `read_dir`, `getuid`, a
#      "SKIPPED" message) has a CI check in the same guard (`var_os("CI")`/`var("CI")`
#      within the six lines before it).
#   2. Every `#[ignore]` carries its reason and command (`#[ignore = "..."]`), and every
#      ignored test is listed in docs/BENCHMARKS.md ("Ignored tests").
set -euo pipefail
cd "$(dirname "$0")/../.."
fail=0
files=$(find tests src quantize -name '*.rs' -not -path '*/target/*' | sort)
# 1. Early returns behind a guard on the machine, without the CI failure beside them.
for f in $files; do
  awk -v file="$f" '
    { line[NR] = $0 }
    /return( None)?;|else \{ return \}|else \{ return; \}/ {
      guard = 0; ci = 0
      for (i = NR; i >= NR - 6 && i >= 1; i--) {
        if (line[i] ~ /\.exists\(\)|\.is_err\(\)|Command::new|read_dir|getuid|SKIPPED/) guard = 1
        if (line[i] ~ /var_os\("CI"\)|var\("CI"\)/) ci = 1
      }
      if (guard && !ci) { printf "FAIL: %s:%d: an early return behind a missing tool, path or privilege, with no CI=1 failure beside it\n", file, NR; bad = 1 }
    }
    END { exit bad }
  ' "$f" >&2 || fail=1
done
# 2. Ignored tests: a reason each, and listed in docs/BENCHMARKS.md.
if grep -nE "^\s*#\[ignore\]" $files >&2; then
  echo "FAIL: an #[ignore] without its reason and command (#[ignore = \"...\"])" >&2
  fail=1
fi
ignored=0
for name in $(grep -hA3 -E '#\[ignore = ' $files | grep -oE 'fn [a-z0-9_]+' | awk '{print $2}'); do
  ignored=$((ignored + 1))
  grep -q "\`$name\`" docs/BENCHMARKS.md || { echo "FAIL: the ignored test $name is not listed in docs/BENCHMARKS.md (Ignored tests)" >&2; fail=1; }
done
[ $fail -eq 0 ] && echo "tests: every early return behind a missing tool fails under CI=1; $ignored ignored tests, each with its reason, listed in docs/BENCHMARKS.md"
exit $fail
