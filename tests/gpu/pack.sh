#!/usr/bin/env bash
# Packs binaries for the device run: each one stripped and xz-compressed into DEST/NAME.xz,
# and DEST/commit naming the commit they were built from ("+changes" when the checkout had
# uncommitted changes). prepare.sh packs the CUDA build this way; check.sh --dry-run packs
# the CPU build the same way, so the device run's unpacking is exercised before a GPU is lent.
# Usage: tests/gpu/pack.sh DEST NAME=PATH...   (XZ_LEVEL: 6 by default; the dry run uses 0)
set -euo pipefail
dest=$1
shift
mkdir -p "$dest"
for spec in "$@"; do
  name=${spec%%=*}
  path=${spec#*=}
  [ -x "$path" ] || { echo "pack.sh: $path is not an executable" >&2; exit 1; }
  strip -o "$dest/$name" "$path"
  xz -f -T2 -"${XZ_LEVEL:-6}" "$dest/$name"
done
root=$(cd "$(dirname "$0")/../.." && pwd)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && ! git -C "$root" diff --quiet HEAD 2>/dev/null; then
  commit="$commit+changes"
fi
echo "$commit" > "$dest/commit"
