"""What the uncompressed paths add to MPI_Allreduce: a latency/bandwidth sweep, 8 B to 64 MiB.

    mpiexec -n 2 python bench/latency_bench.py [--sizes 8:64M] [--rounds 5] [--json PATH]

Side by side in one run, on the same float32 data: MPI_Allreduce (mpi4py, blocking), the
same after a 160-byte MAX allreduce (the least the contract's agreement can cost),
``pycomm.allreduce`` with codec "none", with "auto:rms:1e-2" and "auto:rel:1e-3" once their
keys have settled (raw on a fast link; the ``path`` column says whether all of pycomm's
calls took the compiled path), the DDP hook's bucket call (``pycomm.iallreduce`` in place,
a mean, ``auto:rms:5e-4`` with an ``ErrorFeedback``, as ``mpiucc_compress_hook`` makes it),
the torch backend's ``dist.all_reduce`` on an ``mpiucc`` group, and a compressed one, ebq at
a bound relative to the range of 1e-3 (``--ebq``; never on the compiled path). Two ways:
back to back (many calls in a loop, the mean) and after a barrier (each call timed alone,
the median). Every figure is the slowest rank's, the best of ``--rounds`` rounds that visit
the variants in turn (so drift on a busy machine hits them alike). Rank 0 prints
microseconds and each variant over MPI.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import torch
import torch.distributed as dist
from _common import sizes_from
from mpi4py import MPI

import pycomm
import pycomm.distributed  # noqa: F401  (registers the mpiucc backend)
from pycomm.collectives import hot
from pycomm.collectives.agreement import LENGTH
from pycomm.collectives.engine import engine_of
from pycomm.distributed.staging import SEGMENT_COUNT

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
AUTO = {"auto rms": "auto:rms:1e-2", "auto rel": "auto:rel:1e-3", "hook": "auto:rms:5e-4"}
#: The variants whose calls should all take the compiled path once settled.
COMPILED = ("none", *AUTO)


def variants(x: np.ndarray, out: np.ndarray, ebq: bool) -> dict:
    t = torch.from_numpy(out)
    check = np.zeros(LENGTH)
    bucket, feedback = x.copy(), pycomm.ErrorFeedback(np.zeros_like(x))
    hook = dict(out=bucket, op="mean", residual=feedback, segment=SEGMENT_COUNT)

    def checked() -> None:  # what the contract's agreement costs at the least: MPI's own
        COMM.Allreduce(MPI.IN_PLACE, check, op=MPI.MAX)
        COMM.Allreduce(x, out, op=MPI.SUM)

    return {
        "MPI": lambda: COMM.Allreduce(x, out, op=MPI.SUM),
        "MPI+check": checked,
        "none": lambda: pycomm.allreduce(x, codec="none", out=out),
        "auto rms": lambda: pycomm.allreduce(x, codec=AUTO["auto rms"], out=out),
        "auto rel": lambda: pycomm.allreduce(x, codec=AUTO["auto rel"], out=out),
        "hook": lambda: pycomm.iallreduce(bucket, codec=AUTO["hook"], **hook).wait(),
        "backend": lambda: dist.all_reduce(t),
    } | ({"ebq rel": lambda: pycomm.allreduce(x, codec=EBQ, out=out)} if ebq else {})


#: The compressed variant: ebq, bound relative to the range.
EBQ = pycomm.CodecSpec("ebq", error_bound=1e-3, mode="rel")


def back_to_back(call, calls: int) -> float:
    COMM.Barrier()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - t0) / calls


def after_barrier(call, calls: int) -> float:
    times = []
    for _ in range(calls):
        COMM.Barrier()
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def slowest(seconds: float) -> float:
    return COMM.allreduce(seconds, op=MPI.MAX)


def measure(nbytes: int, rounds: int, ebq: bool) -> dict:
    count = max(1, nbytes // 4)
    x = np.random.default_rng(RANK).standard_normal(count).astype(np.float32)
    out = np.empty_like(x)
    calls = max(5, min(2000, (1 << 26) // max(nbytes, 1 << 14)))
    found = variants(x, out, ebq)
    for call in found.values():  # warm: auto settles, the backend's first call
        for _ in range(100 if nbytes < 1 << 22 else 40):
            call()
    plans = engine_of(COMM).settled
    best = {(name, way): float("inf") for name in found for way in ("b2b", "barrier")}
    settled = True
    for _ in range(rounds):
        for name, call in found.items():
            compiled = sum(plan.calls for plan in plans.values())
            best[name, "b2b"] = min(best[name, "b2b"], slowest(back_to_back(call, calls)))
            best[name, "barrier"] = min(
                best[name, "barrier"], slowest(after_barrier(call, max(5, calls // 4)))
            )
            if name in COMPILED:
                settled &= sum(plan.calls for plan in plans.values()) > compiled
    return {"bytes": count * 4, "us": {f"{n} {w}": s * 1e6 for (n, w), s in best.items()},
            "compiled": settled}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="8:64M")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json")
    p.add_argument("--ebq", action="store_true", help="time a compressed allreduce too")
    args = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("mpiucc", init_method="mpi://", rank=RANK, world_size=SIZE)
    rows = [measure(n, args.rounds, args.ebq) for n in sizes_from(args.sizes)]
    if RANK == 0:
        print(f"{SIZE} ranks, {MPI.Get_library_version().splitlines()[0]}; compiled path: "
              f"{hot.status()}")  # fmt: skip
        for way in ("b2b", "barrier"):
            print(f"\n{'back to back' if way == 'b2b' else 'after a barrier'} (us; x MPI)")
            names = ("MPI+check", "none", *AUTO, "backend", *(["ebq rel"] if args.ebq else []))
            print(f"{'bytes':>10} {'MPI':>9} " + " ".join(f"{n:>15}" for n in names) + " path")
            for r in rows:
                us = r["us"]
                mpi = us[f"MPI {way}"]
                cells = " ".join(
                    f"{us[f'{n} {way}']:8.1f} {us[f'{n} {way}'] / mpi:5.2f}x" for n in names
                )
                path = "compiled" if r["compiled"] else "python"
                print(f"{r['bytes']:>10} {mpi:9.1f} {cells}  {path}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"ranks": SIZE, "rows": rows}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
