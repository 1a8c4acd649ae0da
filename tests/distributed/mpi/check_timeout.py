"""A collective some rank never joins raises on the others within the timeout."""

from __future__ import annotations

import time
from datetime import timedelta

import torch
import torch.distributed as dist
from _dist import init, passed

TIMEOUT = 2.0
RANK, SIZE, GLOO = init()  # the world keeps the long default; subgroups get TIMEOUT
SKIPPER = SIZE - 1


def expect_timeout(what: str, call) -> None:
    start = time.monotonic()
    try:
        call()
    except RuntimeError as exc:
        took = time.monotonic() - start
        assert what in str(exc), f"error does not name {what}: {exc}"
        assert TIMEOUT * 0.9 <= took <= TIMEOUT + 10, f"{what} raised after {took:.1f} s"
    else:
        raise AssertionError(f"{what} did not raise although rank {SKIPPER} skipped it")


def blocking(group) -> None:
    dist.all_reduce(torch.ones(4), group=group)


def asynchronous(group) -> None:
    dist.all_reduce(torch.ones(4), group=group, async_op=True).wait()


def barrier(group) -> None:
    dist.barrier(group=group)


for name, call in (("allreduce", blocking), ("allreduce", asynchronous), ("barrier", barrier)):
    group = dist.new_group(list(range(SIZE)), timeout=timedelta(seconds=TIMEOUT))
    if RANK != SKIPPER:
        expect_timeout(name, lambda: call(group))  # noqa: B023
        # The group is unusable now and says so at once.
        start = time.monotonic()
        try:
            dist.all_reduce(torch.ones(1), group=group)
        except RuntimeError as exc:
            assert "timed out" in str(exc) and time.monotonic() - start < 1.0
        else:
            raise AssertionError("a group that timed out went on working")
# The world group is unaffected.
t = torch.ones(1)
dist.all_reduce(t)
assert t.item() == SIZE
passed("timeouts")
