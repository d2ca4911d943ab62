#!/usr/bin/env bash
# Summary quality against the authors' own abstracts, on two sets from one run: the summary
# kit's research articles (split `dev`) and the multi-genre training corpus's `val` split
# (R vignettes, TeX package documentation, software manuals, other papers; the scorer was
# fitted on its `train` split), each built if it is missing. For each set: the classic
# baselines (lead, LexRank, TextRank, the greedy oracle) and `seqgpt summarize --local` at the
# abstract's word budget, with and without each stage of the extractive summarizer; one table
# for all documents and one per genre: ROUGE-1/2 F1 (x100), the ratio to the best of lead,
# LexRank and TextRank, the prose share, empty summaries, the share of summary sentences that
# start with an unresolved reference, and the seconds per document. Last, a check of Chinese
# summaries that needs no reference (benches/cjk_whole.py): on the Chinese PDFs of the shared
# PDF corpus at short, medium and long, the share of summary sentences that are whole and the
# number that are code, commands or change-log lines.
#
# usage: benches/summary_quality.sh
#   env KIT=dir      the kit's scripts (default: ../shared/summ beside the repository)
#   env ROOT=dir     where the article kit is built (default /tmp/summ), SPLIT=dev
#   env TRAIN_ROOT=dir  where the multi-genre corpus is built (default /tmp/summtrain), TRAIN_SPLIT=val;
#                    TRAIN_ROOT= (empty) skips it
#   env PDF_ROOT=dir  the shared PDF corpus for the Chinese check (default /tmp/pdfcorpus, built
#                    by ../shared/pdf/build_corpus.sh when missing); PDF_ROOT= (empty) skips it
#   env ABLATIONS="structure centrality sections position cues title length coherence redundancy fill"
#                    the stages to switch off one at a time (SEQGPT_SUMMARY_ABLATE, see
#                    docs/SUMMARIZE.md); empty for none
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
KIT=${KIT:-$REPO/../shared/summ}
ROOT=${ROOT:-/tmp/summ}
SPLIT=${SPLIT:-dev}
TRAIN_ROOT=${TRAIN_ROOT-/tmp/summtrain}
TRAIN_SPLIT=${TRAIN_SPLIT:-val}
PDF_ROOT=${PDF_ROOT-/tmp/pdfcorpus}
ABLATIONS=${ABLATIONS-structure centrality sections position cues title length coherence redundancy fill}
[ -f "$KIT/run_system.sh" ] || { echo "the summary kit is not at $KIT (set KIT=)" >&2; exit 2; }
export KIT

[ -f "$ROOT/manifest.tsv" ] || bash "$KIT/build_corpus.sh" "$ROOT" >&2
if [ -n "$TRAIN_ROOT" ] && [ ! -f "$TRAIN_ROOT/manifest-train.tsv" ]; then bash "$KIT/build_train.sh" "$TRAIN_ROOT" >&2; fi
if [ -n "$PDF_ROOT" ] && [ ! -f "$PDF_ROOT/manifest.tsv" ]; then bash "$KIT/../pdf/build_corpus.sh" "$PDF_ROOT" >&2; fi
PY=$ROOT/venv/bin/python
if ! "$PY" -c 'import rouge_score, numpy' 2>/dev/null; then
  python3 -m venv "$ROOT/venv" >&2
  "$PY" -m pip install -q rouge-score numpy >&2
fi
cargo build --release --bin seqgpt >&2
BIN=$REPO/target/release/seqgpt

bench() { # root, split
  local root=$1 split=$2
  "$PY" "$KIT/baselines.py" --root "$root" --split "$split" >/dev/null 2>&1
  run() { # name, ablation
    local out=$root/out/$1
    rm -rf "$out"
    SEQGPT_SUMMARY_ABLATE=$2 ROOT=$root bash "$KIT/run_system.sh" "$split" "$out" \
      "$BIN summarize --local {pdf} --pages {pages} --max-words {words}" 2>/dev/null
  }
  run seqgpt ""
  for a in $ABLATIONS; do run "seqgpt-no-$a" "$a"; done
  score() { "$PY" "$KIT/score.py" --root "$root" --split "$split" --system "$1" --summaries "$root/out/$1" --json; }
  {
    for s in lead lexrank textrank oracle seqgpt; do echo "$s $(score $s | tr -d '\n')"; done
    for a in $ABLATIONS; do echo "seqgpt-no-$a $(score seqgpt-no-$a | tr -d '\n')"; done
  } | "$PY" benches/summary_table.py "$root" "$split"
}
bench "$ROOT" "$SPLIT"
[ -z "$TRAIN_ROOT" ] || { echo; bench "$TRAIN_ROOT" "$TRAIN_SPLIT"; }
if [ -n "$PDF_ROOT" ]; then
  echo
  echo "Chinese PDFs of the shared PDF corpus, no reference (benches/cjk_whole.py):"
  python3 benches/cjk_whole.py --bin "$BIN" "$PDF_ROOT/corpus" || echo "(sentences that are not whole, or code: listed above)"
fi
