"""Ranks that call a collective with different sizes, dtypes, ops or roots all raise.

MPI itself would return wrong data on some ranks without a word; a checked group (as under
TORCH_DISTRIBUTED_DEBUG=DETAIL) checks first.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from _dist import init, passed

os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"  # read when the groups are made

RANK, SIZE, _ = init()
ODD = RANK == SIZE - 1  # the one rank that passes something else


def sized(n: int) -> torch.Tensor:
    return torch.ones(n + (1 if ODD else 0))


CASES = {
    "all_reduce size": lambda: dist.all_reduce(sized(10)),
    "all_reduce large size": lambda: dist.all_reduce(sized(100_000)),
    "all_reduce dtype": lambda: dist.all_reduce(
        torch.ones(8, dtype=torch.float64 if ODD else None)
    ),
    "all_reduce op": lambda: dist.all_reduce(
        torch.ones(8), op=dist.ReduceOp.MAX if ODD else dist.ReduceOp.SUM
    ),
    "all_reduce async": lambda: dist.all_reduce(sized(10), async_op=True).wait(),
    "broadcast root": lambda: dist.broadcast(torch.ones(8), src=1 if ODD else 0),
    "broadcast size": lambda: dist.broadcast(sized(8), src=0),
    "reduce root": lambda: dist.reduce(torch.ones(8), dst=1 if ODD else 0),
    "all_gather_into_tensor": lambda: dist.all_gather_into_tensor(
        torch.empty(SIZE * (8 + ODD)), sized(8)
    ),
    "reduce_scatter_tensor": lambda: dist.reduce_scatter_tensor(torch.empty(8), sized(8 * SIZE)),
}

for case, call in CASES.items():
    try:
        call()
    except (RuntimeError, ValueError) as exc:  # locally invalid: ValueError, PeerArgumentError
        said = ("different arguments", "another rank passed invalid", "elements, expected")
        assert any(s in str(exc) for s in said), f"{case}: {exc}"
    else:
        raise AssertionError(f"{case}: mismatched arguments were not detected on rank {RANK}")

# The group goes on working: every rank raised at the same collective.
t = torch.full((4,), float(RANK))
dist.all_reduce(t)
assert t.tolist() == [SIZE * (SIZE - 1) / 2] * 4
passed("mismatch")
