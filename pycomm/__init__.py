"""mpiucc's integration package: compressed MPI collectives (and, on top, the torch layer).

``import pycomm`` imports neither torch nor the codecs: the MPI collectives (``pycomm.allreduce``
and the rest) load on first use, and the torch backend lives in ``pycomm.distributed``, which
imports torch itself. ``pycomm.info()`` reports the MPI library, UCC and the codecs' SIMD level.
"""

from __future__ import annotations

import importlib
from typing import Any

from pycomm._exports import COLLECTIVES as _COLLECTIVES
from pycomm.info import info

__version__ = "0.1.0"

_HOOKS = ("CompressHookState", "mpiucc_allreduce_hook", "mpiucc_compress_hook")

__all__ = [*_COLLECTIVES, *_HOOKS, "info"]


def __getattr__(name: str) -> Any:
    # The collectives import pycodecs; load them on first use so that `import pycomm.distributed`
    # and `pycomm.info()` work where the codecs are not built.
    if name in _COLLECTIVES:
        value = getattr(importlib.import_module("pycomm.collectives"), name)
        globals()[name] = value
        return value
    if name in _HOOKS:  # the DDP hooks import torch, so only when asked for
        return getattr(importlib.import_module("pycomm.distributed.hooks"), name)
    raise AttributeError(f"module 'pycomm' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
