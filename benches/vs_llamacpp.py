#!/usr/bin/env python3
"""seqgpt against llama.cpp on the same GGUF files, side by side, in one run.

    benches/vs_llamacpp.py [--threads 2] [--rounds 3] [--types f16,q8_0,q4_0] [--out DIR]

For each file type it alternates `llama-bench -t N -p 512 -n 64` and `seqgpt bench` (same
thread count, same file) for several rounds and keeps each engine's best round (shared,
noisy machines: the best is the least disturbed). Comparable tests:
  prefill: llama-bench pp512       vs  seqgpt bench --prompt-tokens 512 (prefill_tok_s)
  decode:  llama-bench tg64        vs  seqgpt bench --prompt-tokens 1 --gen-tokens 65 (64 decode steps
                                       from an empty context, as tg64 does)
It also measures seqgpt's batch 8 aggregate decode (prompt 128, 64 tokens) against batch 1,
open time and RSS right after open. Prints the CPU and which of seqgpt's CPU kernel families
ran (`cpu_kernels` of `seqgpt bench --json`: AVX-512 VNNI packed, AVX2 packed, or
row-at-a-time), a table of ratios, and writes results.json, results.md and chart.svg into --out
(default benches/results).

The model files are the SeqGPT-560M-shaped random model (tests/fixtures/make_fixtures.py
bench) converted by seqgpt-quantize; llama.cpp is built by tests/llamacpp/build.sh.
"""
import argparse, json, os, platform, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("SEQGPT_CACHE", Path.home() / ".cache/seqgpt-fast"))


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def ensure_models(types, quantize):
    hf = CACHE / "bloom-560m-random"
    if not (hf / "config.json").exists():
        sys.exit(f"{hf} is missing: run `python tests/fixtures/make_fixtures.py bench` (needs torch + transformers)")
    files = {}
    for t in types:
        wtype, embd = (t.split("+") + [None])[:2]
        f = CACHE / f"bloom-560m-{t.replace('+', '-embd-')}.gguf"
        if not f.exists():
            args = [quantize, "--model", str(hf), "--out", str(f), "--wtype", wtype]
            if embd:
                args += ["--embd-type", embd]
            sh(args)
        files[t] = f
    return files


def llama_bench(llama, model, threads):
    out = json.loads(sh([str(llama / "llama-bench"), "-m", str(model), "-t", str(threads), "-p", "512", "-n", "64",
                         "-r", "2", "-o", "json"]))
    pp = next(r["avg_ts"] for r in out if r["n_prompt"] == 512 and r["n_gen"] == 0)
    tg = next(r["avg_ts"] for r in out if r["n_gen"] == 64 and r["n_prompt"] == 0)
    return {"pp512": pp, "tg64": tg}


def seqgpt_bench(seqgpt, model, threads, prompt, gen, batch):
    out = json.loads(sh([seqgpt, "bench", "--model", str(model), "--device", "cpu", "--threads", str(threads),
                         "--prompt-tokens", str(prompt), "--gen-tokens", str(gen), "--batch", batch, "--json"]))
    return out


def cpu_model():
    """The CPU's model name, as /proc/cpuinfo gives it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "Model", "CPU part")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags():
    """The SIMD features that decide which kernels run on either side."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    flags = set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            flags |= set(line.split(":", 1)[1].split())
    want = ["avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512_vnni", "amx_int8", "asimd", "asimddp"]
    names = [f for f in want if f in flags]
    if "avx2" in flags and "avx512f" not in flags:
        names.append("no AVX-512")
    return ", ".join(names) or "no SIMD flags listed"


