"""Rendezvous without sockets ("mpi://") and env:// defaults filled in from MPI.

``init_process_group(backend, init_method="mpi://")`` takes rank and world size from MPI and
the key-value store from ``MPIStore`` (served by rank 0 over MPI). Torch adds ``rank`` and
``world_size`` to the URL when the caller passes them; they must agree with MPI's, or at least
the world size must (then ranks are renumbered as torch says).

``fill_env()`` sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT
when they are missing and the process runs under an MPI launcher, so that the default env://
rendezvous works with nothing set by the user.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import torch.distributed as dist
from mpi4py import MPI

from pycomm.distributed.store import MPIStore

_made: list[MPIStore] = []  # stores this handler made, the newest last
_LAUNCHER_VARS = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PALS_RANKID")


def mpi_rendezvous(
    url: str, timeout: timedelta = timedelta(minutes=30), **kwargs: object
) -> Iterator[tuple[MPIStore, int, int]]:
    """The "mpi" rendezvous handler: (MPIStore, rank, world size) from MPI_COMM_WORLD."""
    query = {k: v[-1] for k, v in parse_qs(urlparse(url).query).items()}
    world = MPI.COMM_WORLD
    size = int(query.get("world_size", -1))
    rank = int(query.get("rank", -1))
    if size not in (-1, world.Get_size()):
        raise ValueError(
            f"mpi:// rendezvous: world_size={size} but MPI_COMM_WORLD has {world.Get_size()} ranks"
        )
    size = world.Get_size()
    comm = world
    if rank != -1:
        if not 0 <= rank < size:
            raise ValueError(f"mpi:// rendezvous: rank={rank} is not in [0, {size})")
        # Every rank passed its rank (torch's callers do so on all ranks or none).
        if _any_renumbered(world, rank):
            comm = world.Split(0, rank)
    # The stores of earlier worlds are done with once no world exists (torch refuses a second
    # default group): let their servers stop. Every rank passes here, so this is collective.
    if not dist.is_initialized():
        while _made:
            _made.pop().close()
    store = MPIStore(comm, timeout)
    _made.append(store)
    yield store, comm.Get_rank(), size
    raise RuntimeError("mpi:// rendezvous cannot be repeated in one process group's life")


def _any_renumbered(world: MPI.Intracomm, rank: int) -> bool:
    return bool(world.allreduce(int(rank != world.Get_rank()), op=MPI.BOR))


def under_mpi_launcher() -> bool:
    """True when an MPI launcher started this process (or MPI reports several ranks)."""
    if any(v in os.environ for v in _LAUNCHER_VARS):
        return True
    return MPI.COMM_WORLD.Get_size() > 1


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def fill_env() -> bool:
    """Set torch's env:// variables from MPI where missing (collective when MASTER_* are).

    Returns True if anything was set. Does nothing outside an MPI launch.
    """
    env = os.environ
    if not under_mpi_launcher():
        return False
    world = MPI.COMM_WORLD
    changed = False
    defaults = {"RANK": world.Get_rank(), "WORLD_SIZE": world.Get_size()}
    need_node = "LOCAL_RANK" not in env or "LOCAL_WORLD_SIZE" not in env
    need_master = "MASTER_ADDR" not in env or "MASTER_PORT" not in env
    # One decision for all ranks, so the collectives below are entered by all or none.
    flags = world.allreduce(int(need_node) | int(need_master) << 1, op=MPI.BOR)
    need_node, need_master = bool(flags & 1), bool(flags & 2)
    if need_node:
        node = world.Split_type(MPI.COMM_TYPE_SHARED)
        defaults["LOCAL_RANK"] = node.Get_rank()
        defaults["LOCAL_WORLD_SIZE"] = node.Get_size()
        node.Free()
    if need_master:
        host, port = world.bcast(
            (socket.gethostname(), _free_port()) if world.Get_rank() == 0 else None, root=0
        )
        addr = "127.0.0.1" if host == socket.gethostname() else host
        defaults["MASTER_ADDR"] = env.get("MASTER_ADDR", addr)
        defaults["MASTER_PORT"] = env.get("MASTER_PORT", str(port))
    for key, value in defaults.items():
        if key not in env:
            env[key] = str(value)
            changed = True
    return changed
