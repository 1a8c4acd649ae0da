"""mpiucc's integration package: compressed MPI collectives (and, on top, the torch layer).

``import pycomm`` loads the MPI collectives only; the torch backend and hooks live in
submodules that import torch themselves.
"""

from pycomm.collectives import (
    CodecSpec,
    CommStats,
    Request,
    SettingsMismatchError,
    allgather,
    allreduce,
    bcast,
    iallgather,
    iallreduce,
    ibcast,
    irecv,
    ireduce_scatter,
    isend,
    recv,
    reduce_scatter,
    send,
)

__all__ = [
    "CodecSpec",
    "CommStats",
    "Request",
    "SettingsMismatchError",
    "allgather",
    "allreduce",
    "bcast",
    "iallgather",
    "iallreduce",
    "ibcast",
    "irecv",
    "ireduce_scatter",
    "isend",
    "recv",
    "reduce_scatter",
    "send",
]
