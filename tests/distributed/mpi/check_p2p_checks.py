"""The backend's send/recv check what arrives (issue 12, defect 3): run on 2 ranks.

A short message, a long one, a message of another dtype and a receive that times out each
raise, instead of leaving a garbage tail, writing past a buffer, taking foreign bytes as values,
or a receive posted in a usable group.
"""

from __future__ import annotations

import time
from datetime import timedelta

import torch
import torch.distributed as dist
from _dist import init, passed

RANK, SIZE, _ = init()
assert SIZE == 2
PEER = 1 - RANK


def expect_mismatch(what: str, says: str, call) -> None:
    try:
        call()
    except RuntimeError as exc:
        assert says in str(exc), f"{what}: {exc}"
    else:
        raise AssertionError(f"{what} was taken")


if RANK == 0:
    dist.send(torch.arange(5, dtype=torch.float32), dst=PEER, tag=1)
    dist.send(torch.ones(1 << 20), dst=PEER, tag=1)
    dist.send(torch.arange(6, dtype=torch.float64), dst=PEER, tag=2)
    dist.send(torch.arange(4, dtype=torch.float32), dst=PEER, tag=3)
else:
    short = torch.full((10,), -1.0)
    expect_mismatch(
        "5 floats into 10", "disagree on the size", lambda: dist.recv(short, src=PEER, tag=1)
    )
    # 4 MiB into 40 bytes: taken whole, refused on this rank (Open MPI 5 over UCX wrote a
    # truncated message past the receive's buffer), the tensor untouched.
    expect_mismatch(
        "4 MiB into 10 floats", "got 4194304 bytes", lambda: dist.recv(short, src=PEER, tag=1)
    )
    assert torch.all(short == -1.0), "a refused message reached the tensor"
    foreign = torch.empty(12, dtype=torch.float32)
    expect_mismatch(
        "6 doubles into 12 floats",
        "tensor is not torch.float32",
        lambda: dist.recv(foreign, src=PEER, tag=2),
    )
    good = torch.empty(4)
    dist.recv(good, src=PEER, tag=3)
    assert torch.equal(good, torch.arange(4, dtype=torch.float32))
dist.barrier()

# A receive nobody answers: its wait times out, the receive is cancelled, the group refuses.
group = dist.new_group([0, 1], timeout=timedelta(seconds=30))
if RANK == 1:
    work = dist.irecv(torch.empty(3), src=PEER, tag=9, group=group)
    start = time.monotonic()
    try:
        work.wait(timedelta(seconds=0.5))
    except RuntimeError as exc:
        assert "did not complete" in str(exc), exc
    else:
        raise AssertionError("a receive nobody sent completed")
    assert time.monotonic() - start < 10
    try:
        work.wait()
    except RuntimeError:
        pass
    else:
        raise AssertionError("a timed-out receive's second wait returned")
    try:
        dist.send(torch.ones(1), dst=PEER, group=group)
    except RuntimeError as exc:
        assert "cannot be used" in str(exc), exc
    else:
        raise AssertionError("a group whose receive timed out went on working")
passed("checked point-to-point")
