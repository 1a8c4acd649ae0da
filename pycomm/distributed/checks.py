"""Every rank of a group must call a collective with the same kind of arguments.

MPI does not check: a SUM over tensors of different sizes returns wrong data on some ranks
without a word. Before each collective the group reduces a digest of what this rank passed
(the operation, dtypes, sizes, op and root) and raises on every rank when they differ. It
costs one 16-byte allreduce per collective; ``MPIUCC_CHECK=0`` turns it off.
"""

from __future__ import annotations

import os
import zlib
from typing import Any

import numpy as np
import torch
from mpi4py import MPI

from pycomm.collectives._channel import SettingsMismatchError

ENABLED = os.environ.get("MPIUCC_CHECK", "1") != "0"


def _describe(part: Any) -> Any:
    if isinstance(part, torch.Tensor):
        return (str(part.dtype), part.numel())
    if isinstance(part, (list, tuple)):
        return [_describe(p) for p in part]
    return part


def digest(what: str, *parts: Any) -> np.ndarray:
    """The array to reduce with MAX: [d, -d] for this rank's digest d of the arguments."""
    d = float(zlib.crc32(repr((what, _describe(parts))).encode()))
    return np.array([d, -d])


def start_check(comm: MPI.Comm, v: np.ndarray) -> MPI.Request:
    """Post the reduction of a digest (MAX in place)."""
    return comm.Iallreduce(MPI.IN_PLACE, v, op=MPI.MAX)


def verify(v: np.ndarray, what: str, where: str) -> None:
    """After the reduction: raise if any rank's digest differed from the others'."""
    if v[0] != -v[1]:
        raise SettingsMismatchError(
            f"mpiucc: ranks called {what} with different arguments ({where}): every rank must "
            "pass tensors of the same dtype and size, the same op and the same root"
        )
