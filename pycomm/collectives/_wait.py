"""Waiting on MPI with a deadline: a collective that some rank never joins raises, never hangs.

Every wait in pycomm goes through ``wait``: it drives MPI with ``Test`` until the requests
complete, and raises ``CommTimeout`` when no completion came within the timeout. A
communicator on which a wait timed out is marked broken (messages of the failed operation
may still arrive and would be matched by the next one), and every later use of it raises at
once. The remedy is to end the job: run scripts as ``python -m mpi4py script.py``, which
turns an uncaught exception into ``MPI_Abort`` instead of a hang in ``MPI_Finalize``.
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
# A wait first spins on Test (small operations finish in microseconds), then yields the CPU,
# then naps with a growing pause: a long transfer must not take cores from the computation it
# overlaps (MPI makes progress inside Test; the kernel's socket buffers cover a nap).
_SPINS = 16
_YIELDS = 256
_FIRST_NAP_S, _LAST_NAP_S = 20e-6, 1e-3


class CommTimeout(RuntimeError, TimeoutError):
    """A communication did not complete within its timeout (some rank did not join it)."""


def _env_timeout() -> float:
    text = os.environ.get("MPIUCC_TIMEOUT", "")
    try:
        value = float(text) if text else DEFAULT_TIMEOUT_S
    except ValueError:
        raise ValueError(f"MPIUCC_TIMEOUT must be a number of seconds, not {text!r}") from None
    return value if value > 0 else DEFAULT_TIMEOUT_S


_timeout_s = _env_timeout()
_broken: dict[int, str] = {}  # handle of a broken communicator -> what broke it
_broken_lock = threading.Lock()


def set_timeout(seconds: float) -> None:
    """Set how long any pycomm wait may last before it raises ``CommTimeout`` (all threads)."""
    global _timeout_s
    if not seconds > 0:
        raise ValueError(f"the timeout must be a positive number of seconds, not {seconds!r}")
    _timeout_s = float(seconds)


def get_timeout() -> float:
    """The timeout in seconds (``MPIUCC_TIMEOUT``, else 1800, unless ``set_timeout`` changed it)."""
    return _timeout_s


def wait_requests(
    reqs: list[MPI.Request], deadline: float, what: str, status: MPI.Status | None = None
) -> None:
    """Drive MPI until every request completes; raise CommTimeout after ``deadline``.

    ``status`` receives the status of a single request.
    """
    if len(reqs) == 1:
        req = reqs[0]

        def test() -> bool:
            return req.Test(status)

    else:

        def test() -> bool:
            return MPI.Request.Testall(reqs)

    if not poll(test, deadline):
        raise CommTimeout(what)


def poll(test: Callable[[], object], deadline: float) -> bool:
    """Call test() until it returns true (then True) or the deadline passes (then False)."""
    spins, nap = 0, _FIRST_NAP_S
    while not test():
        spins += 1
        if spins < _SPINS:
            continue
        if time.monotonic() > deadline:
            return False
        if spins < _YIELDS:
            os.sched_yield()
        else:
            time.sleep(nap)
            nap = min(2 * nap, _LAST_NAP_S)
    return True


def wait(
    comm: MPI.Comm,
    reqs: MPI.Request | list[MPI.Request],
    what: str,
    status: MPI.Status | None = None,
) -> None:
    """Wait for requests on comm; on timeout mark comm broken and raise CommTimeout."""
    try:
        wait_requests(reqs if isinstance(reqs, list) else [reqs], _deadline(), what, status)
    except CommTimeout:
        raise _timed_out(comm, what) from None


def probe(comm: MPI.Comm, source: int, tag: int, status: MPI.Status, what: str) -> MPI.Message:
    """A matched probe (``Mprobe``) that gives up at the timeout like ``wait``."""
    found: list[MPI.Message] = []

    def test() -> bool:
        msg = comm.Improbe(source=source, tag=tag, status=status)
        return msg is not None and not found.append(msg)

    if not poll(test, _deadline()):
        raise _timed_out(comm, what)
    return found[0]


def check_usable(comm: MPI.Comm) -> None:
    """Raise CommTimeout at once if an earlier operation on comm timed out."""
    if _broken and (why := _broken.get(comm.py2f())) is not None:
        raise CommTimeout(f"pycomm: this communicator cannot be used any more: {why}")


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


def _deadline() -> float:
    return time.monotonic() + _timeout_s


def _timed_out(comm: MPI.Comm, what: str) -> CommTimeout:
    rank, size = comm.Get_rank(), comm.Get_size()
    with _broken_lock:
        _broken.setdefault(comm.py2f(), f"an earlier {what} timed out")
    return CommTimeout(
        f"pycomm: {what} did not complete within {_timeout_s:g} s on rank {rank} of {size}: "
        "some rank did not join it or died. The communicator is unusable; end the job "
        "(run scripts as `python -m mpi4py script.py` so that the error aborts it)."
    )
