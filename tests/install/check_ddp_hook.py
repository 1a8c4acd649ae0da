"""DDP on the mpiucc backend with mpiucc_compress_hook, from the installed wheel: the loss goes
down, the gradients were compressed, and every rank ends with the same weights."""

import torch
import torch.distributed as dist
from _where import check_installed
from mpi4py import MPI
from torch.nn.parallel import DistributedDataParallel as DDP

import pycomm.distributed  # noqa: F401 (registers the "mpiucc" backend and mpi://)
from pycomm.distributed.hooks import CompressHookState, mpiucc_compress_hook

check_installed()
dist.init_process_group("mpiucc", init_method="mpi://")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.GELU(), torch.nn.Linear(128, 4))
ddp = DDP(model)
state = CompressHookState("ebq", error_bound=1e-3, mode="rel")
ddp.register_comm_hook(state, mpiucc_compress_hook)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
g, w = torch.Generator().manual_seed(1 + rank), torch.randn(32, 4)
losses = []
for _ in range(12):
    x = torch.randn(64, 32, generator=g)
    loss = torch.nn.functional.mse_loss(ddp(x), x @ w)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
assert losses[-1] < 0.8 * losses[0], losses
assert state.stats.frame_bytes < state.stats.raw_bytes / 2, state.stats
flat = torch.cat([p.detach().flatten() for p in model.parameters()]).numpy()
assert all((flat == other).all() for other in MPI.COMM_WORLD.allgather(flat)), "weights differ"
dist.destroy_process_group()
if rank == 0:
    print(f"DDP with mpiucc_compress_hook on 2 ranks: passed (ratio {state.stats.ratio:.1f})")
