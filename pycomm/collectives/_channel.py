"""Private communicators per user communicator, the settings agreement, and requests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
from mpi4py import MPI

from pycomm.collectives._wait import check_usable, wait


class SettingsMismatchError(RuntimeError):
    """Ranks called one collective with different codecs, parameters, dtypes or sizes."""


class Channel:
    """Duplicates of a user communicator, so that pycomm's traffic never meets the user's.

    ``comm`` serves blocking collectives (and their pipeline thread); ``async_comm`` is used
    only by ``executor``, the one thread that runs the non-blocking collectives in call order.
    """

    def __init__(self, comm: MPI.Comm) -> None:
        self.comm, first = comm.Idup()
        self.async_comm, second = comm.Idup()
        wait(comm, [first, second], "the first pycomm call (duplicating the communicator)")
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="pycomm-comm")


_channels: dict[int, Channel] = {}
_channels_lock = threading.Lock()


def channel(comm: MPI.Comm | None) -> Channel:
    """The channel of comm (COMM_WORLD by default); collective on first use."""
    comm = MPI.COMM_WORLD if comm is None else comm
    key = comm.py2f()
    with _channels_lock:
        ch = _channels.get(key)
        if ch is None:
            ch = _channels[key] = Channel(comm)
        return ch


class Private:
    """Wraps a communicator that is already pycomm's own duplicate (used as is)."""

    def __init__(self, comm: MPI.Comm) -> None:
        self.comm = comm


def private_comm(comm: MPI.Comm | Private | None) -> MPI.Comm:
    """pycomm's duplicate of a user communicator (or the wrapped one); raises if it is broken."""
    own = comm.comm if isinstance(comm, Private) else channel(comm).comm
    check_usable(own)
    return own


def agree(comm: MPI.Comm, signature: int, what: str, maxima: Sequence[float] = ()) -> np.ndarray:
    """Check that every rank passed the same signature, and reduce ``maxima`` with MAX.

    One small allreduce serves both. On a mismatch every rank raises, so none proceeds
    with garbage and none hangs.
    """
    v = np.array([signature, -signature, *maxima], dtype=np.float64)
    wait(comm, comm.Iallreduce(MPI.IN_PLACE, v, op=MPI.MAX), f"settings check of {what}")
    if v[0] != -v[1]:
        raise SettingsMismatchError(
            f"ranks disagree on the settings of this collective ({what}); "
            "every rank must pass the same codec, parameters, dtype, size and op"
        )
    return v[2:]


class Request:
    """A non-blocking operation: ``wait()`` returns its result, ``test()`` says if it is done."""

    def __init__(self, future: Future) -> None:
        self._future = future

    def wait(self, timeout: float | None = None) -> Any:
        return self._future.result(timeout)

    def test(self) -> bool:
        return self._future.done()

    def add_done_callback(self, fn: Callable[[Request], Any]) -> None:
        """Call fn(self) once the operation is done (on the thread that completes it)."""
        self._future.add_done_callback(lambda _: fn(self))


def submit(ch: Channel, fn: Callable[[MPI.Comm], Any]) -> Request:
    """Run fn(ch.async_comm) on the channel's communication thread, in call order."""
    return Request(ch.executor.submit(fn, ch.async_comm))
