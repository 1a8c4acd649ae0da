"""Compressed point-to-point: a frame per message, checked against what the receiver expects."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives._arrays import as_array
from pycomm.collectives._channel import Request, SettingsMismatchError
from pycomm.collectives._frames import recv_frame
from pycomm.collectives._spec import CodecSpec, make_spec
from pycomm.collectives._stats import CommStats


def send(
    x: object,
    dest: int,
    tag: int = 0,
    comm: MPI.Comm | None = None,
    codec: str | CodecSpec | None = "none",
    *,
    stats: CommStats | None = None,
    **params: object,
) -> None:
    """Send x to dest as one self-describing frame (raw when codec is "none").

    ``stats`` (a CommStats) is added to: this rank's bytes, frame bytes and compression time.
    """
    t0 = time.perf_counter()
    comm = MPI.COMM_WORLD if comm is None else comm
    frame = _frame(x, make_spec(codec, **params), stats)
    comm.Send([frame, MPI.BYTE], dest=dest, tag=tag)
    if stats is not None:
        stats.total_seconds += time.perf_counter() - t0


def recv(
    out: object,
    source: int,
    tag: int = 0,
    comm: MPI.Comm | None = None,
    codec: str | CodecSpec | None = "none",
    **params: object,
) -> np.ndarray:
    """Receive a frame from source and decode it into out (size, dtype and codec checked)."""
    comm = MPI.COMM_WORLD if comm is None else comm
    spec = make_spec(codec, **params)
    return _decode_checked(recv_frame(comm, source, tag), as_array(out, writable=True), spec)


def isend(
    x: object,
    dest: int,
    tag: int = 0,
    comm: MPI.Comm | None = None,
    codec: str | CodecSpec | None = "none",
    *,
    stats: CommStats | None = None,
    **params: object,
) -> Request:
    """Non-blocking send: compresses now, sends in the background.

    ``stats`` as for send, but its time is only this call's (the compression and the post).
    """
    t0 = time.perf_counter()
    comm = MPI.COMM_WORLD if comm is None else comm
    frame = _frame(x, make_spec(codec, **params), stats)
    req = comm.Isend([frame, MPI.BYTE], dest=dest, tag=tag)
    if stats is not None:
        stats.total_seconds += time.perf_counter() - t0
    return Request(_MPIWork(req, lambda: None, keep=frame))


def irecv(
    out: object,
    source: int,
    tag: int = 0,
    comm: MPI.Comm | None = None,
    codec: str | CodecSpec | None = "none",
    **params: object,
) -> Request:
    """Non-blocking receive into out; wait() decodes and returns out's flat view."""
    comm = MPI.COMM_WORLD if comm is None else comm
    spec = make_spec(codec, **params)
    o = as_array(out, writable=True)
    kw = _codec_kwargs(spec)
    buf = bytearray(pycodecs.compress_bound(o.size, dtype=o.dtype.name, **kw))
    status = MPI.Status()
    req = comm.Irecv([buf, MPI.BYTE], source=source, tag=tag)

    def finish() -> np.ndarray:
        n = status.Get_count(MPI.BYTE)
        return _decode_checked(memoryview(buf)[:n], o, spec)

    return Request(_MPIWork(req, finish, status=status))


def _codec_kwargs(spec: CodecSpec) -> dict:
    kw = spec.codec_kwargs() if spec.compressed else {"codec": "raw"}
    if spec.codec == "ebq":
        kw.update(error_bound=spec.error_bound, mode=spec.mode)
    return kw


def _frame(x: object, spec: CodecSpec, stats: CommStats | None = None) -> bytearray:
    t0 = time.perf_counter()
    a = as_array(x)
    frame = pycodecs.compress(a, **_codec_kwargs(spec))
    if stats is not None:
        stats.calls += 1
        stats.raw_bytes += a.nbytes
        stats.wire_bytes += len(frame)
        stats.compress_seconds += time.perf_counter() - t0
    return frame


def _decode_checked(frame: Any, out: np.ndarray, spec: CodecSpec) -> np.ndarray:
    h = pycodecs.header(frame)
    want = spec.codec if spec.compressed else "raw"
    if h.codec != want or h.count != out.size or h.dtype != out.dtype.name:
        raise SettingsMismatchError(
            f"received a {h.codec} frame of {h.count} {h.dtype}, expected {want} of "
            f"{out.size} {out.dtype.name}: sender and receiver disagree"
        )
    return pycodecs.decompress(frame, out=out)


class _MPIWork:
    """An MPI request seen as a future: result() waits (with a timeout) and finishes."""

    def __init__(self, req: MPI.Request, finish, status: MPI.Status | None = None, keep=None):
        self._req, self._finish, self._status, self._keep = req, finish, status, keep
        self._done, self._result = False, None

    def done(self) -> bool:
        if not self._done and self._req.Test(self._status):
            self._complete()
        return self._done

    def result(self, timeout: float | None = None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._done:
            if deadline is None:
                self._req.Wait(self._status)
                self._complete()
            elif not self.done():
                if time.monotonic() > deadline:
                    raise TimeoutError("the point-to-point operation did not complete in time")
                time.sleep(1e-4)
        return self._result

    def _complete(self) -> None:
        self._done, self._keep = True, None
        self._result = self._finish()
