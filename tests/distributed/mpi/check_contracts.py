"""Contracts that hold on every path (issue 26): run on 2 ranks.

1. a send whose Work is dropped still sends what it was given (its host copy and trailer are
   the group engine's until MPI is done with them), and so does a receive whose Work is dropped.
"""

from __future__ import annotations

import gc
import time

import torch
import torch.distributed as dist
from _dist import init, passed

RANK, SIZE, _ = init()
assert SIZE == 2
PEER = 1 - RANK
N = 1 << 20  # 4 MiB of float32: sent by rendezvous, after the sender has moved on


def churn() -> None:
    """Free what was dropped, then reuse the memory: a buffer MPI still reads gets overwritten."""
    gc.collect()
    junk = [torch.full((2 * N,), -7.0) for _ in range(4)]
    del junk


def check_dropped_work_still_delivers() -> None:
    if RANK == 0:
        for i in range(3):
            strided = torch.full((N, 2), float(i + 1))[:, 0]  # non-contiguous: a host copy
            dist.isend(strided, dst=PEER, tag=10 + i)
            del strided
            churn()
        dist.irecv(got := torch.zeros(N), src=PEER, tag=20)  # dropped: still lands in got
        churn()
        dist.barrier()
        deadline = time.monotonic() + 20
        while not torch.all(got == 5.0):
            assert time.monotonic() < deadline, f"a dropped receive never landed: {got[:4]}"
            time.sleep(0.01)
    else:
        dist.barrier()
        for i in range(3):
            got = torch.zeros(N)
            dist.recv(got, src=PEER, tag=10 + i)
            assert torch.all(got == i + 1), f"send {i}: {got[:4]} ... {got[-4:]}"
        dist.send(torch.full((N,), 5.0), dst=PEER, tag=20)


check_dropped_work_still_delivers()
passed("contracts")
