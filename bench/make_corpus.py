"""A gradient corpus for codec work: six sets of different nature, generated here (no downloads).

    python bench/make_corpus.py            # bench/data/corpus/<set>.f32 + corpus.json, ~2 min
    python bench/make_corpus.py --only embed,deep

Sets (what a rank would send):
  trained  DDP bucket: a 3.3 M-parameter byte-level GPT after 200 AdamW steps
           (bench/make_gradients.py; reused when bench/data/grads_gpt.f32 exists)
  fresh    DDP bucket: a freshly initialised 25 M-parameter GPT, first batch
           (make_gradients.py --fresh; grads_gpt_fresh.f32)
  embed    DDP bucket: a model with a 65536 x 64 word-embedding table after a few steps:
           only the rows of the batch's words get a gradient
  deep     DDP bucket: a 12-layer GPT after 300 AdamW steps
  weights  FSDP all-gather: the deep model's parameters after those steps
  acts     TP / PP stream: the activations leaving the deep model's middle block

Each set is raw little-endian float32; corpus.json holds per set its segments (one per
parameter tensor, or per sequence for activations) and the statistics printed at the end:
zero fraction, range/std, max|x|/std and the spread of the per-segment RMS (log10 of the ratio
of the 90th to the 10th percentile, and of the largest to the smallest non-zero RMS).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import make_gradients as mg
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = mg.DATA_DIR / "corpus"
SETS = ("trained", "fresh", "embed", "deep", "weights", "acts")


def gpt_segments(layers: int, width: int, heads: int, seq: int) -> list[int]:
    """Tensor sizes of make_gradients' TinyGPT, in registration order (its flat layout)."""
    return [p.numel() for p in mg.TinyGPT(layers, width, heads, seq).parameters()]


class EmbedModel(nn.Module):
    """Word embeddings (a large table) under two small transformer blocks, predicting the
    next word's first byte: the table's rows get a gradient only where the batch has words."""

    def __init__(self, vocab: int, width: int, seq: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(seq, width)
        self.blocks = nn.ModuleList(mg.Block(width, 4) for _ in range(2))
        self.head = nn.Linear(width, 256)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def flat_grad(model: nn.Module) -> tuple[np.ndarray, list[int]]:
    ps = list(model.parameters())
    g = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in ps])
    return g.numpy().astype("<f4"), [p.numel() for p in ps]


def make_embed(steps: int = 5, vocab: int = 65536, width: int = 64, seq: int = 64):
    text = mg.stdlib_corpus(2 << 20)[0].numpy().astype(np.uint8).tobytes().decode("latin-1")
    words = re.findall(r"\w+", text)
    ids = torch.tensor([hash_word(w) % vocab for w in words])
    first = torch.tensor([ord(w[0]) % 256 for w in words])
    torch.manual_seed(1)
    gen = torch.Generator().manual_seed(1)
    model = EmbedModel(vocab, width, seq)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(steps + 1):
        s = torch.randint(0, ids.numel() - seq - 1, (8,), generator=gen).tolist()
        x = torch.stack([ids[i : i + seq] for i in s])
        y = torch.stack([first[i + 1 : i + seq + 1] for i in s])
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1)).backward()
        if _ < steps:
            opt.step()
    return flat_grad(model)


def hash_word(w: str) -> int:
    """A stable hash (Python's str hash is salted per process)."""
    h = 2166136261
    for c in w.encode():
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h


