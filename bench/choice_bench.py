"""plan.choose's pick beside every algorithm it weighs, timed side by side in one run.

Run under MPI, e.g. ``bench/slow_net.sh --links 4 1gbit 4 .venv/bin/python bench/choice_bench.py``.
For each codec: an allreduce of ``--count`` float32 elements per rank with error feedback, in
``--segment``-element pipeline segments (the DDP hook's 2^19 by default), once per algorithm in
turn for ``--reps`` rounds; rank 0 prints the median of the slowest rank's time, the bytes each
rank sent (CommStats), which algorithm ``plan.choose`` takes, and the median over the rounds
of the other algorithm's time over the pick's in the same round (above 1: the pick was faster).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from mpi4py import MPI

import pycomm
from pycomm.collectives import plan
from pycomm.collectives.spec import make_spec

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()


def once(x: np.ndarray, fb, codec: str, algorithm: str, segment: int) -> tuple[float, int]:
    """(the slowest rank's seconds, the bytes this rank sent) of one allreduce."""
    stats = pycomm.CommStats()
    COMM.Barrier()
    t0 = time.perf_counter()
    pycomm.allreduce(
        x, codec=codec, op="mean", residual=fb, algorithm=algorithm, segment=segment, stats=stats
    )
    return COMM.allreduce(time.perf_counter() - t0, op=MPI.MAX), stats.sent_bytes


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--codecs", default="sign,int8")
    p.add_argument("--count", type=int, default=3_250_000, help="float32 elements per rank")
    p.add_argument("--segment", type=int, default=1 << 19)
    p.add_argument("--reps", type=int, default=7)
    args = p.parse_args()
    x = np.random.default_rng(RANK).laplace(0, 1e-3, args.count).astype(np.float32)
    if RANK == 0:
        print(f"{SIZE} ranks, {args.count} float32 per rank, segments of {args.segment}")
        print(f"{'codec':<8}{'algorithm':<11}{'median ms':>10}{'sent MB':>9}  choose (paired)")
    for codec in args.codecs.split(","):
        picked = plan.choose(make_spec(codec), SIZE, args.count, segment=args.segment)
        fbs = {name: pycomm.ErrorFeedback(np.zeros_like(x)) for name in plan.FIXED}
        times = {name: [] for name in plan.FIXED}
        sent = {}
        for rep in range(args.reps + 1):  # the first round warms up (threads, residuals)
            for name in plan.FIXED:
                dt, sent[name] = once(x, fbs[name], codec, name, args.segment)
                if rep:
                    times[name].append(dt)
        if RANK == 0:
            other = next(name for name in plan.FIXED if name != picked)
            paired = np.median(np.array(times[other]) / np.array(times[picked]))
            for name in plan.FIXED:
                mark = f"<- picked ({paired:.2f})" if name == picked else ""
                ms = 1e3 * float(np.median(times[name]))
                print(f"{codec:<8}{name:<11}{ms:>10.1f}{sent[name] / 1e6:>9.3f}  {mark}")


if __name__ == "__main__":
    main()
