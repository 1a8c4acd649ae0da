"""Compressed collectives on mpi4py communicators (numpy arrays and CPU torch tensors).

No torch import here: tensors are taken as buffers. The modules, from the top: the
collectives (``reduction``: allreduce and reduce_scatter; ``gather``: allgather and bcast;
``p2p``; ``held``: those for a job that holds the engine already), the algorithms
(``ring``, ``twophase``, ``gathered``) and the error ``feedback`` they keep, the frame
transport (``frames``), the error budget (``bound``), the codec spec (``spec``),
``buffers``, and under them all the ``engine`` of each communicator with its ``requests``
and ``waits``.
"""

# ruff: noqa: F401  (re-exports: __all__ is pycomm._exports, which pycomm reads too)

from pycomm._exports import COLLECTIVES
from pycomm.collectives.auto_state import choices
from pycomm.collectives.feedback import ErrorFeedback
from pycomm.collectives.gather import allgather, bcast, iallgather, ibcast
from pycomm.collectives.p2p import irecv, isend, recv, send
from pycomm.collectives.reduction import allreduce, iallreduce, ireduce_scatter, reduce_scatter
from pycomm.collectives.requests import Request
from pycomm.collectives.spec import CodecSpec
from pycomm.collectives.stats import CommStats
from pycomm.collectives.waits import (
    CommTimeout,
    PeerArgumentError,
    SettingsMismatchError,
    abort_on_error,
    get_timeout,
    set_timeout,
)

__all__ = list(COLLECTIVES)
