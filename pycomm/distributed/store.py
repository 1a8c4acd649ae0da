"""A torch key-value store served over MPI: no socket, no MASTER_ADDR.

Rank 0 holds the table. A server thread on rank 0 answers the other ranks' requests, which
arrive as pickled messages on a duplicated communicator (tag ``_REQUEST``); each reply goes
back on a tag the requester chose for that request, so several threads of one rank may wait
at once. Requests for keys that do not exist yet (``get``, ``wait``, ``multi_get``) are parked
on rank 0 and answered as soon as the keys are written, or with a timeout error at their
deadline. Rank 0's own calls use the table directly.

Every rank's ``MPIStore`` must be created together (it duplicates the communicator), and the
stores shut down together at interpreter exit (a barrier, then rank 0 stops serving), so no
rank loses its server while it still needs it.
"""

from __future__ import annotations

import atexit
import itertools
import sys
import threading
import time
from datetime import timedelta
from typing import Any

import torch.distributed as dist
from mpi4py import MPI

_REQUEST = 1
_FIRST_REPLY_TAG = 2
_REPLY_TAGS = 32000  # MPI guarantees tags up to 32767
_SPIN_S = 2e-3  # how long the server keeps polling without sleep after a request
_MAX_SLEEP_S = 1e-3  # the longest pause between polls while requests came lately
_IDLE_S = 1.0  # after this long without requests the server polls less often
_IDLE_SLEEP_S = 5e-3


def _seconds(timeout: timedelta | None, default: float) -> float:
    if timeout is None:
        return default
    s = timeout.total_seconds()
    return default if s <= 0 else s


