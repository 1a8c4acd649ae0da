"""A gather whose root holds too small an output for one rank's tensor, on the library that
``MPIUCC_COLLECTIVES`` names (mpi or ucc), behaves as on MPI: every rank but the root
completes, the root raises (UCC: ValueError; MPI: its truncation error, or nothing where MPICH
truncates silently) and the group goes on working. On UCC the root once failed at the
oversized block, and the ranks after it waited for the group's timeout, which broke it.

1 MiB per rank: above UCX's threshold for sending eagerly, so a send waits for its receive.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from _dist import assert_equal, init, passed
from mpi4py import MPI

RANK, SIZE, _ = init(timeout_s=20.0)  # the old failure: a timeout, well within the test's
ON = os.environ["MPIUCC_COLLECTIVES"]
assert dist.group.WORLD.collectives == ON and SIZE >= 3
N = 1 << 18  # float32 elements per rank
BAD = 1  # the rank whose block the root's output cannot hold (ranks after it send too)

x = torch.full((N,), float(RANK + 1))
outs = [torch.zeros(N // 2 if r == BAD else N) for r in range(SIZE)] if RANK == 0 else None
try:
    dist.gather(x, outs, dst=0)
except ValueError as exc:
    assert ON == "ucc" and RANK == 0, (ON, RANK, exc)
    assert f"rank {BAD} sent {4 * N} bytes, more than the root's output {BAD}" in str(exc)
    assert all(float(o.abs().sum()) == 0 for o in outs), "outputs written before the error"
except MPI.Exception as exc:  # Open MPI: the truncated receive, reported at the root
    assert ON == "mpi" and RANK == 0 and exc.Get_error_class() == MPI.ERR_TRUNCATE, exc
else:
    assert RANK != 0 or ON == "mpi", "the root accepted a block larger than its output"

# the group goes on: every rank meets the next collectives, a right gather among them
t = torch.full((2,), float(RANK))
dist.all_reduce(t)
assert_equal(t, torch.full((2,), float(sum(range(SIZE)))), "all_reduce after the bad gather")
outs = [torch.zeros(N) for _ in range(SIZE)] if RANK == 0 else None
dist.gather(x, outs, dst=0)
for r, o in enumerate(outs or []):
    assert_equal(o, torch.full((N,), float(r + 1)), f"gather after the bad one, rank {r}")
passed("oversized gather block")
