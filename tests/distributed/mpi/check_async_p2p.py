"""async_op: in call order, overlapping the caller; point-to-point without deadlock."""

from __future__ import annotations

import time

import torch
import torch.distributed as dist
from _dist import init, passed

RANK, SIZE, GLOO = init()
TOTAL = sum(range(1, SIZE + 1))


def check_async_overlaps() -> None:
    x = torch.full((1 << 20,), float(RANK + 1))
    work = dist.all_reduce(x, async_op=True)
    # The caller computes without touching the group; the work completes on its own.
    a = torch.randn(128, 128)
    deadline = time.monotonic() + 30
    while not work.is_completed():
        a = torch.tanh(a @ a.T / 128)
        assert time.monotonic() < deadline, "async all_reduce made no progress on its own"
    work.wait()
    assert torch.all(x == TOTAL)


def check_async_order() -> None:
    xs = [torch.full((1000 * (i + 1),), float(RANK + i)) for i in range(6)]
    works = [dist.all_reduce(x, async_op=True) for x in xs]
    # A blocking call queued behind them runs after them, in the same order on every rank.
    y = torch.ones(3)
    dist.all_reduce(y)
    assert torch.all(y == SIZE)
    for i, w in reversed(list(enumerate(works))):
        w.wait()
        assert torch.all(xs[i] == sum(r + i for r in range(SIZE))), i
    z = torch.full((4,), float(RANK))
    fut = dist.all_reduce(z, async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2).wait()
    assert torch.all(doubled == 2 * sum(range(SIZE)))
    outs = [torch.empty(2) for _ in range(SIZE)]
    dist.all_gather(outs, torch.full((2,), float(RANK)), async_op=True).wait()
    assert [o[0].item() for o in outs] == list(range(SIZE))
    dist.barrier(async_op=True).wait()


def check_p2p() -> None:
    peer = RANK ^ 1
    if peer < SIZE:
        # Both sides post irecv first, then isend: no deadlock.
        got = torch.empty(1 << 16)
        r = dist.irecv(got, src=peer, tag=3)
        s = dist.isend(torch.full((1 << 16,), float(RANK)), dst=peer, tag=3)
        s.wait()
        r.wait()
        assert torch.all(got == peer)
        # bfloat16 into a strided tensor; blocking send/recv.
        buf = torch.zeros(4, 6, dtype=torch.bfloat16)
        if RANK % 2 == 0:
            dist.send(torch.arange(12, dtype=torch.bfloat16), dst=peer)
            dist.recv(buf[:, ::2], src=peer)
        else:
            dist.recv(buf[:, ::2], src=peer)
            dist.send(torch.arange(12, dtype=torch.bfloat16), dst=peer)
        assert torch.equal(buf[:, ::2].reshape(-1), torch.arange(12, dtype=torch.bfloat16))
        assert torch.all(buf[:, 1::2] == 0)
    # Receive from any source: rank 0 collects one message from every other rank.
    if RANK == 0:
        seen = set()
        for _ in range(SIZE - 1):
            t = torch.empty(1, dtype=torch.int64)
            src = dist.recv(t, tag=5)
            assert t.item() == src * 100, (src, t)
            seen.add(src)
        assert seen == set(range(1, SIZE))
    else:
        dist.send(torch.tensor([RANK * 100]), dst=0, tag=5)
    # A ring of batched isend/irecv, and a future on a receive.
    nxt, prv = (RANK + 1) % SIZE, (RANK - 1) % SIZE
    recv = torch.empty(3)
    ops = [
        dist.P2POp(dist.isend, torch.full((3,), float(RANK)), nxt),
        dist.P2POp(dist.irecv, recv, prv),
    ]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert torch.all(recv == prv)
    recv2 = torch.empty(2)
    w = dist.irecv(recv2, src=prv, tag=9)
    fut = w.get_future()
    dist.isend(torch.full((2,), float(RANK)), dst=nxt, tag=9).wait()
    assert torch.all(fut.wait()[0] == prv)
    objs = [None, None]
    if RANK == 0:
        dist.send_object_list([{"a": 1}, "b"], dst=SIZE - 1)
    elif RANK == SIZE - 1:
        dist.recv_object_list(objs, src=0)
        assert objs == [{"a": 1}, "b"]


check_async_overlaps()
check_async_order()
check_p2p()
passed("async and point-to-point")
