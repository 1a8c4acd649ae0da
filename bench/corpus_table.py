"""Every corpus set x relative bound x codec: compression ratio and one-core speed.

    python bench/corpus_table.py [--sets trained,fresh,...] [--bounds 1e-2,1e-3,1e-4] [--reps 3]

Reads bench/data/corpus (python bench/make_corpus.py). Per set and bound (relative to the set's
value range, resolved to one absolute bound that every codec gets), one row per codec with its
ratio (input bytes over output bytes) and compress / decompress MB/s of input, best of --reps
calls after a warm-up, all on one thread:

  ebq fast, ebq dense   pycodecs frames of today's format, threads=1
  SZ3                   pysz, the better ratio of interp+lorenzo and lorenzo+regression
                        (speeds of that one), openmp off
  ZFP                   zfpy's fixed-accuracy mode at the same absolute bound
  memcpy                numpy copy of the set: the physical limit beside the speeds

SZx has no package on PyPI; a local build would be a column here. A codec that is not
installed prints n/a. Every decoded array is checked against the bound (a row beyond it is
named on stderr: zfp's tolerance is not a strict bound).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pycodecs
from _baselines import sz3_rows, zfp_row
from _common import Row, best_time, measure

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"


def ebq_row(x: np.ndarray, eb: float, level: str, reps: int) -> Row:
    kw = dict(error_bound=eb, level=level, threads=1)
    return measure(
        f"ebq {level}",
        x,
        lambda: pycodecs.compress(x, "ebq", **kw),
        lambda f: pycodecs.decompress(f, count=x.size, threads=1),
        len,
        reps,
        bound=eb,
    )


def rows_for(x: np.ndarray, eb: float, reps: int) -> dict[str, Row | None]:
    sz3 = [r for r in sz3_rows(x, eb, reps) if math.isfinite(r.ratio)]
    zfp = zfp_row(x, eb, reps)
    return {
        "ebq fast": ebq_row(x, eb, "fast", reps),
        "ebq dense": ebq_row(x, eb, "dense", reps),
        "SZ3": max(sz3, key=lambda r: r.ratio) if sz3 else None,
        "ZFP": zfp if math.isfinite(zfp.ratio) else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="trained,fresh,embed,deep,weights,acts")
    ap.add_argument("--bounds", default="1e-2,1e-3,1e-4")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    args = ap.parse_args(argv)
    index = json.loads((args.corpus / "corpus.json").read_text())
    print(f"load average before: {os.getloadavg()[0]:.1f}", flush=True)
    print(
        "| set | rel bound | memcpy MB/s | ebq fast ratio | comp / decomp MB/s "
        "| ebq dense ratio | comp / decomp MB/s | SZ3 ratio | comp / decomp MB/s "
        "| ZFP ratio | comp / decomp MB/s | dense / SZ3 |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    bad = 0
    for name in args.sets.split(","):
        x = np.fromfile(args.corpus / index[name]["file"], "<f4")
        copy = x.nbytes / 1e6 / best_time(x.copy, args.reps)
        span = float(x[np.isfinite(x)].max()) - float(x[np.isfinite(x)].min())
        for rel in (float(b) for b in args.bounds.split(",")):
            eb = rel * span
            rows = rows_for(x, eb, args.reps)
            cells = []
            for key in ("ebq fast", "ebq dense", "SZ3", "ZFP"):
                r = rows[key]
                if r is None:
                    cells += ["n/a", "n/a"]
                    continue
                if not r.max_abs_err <= eb:
                    bad += 1
                    over = r.max_abs_err / eb
                    print(f"{name} {rel:g} {r.engine}: max error {over:.6f} x the bound",
                          file=sys.stderr)  # fmt: skip
                cells += [f"{r.ratio:.4g}", f"{r.comp_MBps:.0f} / {r.decomp_MBps:.0f}"]
            sz3 = rows["SZ3"]
            vs = f"{rows['ebq dense'].ratio / sz3.ratio:.3f}" if sz3 else "n/a"
            print(f"| {name} | {rel:g} | {copy:.0f} | " + " | ".join(cells) + f" | {vs} |",
                  flush=True)  # fmt: skip
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    if bad:
        print(f"{bad} rows beyond their bound", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
