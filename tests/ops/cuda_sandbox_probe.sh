#!/usr/bin/env bash
# Build tests/ops/cuda_sandbox_probe.c with the system call allow-list of
# systemd/seqgptd.service, and run it three ways: no filter, MemoryDenyWriteExecute only,
# MemoryDenyWriteExecute plus the unit's SystemCallFilter.
#
#   tests/ops/cuda_sandbox_probe.sh [path/to/libcublas.so]
#
# Needs gcc, a CUDA driver (libcuda.so.1 on the library path) and systemd-analyze, which
# expands the unit's syscall groups as this machine's systemd defines them. PROBE_BUILD=DIR
# builds into DIR and stops (for a machine without systemd-analyze: copy DIR there and run
# DIR/cuda_sandbox_probe). Exit status: that of the sandboxed run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
unit=$here/../../systemd/seqgptd.service
build=${PROBE_BUILD:-$(mktemp -d)}
mkdir -p "$build"

expand() { # syscall names and @groups -> syscall names
    local x
    for x in "$@"; do
        case $x in
            @*) systemd-analyze syscall-filter --no-pager "$x" | tail -n +2 |
                sed -e 's/^ *//' -e '/^#/d' -e '/^$/d' | while read -r y; do expand "$y"; done ;;
            *) echo "$x" ;;
        esac
    done
}
filter_lines=$(sed -n 's/^SystemCallFilter=//p' "$unit")
# shellcheck disable=SC2046 # word splitting of the group lists is intended
allow=$(expand $(echo "$filter_lines" | grep -v '^~') | sort -u)
# shellcheck disable=SC2046
deny=$(expand $(echo "$filter_lines" | sed -n 's/^~//p') | sort -u)
comm -23 <(echo "$allow") <(echo "$deny") |
    sed 's/.*/#ifdef SYS_&\nSYS_&,\n#endif/' >"$build/probe_syscalls.h"
expand @known | sort -u | sed 's/.*/#ifdef SYS_&\n{SYS_&, "&"},\n#endif/' >"$build/probe_names.h"
echo "allow-list from $unit: $(grep -c '^SYS_' "$build/probe_syscalls.h") system calls"
gcc -O2 -Wall -I"$build" -o "$build/cuda_sandbox_probe" "$here/cuda_sandbox_probe.c" -ldl
[ -n "${PROBE_BUILD:-}" ] && exit 0

for mode in --no-filter --mdwe-only; do
    echo "== $mode"
    "$build/cuda_sandbox_probe" "$mode" "$@" || true
done
echo "== MemoryDenyWriteExecute + SystemCallFilter (as in the unit)"
"$build/cuda_sandbox_probe" "$@"
