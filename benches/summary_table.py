#!/usr/bin/env python3
"""The tables of benches/summary_quality.sh: reads "NAME JSON" lines (score.py --json of each
system) on standard input; prints, for all documents and then for each genre the manifest
names, ROUGE-1/2, their ratio to the best of lead, LexRank and TextRank, the prose share, the
seconds per document (from run_system.sh's _times.tsv), and for the summarizer's own rows the
share of summary sentences that start with an unresolved reference and the empty summaries.

A sentence starts with an unresolved reference when it opens with a word or phrase that points
back ("This", "These", "It", "Both", "They", "However", "In a second ...", "The latter", ...)
and the sentence before it in the summary is not the one just before it in the document (the
input text, compared on letters and digits only). The list is kept here, apart from the
summarizer's own, so that the check is not the rule it checks.

usage: summary_table.py ROOT SPLIT < lines
"""
import csv
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KIT = os.environ.get("KIT", os.path.join(HERE, "..", "..", "shared", "summ"))
sys.dont_write_bytecode = True
sys.path.insert(0, KIT)
from corpus_tools import split_sentences  # noqa: E402

POINTING = re.compile(
    r"^(?:this|these|that|those|it|its|they|their|them|both|such|however|moreover|furthermore|also|thus|hence|"
    r"therefore|consequently|additionally|similarly|likewise|nevertheless|nonetheless|otherwise|instead|then|"
    r"finally|secondly|thirdly|another|besides|but|and|or|so|yet|accordingly|conversely|alternatively|"
    r"meanwhile|he|she|in a second|in a third|in the second|the latter|the former|in addition|"
    r"on the other hand|in contrast|in this case|as a result|for this reason|to this end|in particular|"
    r"of these|each of these|all of these)\b", re.I)
SELF = re.compile(r"^(?:this|these)\s+(?:paper|article|document|package|packages|manual|guide|thesis|report|"
                  r"chapter|note|notes|tutorial|vignette|work|library|software|program|tool|module|book|class|"
                  r"bundle|system|project|text|introduction|section)\b", re.I)


def norm(s):
    return re.sub(r"[^0-9a-z]", "", s.lower())


def unresolved(summary, source):
    """(sentences, unresolved ones) of one summary against its input text."""
    sents = [s for s in split_sentences(" ".join(summary.split())) if s.strip()]
    src = norm(source)
    bad = 0
    for k, s in enumerate(sents):
        t = s.lstrip("\"'([“‘ ")
        if not POINTING.match(t) or SELF.match(t):
            continue
        if k > 0 and norm(sents[k - 1])[-60:] + norm(s)[:60] in src:
            continue
        bad += 1
    return len(sents), bad


root, split = sys.argv[1], sys.argv[2]
manifest = os.path.join(root, "manifest.tsv")
if not os.path.exists(manifest):
    manifest = os.path.join(root, "manifest-train.tsv")
genre = {r["name"]: r.get("genre", "") for r in csv.DictReader(open(manifest, encoding="utf-8"), delimiter="\t")}
rows = []
for line in sys.stdin:
    name, blob = line.split(" ", 1)
    rows.append((name, json.loads(blob)["docs"]))


def table(title, keep):
    docs = {n: [d for d in ds if keep(d["name"])] for n, ds in rows}
    n = len(docs[rows[0][0]])
    if n == 0:
        return
    mean = lambda ds, k: sum(d[k] for d in ds) / len(ds)  # noqa: E731
    base = [docs[b] for b in ("lead", "lexrank", "textrank") if b in docs]
    best1 = max(mean(ds, "rouge1") for ds in base)
    best2 = max(mean(ds, "rouge2") for ds in base)
    print(f"\n{title}: {n} documents; ROUGE F1 x100 against the authors' abstracts, at their word count")
    print("| system | R1 | R2 | R1 / best baseline | R2 / best baseline | prose (mean / min) | empty | "
          "unresolved starts | s per document (mean / max) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, ds in docs.items():
        times = os.path.join(root, "out", name, "_times.tsv")
        t = ""
        if os.path.exists(times):
            secs = [float(r["seconds"]) for r in csv.DictReader(open(times), delimiter="\t") if keep(r["name"])]
            if secs:
                t = "%.3f / %.3f" % (sum(secs) / len(secs), max(secs))
        checks = ""
        if name.startswith("seqgpt"):
            total = bad = 0
            for d in ds:
                summ = open(os.path.join(root, "out", name, d["name"] + ".txt"), encoding="utf-8", errors="replace").read() \
                    if os.path.exists(os.path.join(root, "out", name, d["name"] + ".txt")) else ""
                src = open(os.path.join(root, "input", d["name"] + ".txt"), encoding="utf-8", errors="replace").read()
                a, b = unresolved(summ, src)
                total, bad = total + a, bad + b
            checks = "%d | %d of %d (%.1f%%)" % (sum(d["missing"] for d in ds), bad, total, 100.0 * bad / max(1, total))
        else:
            checks = "%d | " % sum(d["missing"] for d in ds)
        print("| %s | %.2f | %.2f | %.3f | %.3f | %.3f / %.3f | %s | %s |" % (
            name, 100 * mean(ds, "rouge1"), 100 * mean(ds, "rouge2"), mean(ds, "rouge1") / best1,
            mean(ds, "rouge2") / best2, mean(ds, "prose"), min(d["prose"] for d in ds), checks, t))


print(f"split {split} of {root}")
table("all", lambda name: True)
for g in sorted({genre.get(d["name"], "") for d in rows[0][1]} - {""}):
    table(f"genre {g}", lambda name, g=g: genre.get(name) == g)
