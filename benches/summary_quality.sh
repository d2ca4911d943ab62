#!/usr/bin/env bash
# Summary quality against the authors' own abstracts: builds the summary kit (research articles
# from Debian packages, their abstracts as references) if it is missing, runs the classic
# baselines (lead, LexRank, TextRank, the greedy oracle) and `seqgpt summarize --local` at the
# abstract's word budget, with and without each stage of the extractive summarizer, and prints
# one table: ROUGE-1/2 F1 (x100), the ratio to the best of lead, LexRank and TextRank, the
# prose share, and the seconds per document.
#
# usage: benches/summary_quality.sh
#   env KIT=dir      the kit's scripts (default: ../shared/summ beside the repository)
#   env ROOT=dir     where the corpus is built (default /tmp/summ)
#   env SPLIT=dev    the manifest's split to score (dev | hidden | all)
#   env ABLATIONS="structure sections position cues title redundancy fill"
#                    the stages to switch off one at a time (SEQGPT_SUMMARY_ABLATE, see
#                    docs/SUMMARIZE.md); empty for none
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
KIT=${KIT:-$REPO/../shared/summ}
ROOT=${ROOT:-/tmp/summ}
SPLIT=${SPLIT:-dev}
ABLATIONS=${ABLATIONS-structure sections position cues title redundancy fill}
[ -f "$KIT/run_system.sh" ] || { echo "the summary kit is not at $KIT (set KIT=)" >&2; exit 2; }

[ -f "$ROOT/manifest.tsv" ] || bash "$KIT/build_corpus.sh" "$ROOT" >&2
PY=$ROOT/venv/bin/python
if ! "$PY" -c 'import rouge_score, numpy' 2>/dev/null; then
  python3 -m venv "$ROOT/venv" >&2
  "$PY" -m pip install -q rouge-score numpy >&2
fi
cargo build --release --bin seqgpt >&2
BIN=$REPO/target/release/seqgpt

"$PY" "$KIT/baselines.py" --root "$ROOT" --split "$SPLIT" >/dev/null 2>&1
run() { # name, ablation
  local out=$ROOT/out/$1
  rm -rf "$out"
  SEQGPT_SUMMARY_ABLATE=$2 ROOT=$ROOT bash "$KIT/run_system.sh" "$SPLIT" "$out" \
    "$BIN summarize --local {pdf} --pages {pages} --max-words {words}" 2>/dev/null
}
run seqgpt ""
for a in $ABLATIONS; do run "seqgpt-no-$a" "$a"; done

score() { "$PY" "$KIT/score.py" --root "$ROOT" --split "$SPLIT" --system "$1" --summaries "$ROOT/out/$1" --json; }
{
  for s in lead lexrank textrank oracle seqgpt; do echo "$s $(score $s | tr -d '\n')"; done
  for a in $ABLATIONS; do echo "seqgpt-no-$a $(score seqgpt-no-$a | tr -d '\n')"; done
} | python3 benches/summary_table.py "$ROOT" "$SPLIT"
