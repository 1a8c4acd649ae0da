"""The collectives for a caller that holds a communicator's engine already: a job running as
one of its collectives (``Engine.run`` or ``Engine.submit``), given the communicator to run on.

The public calls (``pycomm.allreduce`` and the rest) take the engine and run their work as such
a job; called from inside one, they would wait for the engine they hold. These run the same
Python path at once instead: same arguments checked on every rank, same agreement, same bits.
The torch backend's compressed collectives (``pycomm.distributed.compression``) are such jobs::

    def job(comm):
        held.reduce_scatter(eng, comm, x, spec, out=block, residual=r)

    eng.submit(job)
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from pycomm.collectives import gather, reduction
from pycomm.collectives.engine import Engine
from pycomm.collectives.spec import CodecSpec


def allreduce(
    eng: Engine, comm: MPI.Comm, x: object, codec: str | CodecSpec | None = "none", **kwargs
) -> np.ndarray:
    """``pycomm.allreduce`` (its keywords) on the held engine eng, over comm."""
    return reduction._allreduce(eng, comm, x, codec, **kwargs)


def reduce_scatter(
    eng: Engine, comm: MPI.Comm, x: object, codec: str | CodecSpec | None = "none", **kwargs
) -> np.ndarray:
    """``pycomm.reduce_scatter`` (its keywords) on the held engine eng, over comm."""
    return reduction._reduce_scatter(eng, comm, x, codec, **kwargs)


def allgather(
    eng: Engine, comm: MPI.Comm, x: object, codec: str | CodecSpec | None = "none", **kwargs
) -> np.ndarray:
    """``pycomm.allgather`` (its keywords) on the held engine eng, over comm."""
    return gather._allgather(eng, comm, x, codec, **kwargs)
