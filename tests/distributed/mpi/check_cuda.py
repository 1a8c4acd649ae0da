"""CUDA tensors go through host memory: same results as CPU tensors (run only with a GPU).

Robust to several ranks sharing one GPU: each rank binds its device before MPI or CUDA is
initialised by anything else, and each step is synchronised and announced (flushed), so a
crash names the step it died in (run it with ``python -X faulthandler`` for the stacks).
"""

from __future__ import annotations

import os
import sys

import torch

LOCAL = int(os.environ.get("MPI_LOCALRANKID", os.environ.get("PMI_RANK", "0")))
torch.cuda.set_device(LOCAL % torch.cuda.device_count())  # before any CUDA context exists
torch.cuda.init()

import torch.distributed as dist  # noqa: E402
from _dist import init, passed  # noqa: E402

RANK, SIZE, GLOO = init()
dev = torch.device("cuda", torch.cuda.current_device())


def step(name: str) -> None:
    torch.cuda.synchronize()
    print(f"rank {RANK}: {name} done", flush=True)
    sys.stderr.flush()


x = torch.full((5,), float(RANK + 1), device=dev)
dist.all_reduce(x)
assert x.device == dev and torch.all(x.cpu() == sum(range(1, SIZE + 1)))
step("all_reduce")
h = torch.full((5,), float(RANK + 1), device=dev, dtype=torch.bfloat16)
dist.all_reduce(h, op=dist.ReduceOp.AVG, async_op=True).wait()
assert torch.all(h.cpu().float() == sum(range(1, SIZE + 1)) / SIZE)
step("all_reduce bf16 async")
b = torch.arange(4.0, device=dev) * RANK
dist.broadcast(b, src=SIZE - 1)
assert torch.equal(b.cpu(), torch.arange(4.0) * (SIZE - 1))
step("broadcast")
out = torch.empty(SIZE * 2, device=dev)
dist.all_gather_into_tensor(out, torch.full((2,), float(RANK), device=dev))
assert torch.equal(out.cpu(), torch.arange(SIZE).repeat_interleave(2).float())
step("all_gather_into_tensor")
rs = torch.empty(2, device=dev)
dist.reduce_scatter_tensor(rs, torch.ones(SIZE * 2, device=dev))
assert torch.all(rs.cpu() == SIZE)
step("reduce_scatter_tensor")
peer = RANK ^ 1
if peer < SIZE:
    got = torch.empty(3, device=dev)
    r = dist.irecv(got, src=peer)
    dist.isend(torch.full((3,), float(RANK), device=dev), dst=peer).wait()
    r.wait()
    assert torch.all(got.cpu() == peer)
step("isend/irecv")
passed("cuda")
