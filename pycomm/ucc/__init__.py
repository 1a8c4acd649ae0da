"""pycomm's optional UCC layer: UCC teams made from MPI communicators, collectives on them.

The compiled part (``pycomm.ucc._ucc``) is built only when CMake finds UCC (``UCC_HOME``,
``-DMPIUCC_UCC=ON`` with pkg-config, see ``tools/build_ucc.sh``); without it this package still
imports and ``available()`` is False. Importing it makes no UCC or MPI call.

- ``available()``, ``unavailable_reason()``, ``version()``: whether the layer was built and
  loads, and the UCC library's version;
- ``pycomm.ucc.team``: the process's UCC context and a team per communicator (needs mpi4py).
"""

from __future__ import annotations

_why: str | None = None
try:
    import pycomm.ucc._ucc as _ucc
except ModuleNotFoundError:
    _ucc = None
    _why = "the UCC layer was not built (no UCC found at build time)"
except ImportError as exc:  # built, but UCC's or UCX's libraries are not found
    _ucc = None
    _why = (
        f"the UCC layer was built but does not load ({exc}): set LD_LIBRARY_PATH to UCC's "
        "and UCX's lib folders (tools/build_ucc.sh prints it)"
    )

__all__ = ["available", "unavailable_reason", "version"]


def available() -> bool:
    """True when the UCC layer was built and UCC's libraries load."""
    return _ucc is not None


def unavailable_reason() -> str | None:
    """Why ``available()`` is False (None when it is True)."""
    return _why


def version() -> str | None:
    """The loaded UCC library's version, None without the layer."""
    return None if _ucc is None else _ucc.version()
