"""Work objects, the wait loop with a deadline, and one group's communication thread.

Every collective is started with a non-blocking MPI call and driven to completion by
``wait_requests``, which gives up at a deadline: a collective some rank never joins raises
instead of hanging. The ``Engine`` runs a group's collectives in call order, inline on the
caller's thread when nothing is queued (the low-latency path of blocking calls) and otherwise
on the group's one communication thread (``async_op=True``, DDP), so they overlap computation.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from mpi4py import MPI

from pycomm.collectives._wait import CommTimeout, wait_requests

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

    def _finish(self, error: BaseException | None = None) -> None:
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


class Engine:
    """Runs one group's collectives in call order, inline when idle, else on its thread.

    ``exec_lock`` is held while a collective runs, on either thread. A blocking call runs
    inline only when nothing is queued and the lock is free; the thread takes the lock before
    it takes a job off the queue. So MPI sees the group's collectives one at a time, in call
    order, on every rank.
    """

    def __init__(self, name: str, rank: int, size: int) -> None:
        self.where = f"rank {rank} of {size} in group {name!r}"
        self._name = name
        self._cv = threading.Condition(threading.Lock())
        self.queue: deque = deque()
        self.exec_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.broken: str | None = None  # set when a collective timed out: the group is unusable

    def try_begin(self) -> bool:
        """Claim the communicator for an inline collective; False if anything is pending.

        False too once the group is broken: the call then goes through the queue and its
        work fails there with the reason.
        """
        if self.queue or self.broken is not None or not self.exec_lock.acquire(False):
            return False
        if self.queue:  # another thread queued meanwhile: keep the order
            self.exec_lock.release()
            return False
        return True

    def end(self) -> None:
        self.exec_lock.release()

    def run_inline(self, start: Start, deadline: float, what: str) -> None:
        """Run a collective on this thread; call only after try_begin() returned True."""
        try:
            self.execute(start, deadline, what)
        finally:
            self.exec_lock.release()

    def execute(self, start: Start, deadline: float, what: str) -> None:
        if self.broken is not None:
            raise RuntimeError(f"mpiucc: {what} refused on {self.where}: {self.broken}")
        reqs, finish, keep = start()
        self.wait(reqs, deadline, what)
        if finish is not None:
            finish()
        del keep

    def wait(self, reqs: list[MPI.Request], deadline: float, what: str) -> None:
        try:
            wait_requests(reqs, deadline, what)
        except CommTimeout:
            self.broken = f"an earlier {what} timed out"
            raise self.timeout_error(what, deadline) from None

    def timeout_error(self, what: str, deadline: float) -> CommTimeout:
        late = time.monotonic() - deadline
        return CommTimeout(
            f"mpiucc: {what} did not complete within the process group's timeout "
            f"({self.where}, {late:.2f} s past the deadline): some rank did not join it. "
            "The group cannot be used any more."
        )

    def on_comm_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, start: Start, work: MpiWork, deadline: float, what: str) -> None:
        """Queue a collective for the communication thread; `work` completes when it is done."""
        with self._cv:
            self.queue.append((start, work, deadline, what))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name=f"mpiucc-comm-{self._name}", daemon=True
                )
                self._thread.start()
            self._cv.notify()

    def close(self) -> None:
        """Let queued collectives finish, then stop the thread."""
        with self._cv:
            thread = self._thread
            if thread is None:
                return
            self.queue.append(None)
            self._cv.notify()
        thread.join()
        self._thread = None

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self.queue:
                    self._cv.wait()
            with self.exec_lock:
                job = self.queue.popleft()
                if job is None:
                    return
                start, work, deadline, what = job
                error: BaseException | None = None
                try:
                    self.execute(start, deadline, what)
                except BaseException as exc:  # handed to the waiter, never lost
                    error = exc
            work._finish(error)
