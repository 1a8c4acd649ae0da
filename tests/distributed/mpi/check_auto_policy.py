"""A compression policy of codec="auto" on an mpiucc group: all_reduce, reduce_scatter and
all_gather within their contracts, identical on every rank, on a slow and a fast link."""

from __future__ import annotations

import torch
import torch.distributed as dist
from _dist import passed, same_bits_everywhere

from pycomm.collectives.engine import engine_of
from pycomm.distributed import set_compression

dist.init_process_group("mpiucc", init_method="mpi://")
RANK, SIZE = dist.get_rank(), dist.get_world_size()
N = 1 << 16


def data(seed: int, n: int = N) -> torch.Tensor:
    return torch.randn(n, generator=torch.Generator().manual_seed(seed + 1000 * RANK))


def everyone(t: torch.Tensor) -> torch.Tensor:
    got = [torch.empty_like(t) for _ in range(SIZE)]
    dist.all_gather(got, t)  # exact: no policy for all_gather of this size below
    return torch.stack(got).double()


def main() -> None:
    world = dist.group.WORLD
    link = engine_of(world.comm).link
    x, y, z = data(1), data(2, N * SIZE), data(3)
    exact, full, want = everyone(x).sum(0), everyone(y).sum(0), everyone(z)
    for pinned in ((50e-6, 125e6), (2e-6, 1e12)):
        link.pin(*pinned)
        set_compression(
            all_reduce="auto:abs:1e-3",
            reduce_scatter="auto:abs:1e-3",
            all_gather="auto:rel:1e-2",
            min_numel=256,
            # the bound is on what is sent: with error feedback, x plus the last residual
            error_feedback=False,
        )
        got = x.clone()
        dist.all_reduce(got)
        same_bits_everywhere(got, "auto all_reduce", world)
        assert (got.double() - exact).abs().max() <= 1e-3 * 1.0001, "all_reduce bound"
        out = torch.empty(N)
        for _ in range(3):  # step after step, each within the bound
            dist.reduce_scatter_tensor(out, y)
        mine = full[RANK * N : (RANK + 1) * N]
        assert (out.double() - mine).abs().max() <= 1e-3 * 1.0001 + 1e-5, "reduce_scatter"
        rows = torch.empty(SIZE * N)
        dist.all_gather_into_tensor(rows, z)
        same_bits_everywhere(rows, "auto all_gather", world)
        for r in range(SIZE):
            span = float(want[r].max() - want[r].min())
            assert (rows[r * N : (r + 1) * N].double() - want[r]).abs().max() <= 1e-2 * span
        set_compression()
    passed("auto policy")


main()
