"""CUDA tensors go through host memory: same results as CPU tensors (run only with a GPU)."""

from __future__ import annotations

import torch
import torch.distributed as dist
from _dist import init, passed

RANK, SIZE, GLOO = init()
dev = torch.device("cuda", RANK % torch.cuda.device_count())

x = torch.full((5,), float(RANK + 1), device=dev)
dist.all_reduce(x)
assert x.device == dev and torch.all(x.cpu() == sum(range(1, SIZE + 1)))
h = torch.full((5,), float(RANK + 1), device=dev, dtype=torch.bfloat16)
dist.all_reduce(h, op=dist.ReduceOp.AVG, async_op=True).wait()
assert torch.all(h.cpu().float() == sum(range(1, SIZE + 1)) / SIZE)
b = torch.arange(4.0, device=dev) * RANK
dist.broadcast(b, src=SIZE - 1)
assert torch.equal(b.cpu(), torch.arange(4.0) * (SIZE - 1))
out = torch.empty(SIZE * 2, device=dev)
dist.all_gather_into_tensor(out, torch.full((2,), float(RANK), device=dev))
assert torch.equal(out.cpu(), torch.arange(SIZE).repeat_interleave(2).float())
rs = torch.empty(2, device=dev)
dist.reduce_scatter_tensor(rs, torch.ones(SIZE * 2, device=dev))
assert torch.all(rs.cpu() == SIZE)
peer = RANK ^ 1
if peer < SIZE:
    got = torch.empty(3, device=dev)
    r = dist.irecv(got, src=peer)
    dist.isend(torch.full((3,), float(RANK), device=dev), dst=peer).wait()
    r.wait()
    assert torch.all(got.cpu() == peer)
passed("cuda")
