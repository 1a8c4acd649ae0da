"""Time each allreduce algorithm on the emulated network, for ``perf_model.py`` to fit.

Run through bench/slow_net.sh, e.g.
``bench/slow_net.sh --links 4 1gbit 4 .venv/bin/python bench/perf_calibrate.py --rate 1``;
with ``--links K`` for K < N the ranks of a namespace form an emulated node and the hierarchy
variants run too. Rank 0 appends one JSON line per variant to ``--out``: ranks, nodes, link
rate, bytes, algorithm, the median time (slowest rank), the bytes each rank sent and the
machine's 1-minute load when the run began (the emulator shares the machine's cores).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
from _common import slowest_median
from mpi4py import MPI

import pycomm

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
EBQ = dict(codec="ebq", error_bound=1e-3, mode="rel")
VARIANTS = {  # name: (allreduce keywords, algorithm)
    "ebq ring": (EBQ, "ring"),
    "int8 twophase": (dict(codec="int8"), "twophase"),
    "sign twophase": (dict(codec="sign"), "twophase"),
    "int8 allgather": (dict(codec="int8"), "allgather"),
    "ebq hierarchy": (EBQ, "hierarchy"),
    "int8 hierarchy": (dict(codec="int8"), "hierarchy"),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, required=True, help="link rate in Gbit/s (recorded)")
    p.add_argument("--mib", type=float, default=16, help="MiB of float32 per rank")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", default=str(Path(__file__).parent / "calibration" / "runs.jsonl"))
    args = p.parse_args()
    n = int(args.mib * 2**20) // 4
    load = round(os.getloadavg()[0], 2)
    x = (np.random.default_rng(RANK).laplace(0, 1e-3, n)).astype(np.float32)
    nodes = len(set(COMM.allgather(os.environ.get("MPIUCC_NODE", str(RANK)))))
    rows = [
        (
            "mpi",
            slowest_median(lambda: COMM.Allreduce(x, np.empty_like(x)), args.reps, COMM),
            0,
            1.0,
        )
    ]
    for name, (kw, algorithm) in VARIANTS.items():
        if algorithm == "hierarchy" and nodes in (1, SIZE):
            continue
        stats = pycomm.CommStats()
        pycomm.allreduce(x, algorithm=algorithm, stats=stats, **kw)
        sent = COMM.allreduce(stats.sent_bytes, op=MPI.MAX)
        t = slowest_median(lambda: pycomm.allreduce(x, algorithm=algorithm, **kw), args.reps, COMM)  # noqa: B023
        rows.append((name, t, sent, stats.ratio))
    if RANK == 0:
        with open(args.out, "a") as f:
            for name, t, sent, ratio in rows:
                line = dict(ranks=SIZE, nodes=nodes, gbit=args.rate, bytes=x.nbytes, variant=name)
                line.update(seconds=round(t, 5), sent=sent, ratio=round(ratio, 3), load=load)
                f.write(json.dumps(line) + "\n")
                print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
