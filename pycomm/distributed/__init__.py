"""The "mpiucc" torch.distributed backend: collectives over MPI, rendezvous over MPI.

Importing this module (under ``mpiexec``) registers the backend and the "mpi://" rendezvous::

    import torch.distributed as dist
    import pycomm.distributed

    dist.init_process_group("mpiucc", init_method="mpi://")   # no MASTER_ADDR, no socket
    dist.init_process_group("mpiucc")                           # env://, filled in from MPI

It also fills in RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT
where they are missing under an MPI launcher (a collective over MPI_COMM_WORLD: import it on
every rank). Set ``MPIUCC_NO_ENV=1`` to skip that.
"""

from __future__ import annotations

import importlib
import os

import torch.distributed as dist
from mpi4py import MPI

from pycomm.distributed.backend import ProcessGroupMpiucc, create
from pycomm.distributed.rendezvous import fill_env, mpi_rendezvous
from pycomm.distributed.store import MPIStore

BACKEND = "mpiucc"

__all__ = ["BACKEND", "MPIStore", "ProcessGroupMpiucc", "fill_env", "register"]


def register() -> None:
    """Register the backend and the rendezvous handler (done on import; idempotent)."""
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        raise RuntimeError(
            "mpiucc needs MPI_THREAD_MULTIPLE (its communication thread and store server call "
            "MPI concurrently); initialise MPI with mpi4py's default thread level"
        )
    if BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, create, extended_api=True, devices=["cpu", "cuda"])
    # torch.distributed.rendezvous is shadowed by the function of that name: import the module.
    rdzv = importlib.import_module("torch.distributed.rendezvous")
    if "mpi" not in rdzv._rendezvous_handlers:
        rdzv.register_rendezvous_handler("mpi", mpi_rendezvous)


register()
if os.environ.get("MPIUCC_NO_ENV") != "1":
    fill_env()
