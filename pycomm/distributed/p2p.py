"""Point-to-point work: MPI non-blocking send and receive, posted on the caller's thread.

Posting at call time (not on the communication thread) keeps the matching order the user
wrote and lets both ranks post irecv before isend without deadlock. ``wait()`` drives the
request on the waiting thread; a future, when asked for, is completed by a small poller.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from mpi4py import MPI

from pycomm.collectives._wait import CommTimeout, poll
from pycomm.distributed.work import timeout_seconds


class P2PWork(dist.Work):
    """One MPI send or receive; `finish` runs once it completes (copy back to the tensor)."""

    def __init__(
        self,
        req: MPI.Request,
        finish: Callable[[], None] | None,
        keep: Any,
        result: list[torch.Tensor],
        what: str,
        timeout_s: float,
    ) -> None:
        super().__init__()
        self._req = req
        self._on_done = finish
        self._keep = keep
        self._result = result
        self._what = what
        self._timeout_s = timeout_s
        self._status = MPI.Status()
        self._lock = threading.Lock()
        self._done = False
        self._future: torch.futures.Future | None = None

    def _test(self) -> bool:
        """Complete if MPI says so; call with the lock held."""
        if not self._done and self._req.Test(self._status):
            self._complete()
        return self._done

    def _complete(self) -> None:
        if self._on_done is not None:
            self._on_done()
        self._done = True
        self._keep = None
        if self._future is not None:
            self._future.set_result(self._result)

    def wait(self, timeout: timedelta | None = None) -> bool:
        secs = timeout_seconds(timeout, self._timeout_s)
        with self._lock:
            if self._done:
                return True
            if not poll(lambda: self._req.Test(self._status), time.monotonic() + secs):
                raise CommTimeout(f"mpiucc: {self._what} did not complete within {secs:g} s")
            self._complete()
        return True

    def is_completed(self) -> bool:
        with self._lock:
            return self._test()

    def is_success(self) -> bool:
        return self.is_completed()

    def result(self) -> list[torch.Tensor]:
        self.wait()
        return self._result

    def synchronize(self) -> None:
        pass

    def _source_rank(self) -> int:
        self.wait()
        return self._status.Get_source()

    source_rank = _source_rank

    def get_future(self) -> torch.futures.Future:
        with self._lock:
            if self._future is None:
                self._future = torch.futures.Future()
                if self._done:
                    self._future.set_result(self._result)
                elif not self._test():  # completing sets the result
                    _poller.watch(self)
            return self._future


class _Poller:
    """Completes the futures of point-to-point works nobody waits on."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._works: list[P2PWork] = []
        self._thread: threading.Thread | None = None

    def watch(self, work: P2PWork) -> None:
        with self._cv:
            self._works.append(work)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="mpiucc-p2p", daemon=True)
                self._thread.start()
            self._cv.notify()

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._works:
                    self._cv.wait()
                works = list(self._works)
            finished = []
            for w in works:
                if w._lock.acquire(blocking=False):
                    try:
                        if w._test():
                            finished.append(w)
                    finally:
                        w._lock.release()
            with self._cv:
                self._works = [w for w in self._works if w not in finished]
            time.sleep(0 if finished else 1e-5)


_poller = _Poller()
