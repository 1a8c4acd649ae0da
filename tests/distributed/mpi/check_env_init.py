"""init_process_group("mpiucc") with nothing set: env:// served over MPI, no socket listening.

Then, with MASTER_ADDR and MASTER_PORT set, env:// is torch's own again (a TCPStore).
"""

from __future__ import annotations

import os
import socket
import sys

VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
for var in VARS:
    os.environ.pop(var, None)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from mpi4py import MPI  # noqa: E402

WORLD = MPI.COMM_WORLD


def _abort_on_error(*exc_info: object) -> None:
    sys.__excepthook__(*exc_info)
    sys.stderr.flush()
    WORLD.Abort(1)


sys.excepthook = _abort_on_error


def listening_sockets() -> set[tuple[str, str]]:
    """(table, local address) of every TCP socket of this process that listens."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            mine.add(target[8:-1])
    found = set()
    for table in ("tcp", "tcp6"):
        with open(f"/proc/net/{table}") as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in mine:  # state LISTEN, inode ours
                    found.add((table, fields[1]))
    return found


def on_every_interface(sockets: set[tuple[str, str]]) -> set[tuple[str, str]]:
    return {(t, addr) for t, addr in sockets if set(addr.split(":")[0]) == {"0"}}


before = listening_sockets()
import pycomm.distributed  # noqa: E402, F401

assert not any(os.environ.get(v) for v in VARS), "import filled torch's env:// variables"

dist.init_process_group("mpiucc")
opened = listening_sockets() - before
assert not on_every_interface(opened), f"a socket listens on every interface: {opened}"
assert "MASTER_ADDR" not in os.environ and "MASTER_PORT" not in os.environ
rank, size = dist.get_rank(), dist.get_world_size()
assert (rank, size) == (WORLD.Get_rank(), WORLD.Get_size())
assert os.environ["RANK"] == str(rank) and os.environ["WORLD_SIZE"] == str(size)
assert os.environ["LOCAL_RANK"] == str(rank)  # one node here
assert os.environ["LOCAL_WORLD_SIZE"] == str(size)
x = torch.full((3,), float(rank))
dist.all_reduce(x)
assert torch.all(x == sum(range(size)))
gloo = dist.new_group(backend="gloo")  # its rendezvous goes through the MPI store
y = torch.ones(2)
dist.all_reduce(y, group=gloo)
assert torch.all(y == size)
dist.barrier()
dist.destroy_process_group()

# A second bare world in the same processes: a fresh MPI store.
dist.init_process_group("mpiucc")
dist.all_reduce(x)
assert torch.all(x == size * sum(range(size)))
dist.destroy_process_group()

# MASTER_ADDR and MASTER_PORT set: torch's env:// and its TCPStore, untouched.
if WORLD.Get_rank() == 0:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
else:
    port = None
os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(WORLD.bcast(port))
dist.init_process_group("mpiucc")
store = dist.distributed_c10d._get_default_store()
while isinstance(store, dist.PrefixStore):
    store = store.underlying_store
assert isinstance(store, dist.TCPStore), type(store)
dist.all_reduce(x)
dist.barrier()
if rank == 0:
    print("bare init_process_group: passed", flush=True)
dist.destroy_process_group()
