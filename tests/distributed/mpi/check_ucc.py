"""mpiucc groups whose collectives run on UCC teams give MPI's bits (run with the UCC layer).

Every collective the backend sends to UCC, on a group over all ranks with
``set_collectives("ucc")``, against the same call on a group that stays on MPI: values whose
sums are exact in every dtype (``sample``), so equal means bitwise equal. Then a sub-group
from ``new_group`` (made on UCC through ``MPIUCC_COLLECTIVES``, its team made on first use),
async calls, and a collective that one rank skips: it times out on the others and breaks the
group, as on MPI. With ``--context-over-world`` UCC's context is made over the world first (UCX
may then use shared memory), else each team makes its own connections (over TCP).
"""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from _dist import FLOATS, INTS, assert_equal, init, passed, same_bits_everywhere, sample
from mpi4py import MPI

from pycomm.ucc.team import has_team, init_context

if "--context-over-world" in sys.argv:  # as MPIUCC_COLLECTIVES=ucc makes it
    init_context(MPI.COMM_WORLD)
RANK, SIZE, GLOO = init()
MPI_GROUP = dist.new_group(backend="mpiucc")
UCC_GROUP = dist.new_group(backend="mpiucc")
assert MPI_GROUP.collectives == "mpi"
assert not has_team(UCC_GROUP._engine)
UCC_GROUP.set_collectives("ucc")
assert UCC_GROUP.collectives == "ucc" and not has_team(UCC_GROUP._engine)  # made lazily
R = dist.ReduceOp
SHAPES = ((1,), (7, 3), (1000,))


def both(call, make, what: str) -> None:
    """call(tensors, group) on MPI and on UCC, from the same inputs: the same outputs."""
    want, got = make(), make()
    call(want, MPI_GROUP)
    call(got, UCC_GROUP)
    for w, g in zip(want, got, strict=True):
        assert_equal(g, w, f"{what} on {SIZE} ranks")


def reductions() -> None:
    for dtype in FLOATS + INTS:
        ops = (R.SUM, R.MAX, R.MIN) + ((R.AVG,) if dtype.is_floating_point else ())
        for shape in SHAPES:
            for op in ops:
                what = f"all_reduce {op} {dtype} {shape}"
                both(
                    lambda ts, g: dist.all_reduce(ts[0], op=op, group=g),  # noqa: B023
                    lambda: [sample(shape, dtype, RANK)],  # noqa: B023
                    what,
                )
                n = shape[0]
                both(
                    lambda ts, g: dist.reduce_scatter_tensor(ts[0], ts[1], op=op, group=g),  # noqa: B023
                    lambda: [torch.empty(n, dtype=dtype), sample((n * SIZE,), dtype, RANK)],  # noqa: B023
                    f"reduce_scatter_tensor {op} {dtype} {shape}",
                )
        chunks = [sample((5,), dtype, RANK + 10 * r) for r in range(SIZE)]
        both(
            lambda ts, g: dist.reduce_scatter(ts[0], chunks, group=g),  # noqa: B023
            lambda: [torch.empty(5, dtype=dtype)],  # noqa: B023
            f"reduce_scatter {dtype}",
        )


def same_bits_on_every_rank() -> None:
    """Sums that round (random floats): UCC's order of additions may differ from MPI's, but
    every rank must end with the same bits, through UCC's small (knomial) and large
    (reduce-scatter + allgather) all_reduce algorithms alike."""
    g = torch.Generator().manual_seed(RANK)
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        for n in (100, 100_000):
            for op in (R.SUM, R.AVG):
                t = torch.randn(n, generator=g).to(dtype)
                dist.all_reduce(t, op=op, group=UCC_GROUP)
                same_bits_everywhere(t, f"all_reduce {op} {dtype} {n}", GLOO)


def movements() -> None:
    for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.bool):
        x = sample((6, 2), dtype, RANK) if dtype is not torch.bool else torch.ones(6, 2) > 0
        both(
            lambda ts, g: dist.broadcast(ts[0], SIZE - 1, group=g),
            lambda: [x.clone()],  # noqa: B023
            f"broadcast {dtype}",
        )
        both(
            lambda ts, g: dist.all_gather(ts, x, group=g),  # noqa: B023
            lambda: [torch.empty_like(x) for _ in range(SIZE)],  # noqa: B023
            f"all_gather {dtype}",
        )
        both(
            lambda ts, g: dist.all_gather_into_tensor(ts[0], x, group=g),  # noqa: B023
            lambda: [torch.empty((6 * SIZE, 2), dtype=dtype)],  # noqa: B023
            f"all_gather_into_tensor {dtype}",
        )

    # in place: this rank's block of the output is the input (FSDP2's way)
    def in_place(ts, g):
        dist.all_gather_into_tensor(ts[0], ts[0][RANK * 4 : (RANK + 1) * 4], group=g)

    both(in_place, lambda: [sample((4 * SIZE,), torch.float32, RANK)], "in-place all_gather")
    # uneven all_gather list: rank r's tensor has r + 1 elements on every rank
    both(
        lambda ts, g: dist.all_gather(ts, sample((RANK + 1,), torch.float64, RANK), group=g),
        lambda: [torch.empty(r + 1, dtype=torch.float64) for r in range(SIZE)],
        "uneven all_gather",
    )
    ins = [sample((3,), torch.float32, RANK * SIZE + r) for r in range(SIZE)]
    both(
        lambda ts, g: dist.all_to_all(ts, ins, group=g),
        lambda: [torch.empty(3) for _ in range(SIZE)],
        "all_to_all",
    )
    x = sample((2 * SIZE, 3), torch.int32, RANK)
    both(
        lambda ts, g: dist.all_to_all_single(ts[0], x, group=g),
        lambda: [torch.empty_like(x)],
        "all_to_all_single",
    )
    # uneven splits: rank r sends r + 1 rows to every rank
    send = sample((SIZE * (RANK + 1), 2), torch.float32, RANK)
    recv_rows = [r + 1 for r in range(SIZE)]
    both(
        lambda ts, g: dist.all_to_all_single(ts[0], send, recv_rows, [RANK + 1] * SIZE, group=g),
        lambda: [torch.empty(sum(recv_rows), 2)],
        "uneven all_to_all_single",
    )
    dist.barrier(group=UCC_GROUP)


