"""What would pay in an ebq format v2? Ratios per corpus set and relative bound.

    python bench/corpus_study.py [--sets trained,fresh,...] [--bounds 1e-2,1e-3,1e-4]

Reads bench/data/corpus (python bench/make_corpus.py). Per set and bound (relative to the value
range, resolved to one absolute bound for every column), as compression ratios (input bytes over
output bytes):

  fast, dense       pycodecs frames today (dense: format v3, predictor none)
  H0, ctx           empirical entropy of the zigzag indices: order-0, and under the dense
                    level's own context (previous 8-group sum); no table costs: ceilings
  zero-run          dense frame of the 256-value chunks that do not quantize to all zeros, plus
                    a bitmap of the chunks coded at its order-1 entropy (a real size for the
                    chunks, an estimate for the bitmap): what zero-chunk run coding would give
  per-tensor        dense payloads of each segment of corpus.json (one per parameter tensor, or
                    sequence) with one header: a table and a scale per segment
  split-1M          dense payloads of independent 2^20-value slices with one header: the cost
                    of the independent rANS streams that dense threads need
  SZ3               pysz 1.1.0, best of interp+lorenzo and lorenzo+regression, one thread
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pycodecs
from index_entropy import entropy_bits, models, sz3_ratio

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
HEADER = 64
CHUNK = 256


def dense_payload(x: np.ndarray, eb: float) -> int:
    """Bytes of the dense frame of x at absolute bound eb, without its 64-byte header."""
    return len(pycodecs.compress(x, "ebq", error_bound=eb, level="dense")) - HEADER


def zero_run(x: np.ndarray, q: np.ndarray, eb: float) -> float:
    n = x.size
    pad = -(-n // CHUNK) * CHUNK
    zq = np.zeros(pad, bool)
    zq[:n] = q == 0
    zq[n:] = True
    zero = zq.reshape(-1, CHUNK).all(axis=1)
    keep = np.repeat(~zero, CHUNK)[:n]
    flags = zero.astype(np.int64)
    prev = np.concatenate([[0], flags[:-1]])
    bitmap = entropy_bits(prev, flags) / 8 + 16
    return x.nbytes / (HEADER + dense_payload(x[keep], eb) + bitmap)


def split_sizes(x: np.ndarray, eb: float, sizes: list[int]) -> float:
    edges = np.cumsum([0] + sizes)
    total = sum(
        dense_payload(x[a:b], eb) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a
    )
    return x.nbytes / (HEADER + total)


def study(name: str, x: np.ndarray, sizes: list[int], rel: float) -> dict[str, float]:
    v = x[np.isfinite(x)].astype(np.float64)
    eb = rel * float(v.max() - v.min())
    q = np.rint(x.astype(np.float64) / (2 * eb)).astype(np.int64)
    m = models(q)
    row = {
        "fast": x.nbytes / len(pycodecs.compress(x, "ebq", error_bound=eb)),
        "dense": x.nbytes / (HEADER + dense_payload(x, eb)),
        "H0": x.nbytes * 8 / max(m["order-0"], 1.0),
        "ctx": x.nbytes * 8 / max(m["prev-group-sum (today)"], 1.0),
        "zero-run": zero_run(x, q, eb),
        "per-tensor": split_sizes(x, eb, sizes),
        "split-1M": split_sizes(x, eb, [1 << 20] * (x.size >> 20) + [x.size % (1 << 20)]),
    }
    try:
        row["SZ3"] = max(sz3_ratio(x, eb, a) for a in ("INTERP_LORENZO", "LORENZO_REG"))
    except ImportError:
        row["SZ3"] = float("nan")
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="trained,fresh,embed,deep,weights,acts")
    ap.add_argument("--bounds", default="1e-2,1e-3,1e-4")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    args = ap.parse_args(argv)
    index = json.loads((args.corpus / "corpus.json").read_text())
    cols = None
    for name in args.sets.split(","):
        x = np.fromfile(args.corpus / index[name]["file"], "<f4")
        for rel in (float(b) for b in args.bounds.split(",")):
            row = study(name, x, index[name]["sizes"], rel)
            if cols is None:
                cols = list(row)
                print("| set | rel bound | " + " | ".join(cols) + " |")
                print("|---|---|" + "---:|" * len(cols))
            print(
                f"| {name} | {rel:g} | " + " | ".join(f"{row[c]:.4g}" for c in cols) + " |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
