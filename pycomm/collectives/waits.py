"""Waiting on MPI: one wait policy, the timeout, and the errors a wait can end in.

Every wait in pycomm polls with ``poll`` and gives up at a deadline: a collective that some rank
never joins raises ``CommTimeout`` instead of hanging. The timeout is pycomm's (``set_timeout``,
``MPIUCC_TIMEOUT``), or a torch process group's own.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator

from mpi4py import MPI

#: Seconds a wait may go without completing; ``MPIUCC_TIMEOUT`` sets it at import.
DEFAULT_TIMEOUT_S = 1800.0
# A wait first spins on Test (small operations finish in microseconds), then yields the CPU, then
# naps with a growing pause. How long it yields depends on who waits:
# - a thread with nothing else to do (the caller of a blocking call, or of Request.wait) yields
#   for up to ``PATIENT_SPIN_S`` before its first nap, as MPI's own blocking calls busy-poll: a
#   nap of up to 1 ms after the peer has arrived would add its length to every call whose peer
#   comes a little late (tensor parallelism's all_reduce: 1.25x the step with napping);
# - a background thread (the engine's, the wire's: ``background_thread()``) overlaps
#   computation on the other threads, so it yields briefly and then naps: a long transfer must not
#   take cores from the computation it overlaps (MPI makes progress inside Test; the kernel's
#   socket buffers cover a nap).
_SPINS = 16
_YIELDS = 256
FIRST_NAP_S, LAST_NAP_S = 20e-6, 1e-3


def _env_spin() -> float:
    text = os.environ.get("MPIUCC_SPIN_MS", "")
    try:
        value = float(text) if text else 10.0
    except ValueError:
        raise ValueError(f"MPIUCC_SPIN_MS must be a number of milliseconds, not {text!r}") from None
    return max(value, 0.0) / 1e3


#: Seconds a waiting caller yields before it naps (``MPIUCC_SPIN_MS``, default 10 ms).
PATIENT_SPIN_S = _env_spin()
_thread_kind = threading.local()


def background_thread() -> None:
    """Mark the calling thread as a background one: its waits nap early (see above)."""
    _thread_kind.background = True


class CommTimeout(RuntimeError, TimeoutError):
    """A communication did not complete within its timeout (some rank did not join it)."""


class SettingsMismatchError(RuntimeError):
    """Ranks called one collective with different codecs, parameters, dtypes or sizes."""


class PeerArgumentError(ValueError):
    """Another rank passed invalid arguments to the collective this rank joined."""


def _env_timeout() -> float:
    text = os.environ.get("MPIUCC_TIMEOUT", "")
    try:
        value = float(text) if text else DEFAULT_TIMEOUT_S
    except ValueError:
        raise ValueError(f"MPIUCC_TIMEOUT must be a number of seconds, not {text!r}") from None
    return value if value > 0 else DEFAULT_TIMEOUT_S


_timeout_s = _env_timeout()


def set_timeout(seconds: float) -> None:
    """Set how long any pycomm wait may last before it raises ``CommTimeout`` (all threads)."""
    global _timeout_s
    if not seconds > 0:
        raise ValueError(f"the timeout must be a positive number of seconds, not {seconds!r}")
    _timeout_s = float(seconds)


def get_timeout() -> float:
    """The timeout in seconds (``MPIUCC_TIMEOUT``, else 1800, unless ``set_timeout`` changed it)."""
    return _timeout_s


def poll(test: Callable[[], object], deadline: float) -> bool:
    """Call test() until it returns true (then True) or the deadline passes (then False)."""
    if test():
        return True
    background = getattr(_thread_kind, "background", False)
    spins, nap = 0, FIRST_NAP_S
    patient_until = time.monotonic() + (0.0 if background else PATIENT_SPIN_S)
    while not test():
        spins += 1
        if spins < _SPINS:
            continue
        now = time.monotonic()
        if now > deadline:
            return False
        if spins < _YIELDS or now < patient_until:
            os.sched_yield()
        else:
            time.sleep(nap)
            nap = min(2 * nap, LAST_NAP_S)
    return True


def tester(reqs: list[MPI.Request], status: MPI.Status | None) -> Callable[[], bool]:
    """One test of every request: MPI's, or any with a ``Test()`` (``pycomm.ucc``'s)."""
    if not reqs:  # nothing to wait for (one rank's exchange)
        return lambda: True
    if len(reqs) == 1:
        req = reqs[0]
        return lambda: req.Test(status)
    if not isinstance(reqs[0], MPI.Request):
        return lambda: all([req.Test() for req in reqs])
    return lambda: MPI.Request.Testall(reqs)


@contextlib.contextmanager
def abort_on_error(comm: MPI.Comm | None = None, code: int = 1) -> Iterator[None]:
    """Print an exception escaping the block, then abort the whole job (``MPI_Abort``).

    After a CommTimeout, MPI_Finalize would wait for the rank that never came; aborting
    ends every rank at once, with the error on this rank's stderr.
    """
    try:
        yield
    except (Exception, KeyboardInterrupt):
        traceback.print_exc()
        sys.stderr.flush()
        (MPI.COMM_WORLD if comm is None else comm).Abort(code)
