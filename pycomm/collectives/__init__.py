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
from pycomm.collectives._wait import CommTimeout, abort_on_error, get_timeout, set_timeout

__all__ = [
    "CodecSpec",
    "CommStats",
    "CommTimeout",
    "Request",
    "SettingsMismatchError",
    "abort_on_error",
    "allgather",
    "allreduce",
    "bcast",
    "get_timeout",
    "iallgather",
    "iallreduce",
    "ibcast",
    "irecv",
    "ireduce_scatter",
    "isend",
    "recv",
    "reduce_scatter",
    "send",
    "set_timeout",
]
