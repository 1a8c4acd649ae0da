"""Every rank of a group must call a collective with the same kind of arguments.

MPI does not check: a SUM over tensors of different sizes returns wrong data on some ranks
without a word. Checked groups agree, before each collective, on a digest of what this rank
passed (the operation, dtypes, sizes, op and root) through their engine's agreement (one 128-byte
allreduce), and raise on every rank when the digests differ. As torch does for its own
fingerprinting, the check is opt-in, since it doubles the cost of a small collective:
``TORCH_DISTRIBUTED_DEBUG=DETAIL`` or ``MPIUCC_CHECK=1`` (``MPIUCC_CHECK=0`` turns it off even
under DETAIL), read when a group is made.
"""

from __future__ import annotations

import os
import zlib
from typing import Any

import torch


def enabled() -> bool:
    """Whether groups made now check their ranks' arguments."""
    forced = os.environ.get("MPIUCC_CHECK", "")
    if forced in ("0", "1"):
        return forced == "1"
    return os.environ.get("TORCH_DISTRIBUTED_DEBUG", "").upper() == "DETAIL"


def _describe(part: Any) -> Any:
    if isinstance(part, torch.Tensor):
        return (str(part.dtype), part.numel())
    if isinstance(part, (list, tuple)):
        return [_describe(p) for p in part]
    return part


def digest(what: str, *parts: Any) -> int:
    """A 31-bit digest of the arguments (exact in the float64 agreement)."""
    return zlib.crc32(repr((what, _describe(parts))).encode()) & 0x7FFFFFFF
