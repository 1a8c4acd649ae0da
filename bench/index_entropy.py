"""How far could a stronger model of ebq's quantization indices take the dense level?

For a float32 file and relative bounds, quantizes as ebq does (index = rint(x / step), step =
2 · bound · range), then prints, as compression ratios (4 bytes per value over the bits):
the dense frame pycodecs makes, the empirical entropies of the indices under several context
models (no table costs: ceilings a real coder approaches from below), and SZ3 through pysz with
both predictors. Ratios only: no timing, so it runs anywhere.

    python bench/index_entropy.py --file bench/data/grads_gpt_fresh.f32 --bounds 1e-2,1e-3,1e-4
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def entropy_bits(keys: np.ndarray, symbols: np.ndarray) -> float:
    """Sum over contexts (keys) of n · H(symbols | key): the order-k empirical entropy."""
    joint = keys.astype(np.int64) * (1 << 20) + symbols.astype(np.int64)
    _, jc = np.unique(joint, return_counts=True)
    _, kc = np.unique(keys, return_counts=True)
    return float(-(jc * np.log2(jc)).sum() + (kc * np.log2(kc)).sum())


def bit_length(v: np.ndarray) -> np.ndarray:
    return np.where(v > 0, np.floor(np.log2(np.maximum(v, 1))).astype(np.int64) + 1, 0)


def models(q: np.ndarray) -> dict[str, float]:
    """Bits of the indices q under each model."""
    z = np.where(q >= 0, 2 * q, -2 * q - 1).astype(np.int64)  # zigzag
    n = z.size
    out = {"order-0": entropy_bits(np.zeros(n, np.int64), z)}
    # today's dense model: context = bit length of the previous group-of-8 sum (capped bytes)
    s = np.minimum(z, 255)
    g = s[: n // 8 * 8].reshape(-1, 8).sum(axis=1)
    prev = np.concatenate([[0], g[:-1]])
    ctx = np.repeat(bit_length(prev), 8)
    zz = z[: ctx.size]
    out["prev-group-sum (today)"] = entropy_bits(ctx, zz)
    # two contexts: the previous group's sum and the previous symbol's bit length
    prev_sym = np.concatenate([[0], zz[:-1]])
    out["prev-group-sum x prev-symbol"] = entropy_bits(ctx * 32 + bit_length(prev_sym), zz)
    # a local magnitude: the bit length of the mean |z| of the previous 32 values
    c = np.concatenate([[0], np.cumsum(zz)])
    idx = np.arange(zz.size)
    lo = np.maximum(idx - 32, 0)
    local = (c[idx] - c[lo]) // np.maximum(idx - lo, 1)
    out["prev-32 mean"] = entropy_bits(bit_length(local), zz)
    out["prev-32 mean x prev-symbol"] = entropy_bits(
        bit_length(local) * 32 + bit_length(prev_sym), zz
    )
    # delta predictor (per frame) under today's context
    d = np.diff(q, prepend=0)
    zd = np.where(d >= 0, 2 * d, -2 * d - 1).astype(np.int64)
    out["delta, order-0"] = entropy_bits(np.zeros(n, np.int64), zd)
    return out


def sz3_ratio(x: np.ndarray, bound: float, algo: str) -> float:
    import pysz

    cfg = pysz.szConfig(x.shape)
    cfg.errorBoundMode = pysz.szErrorBoundMode.ABS
    cfg.absErrorBound = bound
    cfg.cmprAlgo = getattr(pysz.szAlgorithm, algo)
    cfg.openmp = False
    return x.nbytes / pysz.sz.compress(x, cfg)[0].nbytes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", type=Path, required=True)
    ap.add_argument("--bounds", default="1e-2,1e-3,1e-4")
    ap.add_argument("--n", type=int, help="use only the first N elements")
    args = ap.parse_args(argv)
    import pycodecs

    x = np.fromfile(args.file, "<f4")[: args.n]
    rng = float(x.max() - x.min())
    print(f"{args.file.name}: {x.size} values, range/std {rng / float(x.std()):.0f}")
    for rel in (float(b) for b in args.bounds.split(",")):
        eb = rel * rng
        q = np.rint(x.astype(np.float64) / (2 * eb)).astype(np.int64)
        row = {}
        for pred in ("none", "delta"):
            f = pycodecs.compress(x, "ebq", error_bound=rel, mode="rel", level="dense",
                                  predictor=pred)  # fmt: skip
            row[f"dense frame ({pred})"] = x.nbytes / len(f)
        row.update({k: x.nbytes * 8 / max(v, 1.0) for k, v in models(q).items()})
        for algo in ("INTERP_LORENZO", "LORENZO_REG"):
            row[f"SZ3 {algo.lower()}"] = sz3_ratio(x, eb, algo)
        print(f"rel {rel:g}: " + ", ".join(f"{k} {v:.4g}" for k, v in row.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
