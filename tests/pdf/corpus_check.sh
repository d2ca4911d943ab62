#!/usr/bin/env bash
# Extract every PDF of the shared corpus with the release binary, score the text against the
# pdftotext reference, list what each hostile file returned, and compare speed with pdftotext.
#
# usage: tests/pdf/corpus_check.sh [CORPUS_DIR] [OUT_DIR]
#   CORPUS_DIR  default /tmp/pdfcorpus (built with ../shared/pdf/build_corpus.sh if missing)
#   OUT_DIR     default /tmp/pdfout (NAME.txt, NAME.pN.txt, NAME.err, results.tsv, score.txt)
#   env BIN=path      the seqgpt binary (default: build it, target/release/seqgpt)
#   env SPEED=0       skip the speed comparison
#   env SPEED_ONLY=1  only the speed comparison
#   env TIMEOUT=120   seconds allowed per file
#   env ONLY=a,b      only these corpus files (quick iterations; the score covers only them)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SHARED=${SHARED:-$REPO/../shared/pdf}
CORPUS=${1:-/tmp/pdfcorpus}
OUT=${2:-/tmp/pdfout}
TIMEOUT=${TIMEOUT:-120}

[ -f "$CORPUS/manifest.tsv" ] || bash "$SHARED/build_corpus.sh" "$CORPUS"
if [ -z "${BIN:-}" ]; then
  (cd "$REPO" && cargo build --release --bin seqgpt >&2)
  BIN="${CARGO_TARGET_DIR:-$REPO/target}/release/seqgpt"
fi
mkdir -p "$OUT"
if [ -z "${SPEED_ONLY:-}" ]; then
rm -f "$OUT"/*.txt "$OUT"/*.err

printf 'name\tclass\texit\tseconds\tmax_rss_kb\tpages\tstderr\n' >"$OUT/results.tsv"
# name, class, user password ("-" for none); read's IFS would merge empty tab-separated fields.
python3 -c '
import csv, sys
only = set(filter(None, sys.argv[2].split(",")))
for r in csv.DictReader(open(sys.argv[1], encoding="utf-8"), delimiter="\t"):
    if not only or r["name"] in only:
        print(r["name"], r["class"], r["user_password"] or "-", sep="\t")
' "$CORPUS/manifest.tsv" "${ONLY:-}" | while IFS=$'\t' read -r name cls pw; do
  pdf="$CORPUS/corpus/$name.pdf"
  pwargs=()
  [ "$pw" != "-" ] && pwargs=(--password "$pw")
  start=$(date +%s.%N)
  set +e
  /usr/bin/time -f '%M' -o "$OUT/$name.rss" timeout "$TIMEOUT" "$BIN" extract-text "$pdf" "${pwargs[@]}" \
    >"$OUT/$name.txt" 2>"$OUT/$name.err"
  rc=$?
  set -e
  end=$(date +%s.%N)
  for p in 1 2 3; do
    timeout "$TIMEOUT" "$BIN" extract-text "$pdf" "${pwargs[@]}" --pages "$p-$p" >"$OUT/$name.p$p.txt" 2>/dev/null || true
  done
  pages=$(tr -cd '\f' <"$OUT/$name.txt" | wc -c)
  rss=$(tail -n1 "$OUT/$name.rss" 2>/dev/null || echo -)
  rm -f "$OUT/$name.rss"
  msg=$(head -c 300 "$OUT/$name.err" | tr '\t\n' '  ')
  printf '%s\t%s\t%s\t%.2f\t%s\t%s\t%s\n' "$name" "$cls" "$rc" "$(echo "$end - $start" | bc)" "$rss" "$pages" "$msg" >>"$OUT/results.tsv"
done

# Files that need a password, extracted without one: the error must say so.
for name in h_enc_aes128_userpw enc_novapdf_userpw_test; do
  [ -f "$CORPUS/corpus/$name.pdf" ] || continue
  [ -z "${ONLY:-}" ] || continue
  set +e
  "$BIN" extract-text "$CORPUS/corpus/$name.pdf" >/dev/null 2>"$OUT/$name.nopw.err"
  rc=$?
  set -e
  printf '%s (no password)\t-\t%s\t-\t-\t-\t%s\n' "$name" "$rc" "$(head -c 300 "$OUT/$name.nopw.err" | tr '\t\n' '  ')" >>"$OUT/results.tsv"
done

echo "== per-file results (exit status, time, memory, stderr) =="
column -t -s $'\t' "$OUT/results.tsv" | cut -c1-220
echo
echo "== score (python3 score.py $OUT --ref $CORPUS/ref --pages) =="
python3 "$SHARED/score.py" "$OUT" --ref "$CORPUS/ref" --pages ${ONLY:+--only "$ONLY"} --json "$OUT/score.json" | tee "$OUT/score.txt"
fi

if [ "${SPEED:-1}" != 0 ] && [ -z "${ONLY:-}" ]; then
  echo
  echo "== speed on the large files (wall seconds, best of 3; pages/s) =="
  printf '%-28s %6s %10s %10s %10s %10s %7s\n' file pages pdftotext p/s seqgpt p/s ratio
  for name in en_source2e_1221p en_hyperref_luatex_516p en_bdb_c_api_fop095_781p zh_debref_251p zh_xecjk zh_ctex; do
    pdf="$CORPUS/corpus/$name.pdf"
    [ -f "$pdf" ] || continue
    pages=$(pdfinfo "$pdf" | awk '/^Pages:/ {print $2}')
    best() {
      local b=999999
      for _ in 1 2 3; do
        local s e t
        s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s.%N)
        t=$(echo "$e - $s" | bc)
        b=$(echo "if ($t < $b) $t else $b" | bc)
      done
      echo "$b"
    }
    tp=$(best pdftotext -enc UTF-8 "$pdf" -)
    ts=$(best "$BIN" extract-text "$pdf")
    printf '%-28s %6d %10.2f %10.0f %10.2f %10.0f %7.2f\n' "$name" "$pages" "$tp" "$(echo "$pages / $tp" | bc -l)" \
      "$ts" "$(echo "$pages / $ts" | bc -l)" "$(echo "$ts / $tp" | bc -l)"
  done
fi
