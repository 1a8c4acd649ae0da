"""Contracts that hold on every path (issue 26): run on 2 ranks.

1. a send whose Work is dropped still sends what it was given (its host copy and trailer are
   the group engine's until MPI is done with them), and so does a receive whose Work is dropped;
2. a receive that does not match (size or dtype) leaves its tensor exactly as it was;
3. collectives check their tensors' dtypes and sizes before any MPI call;
4. a store ``add`` past int64 leaves the value as it was.
"""

from __future__ import annotations

import gc
import os
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


def check_mismatched_recv_leaves_the_tensor() -> None:
    if RANK == 0:
        dist.send(torch.arange(5, dtype=torch.float32), dst=PEER, tag=30)
        dist.send(torch.arange(12, dtype=torch.float32), dst=PEER, tag=31)
        dist.send(torch.arange(8, dtype=torch.int32), dst=PEER, tag=32)
        dist.send(torch.arange(N, dtype=torch.float32), dst=PEER, tag=33)
        dist.send(torch.arange(4, dtype=torch.float32), dst=PEER, tag=34)
    else:
        cases = [
            ("5 floats into 10", torch.full((10,), -1.0), "disagree on the size"),
            ("12 floats into 10", torch.full((10,), -1.0), ""),
            ("8 int32 into 8 float32", torch.full((8,), -1.0), "is not torch.float32"),
            ("N float32 into N int32", torch.full((N,), -1, dtype=torch.int32), "is not torch"),
        ]
        for tag, (what, t, says) in enumerate(cases, 30):
            before = t.clone()
            try:
                dist.recv(t, src=PEER, tag=tag)
            except RuntimeError as exc:
                assert says in str(exc), f"{what}: {exc}"
            else:
                raise AssertionError(f"{what} was taken")
            assert torch.equal(t, before), f"{what}: the tensor was overwritten"
        good = torch.empty(2, 4)[:, ::2]  # a strided tensor still receives
        dist.recv(good, src=PEER, tag=34)
        assert torch.equal(good.reshape(-1), torch.arange(4, dtype=torch.float32))
    dist.barrier()


def expect_refused(what: str, call, says: str) -> None:
    try:
        call()
    except (TypeError, ValueError) as exc:
        assert says in str(exc), f"{what}: {exc}"
    else:
        raise AssertionError(f"{what}: accepted")


def check_collectives_check_dtypes() -> None:
    f32, f64 = torch.ones(4), torch.ones(4 * SIZE, dtype=torch.float64)
    outs = [torch.empty(4) for _ in range(SIZE)]
    cases = {
        "all_gather_into_tensor": lambda: dist.all_gather_into_tensor(f64, f32),
        "all_gather_into_tensor async": lambda: dist.all_gather_into_tensor(
            f64, f32, async_op=True
        ),
        "reduce_scatter_tensor": lambda: dist.reduce_scatter_tensor(f32, f64),
        "all_to_all_single": lambda: dist.all_to_all_single(torch.empty(4 * SIZE), f64),
        "all_gather": lambda: dist.all_gather(outs, torch.ones(4, dtype=torch.int32)),
        "all_gather size": lambda: dist.all_gather(outs, torch.ones(5)),
        "reduce_scatter": lambda: dist.reduce_scatter(
            torch.empty(4), [torch.ones(4, dtype=torch.float64)] * SIZE
        ),
        "all_to_all": lambda: dist.all_to_all(
            [torch.empty(4, dtype=torch.int64) for _ in range(SIZE)], [torch.ones(4)] * SIZE
        ),
        "gather": lambda: dist.gather(
            torch.ones(4), [torch.empty(4, dtype=torch.float16)] * SIZE if RANK == 0 else None
        ),
        "scatter": lambda: dist.scatter(
            torch.empty(4), [torch.ones(4, dtype=torch.int8)] * SIZE if RANK == 0 else None
        ),
    }
    for case, call in cases.items():
        if case in ("gather", "scatter") and RANK != 0:
            continue  # the root's lists are the ones that disagree
        expect_refused(case, call, "dtype" if "size" not in case else "element")
    # Nothing was posted: the group goes on.
    out = torch.empty(4 * SIZE)
    dist.all_gather_into_tensor(out, torch.full((4,), float(RANK)))
    assert out.tolist() == [float(r) for r in range(SIZE) for _ in range(4)]
    # In a checked group, the ranks whose own tensors were fine raise too, in the same call.
    os.environ["MPIUCC_CHECK"] = "1"
    checked = dist.new_group(backend="mpiucc")
    del os.environ["MPIUCC_CHECK"]
    try:
        dist.all_gather_into_tensor(f64 if RANK == 0 else torch.empty(4 * SIZE), f32, group=checked)
    except (TypeError, ValueError) as exc:
        assert "dtype" in str(exc) if RANK == 0 else "another rank" in str(exc), exc
    else:
        raise AssertionError("a checked group let one rank's invalid tensors through")
    dist.all_gather_into_tensor(out, torch.full((4,), float(RANK)), group=checked)
    assert out.tolist() == [float(r) for r in range(SIZE) for _ in range(4)]


def check_store_add_past_int64_leaves_the_value() -> None:
    store = dist.distributed_c10d._get_default_store()
    if RANK == 1:
        store.set("big", str(2**63 - 2))
        try:
            store.add("big", 5)
        except dist.DistStoreError as exc:
            assert "int64" in str(exc), exc
        else:
            raise AssertionError("an add past int64 was taken")
        assert store.get("big") == str(2**63 - 2).encode()
        assert store.add("big", 1) == 2**63 - 1
    dist.barrier()


check_dropped_work_still_delivers()
check_mismatched_recv_leaves_the_tensor()
check_collectives_check_dtypes()
check_store_add_past_int64_leaves_the_value()
passed("contracts")
