"""The MPI-served store against bad requests and long traffic (one scenario per run).

malformed DIR  raw bytes on the request tag: dropped or answered, the server keeps serving
pickle DIR     a pickled request that would run code when unpickled: never unpickled
sends          10k gets: the server's list of replies in flight does not grow
"""

from __future__ import annotations

import logging
import os
import pickle
import struct
import sys
import time
from datetime import timedelta
from pathlib import Path

from mpi4py import MPI

from pycomm.distributed.store import _REQUEST, MPIStore

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()
SCENARIO = sys.argv[1]
REPLY_TAG = 30000  # a tag the store's own requests in this test never use (they start at 2)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(record.getMessage())


def _abort_on_error(*exc_info: object) -> None:
    # A failing rank ends the job at once instead of leaving the others to wait for it.
    sys.__excepthook__(*exc_info)
    sys.stderr.flush()
    WORLD.Abort(1)


sys.excepthook = _abort_on_error
records = Records()
logging.getLogger("pycomm.distributed.store").addHandler(records)
store = MPIStore(WORLD, timedelta(seconds=10))


def header(op: int, tag: int, rid: int, timeout: float, count: int) -> bytes:
    """A request header in the store's format (version 1), for hand-made bad requests."""
    return struct.pack("<BBHIdI", 1, op, tag, rid, timeout, count)


def part(b: bytes) -> bytes:
    return struct.pack("<I", len(b)) + b


def error_reply(comm: MPI.Comm) -> str:
    """Wait (10 s at most) for the server's reply on REPLY_TAG; it must be an error."""
    status = MPI.Status()
    deadline = time.monotonic() + 10
    while not comm.Iprobe(0, REPLY_TAG, status):
        assert time.monotonic() < deadline, "no reply to a request with a readable header"
        time.sleep(1e-3)
    buf = bytearray(status.Get_count(MPI.BYTE))
    comm.Recv([buf, MPI.BYTE], 0, REPLY_TAG)
    version, ok, _, rid, count = struct.unpack_from("<BBHII", buf)
    assert (version, ok, rid, count) == (1, 1, 99, 1), (version, ok, rid, count)
    return bytes(buf[16:]).decode()


if SCENARIO == "malformed":
    comm = store._comm
    dropped = [
        b"",
        b"\x00garbage",
        header(1, 5, 1, 1.0, 0)[:-2],  # truncated header
        header(1, 5, 1, 1.0, 0).replace(b"\x01", b"\x09", 1),  # unknown format version
        header(1, 1, 1, 1.0, 0),  # reply tag outside the store's range
        header(1, 5, 1, 1.0, 2**31) + part(b"k"),  # more parts than bytes
        header(1, 5, 1, 1.0, 1) + struct.pack("<I", 1000) + b"short",  # part overruns
        header(2, 5, 1, 1.0, 1) + part(b"k") + b"tail",  # stray bytes
    ]
    answered = [
        header(200, REPLY_TAG, 99, 1.0, 0),  # unknown operation
        header(2, REPLY_TAG, 99, 1.0, 1) + part(b"\xff\xfe"),  # a key that is not UTF-8
        header(2, REPLY_TAG, 99, float("nan"), 1) + part(b"k"),  # NaN timeout
        header(3, REPLY_TAG, 99, 1.0, 2) + part(b"k") + part(b"12"),  # add of 2 bytes
        header(1, REPLY_TAG, 99, 1.0, 3) + part(b"k") + part(b"v") + part(b"w"),  # set of 3
        header(10, REPLY_TAG, 99, 1.0, 0),  # delete without a key
    ]
    if RANK == 1:
        for raw in dropped:
            comm.Send(raw, dest=0, tag=_REQUEST)
        for raw in answered:
            comm.Send(raw, dest=0, tag=_REQUEST)
            assert error_reply(comm).startswith("mpiucc store:")
        store.set("after", b"still serving")
    # A store whose server survived: every rank reads what rank 1 wrote after the bad requests.
    assert store.get("after") == b"still serving"
    store.set(f"r{RANK}", str(RANK))
    assert store.multi_get([f"r{r}" for r in range(SIZE)]) == [str(r).encode() for r in range(SIZE)]
    assert store.add("n", 1) >= 1
    WORLD.Barrier()
    if RANK == 0:
        drops = [t for t in records.texts if "dropped a malformed request" in t]
        assert len(drops) == len(dropped), records.texts
        assert store._server.is_alive()

elif SCENARIO == "pickle":
    marker = Path(sys.argv[2]) / "unpickled"

    class RunsCode:
        def __reduce__(self) -> tuple:
            return (os.mkdir, (str(marker),))

    if RANK == 1:
        # What the old store's server unpickled: (op, args, reply tag, timeout).
        store._comm.send((RunsCode(), ("k",), 5, 1.0), dest=0, tag=_REQUEST)
        store._comm.Send(pickle.dumps(("get", (["k"],), 5, 1.0)), dest=0, tag=_REQUEST)
        store.set("after", b"1")
    assert store.get("after") == b"1"
    WORLD.Barrier()
    if RANK == 0:
        assert not marker.exists(), "the server unpickled a request from another rank"
        assert sum("dropped a malformed request" in t for t in records.texts) == 2

elif SCENARIO == "sends":
    store.set("key", b"value")
    WORLD.Barrier()
    gets = 10_000 // (SIZE - 1)
    if RANK != 0:
        for _ in range(gets):
            assert store.get("key") == b"value"
    WORLD.Barrier()
    if RANK == 0:
        # Every reply was received, so each send completes; the server reaps them as it turns.
        deadline = time.monotonic() + 5
        while len(store._sends) > SIZE and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(store._sends) <= SIZE, f"{len(store._sends)} replies kept after {gets} gets"
else:
    raise SystemExit(f"unknown scenario {SCENARIO}")

WORLD.Barrier()
if RANK == 0:
    print(f"store {SCENARIO}: passed", flush=True)
