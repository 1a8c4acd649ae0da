"""Compressed collectives on mpi4py communicators (numpy arrays and CPU torch tensors).

No torch import here: tensors are taken as buffers.
"""

from pycomm.collectives._allreduce import allreduce, iallreduce
from pycomm.collectives._channel import Request, SettingsMismatchError
from pycomm.collectives._gather import allgather, bcast, iallgather, ibcast
from pycomm.collectives._p2p import irecv, isend, recv, send
from pycomm.collectives._reduce_scatter import ireduce_scatter, reduce_scatter
from pycomm.collectives._spec import CodecSpec
from pycomm.collectives._stats import CommStats

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
