"""Every collective of the mpiucc backend against gloo's result on the same inputs, per dtype."""

from __future__ import annotations

import torch
import torch.distributed as dist
from _dist import DTYPES, assert_equal, init, passed, same_bits_everywhere, sample

RANK, SIZE, GLOO = init()
OPS = (dist.ReduceOp.SUM, dist.ReduceOp.MIN, dist.ReduceOp.MAX, dist.ReduceOp.PRODUCT)


def both(run, *inputs: torch.Tensor) -> tuple:
    """run(copies of inputs, group) on mpiucc (the default group) and on gloo."""
    out = []
    for group in (None, GLOO):
        out.append(run(*[x.clone() for x in inputs], group))
    return tuple(out)


def check_all_reduce(dtype: torch.dtype) -> None:
    x = sample((5, 3), dtype, RANK)
    if dtype == torch.uint8:
        x = x.clamp(max=1) + 1  # products of uint8 stay small
    for op in OPS:
        got, want = both(lambda t, g, op=op: (dist.all_reduce(t, op=op, group=g), t)[1], x)
        assert_equal(got, want, f"all_reduce {op} {dtype}")
    got = x.clone()
    dist.all_reduce(got, op=dist.ReduceOp.AVG)
    total = x.clone()
    dist.all_reduce(total, group=GLOO)
    if dtype.is_floating_point:
        want = (total.double() / SIZE).to(dtype)
    else:
        want = torch.div(total, SIZE, rounding_mode="trunc")
    assert_equal(got, want, f"all_reduce AVG {dtype}")
    # Non-contiguous (checked directly: gloo does not take strided tensors) and 0-dim tensors.
    y = sample((4, 6), dtype, RANK + 7)
    dist.all_reduce(y[:, ::2])
    want = sample((4, 6), dtype, RANK + 7)
    want[:, ::2] = sum(sample((4, 6), dtype, r + 7)[:, ::2].double() for r in range(SIZE)).to(dtype)
    assert_equal(y, want, f"all_reduce strided {dtype}")
    got, want = both(lambda t, g: (dist.all_reduce(t, group=g), t)[1], sample((), dtype, RANK))
    assert_equal(got, want, f"all_reduce 0-dim {dtype}")


def check_rooted(dtype: torch.dtype) -> None:
    x = sample((7,), dtype, RANK + 1)
    for root in {0, SIZE - 1}:
        got, want = both(lambda t, g, root=root: (dist.broadcast(t, root, group=g), t)[1], x)
        assert_equal(got, want, f"broadcast root={root} {dtype}")
        got, want = both(lambda t, g, root=root: (dist.reduce(t, root, group=g), t)[1], x)
        if RANK == root:
            assert_equal(got, want, f"reduce root={root} {dtype}")
        gathered = [torch.empty_like(x) for _ in range(SIZE)] if RANK == root else None
        dist.gather(x, gathered, dst=root)
        want = [sample((7,), dtype, r + 1) for r in range(SIZE)]
        if RANK == root:
            for r in range(SIZE):
                assert_equal(gathered[r], want[r], f"gather root={root} {dtype}")
        out = torch.empty_like(x)
        dist.scatter(out, want if RANK == root else None, src=root)
        assert_equal(out, want[RANK], f"scatter root={root} {dtype}")


def check_gathers(dtype: torch.dtype) -> None:
    x = sample((2, 3), dtype, RANK + 2)

    def gather_list(t, g):
        outs = [torch.empty_like(t) for _ in range(SIZE)]
        dist.all_gather(outs, t, group=g)
        return torch.stack(outs)

    got, want = both(gather_list, x)
    assert_equal(got, want, f"all_gather {dtype}")

    def gather_tensor(t, g):
        out = torch.empty((SIZE * 2, 3), dtype=dtype)
        dist.all_gather_into_tensor(out, t, group=g)
        return out

    got, want = both(gather_tensor, x)
    assert_equal(got, want, f"all_gather_into_tensor {dtype}")
    # Uneven sizes: rank r contributes r + 1 elements (no gloo reference: checked directly).
    mine = sample((RANK + 1,), dtype, RANK)
    outs = [torch.empty(r + 1, dtype=dtype) for r in range(SIZE)]
    dist.all_gather(outs, mine)
    for r in range(SIZE):
        assert_equal(outs[r], sample((r + 1,), dtype, r), f"uneven all_gather {dtype}")