class _Table:
    """The key-value table; every method is called with ``cv`` held."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.cv = threading.Condition()

    def apply(self, op: str, args: tuple) -> Any:
        d = self.data
        if op == "set":
            d[args[0]] = bytes(args[1])
        elif op == "add":
            value = int(d.get(args[0], b"0")) + int(args[1])
            d[args[0]] = str(value).encode()
            return value
        elif op == "cas":
            key, expected, desired = args
            current = d.get(key)
            if (current is None and not expected) or current == bytes(expected):
                d[key] = bytes(desired)
                return bytes(desired)
            return bytes(expected) if current is None else current
        elif op == "append":
            d[args[0]] = d.get(args[0], b"") + bytes(args[1])
        elif op == "mset":
            for key, value in zip(args[0], args[1], strict=True):
                d[key] = bytes(value)
        elif op == "check":
            return all(k in d for k in args[0])
        elif op == "del":
            return d.pop(args[0], None) is not None
        elif op == "num":
            return len(d)
        elif op in ("get", "wait", "mget"):
            return self.ready(op, args[0])
        else:
            raise ValueError(f"unknown store operation {op!r}")
        return None

    def ready(self, op: str, keys: list[str]) -> tuple[bool, Any]:
        """(True, answer) when every key exists, else (False, None)."""
        d = self.data
        if not all(k in d for k in keys):
            return False, None
        if op == "get":
            return True, d[keys[0]]
        if op == "mget":
            return True, [d[k] for k in keys]
        return True, None


_CHANGES = frozenset({"set", "add", "cas", "append", "mset"})


class MPIStore(dist.Store):
    """A ``torch.distributed.Store`` whose table lives on rank 0 of ``comm`` (collective)."""

    def __init__(self, comm: MPI.Comm, timeout: timedelta = timedelta(minutes=30)) -> None:
        super().__init__()
        self.set_timeout(timeout)
        self._comm = comm.Dup()
        self._rank = self._comm.Get_rank()
        self._tags = itertools.count()
        self._tag_lock = threading.Lock()
        self._bye: MPI.Request | None = None  # the closing barrier, once started
        self._table: _Table | None = None
        if self._rank == 0:
            self._table = _Table()
            self._parked: list[tuple[int, int, str, list[str], float]] = []
            self._sends: list[MPI.Request] = []
            self._stop = threading.Event()
            self._server = threading.Thread(target=self._serve, name="mpiucc-store", daemon=True)
            self._server.start()
        _live.append(self)

    # -- torch.distributed.Store (the names torch's Python trampoline looks up) --
    def set(self, key: str, value: bytes | str) -> None:
        self._call("set", (key, _as_bytes(value)))

    def get(self, key: str) -> bytes:
        return self._call("get", ([key],))

    def add(self, key: str, amount: int) -> int:
        return self._call("add", (key, amount))

    def compare_set(self, key: str, expected: bytes | str, desired: bytes | str) -> bytes:
        return self._call("cas", (key, _as_bytes(expected), _as_bytes(desired)))

    def append(self, key: str, value: bytes | str) -> None:
        self._call("append", (key, _as_bytes(value)))

    def multi_get(self, keys: list[str]) -> list[bytes]:
        return self._call("mget", (list(keys),))

    def multi_set(self, keys: list[str], values: list[bytes | str]) -> None:
        self._call("mset", (list(keys), [_as_bytes(v) for v in values]))

    def wait(self, keys: list[str], timeout: timedelta | None = None) -> None:
        self._call("wait", (list(keys),), timeout)

    def check(self, keys: list[str]) -> bool:
        return self._call("check", (list(keys),))

    def deleteKey(self, key: str) -> bool:  # noqa: N802 (torch's trampoline name)
        return self._call("del", (key,))

    def getNumKeys(self) -> int:  # noqa: N802 (torch's trampoline name)
        return self._call("num", ())

    delete_key = deleteKey
    num_keys = getNumKeys

    # -- requests --
    def _call(self, op: str, args: tuple, timeout: timedelta | None = None) -> Any:
        if self._bye is not None:
            raise dist.DistStoreError("mpiucc store: used after its process group was destroyed")
        limit = _seconds(timeout, self.timeout.total_seconds())
        if self._table is not None:
            return self._local(op, args, limit)
        with self._tag_lock:
            tag = _FIRST_REPLY_TAG + next(self._tags) % _REPLY_TAGS
        self._comm.send((op, args, tag, limit), dest=0, tag=_REQUEST)
        deadline = time.monotonic() + limit + 1.0
        status = MPI.Status()
        pause = 0.0
        start = time.monotonic()
        while True:
            msg = self._comm.improbe(0, tag, status)
            if msg is not None:
                ok, value = msg.recv()
                if ok:
                    return value
                raise dist.DistStoreError(value)
            now = time.monotonic()
            if now > deadline:
                raise dist.DistStoreError(_timeout_text(op, args, limit))
            if now - start > _SPIN_S:
                pause = min(_MAX_SLEEP_S, pause * 2 or 2e-5)
            time.sleep(pause)

    def _local(self, op: str, args: tuple, limit: float) -> Any:
        table = self._table
        with table.cv:
            if op in ("get", "wait", "mget"):
                deadline = time.monotonic() + limit
                while True:
                    ok, value = table.ready(op, args[0])
                    if ok:
                        return value
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise dist.DistStoreError(_timeout_text(op, args, limit))
                    table.cv.wait(left)
            value = table.apply(op, args)
            if op in _CHANGES:
                table.cv.notify_all()
                self._answer_parked()
            return value

    # -- rank 0's server --
    def _serve(self) -> None:
        table = self._table
        status = MPI.Status()
        last = time.monotonic()
        pause = 0.0
        while not self._stop.is_set():
            msg = self._comm.improbe(MPI.ANY_SOURCE, _REQUEST, status)
            now = time.monotonic()
            if msg is None:
                bye = self._bye
                if bye is not None and bye.Test():
                    break  # every rank is done with the store
                if self._parked:
                    with table.cv:
                        self._expire_parked(now)
                if now - last > _SPIN_S:
                    longest = _IDLE_SLEEP_S if now - last > _IDLE_S else _MAX_SLEEP_S
                    pause = min(longest, pause * 2 or 2e-5)
                time.sleep(pause)
                continue
            last, pause = now, 0.0
            source = status.Get_source()
            op, args, tag, limit = msg.recv()
            with table.cv:
                try:
                    value = table.apply(op, args)
                except Exception as exc:  # a bad request: tell the requester
                    self._reply(source, tag, False, f"mpiucc store: {exc}")
                    continue
                if op in ("get", "wait", "mget"):
                    ok, answer = value
                    if ok:
                        self._reply(source, tag, True, answer)
                    else:
                        self._parked.append((source, tag, op, args[0], now + limit))
                    continue
                self._reply(source, tag, True, value)
                if op in _CHANGES:
                    table.cv.notify_all()
                    self._answer_parked()
                if len(self._sends) > 64:
                    self._sends = [r for r in self._sends if not r.Test()]

    def _reply(self, dest: int, tag: int, ok: bool, value: Any) -> None:
        self._sends.append(self._comm.isend((ok, value), dest=dest, tag=tag))

    def _answer_parked(self) -> None:
        still = []
        for entry in self._parked:
            source, tag, op, keys, _ = entry
            ok, answer = self._table.ready(op, keys)
            if ok:
                self._reply(source, tag, True, answer)
            else:
                still.append(entry)
        self._parked = still

    def _expire_parked(self, now: float) -> None:
        still = []
        for entry in self._parked:
            source, tag, op, keys, deadline = entry
            if now > deadline:
                self._reply(source, tag, False, _timeout_text(op, (keys,), None))
            else:
                still.append(entry)
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


def _timeout_text(op: str, args: tuple, limit: float | None) -> str:
    keys = args[0] if args else []
    after = "" if limit is None else f" after {limit:g} s"
    return f"mpiucc store: timeout{after} waiting for keys {keys} ({op})"


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
