"""The DDP hook averages over its process group's ranks only (4 ranks, gloo subgroups of 2).

Ranks {0, 2} and {1, 3} each train their own DDP on a gloo subgroup, with different data: the
hook's result must equal gloo's DDP on the same subgroup, not an average over all ranks.
"""

from __future__ import annotations

import sys

import torch
import torch.distributed as dist
from mpi4py import MPI
from torch.nn.parallel import DistributedDataParallel as DDP

import pycomm.distributed  # noqa: F401  (registers mpi:// and mpiucc)
from pycomm.distributed.hooks import (
    CompressHookState,
    mpiucc_allreduce_hook,
    mpiucc_compress_hook,
)

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()
assert SIZE == 4, "run on 4 ranks"


def _abort_on_error(*exc_info: object) -> None:
    sys.__excepthook__(*exc_info)
    sys.stderr.flush()
    WORLD.Abort(1)


sys.excepthook = _abort_on_error


def train(group: dist.ProcessGroup, hook=None, state=None, steps: int = 5) -> list[torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 4))
    ddp = DDP(model, process_group=group, bucket_cap_mb=0.005)  # several buckets
    if hook is not None:
        ddp.register_comm_hook(state, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(10 + RANK)  # every rank its own data
    for _ in range(steps):
        x = torch.randn(32, 16, generator=g) * (1 + RANK)
        loss = torch.nn.functional.mse_loss(ddp(x), torch.ones(32, 4) * RANK)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [p.detach().clone() for p in ddp.parameters()]


dist.init_process_group("gloo", init_method="mpi://")
pairs = [[0, 2], [1, 3]]
groups = [dist.new_group(ranks) for ranks in pairs]  # every rank makes every group
mine = groups[RANK % 2]

ref = train(mine)
state = CompressHookState("ebq", process_group=mine)
plain = train(mine, mpiucc_allreduce_hook, state)
for p, q in zip(plain, ref, strict=True):
    torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg="uncompressed hook on a subgroup")
comm = state.communicator()
members = MPI.Group.Translate_ranks(comm.Get_group(), [0, 1], WORLD.Get_group())
assert list(members) == pairs[RANK % 2], members

squeezed = train(mine, mpiucc_compress_hook, CompressHookState("ebq", process_group=mine))
for p, q in zip(squeezed, ref, strict=True):
    torch.testing.assert_close(p, q, rtol=1e-2, atol=1e-3, msg="ebq hook on a subgroup")
# What the world's average would give is far from it (so the checks above can tell them apart).
world = train(dist.group.WORLD)
assert any(not torch.allclose(p, q, rtol=1e-2, atol=1e-3) for p, q in zip(world, ref, strict=True))
state.free()

# No process group: the hook follows DDP's default group (here gloo's world of 4).
default = CompressHookState("ebq")
assert default.communicator().Get_size() == SIZE and default.communicator() != WORLD
default.free()

# An mpiucc subgroup gives its own communicator.
sub = [dist.new_group(ranks, backend="mpiucc") for ranks in pairs][RANK % 2]
assert CompressHookState("ebq", process_group=sub).communicator() is sub.comm

dist.barrier()
dist.destroy_process_group()

# An mpiucc world: no process group means the default group's own communicator.
dist.init_process_group("mpiucc", init_method="mpi://")
assert CompressHookState("ebq").communicator() is dist.group.WORLD.comm
dist.barrier()
if RANK == 0:
    print("hook follows its process group: passed", flush=True)
dist.destroy_process_group()