def make_deep(steps: int = 300, layers: int = 12, width: int = 128, seq: int = 64):
    """The deep model's gradient, parameters and middle activations after steps."""
    torch.manual_seed(2)
    gen = torch.Generator().manual_seed(2)
    data = mg.stdlib_corpus(4 << 20)[0]
    model = mg.TinyGPT(layers, width, 4, seq)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95))
    for _ in range(steps):
        x, y = mg.batch(data, 8, seq, gen)
        loss = F.cross_entropy(model(x)[0].reshape(-1, 256), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    x, y = mg.batch(data, 64, seq, gen)
    logits, acts = model(x, tap=layers // 2 - 1)
    opt.zero_grad(set_to_none=True)
    F.cross_entropy(logits.reshape(-1, 256), y.reshape(-1)).backward()
    g, sizes = flat_grad(model)
    w = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy().astype("<f4")
    a = acts.numpy().astype("<f4").reshape(-1)
    return (g, sizes), (w, sizes), (a, [seq * width] * x.shape[0])


def statistics(x: np.ndarray, sizes: list[int]) -> dict:
    v = x.astype(np.float64)
    std = float(v.std())
    edges = np.cumsum([0] + sizes)
    rms = np.array(
        [np.sqrt(np.mean(v[a:b] ** 2)) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    )
    nz = rms[rms > 0]
    p10, p90 = np.percentile(nz, [10, 90]) if nz.size else (1.0, 1.0)
    return {
        "n": int(x.size),
        "segments": len(sizes),
        "zero_fraction": float(np.mean(x == 0)),
        "zero_chunks_256": float(
            np.mean(np.all(np.resize(x, -(-x.size // 256) * 256).reshape(-1, 256) == 0, axis=1))
        ),
        "range_over_std": float((v.max() - v.min()) / std) if std else 0.0,
        "absmax_over_std": float(np.abs(v).max() / std) if std else 0.0,
        "rms_spread_p90_p10_log10": float(np.log10(p90 / p10)),
        "rms_spread_max_min_log10": float(np.log10(nz.max() / nz.min())) if nz.size else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(SETS))
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    want = args.only.split(",")
    torch.set_num_threads(2)
    args.out.mkdir(parents=True, exist_ok=True)
    index_path = args.out / "corpus.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    t0 = time.perf_counter()
    made: dict[str, tuple[np.ndarray, list[int]]] = {}
    for name, flags, shape, made_by_default in (
        ("trained", ["--no-acts"], (4, 256, 4, 128), mg.DATA_DIR / "grads_gpt.f32"),
        ("fresh", ["--fresh"], (8, 512, 8, 128), mg.DATA_DIR / "grads_gpt_fresh.f32"),
    ):
        if name not in want:
            continue
        if not made_by_default.exists():  # the project's two sets, made once
            mg.main(flags + ["--out", str(made_by_default), "--threads", "2"])
        made[name] = (np.fromfile(made_by_default, "<f4"), gpt_segments(*shape))
    if "embed" in want:
        made["embed"] = make_embed()
    if {"deep", "weights", "acts"} & set(want):
        deep, weights, acts = make_deep()
        made.update(
            {k: v for k, v in (("deep", deep), ("weights", weights), ("acts", acts)) if k in want}
        )
    for name, (x, sizes) in made.items():
        x.tofile(args.out / f"{name}.f32")
        index[name] = {"file": f"{name}.f32", "sizes": sizes, "stats": statistics(x, sizes)}
    index_path.write_text(json.dumps(index) + "\n")
    print(f"\ncorpus in {args.out} ({time.perf_counter() - t0:.0f} s)")
    print(
        f"{'set':8} {'values':>10} {'segs':>5} {'zeros':>7} {'0-chunks':>8} {'range/std':>9} "
        f"{'max/std':>8} {'rms p90/p10':>11} {'rms max/min':>11}"
    )
    for name in SETS:
        if name not in index:
            continue
        s = index[name]["stats"]
        print(
            f"{name:8} {s['n']:>10} {s['segments']:>5} {s['zero_fraction']:>7.3f} "
            f"{s['zero_chunks_256']:>8.3f} {s['range_over_std']:>9.0f} "
            f"{s['absmax_over_std']:>8.0f} {10 ** s['rms_spread_p90_p10_log10']:>11.1f} "
            f"{10 ** s['rms_spread_max_min_log10']:>11.3g}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
