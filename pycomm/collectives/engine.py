"""pycomm's runtime for one communicator: the one place that waits, times out and agrees.

An ``Engine`` is attached to a communicator with MPI attribute caching, so it lives exactly as
long as that communicator: ``Free`` runs the keyval's delete callback, which stops the engine's
thread and frees its private duplicate. (A table keyed by ``py2f()`` would outlive it: MPI hands
a freed handle to the next communicator.) Everything pycomm does on that communicator goes
through its engine, both layers alike: the MPI collectives, pycomm's point-to-point, and the
torch backend's process groups (which own their communicator, so need no duplicate).

What an engine owns:
- ``comm``: a private duplicate made collectively by the first collective, so that pycomm's
  messages never meet the user's;
- one order: collectives run one at a time, in call order, inline on the caller's thread when
  nothing is queued, else on the engine's one thread (``submit``), so blocking and
  non-blocking calls share one communicator;
- one thread, started on first need: it runs queued collectives and completes the point-to-
  point requests somebody asked a callback of or dropped the handle of;
- every point-to-point request in flight (``Posted``, holding its frames, host copies, trailers
  and receive scratch), from its post until MPI is done with it, whatever the caller does with
  its handle; ``close`` does not end them (a closed engine with requests in flight stays
  referenced until they complete);
- one wait policy (``poll``), one deadline rule and one broken mark: a wait that sees no
  completion within the timeout raises ``CommTimeout`` and marks the communicator broken, and
  every later use raises at once (the failed operation's messages could still arrive);
- the agreement (``agree``): one small allreduce that carries each rank's settings digest, its
  local validity and the maxima the operation needs, so a bad argument or a mismatch on one
  rank raises on every rank in the same call.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
from mpi4py import MPI

from pycomm.collectives import agreement
from pycomm.collectives.inbox import Inbox
from pycomm.collectives.link import Link
from pycomm.collectives.requests import Posted, Request
from pycomm.collectives.waits import (
    FIRST_NAP_S,
    LAST_NAP_S,
    CommTimeout,
    PeerArgumentError,
    SettingsMismatchError,
    background_thread,
    get_timeout,
    poll,
    tester,
)

#: Seconds the engine's thread sleeps when idle before it looks for dropped requests anyway.
IDLE_S = 1.0

# A queued collective: run(comm) on the engine's thread, then done(result, error).
_Job = tuple[Callable[[MPI.Comm], Any], Callable[[Any, BaseException | None], None]]


class Engine:
    """pycomm's state and progress for one communicator (see the module's docstring)."""

    def __init__(self, comm: MPI.Comm, owned: bool = False) -> None:
        self._user = comm
        self._comm: MPI.Comm | None = comm if owned else None
        self._owned = owned
        self.where = f"rank {comm.Get_rank()} of {comm.Get_size()}"
        self.timeout_s: float | None = None  # None: pycomm's global timeout
        self.broken: str | None = None
        self._dup_lock = threading.Lock()
        self._cv = threading.Condition(threading.Lock())
        self._queue: deque[_Job | None] = deque()
        self._watched: list[Posted] = []
        self._inflight: set[Posted] = set()
        self._dropped: deque[Posted] = deque()
        self._inbox: Inbox | None = None
        self.exec_lock = threading.Lock()  # held while a collective runs, on either thread
        self._thread: threading.Thread | None = None
        self._wire: ThreadPoolExecutor | None = None
        self.link = Link(comm.Get_size())  # latency and bandwidth, measured as it runs
        self.agreed_s = 0.0  # seconds spent in agreements so far (``agree``), waits included
        self.observed: Any = None  # what codec="auto" learned here (auto_state.Observed)
        self.settled: dict[tuple, Any] = {}  # the compiled path's plans (``hot``), by kind of call
        # State other layers tie to this communicator (pycomm.ucc's team), and what closes it.
        self.attached: dict[str, Any] = {}
        self._closers: list[Callable[[bool], None]] = []

    # -- the private communicator --
    @property
    def comm(self) -> MPI.Comm:
        """pycomm's duplicate of the communicator; made (collectively) on first use."""
        own = self._comm
        if own is None:
            with self._dup_lock:  # this engine's lock only: other communicators go on
                own = self._comm
                if own is None:
                    own, req = self._user.Idup()
                    self.wait([req], "the first pycomm collective (duplicating the communicator)")
                    self._comm = own
        return own

    @property
    def inbox(self) -> Inbox:
        """The posted receives on the communicator itself (point-to-point), matched by probe
        in MPI's order (``pycomm.collectives.inbox``)."""
        inbox = self._inbox
        if inbox is None:
            with self._cv:  # not _dup_lock: a first collective holds it while it waits
                if self._inbox is None:
                    self._inbox = Inbox(self._user)
                inbox = self._inbox
        return inbox

    # -- deadlines and waits --
    def deadline(self, timeout_s: float | None = None) -> float:
        secs = timeout_s if timeout_s is not None else self.timeout_s
        return time.monotonic() + (get_timeout() if secs is None else secs)

    def check_usable(self) -> None:
        """Raise CommTimeout at once if an earlier operation on this communicator timed out."""
        if self.broken is not None:
            raise CommTimeout(f"pycomm: this communicator cannot be used any more: {self.broken}")

    def wait(
        self,
        reqs: list[MPI.Request],
        what: str,
        deadline: float | None = None,
        status: MPI.Status | None = None,
    ) -> None:
        """Drive MPI until every request completes; on timeout mark broken, raise CommTimeout.

        ``status`` receives the status of a single request.
        """
        self.wait_until(tester(reqs, status), what, deadline)

    def wait_until(
        self, test: Callable[[], object], what: str, deadline: float | None = None
    ) -> None:
        """Call test() until it returns true, under ``wait``'s rules: past the deadline the
        communicator is broken (CommTimeout); an error of the library that test() drives breaks
        it too (MPI's, or a RuntimeError such as ``pycomm.ucc``'s UccError)."""
        deadline = self.deadline() if deadline is None else deadline
        inbox = self._inbox
        if inbox is not None:  # receives pending on the communicator progress meanwhile
            test = _sweeping(inbox, test)
        try:
            done = poll(test, deadline)
        except MPI.Exception as exc:
            self.failed_in_mpi(what, exc)
            raise
        except RuntimeError as exc:
            self.broken = self.broken or f"an earlier {what} failed: {exc}"
            raise
        if not done:
            raise self.timed_out(what, deadline)

    def failed_in_mpi(self, what: str, exc: MPI.Exception) -> None:
        """MPI raised while driving ``what``: a failure (a dead peer) breaks the communicator;
        a message longer than its receive buffer (truncated) does not."""
        if exc.Get_error_class() != MPI.ERR_TRUNCATE:
            self.broken = self.broken or f"an earlier {what} failed in MPI: {exc}"

    def probe(self, comm: MPI.Comm, source: int, tag: int, status: MPI.Status, what: str):
        """A matched probe (``Mprobe``) that gives up at the deadline like ``wait``."""
        found: list[MPI.Message] = []

        def test() -> bool:
            msg = comm.Improbe(source=source, tag=tag, status=status)
            return msg is not None and not found.append(msg)

        deadline = self.deadline()
        if not poll(test, deadline):
            raise self.timed_out(what, deadline)
        return found[0]

    def timed_out(self, what: str, deadline: float) -> CommTimeout:
        """Mark the communicator broken and return the error to raise."""
        if self.broken is None:
            self.broken = f"an earlier {what} timed out"
        late = time.monotonic() - deadline
        return CommTimeout(
            f"pycomm: {what} did not complete within the timeout on {self.where} "
            f"({late:.2f} s past the deadline): some rank did not join it or died. The "
            "communicator is unusable; end the job (run scripts as `python -m mpi4py "
            "script.py`, or inside `pycomm.abort_on_error()`, so that the error aborts it)."
        )

    # -- the agreement --
    def agree(self, what: str, settings: int, **fields: object) -> np.void:
        """Check that every rank passed the same settings digest; reduce the agreement record
        (``agreement.RECORD``: ``fields`` by name, the rest zero) with MAX and return it.

        Every rank must call ``agree`` or ``agree_failed`` at the same point: one 160-byte
        allreduce, whatever the codec. Raises on every rank when any rank's arguments were
        invalid or the digests differ.
        """
        doubles, record = agreement.blank()
        record["settings"], record["neg_settings"] = settings, -settings
        for name, value in fields.items():
            record[name] = value
        t0 = time.perf_counter()
        self._reduce_max(doubles, what)
        took = time.perf_counter() - t0
        self.agreed_s += took
        self.link.add_latency(took)
        self.judge(record, what)
        return record

    def judge(self, record: np.void, what: str) -> None:
        """Raise, on every rank alike, what an agreed record says went wrong: a rank's invalid
        arguments, or settings digests that differ."""
        if record["invalid"]:
            raise PeerArgumentError(
                f"pycomm: another rank passed invalid arguments to {what} ({self.where}); "
                "its own error says which"
            )
        if record["settings"] != -record["neg_settings"]:
            raise SettingsMismatchError(
                f"pycomm: ranks called {what} with different arguments ({self.where}); every "
                "rank must pass the same codec, parameters, dtype, size, op and root"
            )

    def agree_failed(self, what: str, error: BaseException) -> None:
        """This rank's arguments are invalid: tell the others in the agreement, raise error."""
        doubles, record = agreement.blank()
        record["invalid"] = 1.0
        self._reduce_max(doubles, what)
        raise error

    def _reduce_max(self, v: np.ndarray, what: str) -> None:
        comm = self.comm
        self.wait([comm.Iallreduce(MPI.IN_PLACE, v, op=MPI.MAX)], f"settings check of {what}")

    # -- call order: inline when idle, else the engine's thread --
    def try_begin(self) -> bool:
        """Claim the communicator for an inline collective; False if anything is queued."""
        if self._queue or not self.exec_lock.acquire(False):
            return False
        if self._queue:  # another thread queued meanwhile: keep the order
            self.exec_lock.release()
            return False
        return True

    def run(self, job: Callable[[MPI.Comm], Any], what: str) -> Any:
        """Run a blocking collective as the next in call order and return its result."""
        self.check_usable()
        comm = self.comm
        if self.try_begin():
            try:
                return job(comm)
            finally:
                self.exec_lock.release()
        if self.on_thread():
            # A callback runs on the engine's thread: waiting there for collectives queued
            # behind it would never end.
            raise RuntimeError(
                f"pycomm: blocking {what} from a callback on the engine's thread while "
                "collectives are queued; use the non-blocking form there"
            )
        future: Future = Future()
        self.enqueue(job, _completer(future))
        return future.result()

    def submit(self, job: Callable[[MPI.Comm], Any]) -> Request:
        """Queue a collective for the engine's thread; its Request completes when it is done."""
        self.check_usable()
        self.comm  # noqa: B018 (made now, in call order, if it is the first collective)
        future: Future = Future()
        self.enqueue(job, _completer(future))
        return Request(future)

    def enqueue(
        self, job: Callable[[MPI.Comm], Any], done: Callable[[Any, BaseException | None], None]
    ) -> None:
        """Queue job(comm); done(result, error) is called on the engine's thread after it."""
        with self._cv:
            self._queue.append((job, done))
            self._start_thread()
            self._cv.notify()

    def on_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def wire(self) -> ThreadPoolExecutor:
        """The thread that exchanges segment k of a pipelined collective while the caller
        compresses segment k+1 (started by the first collective large enough to pipeline)."""
        with self._cv:
            if self._wire is None:
                self._wire = ThreadPoolExecutor(
                    1, thread_name_prefix="pycomm-wire", initializer=background_thread
                )
            return self._wire

    # -- requests somebody wants a callback of --
    def watch(self, posted: Posted) -> None:
        """Have the engine's thread complete ``posted`` (it has a callback, nobody waits)."""
        with self._cv:
            self._watched.append(posted)
            self._start_thread()
            self._cv.notify()

    # -- point-to-point requests in flight: this engine owns them and their buffers --
    def hold(self, posted: Posted) -> None:
        """Keep ``posted`` until ``release``. The first post starts the engine's thread, which
        completes the requests whose handles are dropped."""
        if self._thread is None:
            with self._cv:
                self._start_thread()
        self._inflight.add(posted)

    def release(self, posted: Posted) -> None:
        """MPI is done with ``posted``'s requests: its buffers may go."""
        self._inflight.discard(posted)

    def dropped(self, posted: Posted) -> None:
        """Nobody can wait on ``posted`` any more: the engine's thread completes it.

        Called from a handle's ``__del__``, so on any thread and maybe inside a lock: it waits
        for none. When the engine's lock is busy, the thread finds it within ``IDLE_S``.
        """
        self._dropped.append(posted)
        if self._cv.acquire(False):
            self._cv.notify()
            self._cv.release()

    def _settle(self) -> None:
        """Test every request in flight once; while any is left, this engine stays referenced
        (``_closed_busy``), so that MPI never reads or writes a freed buffer. (The dropped
        ones are among them: with the thread stopped, nobody else looks at them.)"""
        self._dropped.clear()
        for posted in list(self._inflight):
            posted.progress()
        if self._inflight:
            _closed_busy.add(self)
        else:
            _closed_busy.discard(self)

    # -- the thread --
    def _start_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name=f"pycomm-engine-{self.where}", daemon=True
            )
            self._thread.start()

    def _loop(self) -> None:
        background_thread()
        nap = FIRST_NAP_S
        while True:
            with self._cv:
                while not self._queue and not self._watched and not self._dropped:
                    self._cv.wait(IDLE_S)
                while self._dropped:
                    self._watched.append(self._dropped.popleft())
                item = self._queue.popleft() if self._queue else False
            if item is None:
                return
            if item is not False:
                self._execute(item)
                nap = FIRST_NAP_S
                continue
            if self._progress_watched():
                nap = FIRST_NAP_S
            else:
                with self._cv:
                    if not self._queue:
                        self._cv.wait(nap)
                nap = min(2 * nap, LAST_NAP_S)

    def _execute(self, item: _Job) -> None:
        job, done = item
        result, error = None, None
        with self.exec_lock:
            try:
                self.check_usable()
                result = job(self.comm)
            except BaseException as exc:  # handed to the waiter, never lost
                error = exc
        done(result, error)

    def _progress_watched(self) -> bool:
        """Test the watched requests once; True if any completed."""
        with self._cv:
            watched = list(self._watched)
        finished = [p for p in watched if p.progress()]
        if finished:
            with self._cv:
                self._watched = [p for p in self._watched if p not in finished]
        return bool(finished)

    def stop_threads(self, timeout: float | None = None) -> None:
        """Let queued collectives finish, then stop the engine's threads."""
        with self._cv:
            thread = self._thread
            if thread is not None:
                self._queue.append(None)
                self._cv.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._thread = None
        if self._wire is not None:
            self._wire.shutdown(wait=timeout is None)
            self._wire = None

    def on_close(self, closer: Callable[[bool], None]) -> None:
        """Have ``close`` call closer(broken) (broken: an operation failed or timed out)."""
        self._closers.append(closer)

    def close(self) -> None:
        """Stop the threads, settle the requests in flight (those of engines closed earlier
        too), free the duplicate (the communicator's delete callback)."""
        self.stop_threads()
        if self._inbox is not None:
            self._inbox.close()
        for engine in [*_closed_busy, self]:
            engine._settle()
        if _closed_busy:
            _start_settler()
        closers, self._closers = self._closers, []
        for closer in closers:
            closer(self.broken is not None)
        self.attached.clear()
        self.settled.clear()
        own, self._comm = self._comm, None
        if own is not None and not self._owned and self.broken is None:
            own.Free()
        self.broken = self.broken or "the communicator was freed"


