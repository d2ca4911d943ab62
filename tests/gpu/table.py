#!/usr/bin/env python3
"""The device check's final table, from what tests/gpu/check.sh left in OUT_DIR.

    table.py OUT_DIR  ->  prints the table (also to OUT_DIR/table.txt); exit 1 when a file a
                          finished step should have left is missing or unreadable

Reads steps.tsv (step, status, seconds, note), meta.json, device.log, correctness.json,
hf.json, bench.json, unfused.json and scheduler.log. A step that failed, timed out or was
skipped leaves its rows as "-": the table keeps its shape whatever ran, so a partial run
still says what it measured.
"""
import json, math, sys
from pathlib import Path

OUT = Path(sys.argv[1])
problems = []


def load_json(name, step_ok):
    """The step's JSON file; a problem when its step says ok but the file is not readable."""
    try:
        return json.loads((OUT / name).read_text())
    except (OSError, ValueError) as e:
        if step_ok:
            problems.append(f"{name}: {e}")
        return None


def fmt(v, spec):
    """`v` formatted, or "-" right-aligned in the same width when there is no value."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        width = "".join(c for c in spec.split(".")[0] if c.isdigit())
        return "-".rjust(int(width or 1))
    return format(v, spec)


def runs_by_batch(doc, name):
    if doc is None:
        return {}
    try:
        return {int(r["batch"]): r for r in doc["runs"]}
    except (KeyError, TypeError, ValueError) as e:
        problems.append(f"{name}: no runs[].batch ({e})")
        return {}


def main():
    steps = []
    for line in (OUT / "steps.tsv").read_text().splitlines():
        name, status, secs, note = (line.split("\t") + ["", "", ""])[:4]
        steps.append((name, status, float(secs or 0), note))
    ok = {name: status == "ok" for name, status, _, _ in steps}
    meta = json.loads((OUT / "meta.json").read_text())
    lines = []
    p = lines.append
    device = ""
    try:
        device = next((l.split(":", 1)[1].strip() for l in (OUT / "device.log").read_text().splitlines()
                       if l.startswith("device:")), "")
    except OSError:
        pass
    if ok.get("device") and not device:
        problems.append("device.log: no 'device:' line from seqgpt info")
    total = sum(s for _, _, s, _ in steps)
    mode = "dry run on the CPU (the CPU's figures)" if meta["dry_run"] else "device run"
    p(f"GPU check: {mode}; device {device or '-'}; commit {meta['commit']}; {total:.0f} s of {meta['budget_s']} s")
    p("")
    p(f"{'step':12} {'status':14} {'seconds':>8}  note")
    for name, status, secs, note in steps:
        p(f"{name:12} {status:14} {secs:8.1f}  {note}")

    p("")
    p("correctness: the tiny fixture on the device against the CPU")
    p(f"{'type':6} {'mode':10} {'max rel err':>12} {'top-1 same':>10} {'greedy same (min)':>18}")
    corr = load_json("correctness.json", ok.get("correctness")) or []
    for wtype in ("q8_0", "q4_0", "f16"):
        for m in ("fused", "candle-ops"):
            rows = [r for r in corr if r.get("wtype") == wtype and r.get("mode") == m]
            if rows:
                p(f"{wtype:6} {m:10} {max(r['rel_err'] for r in rows):12.2e} "
                  f"{sum(r['top1_same'] for r in rows):>7}/{len(rows):<2} "
                  f"{min(r['greedy_same_prefix'] for r in rows):>11} of {min(r['greedy_len'] for r in rows)}")
            else:
                p(f"{wtype:6} {m:10} {'-':>12} {'-':>10} {'-':>18}")
    if ok.get("correctness") and len(corr) == 0:
        problems.append("correctness.json: no rows")

    bench = runs_by_batch(load_json("bench.json", ok.get("bench")), "bench.json")
    unfused = runs_by_batch(load_json("unfused.json", ok.get("unfused")), "unfused.json")
    hf = runs_by_batch(load_json("hf.json", ok.get("hf")), "hf.json")
    if ok.get("bench") and not bench:
        problems.append("bench.json: no runs")
    p("")
    p(f"speed: prompt {meta['prompt_tokens']}, {meta['gen_tokens']} new tokens; {meta['speed_model']} (decode tok/s, whole batch)")
    p(f"{'batch':>5} {'seqgpt':>9} {'unfused':>9} {'transformers':>13} {'ratio':>7} {'prefill tok/s':>14} {'ttft s':>8}")
    for b in (1, 4, 8):
        o, u, h = bench.get(b, {}), unfused.get(b, {}), hf.get(b, {})
        od, hd = o.get("decode_tok_s"), h.get("decode_tok_s")
        ratio = od / hd if od and hd else None
        p(f"{b:>5} {fmt(od, '9.1f')} {fmt(u.get('decode_tok_s'), '9.1f')} {fmt(hd, '13.1f')} "
          f"{fmt(ratio, '6.2f') + 'x' if ratio else '-':>7} {fmt(o.get('prefill_tok_s'), '14.1f')} {fmt(o.get('ttft_s'), '8.4f')}")

    sched = None
    try:
        for l in (OUT / "scheduler.log").read_text().splitlines():
            if l.startswith("SCHED_BENCH "):
                sched = json.loads(l[len("SCHED_BENCH "):])
    except (OSError, ValueError):
        pass
    if ok.get("scheduler") and sched is None:
        problems.append("scheduler.log: no SCHED_BENCH line")

    def ratio(a, b):
        return a / b if a and b else None

    b1_hf = ratio(bench.get(1, {}).get("decode_tok_s"), hf.get(1, {}).get("decode_tok_s"))
    b8_b1 = ratio(bench.get(8, {}).get("decode_tok_s"), bench.get(1, {}).get("decode_tok_s"))
    sp = sched.get("speedup") if sched else None
    judged = not meta["dry_run"]
    p("")
    p("goals" + ("" if judged else " (not judged: the CPU's figures)"))
    goals = {}
    for key, label, v, goal in (("decode_b1_vs_hf", "decode batch 1 vs transformers fp16", b1_hf, 5),
                                ("b8_vs_b1", "decode batch 8 vs batch 1", b8_b1, 4),
                                ("scheduler_speedup", "scheduler: 8 concurrent vs one at a time", sp, 3)):
        goals[key] = v
        met = "-" if v is None or not judged else ("met" if v >= goal else "NOT met")
        p(f"  {label:42} {fmt(v, '6.2f') + 'x' if v else '-':>8} (goal >= {goal}x) {met}")
    failed = [n for n, s, _, _ in steps if s != "ok" and not s.startswith("skipped")]
    skipped = [n for n, s, _, _ in steps if s.startswith("skipped")]
    for pr in problems:
        p(f"problem: {pr}")
    verdict = "PASS" if not failed and not problems else "FAIL"
    p(f"verdict: {verdict}: {len(steps) - len(failed) - len(skipped)} of {len(steps)} steps ok"
      + (f", skipped: {' '.join(skipped)}" if skipped else "")
      + (f", failed: {' '.join(failed)}" if failed else ""))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    (OUT / "table.txt").write_text(text)
    (OUT / "ratios.json").write_text(json.dumps(goals))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
