#!/usr/bin/env bash
# Builds the second set of articles for benches/summary_quality.sh: 45 research articles (R
# package vignettes with the authors' abstracts) from 39 Debian packages that the summary kit's
# own set does not use, listed in benches/summary_articles.tsv (name, package, version, path in
# the package, split, abstract sentences to drop, title; the kit's format). It runs the kit's
# builder with this list instead of its own: apt-get download (nothing is installed), the PDFs,
# the abstracts, the input pages.
#
# usage: benches/summary_articles.sh [ROOT]      (default /tmp/summ2)
#        ROOT=/tmp/summ2 benches/summary_quality.sh
#   env KIT=dir   the kit's scripts (default: ../shared/summ beside the repository)
set -euo pipefail
cd "$(dirname "$0")/.."
KIT=${KIT:-$(pwd)/../shared/summ}
ROOT=${1:-/tmp/summ2}
LIST=$(pwd)/benches/summary_articles.tsv
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$KIT/build_corpus.sh" "$KIT/corpus_tools.py" "$work/"
# The builder's candidate list is the heredoc after CANDIDATES=; put ours in its place.
python3 - "$work/build_corpus.sh" "$LIST" <<'PY'
import sys
path, lst = sys.argv[1], sys.argv[2]
lines = open(path, encoding="utf-8").read().split("\n")
start = next(i for i, l in enumerate(lines) if l.startswith("CANDIDATES=$(cat <<"))
end = next(i for i in range(start + 1, len(lines)) if lines[i] == "EOF")
ours = [l for l in open(lst, encoding="utf-8").read().split("\n") if l.strip()]
open(path, "w", encoding="utf-8").write("\n".join(lines[: start + 1] + ours + lines[end:]))
PY
exec bash "$work/build_corpus.sh" "$ROOT"