def _sweeping(inbox: Inbox, test: Callable[[], object]) -> Callable[[], object]:
    """test(), after matching what has arrived for the inbox's pending receives."""

    def swept() -> object:
        if inbox.pending():
            inbox.sweep()
        return test()

    return swept


def _completer(future: Future) -> Callable[[Any, BaseException | None], None]:
    def done(result: Any, error: BaseException | None) -> None:
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)

    return done


# -- one engine per communicator, cached on it --

_keyval: int | None = None
_keyval_lock = threading.Lock()


_engines: weakref.WeakSet[Engine] = weakref.WeakSet()
#: Closed engines with point-to-point requests still in flight (see ``Engine._settle``).
_closed_busy: set[Engine] = set()


_settle_lock = threading.Lock()
_settler: list[threading.Thread] = []  # the settling thread while one runs
_stopping = threading.Event()


def _start_settler() -> None:
    """Complete the requests of closed engines in the background: nobody else drives them
    (Open MPI over UCX moves a large message only while the receiver calls MPI). Each request
    ends by its deadline at the latest."""
    with _settle_lock:
        if not _settler and not _stopping.is_set():
            _settler.append(threading.Thread(target=_settle_closed, name="pycomm-settler"))
            _settler[0].daemon = True
            _settler[0].start()


