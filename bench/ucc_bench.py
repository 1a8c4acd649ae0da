"""mpiucc's collectives on UCC against the same collectives on MPI, through the torch backend.

Run with the UCC layer built (tools/build_ucc.sh, then ``make build`` with UCC_HOME set) under
the LD_LIBRARY_PATH the script prints, e.g.
``mpiexec -n 2 python bench/ucc_bench.py``. Two mpiucc groups over all ranks,
one left on MPI, one on UCC (``set_collectives("ucc")``), called alternately; beside them raw
mpi4py (the baseline a user would otherwise pick) and a memcpy of the same bytes (the shared
memory's limit). Each figure is the best of a few repeats of the slowest rank's mean time.
Also: ``new_group`` plus its first all_reduce, on MPI and on UCC (where the team is made).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import torch.distributed as dist
from _common import sizes_from
from mpi4py import MPI

import pycomm.distributed  # noqa: F401  (registers mpiucc and mpi://)
from pycomm.ucc.team import init_context

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()


def timed(fn, n: int) -> float:
    WORLD.Barrier()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return WORLD.allreduce((time.perf_counter() - t0) / n, op=MPI.MAX)


def per_call(fns: dict, nbytes: int, repeats: int = 5) -> dict[str, float]:
    """Seconds per call of each fn (interleaved; best of repeats, slowest rank)."""
    n = WORLD.bcast(max(3, min(2000, int(2e8 / max(nbytes, 1e4)))), root=0)
    for fn in fns.values():
        fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for k, fn in fns.items():
            best[k] = min(best[k], timed(fn, n))
    return best


def new_group_times(collectives: str, repeats: int = 5) -> tuple[float, float]:
    """Seconds of new_group and of its first all_reduce (UCC: the team is made then)."""
    made, first = [], []
    for _ in range(repeats):
        WORLD.Barrier()
        t0 = time.perf_counter()
        g = dist.new_group(backend="mpiucc")
        g.set_collectives(collectives)
        t1 = time.perf_counter()
        dist.all_reduce(torch.ones(1), group=g)
        t2 = time.perf_counter()
        made.append(WORLD.allreduce(t1 - t0, op=MPI.MAX))
        first.append(WORLD.allreduce(t2 - t1, op=MPI.MAX))
    return float(np.median(made)), float(np.median(first))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8,64,512,4K,32K,256K,2M,16M,64M", help="bytes per rank")
    args = parser.parse_args()
    init_context(WORLD)  # as MPIUCC_COLLECTIVES=ucc does: UCX may use shared memory
    dist.init_process_group("mpiucc", init_method="mpi://")
    on_mpi = dist.new_group(backend="mpiucc")
    on_ucc = dist.new_group(backend="mpiucc")
    on_ucc.set_collectives("ucc")
    rows = []
    for nbytes in sizes_from(args.sizes):
        x = torch.ones(max(1, nbytes // 4))
        y = torch.empty_like(x)
        out = torch.empty(x.numel() * SIZE)
        buf = x.numpy()
        t = per_call(
            {
                "memcpy": lambda: y.copy_(x),  # noqa: B023
                "mpi4py": lambda: WORLD.Allreduce(MPI.IN_PLACE, buf),  # noqa: B023
                "mpi": lambda: dist.all_reduce(x, group=on_mpi),  # noqa: B023
                "ucc": lambda: dist.all_reduce(x, group=on_ucc),  # noqa: B023
                "ag mpi": lambda: dist.all_gather_into_tensor(out, x, group=on_mpi),  # noqa: B023
                "ag ucc": lambda: dist.all_gather_into_tensor(out, x, group=on_ucc),  # noqa: B023
            },
            x.numel() * 4,
        )
        rows.append((x.numel() * 4, t))
    made = {c: new_group_times(c) for c in ("mpi", "ucc")}
    if RANK == 0:
        from pycomm import ucc

        print(f"# {SIZE} ranks, UCC {ucc.version()}, float32 sum; us per call (slowest rank)")
        head = "| bytes/rank | memcpy | mpi4py Allreduce | all_reduce MPI | all_reduce UCC "
        head += "| UCC/MPI | all_gather MPI | all_gather UCC | UCC/MPI |"
        print(head)
        print("|" + "---:|" * 9)
        for n, t in rows:
            us = {k: v * 1e6 for k, v in t.items()}
            print(
                f"| {n} | {us['memcpy']:.1f} | {us['mpi4py']:.1f} | {us['mpi']:.1f} | "
                f"{us['ucc']:.1f} | {t['ucc'] / t['mpi']:.2f} | {us['ag mpi']:.1f} | "
                f"{us['ag ucc']:.1f} | {t['ag ucc'] / t['ag mpi']:.2f} |"
            )
        for c, (m, f) in made.items():
            print(f"new_group on {c}: {m * 1e3:.2f} ms; its first all_reduce {f * 1e3:.2f} ms")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
