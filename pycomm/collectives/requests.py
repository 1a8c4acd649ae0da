"""Requests: what a non-blocking pycomm operation returns, one interface for every kind.

A queued collective completes on its engine's thread; posted point-to-point requests
(``Posted``) are driven by whoever tests or waits on them, or by the engine's thread once a
callback is asked for. Either way an operation that failed keeps its error for every wait.

A ``Posted`` belongs to its engine from its creation until MPI is done with its buffers (frames,
host copies, trailers, receive scratch), whatever becomes of its handle: a handle dropped
unfinished hands it to the engine, which completes it (``Engine.dropped``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from mpi4py import MPI

from pycomm.collectives.waits import CommTimeout, poll, tester


class Owner(Protocol):
    """What a ``Posted`` asks of the engine that owns it (``engine.Engine``)."""

    def deadline(self, timeout_s: float | None = None) -> float: ...
    def hold(self, posted: Posted) -> None: ...
    def watch(self, posted: Posted) -> None: ...
    def dropped(self, posted: Posted) -> None: ...
    def release(self, posted: Posted) -> None: ...
    def timed_out(self, what: str, deadline: float) -> CommTimeout: ...
    def failed_in_mpi(self, what: str, exc: MPI.Exception) -> None: ...


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

    def done(self) -> bool:
        """Whether the operation has completed (drives nothing, unlike ``test``)."""
        return self._future.done()

    def add_done_callback(self, fn: Callable[[Request], Any]) -> None:
        """Call fn(self) once the operation is done (on the thread that completes it)."""
        self._future.add_done_callback(lambda _: fn(self))
        self.progress_in_background()

    def progress_in_background(self) -> None:
        """Have the engine's thread drive the operation to completion, so that it moves while
        this thread computes (a queued collective does already)."""
        if self._posted is not None and not self._future.done():
            self._posted.engine.watch(self._posted)

    def __del__(self) -> None:
        if self._posted is not None:
            self._posted.dropped()


class Posted:
    """Posted MPI requests that complete with ``finish()`` (point-to-point): MPI is driven by
    whoever tests or waits, or by the engine's thread once a callback is asked for.

    Its engine holds it, and so ``keep`` and whatever ``finish`` refers to, from here until MPI
    is done with its requests.
    """

    def __init__(
        self,
        engine: Owner,
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
        engine.hold(self)

    def request(self) -> Request:
        return Request(self.future, self)

    def dropped(self) -> None:
        """Its handle is gone: nobody will wait, so the engine completes it."""
        if not self.future.done():
            self.engine.dropped(self)

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
            self._end(exc)
            return True

    def _complete(self) -> None:
        if self.future.done():  # failed in MPI's Test
            return
        try:
            result = self._finish()
        except BaseException as exc:  # kept: every wait raises it
            self._end(exc)
        else:
            self._end(None, result)

    def _end(self, error: BaseException | None, result: Any = None) -> None:
        """MPI is done with every request: the engine lets go of the buffers."""
        self._keep = self._finish = None
        self.engine.release(self)
        if error is None:
            self.future.set_result(result)
        else:
            self.future.set_exception(error)

    def _fail(self, error: BaseException) -> None:
        done = True
        for req in self._reqs:  # nothing may land in the buffers later
            try:
                req.Cancel()
                done = req.Test() and done
            except MPI.Exception:
                pass  # completed already, or with an error of its own
        if done:
            self._end(error)
        else:  # MPI may still use the buffers: the engine keeps them
            self.future.set_exception(error)
