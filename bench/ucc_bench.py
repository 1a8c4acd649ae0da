"""mpiucc's collectives on UCC against the same collectives on MPI, through the torch backend.

Run with the UCC layer built (tools/build_ucc.sh, then ``make build`` with UCC_HOME set) under
the LD_LIBRARY_PATH the script prints, e.g. ``mpiexec -n 2 python bench/ucc_bench.py``, or over
emulated links: ``bench/slow_net.sh --links 4 1gbit 4 python bench/ucc_bench.py --link-gbit 1``
(slow_net.sh puts MPICH and UCX on TCP). Three mpiucc groups over all ranks, on MPI, on UCC
and on auto, called interleaved in one run; beside them raw mpi4py (the baseline a user would
otherwise pick) and the physical limit: a memcpy of the same bytes, or with ``--link-gbit`` the
time the bytes a ring moves per rank take on such a link. Each figure is the best of a few
repeats (batches of up to 20 calls: on a shared machine the best batch is the one the
others' work did not stall) of the slowest rank's mean; auto is timed after it
settled (the library it chose is shown). Then ``new_group`` and its first collective on
each, where UCC makes its team.
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
from pycomm.distributed.ucc_auto import SAMPLES, WARMUP, size_class
from pycomm.ucc.team import init_context, team_of

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()
SETTLE = 2 * (WARMUP + SAMPLES) + 1  # calls after which auto has chosen


def timed(fn, n: int) -> float:
    WORLD.Barrier()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return WORLD.allreduce((time.perf_counter() - t0) / n, op=MPI.MAX)


def per_call(fns: dict, nbytes: int, repeats: int) -> dict[str, float]:
    """Seconds per call of each fn (interleaved; best of repeats, slowest rank)."""
    n = WORLD.bcast(max(2, min(20, int(2e6 / max(nbytes, 1e4)))), root=0)
    for k, fn in fns.items():
        for _ in range(SETTLE if k.endswith("auto") else 1):
            fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for k, fn in fns.items():
            best[k] = min(best[k], timed(fn, n))
    return best


def new_group_times(choice: str, eager: bool, repeats: int) -> tuple[float, float]:
    """Median seconds of new_group (with the UCC team made in it when eager) and of the
    group's first all_reduce (where a lazy group makes its team)."""
    made, first = [], []
    for _ in range(repeats):
        WORLD.Barrier()
        t0 = time.perf_counter()
        g = dist.new_group(backend="mpiucc")
        g.set_collectives(choice)
        if eager:  # as a collective of the group: its engine runs it
            g._engine.run(lambda comm, g=g: team_of(g._engine, what="new_group"), "new_group")
        t1 = time.perf_counter()
        dist.all_reduce(torch.ones(1), group=g)
        t2 = time.perf_counter()
        made.append(WORLD.allreduce(t1 - t0, op=MPI.MAX))
        first.append(WORLD.allreduce(t2 - t1, op=MPI.MAX))
    return float(np.median(made)), float(np.median(first))


def limit_us(nbytes: int, link_gbit: float | None, ring_factor: float) -> float:
    """The physical limit in µs: the link's time for ring_factor x nbytes, else a memcpy."""
    if link_gbit:
        return ring_factor * nbytes * 8 / (link_gbit * 1e9) * 1e6
    x = torch.ones(max(1, nbytes // 4))
    y = torch.empty_like(x)
    return per_call({"memcpy": lambda: y.copy_(x)}, nbytes, 3)["memcpy"] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8,512,32K,2M,16M,64M", help="bytes per rank")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--link-gbit", type=float, default=None, help="the emulated link's rate")
    args = parser.parse_args()
    init_context(WORLD)  # as MPIUCC_COLLECTIVES=ucc|auto does: UCX may use shared memory
    dist.init_process_group("mpiucc", init_method="mpi://")
    groups = {}
    for choice in ("mpi", "ucc", "auto"):
        groups[choice] = dist.new_group(backend="mpiucc")
        groups[choice].set_collectives(choice)
    rows = []
    for nbytes in sizes_from(args.sizes):
        x = torch.ones(max(1, nbytes // 4))
        out = torch.empty(x.numel() * SIZE)
        buf = x.numpy()
        fns = {"mpi4py": lambda: WORLD.Allreduce(MPI.IN_PLACE, buf)}  # noqa: B023
        for c, g in groups.items():
            fns[f"ar {c}"] = lambda g=g: dist.all_reduce(x, group=g)  # noqa: B023
            fns[f"ag {c}"] = lambda g=g: dist.all_gather_into_tensor(out, x, group=g)  # noqa: B023
        t = per_call(fns, x.numel() * 4, args.repeats)
        keys = groups["auto"]._on.keys
        sizes = {"allreduce": x.numel() * 4, "allgather_into_tensor": out.numel() * 4}
        chose = {w: keys[(w, size_class(b))].choice for w, b in sizes.items()}
        ring = 2 * (SIZE - 1) / SIZE
        limits = (limit_us(x.numel() * 4, args.link_gbit, ring),
                  limit_us(x.numel() * 4, args.link_gbit, SIZE - 1))  # fmt: skip
        rows.append((x.numel() * 4, t, chose, limits))
    made = {
        "MPI": new_group_times("mpi", False, 5),
        "UCC, team made lazily": new_group_times("ucc", False, 5),
        "UCC, team made eagerly": new_group_times("ucc", True, 5),
    }
    if RANK == 0:
        report(rows, made, args.link_gbit)
    dist.destroy_process_group()


def report(rows: list, made: dict, link_gbit: float | None) -> None:
    from pycomm import ucc

    where = f"{link_gbit:g} Gbit/s links" if link_gbit else "shared memory"
    limit = "link time" if link_gbit else "memcpy"
    print(f"# {SIZE} ranks, {where}, UCC {ucc.version()}, float32 sum; µs per call (slowest rank)")
    print(f"| bytes/rank | all_reduce: {limit} | mpi4py | MPI | UCC | UCC/MPI | auto (chose) "
          f"| all_gather: {limit} | MPI | UCC | UCC/MPI | auto (chose) |")  # fmt: skip
    print("|" + "---:|" * 12)
    for n, t, chose, (ar_limit, ag_limit) in rows:
        us = {k: v * 1e6 for k, v in t.items()}
        print(
            f"| {n} | {ar_limit:.1f} | {us['mpi4py']:.1f} | {us['ar mpi']:.1f} | "
            f"{us['ar ucc']:.1f} | {t['ar ucc'] / t['ar mpi']:.2f} | "
            f"{us['ar auto']:.1f} ({chose['allreduce']}) | {ag_limit:.1f} | {us['ag mpi']:.1f} | "
            f"{us['ag ucc']:.1f} | {t['ag ucc'] / t['ag mpi']:.2f} | "
            f"{us['ag auto']:.1f} ({chose['allgather_into_tensor']}) |"
        )
    print("\n| new_group on | new_group (ms) | its first all_reduce (ms) |\n|---|---:|---:|")
    for what, (m, f) in made.items():
        print(f"| {what} | {m * 1e3:.2f} | {f * 1e3:.2f} |")


if __name__ == "__main__":
    main()
