"""Bytes each rank really sends per allreduce (CommStats) against an uncompressed ring's
2·(N−1)/N·B divided by the codec's ratio, for every codec, error feedback off and on.

Run under MPI: ``mpiexec -n 4 python bench/bytes_bench.py``. Rank 0 prints, per codec, the
ratio (raw/frame), the largest sent_bytes of any rank, and sent / (2(N−1)/N·B/ratio): 1.000
is the ideal; ebq's allgathered sums carry indices about log2(N)/2 bits wider than a rank's.
"""

from __future__ import annotations

import argparse

import numpy as np
from mpi4py import MPI

import pycomm

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
CODECS = {
    "ebq rel 1e-3": dict(codec="ebq", error_bound=1e-3, mode="rel"),
    "fp16": dict(codec="fp16"),
    "bf16": dict(codec="bf16"),
    "int8": dict(codec="int8"),
    "int4": dict(codec="int4"),
    "sign": dict(codec="sign"),
    "qsgd 8": dict(codec="qsgd", levels=8),
    "topk 8": dict(codec="topk", levels=8),
}


def measure(x: np.ndarray, kw: dict, ef: bool) -> tuple[float, int]:
    """(ratio, the largest sent_bytes of any rank) of the second of two calls."""
    fb = pycomm.ErrorFeedback(np.zeros_like(x)) if ef else None
    pycomm.allreduce(x, residual=fb, op="mean", **kw)  # a first step fills the residuals
    stats = pycomm.CommStats()
    pycomm.allreduce(x, residual=fb, op="mean", stats=stats, **kw)
    return stats.ratio, COMM.allreduce(stats.sent_bytes, op=MPI.MAX)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--count", type=int, default=1 << 20, help="float32 elements per rank")
    p.add_argument("--codecs", default=",".join(CODECS), help="comma-separated rows of the table")
    args = p.parse_args()
    rng = np.random.default_rng(RANK)
    x = (rng.laplace(0, 1e-3, args.count)).astype(np.float32)
    ring = 2 * (SIZE - 1) / SIZE * x.nbytes
    if RANK == 0:
        print(f"{SIZE} ranks, B = {x.nbytes / 2**20:.1f} MiB float32 per rank")
        head = f"{'codec':<14}{'EF':>4}{'ratio':>8}{'sent MB':>10}{'ideal MB':>10}"
        print(head + f"{'sent/ideal':>12}")
    for name in args.codecs.split(","):
        kw = CODECS[name]
        for ef in (False, True):
            ratio, sent = measure(x, kw, ef)
            ideal = ring / ratio
            if RANK == 0:
                print(
                    f"{name:<14}{'on' if ef else 'off':>4}{ratio:>8.2f}{sent / 1e6:>10.3f}"
                    f"{ideal / 1e6:>10.3f}{sent / ideal:>12.3f}"
                )


if __name__ == "__main__":
    main()