def chart(rows, path):
    """A grouped bar chart of the ratios (plain SVG, no plotting library needed)."""
    w, h, pad, bar = 640, 300, 50, 36
    metrics = [("prefill_ratio", "prefill 512 vs pp512"), ("decode_ratio", "decode b1 vs tg64")]
    top = max([1.5] + [r[m] for r in rows for m, _ in metrics])
    sx = (w - 2 * pad) / max(1, len(rows))
    y = lambda v: h - pad - (h - 2 * pad) * v / top
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<text x="{w/2}" y="18" text-anchor="middle">seqgpt / llama.cpp, same file, {rows[0]["threads"]} threads (higher is better)</text>',
             f'<line x1="{pad}" y1="{y(1)}" x2="{w-pad}" y2="{y(1)}" stroke="#888" stroke-dasharray="4"/>',
             f'<text x="{pad-4}" y="{y(1)+4}" text-anchor="end">1.0</text>']
    colors = ["#4C72B0", "#DD8452"]
    for i, r in enumerate(rows):
        x0 = pad + i * sx + sx / 2 - bar
        for j, (m, _) in enumerate(metrics):
            v = r[m]
            parts.append(f'<rect x="{x0 + j*bar}" y="{y(v)}" width="{bar-4}" height="{y(0)-y(v)}" fill="{colors[j]}"/>')
            parts.append(f'<text x="{x0 + j*bar + (bar-4)/2}" y="{y(v)-4}" text-anchor="middle">{v:.2f}</text>')
        parts.append(f'<text x="{pad + i*sx + sx/2}" y="{h-pad+16}" text-anchor="middle">{r["type"]}</text>')
    for j, (_, label) in enumerate(metrics):
        parts.append(f'<rect x="{pad + j*190}" y="{h-18}" width="10" height="10" fill="{colors[j]}"/>'
                     f'<text x="{pad + j*190 + 14}" y="{h-9}">{label}</text>')
    parts.append("</svg>")
    path.write_text("\n".join(parts) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--types", default="f16,q8_0,q4_0")
    ap.add_argument("--llama-dir", default=os.environ.get("LLAMA_DIR", str(CACHE / "llama.cpp")))
    ap.add_argument("--seqgpt", default=str(ROOT / "target/release/seqgpt"))
    ap.add_argument("--quantize", default=str(ROOT / "target/release/seqgpt-quantize"))
    ap.add_argument("--out", default=str(ROOT / "benches/results"))
    ap.add_argument("--hf-python", default=os.environ.get("HF_PYTHON"),
                    help="a python with torch + transformers: also compare with transformers fp32 on the CPU")
    a = ap.parse_args()
    llama = Path(a.llama_dir) / "bin"
    if not (llama / "llama-bench").exists():
        sh(["bash", str(ROOT / "tests/llamacpp/build.sh")])
    types = a.types.split(",")
    files = ensure_models(types, a.quantize)
    best = {t: {"llama": {"pp512": 0, "tg64": 0}, "seqgpt": {"prefill": 0, "decode": 0, "b1": 0, "b8": 0}} for t in types}
    extra = {}
    kernels = "unknown"
    print(f"CPU: {cpu_model()} ({cpu_flags()})", file=sys.stderr)
    for rnd in range(a.rounds):
        for t in types:
            f = files[t]
            # Alternate which engine goes first, round by round.
            order = ("llama", "seqgpt") if rnd % 2 == 0 else ("seqgpt", "llama")
            for eng in order:
                if eng == "llama":
                    r = llama_bench(llama, f, a.threads)
                    b = best[t]["llama"]
                    b["pp512"], b["tg64"] = max(b["pp512"], r["pp512"]), max(b["tg64"], r["tg64"])
                else:
                    pre = seqgpt_bench(a.seqgpt, f, a.threads, 512, 2, "1")
                    dec = seqgpt_bench(a.seqgpt, f, a.threads, 1, 65, "1")
                    bat = seqgpt_bench(a.seqgpt, f, a.threads, 128, 64, "1,8")
                    b = best[t]["seqgpt"]
                    b["prefill"] = max(b["prefill"], pre["runs"][0]["prefill_tok_s"])
                    b["decode"] = max(b["decode"], dec["runs"][0]["decode_tok_s"])
                    b["b1"] = max(b["b1"], bat["runs"][0]["decode_tok_s"])
                    b["b8"] = max(b["b8"], bat["runs"][1]["decode_tok_s"])
                    kernels = dec.get("cpu_kernels", kernels)
                    extra[t] = {"open_s": dec["open_s"], "rss_after_open_bytes": dec["rss_after_open_bytes"],
                                "file_bytes": dec["file_bytes"], "peak_rss_bytes": bat["peak_rss_bytes"]}
            print(f"round {rnd + 1}/{a.rounds} {t}: {json.dumps(best[t])}", file=sys.stderr)
    rows = []
    for t in types:
        l, s = best[t]["llama"], best[t]["seqgpt"]
        rows.append({"type": t, "threads": a.threads, "llama_pp512": l["pp512"], "llama_tg64": l["tg64"],
                     "seqgpt_prefill512": s["prefill"], "seqgpt_decode": s["decode"],
                     "prefill_ratio": s["prefill"] / l["pp512"], "decode_ratio": s["decode"] / l["tg64"],
                     "seqgpt_b1_p128": s["b1"], "seqgpt_b8_p128": s["b8"], "b8_over_b1": s["b8"] / s["b1"], **extra[t]})
    hf = None
    if a.hf_python:
        # Same shape, same lengths (prompt 128, 32 new tokens), transformers fp32 on the CPU.
        r = json.loads(sh([a.hf_python, str(ROOT / "tests/gpu/hf_bench.py"), "--from", str(CACHE / "bloom-560m-random"),
                           "--device", "cpu", "--dtype", "fp32", "--threads", str(a.threads), "--batch", "1",
                           "--prompt-tokens", "128", "--gen-tokens", "32", "--repeat", "1"]))["runs"][0]
        hf = {"prefill_tok_s": 128 / r["prefill_s"], "decode_tok_s": r["decode_tok_s"], "ours": {}}
        for t in types:
            o = seqgpt_bench(a.seqgpt, files[t], a.threads, 128, 32, "1")["runs"][0]
            hf["ours"][t] = {"prefill_ratio": o["prefill_tok_s"] / hf["prefill_tok_s"],
                             "decode_ratio": o["decode_tok_s"] / hf["decode_tok_s"]}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.processor() or platform.machine(),
            "cpu_model": cpu_model(), "cpu_flags": cpu_flags(), "seqgpt_cpu_kernels": kernels, "cpus": os.cpu_count(), "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]), "rows": rows,
            "transformers_fp32_cpu": hf}
    (out / "results.json").write_text(json.dumps(meta, indent=1))
    lines = [f"CPU: {meta['cpu_model']} ({meta['cpu_flags']}), {a.threads} threads; seqgpt CPU kernels: {kernels}", "",
             "| file | llama.cpp pp512 | seqgpt prefill 512 | ratio | llama.cpp tg64 | seqgpt decode | ratio | b8/b1 | open s | RSS after open / file |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['type']} | {r['llama_pp512']:.1f} | {r['seqgpt_prefill512']:.1f} | {r['prefill_ratio']:.2f}x | "
                     f"{r['llama_tg64']:.1f} | {r['seqgpt_decode']:.1f} | {r['decode_ratio']:.2f}x | {r['b8_over_b1']:.2f}x | "
                     f"{r['open_s']:.3f} | {r['rss_after_open_bytes']/1e6:.0f} MB / {r['file_bytes']/1e6:.0f} MB |")
    if hf:
        lines += ["", f"transformers fp32 on the CPU ({a.threads} threads, prompt 128, 32 tokens): "
                      f"prefill {hf['prefill_tok_s']:.1f} tok/s, decode {hf['decode_tok_s']:.2f} tok/s", "",
                  "| file | seqgpt / transformers prefill | seqgpt / transformers decode |", "|---|---|---|"]
        lines += [f"| {t} | {v['prefill_ratio']:.2f}x | {v['decode_ratio']:.2f}x |" for t, v in hf["ours"].items()]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    chart(rows, out / "chart.svg")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