def check_reduce_scatter(dtype: torch.dtype) -> None:
    x = sample((SIZE * 4,), dtype, RANK + 3)
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX):

        def scatter_tensor(t, g, op=op):
            out = torch.empty(4, dtype=dtype)
            dist.reduce_scatter_tensor(out, t, op=op, group=g)
            return out

        got, want = both(scatter_tensor, x)
        assert_equal(got, want, f"reduce_scatter_tensor {op} {dtype}")
        out = torch.empty(4, dtype=dtype)
        dist.reduce_scatter(out, list(x.clone().chunk(SIZE)), op=op)
        assert_equal(out, want, f"reduce_scatter (list) {op} {dtype}")


def check_all_to_all(dtype: torch.dtype) -> None:
    x = sample((SIZE * 2, 3), dtype, RANK + 4)

    def even(t, g):
        out = torch.empty_like(t)
        dist.all_to_all_single(out, t, group=g)
        return out

    got, want = both(even, x)
    assert_equal(got, want, f"all_to_all_single {dtype}")
    # Rank r sends s + 1 rows to rank s; receives r + 1 rows from everyone.
    send = [sample((s + 1, 2), dtype, 10 * RANK + s) for s in range(SIZE)]
    flat = torch.cat(send)
    out = torch.empty((SIZE * (RANK + 1), 2), dtype=dtype)
    dist.all_to_all_single(out, flat, [RANK + 1] * SIZE, [s + 1 for s in range(SIZE)])
    want = torch.cat([sample((RANK + 1, 2), dtype, 10 * r + RANK) for r in range(SIZE)])
    assert_equal(out, want, f"all_to_all_single with splits {dtype}")
    outs = [torch.empty((RANK + 1, 2), dtype=dtype) for _ in range(SIZE)]
    dist.all_to_all(outs, send)
    assert_equal(torch.cat(outs), want, f"all_to_all (list) {dtype}")


def check_half_bits() -> None:
    """float16 / bfloat16 sums of random values: identical bits on every rank, close to gloo."""
    for dtype in (torch.float16, torch.bfloat16):
        x = torch.randn(1000, generator=torch.Generator().manual_seed(RANK)).to(dtype)
        got, want = both(lambda t, g: (dist.all_reduce(t, group=g), t)[1], x)
        same_bits_everywhere(got, f"{dtype} all_reduce", GLOO)
        exact = sum(
            torch.randn(1000, generator=torch.Generator().manual_seed(r)).to(dtype).double()
            for r in range(SIZE)
        )
        assert torch.equal(got, exact.to(dtype)), f"{dtype}: not the rounded float32 sum"
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2 * SIZE)
    for dtype in (torch.float32, torch.float64):
        x = torch.randn(1000, dtype=dtype, generator=torch.Generator().manual_seed(RANK))
        got, want = both(lambda t, g: (dist.all_reduce(t, group=g), t)[1], x)
        same_bits_everywhere(got, f"{dtype} all_reduce", GLOO)
        torch.testing.assert_close(got, want)


def check_objects_and_misc() -> None:
    objs = [None] * SIZE
    dist.all_gather_object(objs, {"rank": RANK, "s": "x" * RANK})
    assert objs == [{"rank": r, "s": "x" * r} for r in range(SIZE)]
    lst = [RANK, "a"] if RANK == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst == [0, "a"]
    out = [None] * SIZE if RANK == 0 else None
    dist.gather_object(("g", RANK), out, dst=0)
    if RANK == 0:
        assert out == [("g", r) for r in range(SIZE)]
    got = [None]
    dist.scatter_object_list(got, [r * 10 for r in range(SIZE)] if RANK == 0 else None, src=0)
    assert got == [RANK * 10]
    ts = [torch.ones(3) * RANK, torch.arange(4.0).reshape(2, 2)]
    dist.all_reduce_coalesced(ts)
    assert torch.equal(ts[0], torch.full((3,), float(sum(range(SIZE)))))
    assert torch.equal(ts[1], torch.arange(4.0).reshape(2, 2) * SIZE)
    for _ in range(3):
        dist.barrier()


for dtype in DTYPES:
    check_all_reduce(dtype)
    check_rooted(dtype)
    check_gathers(dtype)
    check_reduce_scatter(dtype)
    check_all_to_all(dtype)
check_half_bits()
check_objects_and_misc()
passed("collectives")
