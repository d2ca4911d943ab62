#!/usr/bin/env python3
"""A check of CJK summaries that needs no reference: is every summary sentence whole, and is
none of them code, a command or a change-log line?

    python3 benches/cjk_whole.py [--bin target/release/seqgpt] [--lengths short,medium,long] PDF...

PDF arguments may be folders: their PDFs whose names start with "zh" are taken (the Chinese
files of the shared PDF corpus: `benches/cjk_whole.py /tmp/pdfcorpus/corpus`). Each file is
summarized with `seqgpt summarize --local --json` at every length. A sentence is

- whole when it ends with sentence punctuation (closing brackets and quotes after it allowed),
  its brackets and quotes balance, it opens with no particle or mark that continues a sentence
  ("的", "等", "或", "，"), and no URL in it is cut (a host without a dot, a trailing "." glued
  to the host);
- code, a command or a change-log line when it is mostly symbols, starts like a console or
  TeX line, introduces a command ("使用以下命令"), or reads like a change-log entry (a short line
  that opens with "添加", "修复", ... or a version number).

A document without any whole sentence (a slide of phrases) gets a summary of its phrases and
says so in `stats.warnings`; such items are counted as phrases, apart from the sentences.

These rules are written from what a reader calls a fragment, independently of the
summarizer's own. Prints one row per length and every failing sentence; exits 1 when a
sentence fails or a file gives no summary.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ENDS = "。！？!?.…"
CLOSERS = "”’」』）)]】》〉\"'"
PAIRS = {"（": "）", "(": ")", "「": "」", "『": "』", "“": "”", "《": "》", "【": "】", "[": "]", "〈": "〉"}
CONTINUES = ("的", "等", "或", "和", "及", "且", "而且", "以及", "，", "、", "；", "：", ",", ";", ":")
CHANGELOG_VERBS = ("添加", "新增", "增加", "修复", "修正", "移除", "删除", "改进", "更新", "修改", "弃用")
COMMAND_LEADS = ("以下命令", "下列命令", "如下命令", "下面的命令", "下面命令", "以下指令", "如下指令")
URL = re.compile(r"(?:https?|ftp)://[^\s，。；、（）“”《》]*|www\.[^\s，。；、（）“”《》]*")


def cjk_letter(c):
    o = ord(c)
    return 0x3400 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF or 0x3040 <= o <= 0x30FF or 0xAC00 <= o <= 0xD7AF or o >= 0x20000


def balanced(s):
    stack = []
    closers = {v: k for k, v in PAIRS.items()}
    for c in s:
        if c in PAIRS:
            stack.append(c)
        elif c in closers:
            if not stack or stack[-1] != closers[c]:
                return False
            stack.pop()
    return not stack


def cut_url(s):
    for m in URL.finditer(s):
        u = m.group(0).rstrip(".,;:!?)]")
        host = re.sub(r"^(?:https?|ftp)://", "", u).split("/")[0]
        if "." not in host or host.endswith("."):
            return True
        # "http://asymptote." at the sentence's end: the full stop is the host's last dot.
        if m.end() == len(s) and m.group(0).endswith(".") and "." not in host.rstrip("."):
            return True
    return False


def why_not_whole(s):
    t = s.strip()
    if not t:
        return "empty"
    end = t.rstrip(CLOSERS)
    if not end or end[-1] not in ENDS:
        return "no sentence end"
    if not balanced(t):
        return "unbalanced brackets or quotes"
    if t.startswith(CONTINUES):
        return "starts inside a sentence"
    if cut_url(t):
        return "cut URL"
    return None


def cjk_share(s):
    chars = [c for c in s if not c.isspace()]
    return sum(cjk_letter(c) for c in chars) / max(1, len(chars))


def why_code(s):
    t = s.strip()
    chars = [c for c in t if not c.isspace()]
    n = max(1, len(chars))
    symbols = sum(c in "{}<>=\\$#|_^~;@*" for c in chars) / n
    if symbols > 0.12:
        return "mostly symbols"
    if re.match(r"^(\$ |# |% |> |>>> |\\[A-Za-z]+[{\[]|sudo |apt(-get)? |dpkg |make |git |cd |ls |rm |cp )", t):
        return "a console or TeX line"
    if cjk_share(t) < 0.15 and re.search(r"(^|\s)--?[a-z][a-z-]+", t) and len(t.split()) < 12:
        return "a command line"
    if any(lead in t for lead in COMMAND_LEADS):
        return "introduces a command"
    if len(t) <= 40 and (t.startswith(CHANGELOG_VERBS) or re.match(r"^(v|版本\s*)?\d+\.\d+(\.\d+)?\b", t)):
        return "a change-log line"
    return None


def files_of(args):
    out = []
    for a in args:
        if os.path.isdir(a):
            out += sorted(os.path.join(a, f) for f in os.listdir(a) if f.startswith("zh") and f.endswith(".pdf"))
        else:
            out.append(a)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="target/release/seqgpt")
    ap.add_argument("--lengths", default="short,medium,long")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    files = files_of(a.paths)
    if not files:
        sys.exit("no PDF to check")
    failed = False
    rows = []
    for length in a.lengths.split(","):
        n = whole = code = phrases = 0
        empty = []
        for f in files:
            p = subprocess.run([a.bin, "summarize", "--local", f, "--length", length, "--json"], capture_output=True, text=True, timeout=300)
            if p.returncode != 0:
                print(f"  {os.path.basename(f)} {length}: exit {p.returncode}: {p.stderr.strip()[:200]}")
                empty.append(f)
                continue
            out = json.loads(p.stdout)
            sentences = [s["text"] for s in out["sentences"]]
            if not sentences:
                empty.append(f)
            if any("document has no whole sentence" in w for w in out["stats"]["warnings"]):
                phrases += len(sentences)
                print(f"  {os.path.basename(f)} {length}: no whole sentence in the document, {len(sentences)} phrases")
                continue
            for s in sentences:
                n += 1
                w, c = why_not_whole(s), why_code(s)
                whole += w is None
                code += c is not None
                if w or c:
                    print(f"  {os.path.basename(f)} {length}: {w or c}: {s}")
        failed |= whole < n or code > 0 or bool(empty)
        rows.append((length, len(files), n, 100.0 * whole / max(1, n), code, phrases, len(empty)))
    print()
    print("| length | files | sentences | whole % | code/command/change-log | phrases (documents without sentences) | files without a summary |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %d | %.1f | %d | %d | %d |" % r)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
