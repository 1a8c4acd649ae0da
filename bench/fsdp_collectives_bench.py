"""FSDP2's two collectives, one call at a time: MPI beside pycomm's compressed ones.

Run under MPI, e.g. ``OMP_NUM_THREADS=1 mpiexec -n 4 python bench/fsdp_collectives_bench.py``.
The sizes are the ``bench-fsdp`` preset's decoder block (3.1 MB of float32 gradients, a
0.8 MB weight shard per rank on 4 ranks) and its codecs: the gradients' reduce-scatter by
ebq with a bound of 2e-3 of their rms and error feedback, the weights' all-gather by blockwise
int8 (blocks of 64). Each is timed through pycomm's collectives and through the torch
backend (``reduce_scatter_tensor`` and ``all_gather_into_tensor`` on an mpiucc group with a
compression policy), beside MPI's Reduce_scatter_block and Allgather. Per call: the median
over the calls of the slowest rank's time. ``--profile PATH`` writes rank 0's cProfile of the
compressed calls (``python -m pstats PATH``).
"""

from __future__ import annotations

import argparse
import cProfile
import warnings

import numpy as np
import torch
import torch.distributed as dist
from _common import slowest_median
from mpi4py import MPI

import pycomm
import pycomm.distributed as pd

warnings.filterwarnings("ignore", category=FutureWarning)  # all_gather_into_tensor
COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
GRADS = pycomm.CodecSpec("ebq", error_bound=2e-3, mode="rms")
WEIGHTS = pycomm.CodecSpec("int8", block_size=64)


def calls_of(args) -> dict:
    rng = np.random.default_rng(RANK)
    n = args.block_mb * (1 << 20) // 4 // SIZE * SIZE
    grads = (rng.standard_t(3, n) * 1e-3).astype(np.float32)
    shard = (rng.standard_normal(n // SIZE) * 0.02).astype(np.float32)
    block, gathered = np.empty(n // SIZE, np.float32), np.empty(n, np.float32)
    residual = np.zeros(n, np.float32)
    dist.init_process_group("mpiucc", init_method="mpi://")
    group = dist.new_group(list(range(SIZE)), backend="mpiucc")
    pd.set_compression(group, reduce_scatter=GRADS, all_gather=WEIGHTS)
    tg, tb = torch.from_numpy(grads), torch.from_numpy(block)
    ts, ta = torch.from_numpy(shard), torch.from_numpy(gathered)
    return {
        "reduce-scatter": {
            "mpi": lambda: COMM.Reduce_scatter_block(grads, block),
            "pycomm ebq": lambda: pycomm.reduce_scatter(
                grads, codec=GRADS, out=block, residual=residual
            ),
            "backend ebq": lambda: dist.reduce_scatter_tensor(tb, tg, group=group),
        },
        "all-gather": {
            "mpi": lambda: COMM.Allgather(shard, gathered),
            "pycomm int8": lambda: pycomm.allgather(shard, codec=WEIGHTS, out=gathered),
            "backend int8": lambda: dist.all_gather_into_tensor(ta, ts, group=group),
        },
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--block-mb", type=int, default=3, help="gradients of one FSDP unit, MiB")
    p.add_argument("--calls", type=int, default=30)
    p.add_argument("--profile", help="write rank 0's cProfile of the compressed calls here")
    args = p.parse_args()
    table = calls_of(args)
    if args.profile:
        prof = cProfile.Profile()
        for fns in table.values():
            for name, fn in fns.items():
                if name != "mpi":
                    fn()
                    prof.runcall(lambda fn=fn: [fn() for _ in range(args.calls)])
        if RANK == 0:
            prof.dump_stats(args.profile)
        return
    rows = {
        op: {k: slowest_median(fn, args.calls, COMM) for k, fn in fns.items()}
        for op, fns in table.items()
    }
    if RANK == 0:
        print(f"{SIZE} ranks, {args.block_mb} MiB of gradients, ms per call (slowest rank)")
        for op, times in rows.items():
            print(op.ljust(16) + "  ".join(f"{k} {v * 1e3:7.2f}" for k, v in times.items()))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
