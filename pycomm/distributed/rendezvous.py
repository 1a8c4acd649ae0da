"""Rendezvous without sockets: "mpi://", and env:// under an MPI launcher with no MASTER_ADDR.

``init_process_group(backend, init_method="mpi://")`` takes rank and world size from MPI and
the key-value store from ``MPIStore`` (served by rank 0 over MPI). Torch adds ``rank`` and
``world_size`` to the URL when the caller passes them; they must agree with MPI's, or at least
the world size must (then ranks are renumbered as torch says).

torch 2.13's ``init_process_group`` without ``init_method`` or ``store`` always takes "env://",
whatever the backend, and the rendezvous handler is not told the backend. So the env://
handler is wrapped: when MASTER_ADDR or MASTER_PORT is missing (torch's own handler would
raise) and the process runs under an MPI launcher, env:// is served as mpi:// is, with RANK and
WORLD_SIZE (or the URL's) as torch rank and world size. Otherwise torch's handler runs
untouched. Torch's TCPStore binds every interface whatever MASTER_ADDR says; the MPI store
opens no socket.

Both MPI routes fill RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE where missing
(``fill_env``); never MASTER_ADDR or MASTER_PORT. All of this runs inside
``init_process_group``, which every rank calls: importing the module makes no MPI call.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import timedelta
from urllib.parse import parse_qs, urlencode, urlparse

import torch.distributed as dist
from mpi4py import MPI

from pycomm.distributed.store import MPIStore

_made: list[MPIStore] = []  # stores this handler made, the newest last
_LAUNCHER_VARS = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PALS_RANKID")

Handler = Callable[..., Iterator[tuple[dist.Store, int, int]]]


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
    fill_env(comm)
    yield store, comm.Get_rank(), size
    raise RuntimeError("mpi:// rendezvous cannot be repeated in one process group's life")


def _any_renumbered(world: MPI.Intracomm, rank: int) -> bool:
    return bool(world.allreduce(int(rank != world.Get_rank()), op=MPI.BOR))


def env_rendezvous(torch_env: Handler) -> Handler:
    """torch's env:// handler, served over MPI where torch's would lack MASTER_ADDR/PORT."""

    def handler(url: str, timeout: timedelta = timedelta(minutes=30), **kwargs: object):
        env = os.environ
        if (env.get("MASTER_ADDR") and env.get("MASTER_PORT")) or not under_mpi_launcher():
            return torch_env(url, timeout=timeout, **kwargs)
        query = {k: v[-1] for k, v in parse_qs(urlparse(url).query).items()}
        for key, var in (("rank", "RANK"), ("world_size", "WORLD_SIZE")):
            if key not in query and env.get(var):
                query[key] = env[var]
        return mpi_rendezvous(f"mpi://?{urlencode(query)}", timeout, **kwargs)

    handler.torch_env = torch_env  # type: ignore[attr-defined]
    return handler


def under_mpi_launcher() -> bool:
    """True when an MPI launcher started this process (or MPI reports several ranks)."""
    if any(v in os.environ for v in _LAUNCHER_VARS):
        return True
    return MPI.COMM_WORLD.Get_size() > 1


def fill_env(comm: MPI.Intracomm | None = None) -> bool:
    """Set RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE from ``comm`` where missing.

    Collective over ``comm`` (default MPI_COMM_WORLD): the local ranks come from the ranks
    sharing a node. Never sets MASTER_ADDR or MASTER_PORT. Returns True if anything was set.
    """
    comm = MPI.COMM_WORLD if comm is None else comm
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    values = {
        "RANK": comm.Get_rank(),
        "WORLD_SIZE": comm.Get_size(),
        "LOCAL_RANK": node.Get_rank(),
        "LOCAL_WORLD_SIZE": node.Get_size(),
    }
    node.Free()
    missing = {k: str(v) for k, v in values.items() if not os.environ.get(k)}
    os.environ.update(missing)
    return bool(missing)
