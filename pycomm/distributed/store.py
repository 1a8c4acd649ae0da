"""A torch key-value store served over MPI: no socket, no MASTER_ADDR.

Rank 0 holds the table. A server thread on rank 0 answers the other ranks' requests, which
arrive on a duplicated communicator (tag ``_REQUEST``) in the fixed, typed encoding of
``_store_wire`` (never pickle); each reply goes back on a tag the requester chose for that
request, with the request's id, so several threads of one rank may wait at once and a late
reply is never taken for another request's. Requests for keys that do not exist yet (``get``,
``wait``, ``multi_get``) are parked on rank 0 and answered as soon as the keys are written, or
with a timeout error at their deadline. Rank 0's own calls use the table directly.

The server survives any request: a request whose header cannot be read is dropped with a
logged warning, any other bad request is answered with an error. Its state stays bounded: sent
replies are reaped on every turn of its loop, parked requests leave at their deadline.

Every rank's ``MPIStore`` must be created together (it duplicates the communicator), and the
stores shut down together at interpreter exit (a barrier, then rank 0 stops serving), so no
rank loses its server while it still needs it.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import sys
import threading
import time
from datetime import timedelta
from typing import Any

import torch.distributed as dist
from mpi4py import MPI

from pycomm.collectives.waits import poll
from pycomm.distributed import _store_wire as wire
from pycomm.distributed._store_table import Table
from pycomm.distributed._store_wire import CHANGING, WAITING, Op

_REQUEST = 1
_SPIN_S = 2e-3  # how long the server keeps polling without sleep after a request
_MAX_SLEEP_S = 1e-3  # the longest pause between polls while requests came lately
_IDLE_S = 1.0  # after this long without requests the server polls less often
_IDLE_SLEEP_S = 5e-3

log = logging.getLogger(__name__)


def _seconds(timeout: timedelta | None, default: float) -> float:
    if timeout is None:
        return default
    s = timeout.total_seconds()
    return default if s <= 0 else s


def require_thread_multiple() -> None:
    """Raise unless MPI runs with MPI_THREAD_MULTIPLE (a local query, no communication)."""
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        raise RuntimeError(
            "mpiucc needs MPI_THREAD_MULTIPLE (its communication thread and store server call "
            "MPI concurrently); initialise MPI with mpi4py's default thread level"
        )


class _Parked:
    """A request of another rank waiting on rank 0 for its keys."""

    __slots__ = ("source", "tag", "rid", "op", "keys", "deadline")

    def __init__(
        self, source: int, tag: int, rid: int, op: Op, keys: list[str], deadline: float
    ) -> None:
        self.source, self.tag, self.rid = source, tag, rid
        self.op, self.keys, self.deadline = op, keys, deadline


class MPIStore(dist.Store):
    """A ``torch.distributed.Store`` whose table lives on rank 0 of ``comm`` (collective)."""

    def __init__(self, comm: MPI.Comm, timeout: timedelta = timedelta(minutes=30)) -> None:
        super().__init__()
        require_thread_multiple()
        self.set_timeout(timeout)
        self._comm = comm.Dup()
        self._rank = self._comm.Get_rank()
        self._ids = itertools.count()
        self._id_lock = threading.Lock()
        self._bye: MPI.Request | None = None  # the closing barrier, once started
        self._table: Table | None = None
        if self._rank == 0:
            self._table = Table()
            self._parked: list[_Parked] = []  # guarded by the table's cv
            self._sends: list[tuple[MPI.Request, bytes]] = []  # replies in flight, same guard
            self._stop = threading.Event()
            self._server = threading.Thread(target=self._serve, name="mpiucc-store", daemon=True)
            self._server.start()
        _live.append(self)

    # -- torch.distributed.Store (the names torch's Python trampoline looks up) --
    def set(self, key: str, value: bytes | str) -> None:
        self._call(Op.SET, (key, _as_bytes(value)))

    def get(self, key: str) -> bytes:
        return self._call(Op.GET, ([key],))

    def add(self, key: str, amount: int) -> int:
        return self._call(Op.ADD, (key, int(amount)))

    def compare_set(self, key: str, expected: bytes | str, desired: bytes | str) -> bytes:
        return self._call(Op.CAS, (key, _as_bytes(expected), _as_bytes(desired)))

    def append(self, key: str, value: bytes | str) -> None:
        self._call(Op.APPEND, (key, _as_bytes(value)))

    def multi_get(self, keys: list[str]) -> list[bytes]:
        return self._call(Op.MGET, (list(keys),))

    def multi_set(self, keys: list[str], values: list[bytes | str]) -> None:
        self._call(Op.MSET, (list(keys), [_as_bytes(v) for v in values]))

    def wait(self, keys: list[str], timeout: timedelta | None = None) -> None:
        self._call(Op.WAIT, (list(keys),), timeout)

    def check(self, keys: list[str]) -> bool:
        return self._call(Op.CHECK, (list(keys),))

    def deleteKey(self, key: str) -> bool:  # noqa: N802 (torch's trampoline name)
        return self._call(Op.DEL, (key,))

    def getNumKeys(self) -> int:  # noqa: N802 (torch's trampoline name)
        return self._call(Op.NUM, ())

    delete_key = deleteKey
    num_keys = getNumKeys

    # -- requests --
    def _call(self, op: Op, args: tuple, timeout: timedelta | None = None) -> Any:
        if self._bye is not None:
            raise dist.DistStoreError("mpiucc store: used after its process group was destroyed")
        limit = _seconds(timeout, self.timeout.total_seconds())
        if self._table is not None:
            return self._local(op, args, limit)
        with self._id_lock:
            rid = next(self._ids) & 0xFFFFFFFF
        tag = wire.FIRST_REPLY_TAG + rid % wire.REPLY_TAGS
        deadline = time.monotonic() + limit + 1.0
        timeout_error = dist.DistStoreError(_timeout_text(op, args, limit))
        sent = self._comm.Isend(wire.encode_request(op, tag, rid, limit, args), 0, _REQUEST)
        if not poll(sent.Test, deadline):
            raise timeout_error
        status = MPI.Status()
        found: list[MPI.Message] = []

        def arrived() -> bool:
            msg = self._comm.improbe(0, tag, status)
            return msg is not None and not found.append(msg)

        while poll(arrived, deadline):  # pycomm's one wait policy, with the store's deadline
            buf = bytearray(status.Get_count(MPI.BYTE))
            found.pop().Recv([buf, MPI.BYTE])
            try:
                got, ok, parts = wire.decode_reply(buf)
            except wire.WireError as exc:
                raise dist.DistStoreError(f"mpiucc store: malformed reply: {exc}") from None
            if got == rid:
                if not ok:
                    raise dist.DistStoreError(wire.error_text(parts))
                return wire.result(op, parts)
            # else a late reply to an earlier request that used this tag
        raise timeout_error

    def _local(self, op: Op, args: tuple, limit: float) -> Any:
        table = self._table
        with table.cv:
            if op in WAITING:
                deadline = time.monotonic() + limit
                while True:
                    ok, value = table.ready(op, args[0])
                    if ok:
                        return value
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise dist.DistStoreError(_timeout_text(op, args, limit))
                    table.cv.wait(left)
            try:
                value = table.apply(op, args)
            except ValueError as exc:
                raise dist.DistStoreError(f"mpiucc store: {exc}") from None
            if op in CHANGING:
                table.cv.notify_all()
                self._answer_parked()
            return value

    # -- rank 0's server --
    def _serve(self) -> None:
        status = MPI.Status()
        last = time.monotonic()
        pause = 0.0
        while not self._stop.is_set():
            msg = None
            try:
                msg = self._comm.improbe(MPI.ANY_SOURCE, _REQUEST, status)
                now = time.monotonic()
                if msg is not None:
                    last, pause = now, 0.0
                    source = status.Get_source()
                    buf = bytearray(status.Get_count(MPI.BYTE))
                    msg.Recv([buf, MPI.BYTE])
                    self._handle(source, buf, now)
                with self._table.cv:
                    self._reap_sends()
                    if self._parked:
                        self._expire_parked(now)
            except Exception:  # a defect of the server itself: say so, and keep serving
                log.exception("mpiucc store: error in the server loop")
                now = time.monotonic()
            if msg is not None:
                continue
            bye = self._bye
            if bye is not None and bye.Test():
                break  # every rank is done with the store
            if now - last > _SPIN_S:
                longest = _IDLE_SLEEP_S if now - last > _IDLE_S else _MAX_SLEEP_S
                pause = min(longest, pause * 2 or 2e-5)
            time.sleep(pause)

    def _handle(self, source: int, buf: bytearray, now: float) -> None:
        """Answer one request of `source`; a bad one is answered with an error or dropped."""
        try:
            req = wire.decode_request(buf)
        except wire.WireError as exc:
            log.warning(
                "mpiucc store: dropped a malformed request of %d bytes from rank %d: %s",
                len(buf),
                source,
                exc,
            )
            return
        table = self._table
        with table.cv:
            try:
                op, args = wire.parse_args(req)
                if op in WAITING:
                    ok, answer = table.ready(op, args[0])
                    if not ok:
                        deadline = now + req.timeout
                        self._parked.append(
                            _Parked(source, req.tag, req.rid, op, args[0], deadline)
                        )
                        return
                    self._reply(source, req.tag, wire.encode_reply(req.rid, op, answer))
                    return
                value = table.apply(op, args)
                self._reply(source, req.tag, wire.encode_reply(req.rid, op, value))
            except Exception as exc:  # a bad request: tell the requester, keep serving
                self._reply(source, req.tag, wire.encode_error(req.rid, f"mpiucc store: {exc}"))
                return
            if op in CHANGING:
                table.cv.notify_all()
                self._answer_parked()

    def _reply(self, dest: int, tag: int, payload: bytes) -> None:
        """Send a reply (called with the table's cv held); the payload lives until sent."""
        self._sends.append((self._comm.Isend(payload, dest=dest, tag=tag), payload))

    def _reap_sends(self) -> None:
        if self._sends:
            self._sends = [s for s in self._sends if not s[0].Test()]

    def _answer_parked(self) -> None:
        still = []
        for p in self._parked:
            ok, answer = self._table.ready(p.op, p.keys)
            if ok:
                self._reply(p.source, p.tag, wire.encode_reply(p.rid, p.op, answer))
            else:
                still.append(p)
        self._parked = still

    def _expire_parked(self, now: float) -> None:
        still = []
        for p in self._parked:
            if now > p.deadline:
                text = _timeout_text(p.op, (p.keys,), None)
                self._reply(p.source, p.tag, wire.encode_error(p.rid, text))
            else:
                still.append(p)
        self._parked = still

    def close(self) -> None:
        """Say this rank is done with the store (collective, but returns at once).

        Rank 0 serves until every rank has closed, then its server stops by itself.
        """
        if self._bye is None:
            self._bye = self._comm.Ibarrier()

    def _finish(self, timeout: float) -> None:
        """At exit: close, and give the closing barrier up to `timeout` seconds to complete."""
        self.close()
        deadline = time.monotonic() + timeout
        if self._table is not None:
            self._server.join(timeout)
            self._stop.set()
            self._server.join()
            return
        while not self._bye.Test() and time.monotonic() < deadline:
            time.sleep(1e-4)


def _as_bytes(value: bytes | str | Any) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def _timeout_text(op: Op, args: tuple, limit: float | None) -> str:
    keys = args[0] if args else []
    after = "" if limit is None else f" after {limit:g} s"
    return f"mpiucc store: timeout{after} waiting for keys {keys} ({op.name.lower()})"


# Every store ever made, in creation order (the same on every rank); they live until exit.
_live: list[MPIStore] = []


_crashed = False
_previous_hook = sys.excepthook


def _note_crash(*args: Any) -> None:
    global _crashed
    _crashed = True
    _previous_hook(*args)


sys.excepthook = _note_crash


@atexit.register
def _close_all() -> None:
    # Registered after mpi4py's import, so it runs before MPI is finalized. After an uncaught
    # exception nobody waits for the other ranks: mpiexec ends the job.
    for store in _live:
        store._finish(timeout=0.0 if _crashed else 60.0)
