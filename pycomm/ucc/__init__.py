"""pycomm's optional UCC layer: UCC teams made from MPI communicators, collectives on them.

The compiled part (``pycomm.ucc._ucc``) is built only when CMake finds UCC (``UCC_HOME``,
``-DMPIUCC_UCC=ON`` with pkg-config, see ``tools/build_ucc.sh``); without it this package still
imports and ``available()`` is False. Importing it makes no UCC or MPI call.

- ``available()``, ``unavailable_reason()``, ``version()``: whether the layer was built and
  loads, and the UCC library's version;
- ``library()``, ``components()``, ``settings()``, ``collectives()``: where libucc was loaded
  from, the transport (tl) and collective (cl) layers beside it, the environment variables
  that choose among them, and the collectives the library supports;
- ``pycomm.ucc.team``: the process's UCC context and a team per communicator (needs mpi4py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

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

__all__ = [
    "available",
    "collectives",
    "components",
    "library",
    "settings",
    "unavailable_reason",
    "version",
]

#: The environment variables that pick UCC's collective layers, their transport layers, and
#: UCX's transports, with UCC's and UCX's defaults.
SETTINGS = {"UCC_CLS": "basic", "UCC_CL_BASIC_TLS": "all", "UCX_TLS": "all"}


def available() -> bool:
    """True when the UCC layer was built and UCC's libraries load."""
    return _ucc is not None


def unavailable_reason() -> str | None:
    """Why ``available()`` is False (None when it is True)."""
    return _why


def version() -> str | None:
    """The loaded UCC library's version, None without the layer."""
    return None if _ucc is None else _ucc.version()


def library() -> str | None:
    """The path libucc was loaded from (Linux: this process's maps), None without the layer."""
    if _ucc is None:
        return None
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if "/libucc.so" in line:
                    return line.split(None, 5)[-1].strip()
    except OSError:
        pass
    return None


def components() -> dict[str, list[str]]:
    """UCC's components beside the loaded libucc (``ucc/libucc_<kind>_<name>.so``) by kind:
    ``tl`` (transport layers), ``cl`` (collective layers), ``mc``, ``ec``; empty without."""
    path = library()
    found: dict[str, list[str]] = {}
    if path is None:
        return found
    for lib in sorted((Path(path).parent / "ucc").glob("libucc_*_*.so")):
        m = re.fullmatch(r"libucc_([a-z]+)_(\w+)\.so", lib.name)
        if m:
            found.setdefault(m.group(1), []).append(m.group(2))
    return found


def settings() -> dict[str, str]:
    """``SETTINGS`` as this process has them: the value, or the default marked so."""
    return {k: os.environ.get(k) or f"{v} (default)" for k, v in SETTINGS.items()}


def collectives() -> list[str]:
    """The collectives the UCC library supports with its components here (empty without)."""
    return [] if _ucc is None else _ucc.library_collectives()
