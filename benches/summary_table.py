#!/usr/bin/env python3
"""The table of benches/summary_quality.sh: reads "NAME JSON" lines (score.py --json of each
system) on standard input; prints ROUGE-1/2, their ratio to the best of lead, LexRank and
TextRank, the prose share and the seconds per document (from run_system.sh's _times.tsv).

usage: summary_table.py ROOT SPLIT < lines
"""
import csv
import json
import os
import sys

root, split = sys.argv[1], sys.argv[2]
rows = []
for line in sys.stdin:
    name, blob = line.split(" ", 1)
    rows.append((name, json.loads(blob)["mean"]))
baselines = [m for n, m in rows if n in ("lead", "lexrank", "textrank")]
best1 = max(m["rouge1"] for m in baselines)
best2 = max(m["rouge2"] for m in baselines)
print(f"split {split} of {root}: ROUGE F1 x100 against the authors' abstracts, at their word count")
print("| system | R1 | R2 | R1 / best baseline | R2 / best baseline | prose (mean / min) | s per document (mean / max) |")
print("|---|---|---|---|---|---|---|")
for name, m in rows:
    times = os.path.join(root, "out", name, "_times.tsv")
    t = ""
    if os.path.exists(times):
        secs = [float(r["seconds"]) for r in csv.DictReader(open(times), delimiter="\t")]
        if secs:
            t = "%.3f / %.3f" % (sum(secs) / len(secs), max(secs))
    print("| %s | %.2f | %.2f | %.3f | %.3f | %.3f / %.3f | %s |" % (
        name, 100 * m["rouge1"], 100 * m["rouge2"], m["rouge1"] / best1, m["rouge2"] / best2,
        m["prose"], m["prose_min"], t))
