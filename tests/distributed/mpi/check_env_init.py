"""init_process_group("mpiucc") with nothing set: env:// filled in from MPI on import."""

from __future__ import annotations

import os

for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
    os.environ.pop(var, None)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from mpi4py import MPI  # noqa: E402

import pycomm.distributed  # noqa: E402, F401

WORLD = MPI.COMM_WORLD
assert os.environ["RANK"] == str(WORLD.Get_rank())
assert os.environ["WORLD_SIZE"] == str(WORLD.Get_size())
assert os.environ["LOCAL_WORLD_SIZE"] == str(WORLD.Get_size())  # one node here
assert int(os.environ["MASTER_PORT"]) > 0
ports = WORLD.allgather((os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]))
assert len(set(ports)) == 1, ports

dist.init_process_group("mpiucc")
rank, size = dist.get_rank(), dist.get_world_size()
assert (rank, size) == (WORLD.Get_rank(), WORLD.Get_size())
x = torch.full((3,), float(rank))
dist.all_reduce(x)
assert torch.all(x == sum(range(size)))
gloo = dist.new_group(backend="gloo")  # rendezvous through torch's TCPStore
y = torch.ones(2)
dist.all_reduce(y, group=gloo)
assert torch.all(y == size)
dist.barrier()
if rank == 0:
    print("bare init_process_group: passed", flush=True)
dist.destroy_process_group()
