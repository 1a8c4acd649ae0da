"""The "mpiucc" torch.distributed backend: collectives over MPI, rendezvous over MPI.

Importing this module registers the backend and the rendezvous handlers, nothing more: it
makes no MPI call, so any subset of ranks may import it at any time. Under ``mpiexec``::

    import torch.distributed as dist
    import pycomm.distributed

    dist.init_process_group("mpiucc", init_method="mpi://")   # no MASTER_ADDR, no socket
    dist.init_process_group("mpiucc")                           # the same, through env://

The bare form takes torch's default env:// rendezvous; with MASTER_ADDR or MASTER_PORT unset
under an MPI launcher, env:// is served by the MPI store as mpi:// is (torch does not tell a
rendezvous handler the backend, so this holds for any backend where torch's env:// would
fail). With both set, torch's own env:// runs (its TCPStore listens on every interface).

The collective work happens in ``init_process_group`` on every rank: the MPI thread level is
checked when the backend creates a group, and RANK, WORLD_SIZE, LOCAL_RANK and
LOCAL_WORLD_SIZE are filled in where missing during an MPI rendezvous (``fill_env``).
"""

from __future__ import annotations

import importlib
from typing import Any

import torch.distributed as dist
from torch._C._distributed_c10d import _DistributedBackendOptions

from pycomm.distributed import backend
from pycomm.distributed.backend import ProcessGroupMpiucc
from pycomm.distributed.compression import Compression, get_compression, set_compression
from pycomm.distributed.rendezvous import env_rendezvous, fill_env, mpi_rendezvous
from pycomm.distributed.store import MPIStore, require_thread_multiple

BACKEND = "mpiucc"

__all__ = [
    "BACKEND",
    "Compression",
    "MPIStore",
    "ProcessGroupMpiucc",
    "fill_env",
    "get_compression",
    "register",
    "set_compression",
]


def create(opts: _DistributedBackendOptions, backend_options: Any = None) -> ProcessGroupMpiucc:
    """The creator registered with torch: checks MPI's thread level, then makes the group."""
    require_thread_multiple()
    return backend.create(opts, backend_options)


def register() -> None:
    """Register the backend and the rendezvous handlers (done on import; idempotent, no MPI)."""
    if BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, create, extended_api=True, devices=["cpu", "cuda"])
    # torch.distributed.rendezvous is shadowed by the function of that name: import the module.
    rdzv = importlib.import_module("torch.distributed.rendezvous")
    handlers = rdzv._rendezvous_handlers
    if "mpi" not in handlers:
        rdzv.register_rendezvous_handler("mpi", mpi_rendezvous)
    if "env" in handlers and not hasattr(handlers["env"], "torch_env"):  # no public way to swap
        handlers["env"] = env_rendezvous(handlers["env"])


register()
