#!/usr/bin/env python3
"""The SeqGPT-560M-shaped random BLOOM for the speed benchmarks, without torch.

    python3 benches/random_560m.py [OUT_DIR]     (default ~/.cache/seqgpt-fast/bloom-560m-random)

`tests/fixtures/make_fixtures.py bench` makes this checkpoint with transformers (and records
golden outputs); that needs torch, several GB. Speed does not depend on which random values
the weights hold, only on their shape and type, so this draws the same shape (24 layers,
hidden 1024, 16 heads, vocab 250880, tied head) with the same distributions (linear weights
of std 3/sqrt(fan_in), LayerNorm gains 1 + 0.2 N(0,1), biases 0.1 N(0,1), embedding 0.3
N(0,1)) with numpy, and writes an f32 safetensors checkpoint next to the tiny fixture's
tokenizer. The values differ from make_fixtures.py's (another generator): use it for speed,
not for golden outputs. Needs numpy only.
"""
import json
import os
import shutil
import struct
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("SEQGPT_CACHE", Path.home() / ".cache/seqgpt-fast"))
VOCAB, HIDDEN, LAYERS, HEADS = 250880, 1024, 24, 16


def tensors(g):
    """(name, shape, draw) in safetensors' (sorted) order; `draw` makes the f32 values."""
    h = HIDDEN
    lin = lambda rows, cols: lambda: (g.standard_normal((rows, cols), dtype=np.float32) * np.float32(3.0 / cols**0.5))
    gain = lambda n: lambda: 1.0 + 0.2 * g.standard_normal(n, dtype=np.float32)
    bias = lambda n: lambda: 0.1 * g.standard_normal(n, dtype=np.float32)
    out = []
    for i in range(LAYERS):
        p = f"transformer.h.{i}."
        out += [(p + "input_layernorm.bias", [h], bias(h)), (p + "input_layernorm.weight", [h], gain(h)),
                (p + "mlp.dense_4h_to_h.bias", [h], bias(h)), (p + "mlp.dense_4h_to_h.weight", [h, 4 * h], lin(h, 4 * h)),
                (p + "mlp.dense_h_to_4h.bias", [4 * h], bias(4 * h)), (p + "mlp.dense_h_to_4h.weight", [4 * h, h], lin(4 * h, h)),
                (p + "post_attention_layernorm.bias", [h], bias(h)), (p + "post_attention_layernorm.weight", [h], gain(h)),
                (p + "self_attention.dense.bias", [h], bias(h)), (p + "self_attention.dense.weight", [h, h], lin(h, h)),
                (p + "self_attention.query_key_value.bias", [3 * h], bias(3 * h)),
                (p + "self_attention.query_key_value.weight", [3 * h, h], lin(3 * h, h))]
    out += [("transformer.ln_f.bias", [h], bias(h)), ("transformer.ln_f.weight", [h], gain(h)),
            ("transformer.word_embeddings.weight", [VOCAB, h], lambda: 0.3 * g.standard_normal((VOCAB, h), dtype=np.float32)),
            ("transformer.word_embeddings_layernorm.bias", [h], bias(h)),
            ("transformer.word_embeddings_layernorm.weight", [h], gain(h))]
    return sorted(out, key=lambda t: t[0])


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else CACHE / "bloom-560m-random"
    out.mkdir(parents=True, exist_ok=True)
    g = np.random.default_rng(3)
    ts = tensors(g)
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, _ in ts:
        n = 4 * int(np.prod(shape))
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + n]}
        off += n
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * (-len(hj) % 8)
    with open(out / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj)
        for _, shape, draw in ts:
            f.write(np.ascontiguousarray(draw(), dtype="<f4").tobytes())
    cfg = json.loads((ROOT / "tests/fixtures/tiny/config.json").read_text())
    cfg.update(hidden_size=HIDDEN, n_head=HEADS, n_layer=LAYERS, vocab_size=VOCAB)
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(ROOT / "tests/fixtures/tiny" / f, out / f)
    print("wrote", out, file=sys.stderr)


if __name__ == "__main__":
    main()