def _settle_closed() -> None:
    background_thread()
    nap = FIRST_NAP_S
    while not _stopping.is_set():
        with _settle_lock:
            busy = [*_closed_busy]
            if not busy:
                _settler.clear()
                return
        for engine in busy:
            engine._settle()
        time.sleep(nap)
        nap = min(2 * nap, LAST_NAP_S)


@atexit.register
def _stop_all() -> None:
    # Registered after mpi4py's import, so it runs before MPI_Finalize: no engine thread is
    # left running (or holding torch objects) while MPI and the interpreter shut down, and the
    # requests whose handles were dropped are completed where MPI has finished them.
    _stopping.set()
    with _settle_lock:
        settler = [*_settler]
    for thread in settler:
        thread.join(5.0)
    for engine in list(_engines):
        engine.stop_threads(timeout=5.0)
        engine._settle()


def _delete(comm: MPI.Comm, keyval: int, engine: Engine) -> None:
    engine.close()


def _key() -> int:
    global _keyval
    if _keyval is None:
        with _keyval_lock:
            if _keyval is None:
                _keyval = MPI.Comm.Create_keyval(delete_fn=_delete)
    return _keyval


def engine_of(comm: MPI.Comm | None, owned: bool = False) -> Engine:
    """The engine of comm (COMM_WORLD by default), made on first use without MPI traffic.

    ``owned``: comm belongs to pycomm (a torch process group's), so the engine uses it as its
    private communicator instead of a duplicate.
    """
    comm = MPI.COMM_WORLD if comm is None else comm
    if comm == MPI.COMM_NULL:
        raise ValueError("pycomm: MPI.COMM_NULL is not a communicator to communicate on")
    key = _key()
    engine = comm.Get_attr(key)
    if engine is None:
        with _keyval_lock:
            engine = comm.Get_attr(key)
            if engine is None:
                engine = Engine(comm, owned)
                comm.Set_attr(key, engine)
                _engines.add(engine)
    return engine
