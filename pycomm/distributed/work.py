"""The torch Work objects of the backend's collectives.

A group's collectives run through its communicator's engine (``pycomm.collectives.engine``):
inline on the caller's thread when nothing is queued (blocking calls: ``DoneWork``), else on
the engine's thread (``async_op=True``, DDP: an ``MpiWork`` completed there).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from mpi4py import MPI

# start() posts the MPI operations and returns (requests, finish or None, objects to keep alive).
Started = tuple[list[MPI.Request], Callable[[], None] | None, Any]
Start = Callable[[], Started]


def timeout_seconds(timeout: timedelta | None, default: float) -> float:
    """Seconds of a torch timeout; None, zero or negative (torch's "unset") give the default."""
    if timeout is None:
        return default
    s = timeout.total_seconds()
    return default if s <= 0 else s


def _set_future(fut: torch.futures.Future, result: Any, error: BaseException | None) -> None:
    if error is None:
        fut.set_result(result)
    else:
        fut.set_exception(error)


# Guards the creation of futures against completion (one lock for all works: rarely taken).
_future_lock = threading.Lock()


class MpiWork(dist.Work):
    """A collective's handle: completed by the communication thread.

    Completion is signalled by releasing ``_gate``, a lock taken at creation: cheaper to make
    than an Event, and waiters sleep on it.
    """

    def __init__(self, result: Any, what: str, timeout_s: float) -> None:
        super().__init__()
        self._result = result
        self._what = what
        self._timeout_s = timeout_s
        self._error: BaseException | None = None
        self._done = False
        self._gate = threading.Lock()
        self._gate.acquire()
        self._future: torch.futures.Future | None = None

    def _finish(self, _: Any = None, error: BaseException | None = None) -> None:
        """Complete the work (the engine's done(result, error) callback)."""
        with _future_lock:
            self._error = error
            self._done = True
            fut = self._future
        self._gate.release()
        if fut is not None:
            _set_future(fut, self._result, error)

    def wait(self, timeout: timedelta | None = None) -> bool:
        if not self._done:
            secs = timeout_seconds(timeout, self._timeout_s)
            if not self._gate.acquire(timeout=secs):
                raise RuntimeError(f"mpiucc: {self._what} did not complete within {secs:g} s")
            self._gate.release()
        if self._error is not None:
            raise RuntimeError(str(self._error)) from self._error
        return True

    def is_completed(self) -> bool:
        return self._done

    def is_success(self) -> bool:
        return self._done and self._error is None

    def result(self) -> Any:
        self.wait()
        return self._result

    def synchronize(self) -> None:
        pass

    def get_future(self) -> torch.futures.Future:
        with _future_lock:
            if self._future is None:
                self._future = torch.futures.Future()
                if self._done:
                    _set_future(self._future, self._result, self._error)
            return self._future


class DoneWork(dist.Work):
    """An operation that already completed on the caller's thread."""

    def __init__(self, result: Any = None) -> None:
        super().__init__()
        self._result = result

    def wait(self, timeout: timedelta | None = None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True

    def result(self) -> Any:
        return self._result

    def synchronize(self) -> None:
        pass

    def get_future(self) -> torch.futures.Future:
        fut = torch.futures.Future()
        fut.set_result(self._result)
        return fut
