"""Requests: what a non-blocking pycomm operation returns, one interface for every kind.

A queued collective completes on its engine's thread; posted point-to-point requests
(``Posted``) are driven by whoever tests or waits on them, or by the engine's thread once a
callback is asked for. Either way an operation that failed keeps its error for every wait.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from mpi4py import MPI

from pycomm.collectives.waits import poll, tester

if TYPE_CHECKING:
    from pycomm.collectives.engine import Engine


class Request:
    """A non-blocking operation: ``wait()`` returns its result, ``test()`` says if it is done.

    An operation that failed keeps its error: every ``wait()`` raises it again.
    """

    def __init__(self, future: Future, posted: Posted | None = None) -> None:
        self._future = future
        self._posted = posted

    def wait(self, timeout: float | None = None) -> Any:
        """The result; raises the operation's error. With ``timeout``, TimeoutError after it
        (the operation goes on); without, pycomm's timeout applies (CommTimeout)."""
        if self._posted is not None and not self._future.done():
            self._posted.drive(timeout)
        return self._future.result(timeout)

    def test(self) -> bool:
        if self._posted is not None and not self._future.done():
            self._posted.progress()
        return self._future.done()

    def add_done_callback(self, fn: Callable[[Request], Any]) -> None:
        """Call fn(self) once the operation is done (on the thread that completes it)."""
        self._future.add_done_callback(lambda _: fn(self))
        if self._posted is not None and not self._future.done():
            self._posted.engine.watch(self._posted)


class Posted:
    """Posted MPI requests that complete with ``finish()`` (point-to-point): MPI is driven by
    whoever tests or waits, or by the engine's thread once a callback is asked for."""

    def __init__(
        self,
        engine: Engine,
        reqs: list[MPI.Request],
        finish: Callable[[], Any],
        what: str,
        status: MPI.Status | None = None,
        keep: Any = None,
        timeout_s: float | None = None,
    ) -> None:
        self.engine, self.what, self.future = engine, what, Future()
        self._reqs, self._finish, self._status, self._keep = reqs, finish, status, keep
        self._test = tester(reqs, status)
        self._deadline = engine.deadline(timeout_s)
        self._lock = threading.Lock()

    def request(self) -> Request:
        return Request(self.future, self)

    def progress(self) -> bool:
        """Test once (never blocks); True when done. Past the deadline: fails, group broken."""
        if not self._lock.acquire(False):
            return False
        try:
            if self.future.done():
                return True
            if self._tested():
                self._complete()
            elif time.monotonic() > self._deadline:
                self._fail(self.engine.timed_out(self.what, self._deadline))
            return self.future.done()
        finally:
            self._lock.release()

    def drive(self, timeout: float | None, give_up: bool = False) -> None:
        """Wait for completion up to ``timeout`` seconds (else to the deadline). Past the
        deadline, or past ``timeout`` with ``give_up``, the operation fails (cancelled, the
        communicator broken); past ``timeout`` alone it goes on."""
        with self._lock:
            if self.future.done():
                return
            deadline = self._deadline if timeout is None else time.monotonic() + timeout
            if poll(self._tested, deadline):
                self._complete()
            elif timeout is None or give_up:
                self._fail(self.engine.timed_out(self.what, deadline))

    def _tested(self) -> bool:
        """MPI's Test; an MPI error completes the operation with that error (kept), as the
        engine's wait treats it, instead of escaping to whoever happened to test."""
        try:
            return self._test()
        except MPI.Exception as exc:
            self.engine.failed_in_mpi(self.what, exc)
            self.future.set_exception(exc)
            return True

    def _complete(self) -> None:
        if self.future.done():  # failed in MPI's Test
            return
        self._keep = None
        try:
            result = self._finish()
        except BaseException as exc:  # kept: every wait raises it
            self.future.set_exception(exc)
        else:
            self.future.set_result(result)

    def _fail(self, error: BaseException) -> None:
        for req in self._reqs:  # nothing may land in the buffer later (it stays referenced)
            with contextlib.suppress(MPI.Exception):
                req.Cancel()
                req.Test()
        self.future.set_exception(error)