def rooted() -> None:
    """reduce, gather and scatter from every root (UCC's reduce, gatherv and scatterv)."""
    for root in range(SIZE):
        for dtype in FLOATS + INTS:
            ops = (R.SUM, R.PRODUCT, R.MAX, R.MIN) + ((R.AVG,) if dtype.is_floating_point else ())
            for shape, op in ((s, o) for s in ((1,), (1000,)) for o in ops):
                both(
                    lambda ts, g: dist.reduce(ts[0], root, op=op, group=g),  # noqa: B023
                    lambda: [sample(shape, dtype, RANK)],  # noqa: B023
                    f"reduce to {root} {op} {dtype} {shape}",  # non-roots keep their values
                )
        n = [(r % 3) * 2 for r in range(SIZE)]  # rank r's block: rank 0's is empty
        for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.bool):

            def block(rows: int, seed: int) -> torch.Tensor:
                x = sample((rows, 3), torch.float32 if dtype is torch.bool else dtype, seed)  # noqa: B023
                return x > 0 if dtype is torch.bool else x  # noqa: B023

            mine = block(n[RANK], RANK)
            both(
                lambda ts, g: dist.gather(mine, ts if RANK == root else None, root, group=g),  # noqa: B023
                lambda: [torch.empty((k, 3), dtype=dtype) for k in n] if RANK == root else [],  # noqa: B023
                f"uneven gather to {root} {dtype}",
            )
            chunks = [block(n[r], 100 * root + r) for r in range(SIZE)]
            both(
                lambda ts, g: dist.scatter(ts[0], chunks if RANK == root else None, root, group=g),  # noqa: B023
                lambda: [torch.empty((n[RANK], 3), dtype=dtype)],  # noqa: B023
                f"uneven scatter from {root} {dtype}",
            )


def asynchronous() -> None:
    xs = [sample((64,), torch.float32, RANK + i) for i in range(8)]
    want = [x.clone() for x in xs]
    for w in want:
        dist.all_reduce(w, group=MPI_GROUP)
    works = [dist.all_reduce(x, group=UCC_GROUP, async_op=True) for x in xs]
    for w, x, work in zip(want, xs, works, strict=True):
        work.wait()
        assert_equal(x, w, "async all_reduce")


def subgroup() -> None:
    """A new_group of the first SIZE - 1 ranks (2 at least) on UCC by the environment."""
    ranks = list(range(max(2, SIZE - 1)))
    os.environ["MPIUCC_COLLECTIVES"] = "ucc"
    try:
        sub = dist.new_group(ranks, backend="mpiucc")
    finally:
        del os.environ["MPIUCC_COLLECTIVES"]
    if RANK not in ranks:
        return
    assert sub.collectives == "ucc" and not has_team(sub._engine)
    t = torch.full((10,), float(RANK + 1))
    dist.all_reduce(t, group=sub)
    assert has_team(sub._engine)
    assert_equal(t, torch.full((10,), float(sum(r + 1 for r in ranks))), "sub-group all_reduce")


def timeout(what: str) -> None:
    """A UCC collective that the last rank skips times out on the others; the group is broken.
    ``what`` is all_reduce, or a scatter whose root is the rank that skips it."""
    group = dist.new_group(timeout=timedelta(seconds=2.0), backend="mpiucc")
    group.set_collectives("ucc")
    dist.barrier(group=group)  # the team is made with every rank
    if RANK == SIZE - 1:
        return
    start = time.monotonic()
    try:
        if what == "allreduce":
            dist.all_reduce(torch.ones(4), group=group)
        else:
            dist.scatter(torch.empty(4), None, SIZE - 1, group=group)
    except RuntimeError as exc:
        took = time.monotonic() - start
        assert what in str(exc) and 1.8 <= took <= 12, (exc, took)
    else:
        raise AssertionError(f"a UCC {what} that a rank skipped did not time out")
    start = time.monotonic()
    try:
        dist.all_reduce(torch.ones(1), group=group)
    except RuntimeError as exc:
        assert "timed out" in str(exc) and time.monotonic() - start < 1.0
    else:
        raise AssertionError("a UCC group that timed out went on working")


reductions()
same_bits_on_every_rank()
movements()
rooted()
asynchronous()
subgroup()
timeout("allreduce")
timeout("scatter")
passed("ucc collectives")
