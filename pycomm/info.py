"""What this installation talks over: MPI library, thread level, UCC, codec SIMD level, extras.

Imports neither torch nor the codecs at module level; ``info()`` imports mpi4py (which
initialises MPI) where it is installed, and tries pycodecs.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

_THREAD_LEVELS = ("single", "funneled", "serialized", "multiple")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def mpiucc_version() -> str:
    """The installed distribution's version, or the source tree's when not installed."""
    return _version("mpiucc") or "0.1.0 (source tree)"


def _ompi_info() -> str | None:
    """The path of the ompi_info beside this Python's mpiexec, else on PATH."""
    beside = Path(sys.executable).parent / "ompi_info"
    if beside.exists():
        return str(beside)
    return shutil.which("ompi_info")


def _open_mpi_ucc() -> dict[str, Any]:
    """Whether Open MPI has the coll/ucc component and whether the environment enables it."""
    enable = os.environ.get("OMPI_MCA_coll_ucc_enable")
    priority = os.environ.get("OMPI_MCA_coll_ucc_priority")
    out: dict[str, Any] = {
        "component": None,
        "enabled": enable == "1",
        "env": {"OMPI_MCA_coll_ucc_enable": enable, "OMPI_MCA_coll_ucc_priority": priority},
    }
    tool = _ompi_info()
    if tool is None:
        out["how"] = "no ompi_info found"
        return out
    try:
        text = subprocess.run(
            [tool], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        out["how"] = f"{tool} failed: {exc}"
        return out
    out["component"] = re.search(r"MCA coll:\s*ucc\b", text) is not None
    out["how"] = f"{tool}: {'lists' if out['component'] else 'no'} 'MCA coll: ucc'"
    return out


def _ucc(vendor: str, library: str) -> dict[str, Any]:
    if vendor == "Open MPI":
        found = _open_mpi_ucc()
        found["collectives_via_ucc"] = bool(found["component"] and found["enabled"])
        return found
    if vendor == "MPICH":
        configure = re.search(r"MPICH configure:\s*(.*)", library)
        built = configure is not None and "ucc" in configure.group(1).lower()
        return {
            "component": built,
            "enabled": built,
            "collectives_via_ucc": built,
            "how": "MPICH configure line " + ("names UCC" if built else "does not name UCC"),
        }
    return {"component": None, "enabled": None, "collectives_via_ucc": None, "how": "unknown MPI"}


def _simd_level() -> str | None:
    try:
        import pycodecs
    except ImportError:
        return None
    try:
        return str(pycodecs.simd_level())
    except AttributeError:
        return None


def _mpi() -> dict[str, Any]:
    """The MPI fields of ``info()``; None values and ``mpi_error`` where MPI cannot load."""
    try:
        from mpi4py import MPI
    except (ImportError, RuntimeError, OSError) as exc:  # no mpi4py, or no MPI library for it
        why = "mpi4py not installed" if _version("mpi4py") is None else str(exc)
        keys = ("mpi_vendor", "mpi_version", "mpi_library", "thread_level", "ucc", "compiled_path")
        return {**dict.fromkeys(keys), "mpi_error": why}
    vendor, vendor_version = MPI.get_vendor()
    library = MPI.Get_library_version().replace("\x00", "").strip()
    level = MPI.Query_thread()
    return {
        "mpi_vendor": f"{vendor} {'.'.join(map(str, vendor_version))}",
        "mpi_version": "{}.{}".format(*MPI.Get_version()),
        "mpi_library": library,
        "thread_level": _THREAD_LEVELS[level] if 0 <= level < 4 else str(level),
        "ucc": _ucc(vendor, library),
        "compiled_path": _compiled_path(),
        "mpi_error": None,
    }


def _compiled_path() -> str:
    """Whether settled uncompressed allreduce calls run compiled (``pycomm.collectives.hot``)."""
    from pycomm.collectives import hot

    return hot.status()


def info() -> dict[str, Any]:
    """A dict describing the MPI library, its thread level, UCC, the codecs and the extras.

    Keys: ``mpiucc`` (version), ``mpi4py``, ``mpi_vendor``, ``mpi_version`` (the standard),
    ``mpi_library`` (``MPI.Get_library_version()``), ``thread_level``, ``ucc`` (a dict with
    ``collectives_via_ucc``, ``component``, ``enabled``, ``how``: the MPI library's own UCC),
    ``ucc_layer`` (pycomm's UCC layer, ``ucc_layer()``), ``compiled_path``
    (``hot.status()``), ``mpi_error`` (why the MPI
    fields are None, else None), ``simd_level`` (None when pycodecs is not built), ``torch``
    (installed version, not imported), ``extras`` (``pycomm.extras.extras_present()``),
    ``auto``: codec="auto"'s measured link and codec figures and what its model would try first for
    64 KiB, 1 MiB and 64 MiB (``pycomm.collectives.auto.preview``; None without MPI or codecs).
    """
    from pycomm.extras import extras_present

    torch_dist = sys.modules.get("torch.distributed")  # reported only if already imported
    return {
        "mpiucc": mpiucc_version(),
        "mpi4py": _version("mpi4py"),
        **_mpi(),
        "simd_level": _simd_level(),
        "host": socket.gethostname(),
        "cores": _cores(),
        "torch": _version("torch"),
        "torch_ucc": None if torch_dist is None else bool(torch_dist.is_ucc_available()),
        "ucc_layer": ucc_layer(),
        "extras": extras_present(),
        "auto": _auto(),
    }


def _cores() -> dict[str, int | None]:
    """The cores this process may run on, the machine's, and the threads an ebq call takes."""
    try:
        usable: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    try:
        from pycodecs import default_threads

        threads: int | None = default_threads()
    except ImportError:
        threads = None
    return {"usable": usable, "machine": os.cpu_count(), "codec_threads": threads}


def ucc_layer() -> dict[str, Any]:
    """pycomm's own UCC layer (``pycomm.ucc``): whether it was built and loads, the UCC
    version and library, why not, its components (``tl``: transport layers), the variables
    that choose among them, the collectives the library supports, what ``MPIUCC_COLLECTIVES``
    asks new groups to use, and the live groups of this process with what each sends through
    UCC (only where the backend was imported: a job calling ``pycomm.info()``)."""
    from pycomm import ucc

    backend = sys.modules.get("pycomm.distributed.backend")
    return {
        "built": ucc.available(),
        "version": ucc.version(),
        "why_not": ucc.unavailable_reason(),
        "library": ucc.library(),
        "components": ucc.components(),
        "settings": ucc.settings() if ucc.available() else None,
        "supports": ucc.collectives(),
        "collectives": os.environ.get("MPIUCC_COLLECTIVES", "").strip().lower() or "mpi",
        "ucx_library": _loaded("libucp.so") if ucc.available() else None,
        "groups": None if backend is None else backend.transport.groups(),
    }


def _loaded(name: str) -> str | None:
    """The path this process loaded a shared library from (Linux), else None. The MPI library
    may carry its own UCX: the first one loaded serves UCC too (LD_LIBRARY_PATH picks it)."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if name in line:
                    return line.split(None, 5)[-1].strip()
    except OSError:
        pass
    return None


def _auto() -> dict[str, Any] | None:
    """codec="auto"'s figures on COMM_WORLD and its choices (``collectives.auto.preview``);
    None where MPI or the codecs cannot load."""
    try:
        from pycomm.collectives.auto import preview
    except (ImportError, RuntimeError, OSError):
        return None
    return preview()
