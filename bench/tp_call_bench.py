"""What a TP all_reduce costs through pycomm with codec="auto" against a plain MPI_Allreduce,
one call at a time as the training job makes them: a few small matmuls between calls (so the
call runs with the caches the computation left), 128 KiB of float32 each, on 2 ranks.

    OMP_NUM_THREADS=1 mpiexec -n 2 python bench/tp_call_bench.py [--calls 1500] [--rounds 3]

Rank 0 prints, per round, the microseconds per iteration (computation and call) of the job's
``TensorParallel.allreduce`` with codec "none" (one blocking MPI_Allreduce) and with
``auto:rms:5e-3`` (its TP forward contract; every call goes raw on shared memory), and their
difference: what pycomm's path adds to each call.
"""

from __future__ import annotations

import argparse
import time

import torch
from mpi4py import MPI

from pycomm.collectives.spec import make_spec
from pycomm.train.tensor_parallel import TensorParallel

COMM = MPI.COMM_WORLD
COUNT = 1 << 15  # 128 KiB of float32: a TP message of the job's demo-sized model
CODECS = ("none", "auto:rms:5e-3")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=1500)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    torch.set_num_threads(1)
    weight, x = torch.randn(128, 128), torch.randn(COUNT // 128, 128)

    def work() -> torch.Tensor:
        y = x
        for _ in range(3):
            y = torch.relu(y @ weight)
        return y.reshape(-1)

    groups = {c: TensorParallel(COMM, make_spec(c), make_spec(c)) for c in CODECS}
    for tp in groups.values():  # warm: the first decisions, the calibration
        for _ in range(100):
            tp.allreduce(work(), "fwd")
    for r in range(args.rounds):
        us = {}
        for codec, tp in groups.items():
            COMM.Barrier()
            t0 = time.perf_counter()
            for _ in range(args.calls):
                tp.allreduce(work(), "fwd")
            us[codec] = (time.perf_counter() - t0) / args.calls * 1e6
        if COMM.Get_rank() == 0:
            row = ", ".join(f"{c} {t:.1f}" for c, t in us.items())
            added = us[CODECS[1]] - us[CODECS[0]]
            print(f"round {r + 1}: {row} us per iteration; auto adds {added:.1f}")
    for tp in groups.values():
        tp.close()


if __name__ == "__main__":
    main()
