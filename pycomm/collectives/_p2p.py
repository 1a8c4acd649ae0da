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
from pycomm.collectives._wait import check_usable, poll, wait


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
    comm = _usable(comm)
    frame = _frame(x, make_spec(codec, **params), stats)
    wait(comm, comm.Isend([frame, MPI.BYTE], dest=dest, tag=tag), f"send to rank {dest}")
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
    comm = _usable(comm)
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
    comm = _usable(comm)
    frame = _frame(x, make_spec(codec, **params), stats)
    req = comm.Isend([frame, MPI.BYTE], dest=dest, tag=tag)
    if stats is not None:
        stats.total_seconds += time.perf_counter() - t0
    return Request(_MPIWork(comm, req, f"send to rank {dest}", lambda: None, keep=frame))


def irecv(
    out: object,
    source: int,
    tag: int = 0,
    comm: MPI.Comm | None = None,
    codec: str | CodecSpec | None = "none",
    **params: object,
) -> Request:
    """Non-blocking receive into out; wait() decodes and returns out's flat view."""
    comm = _usable(comm)
    spec = make_spec(codec, **params)
    o = as_array(out, writable=True)
    kw = _codec_kwargs(spec)
    buf = bytearray(pycodecs.compress_bound(o.size, dtype=o.dtype.name, **kw))
    status = MPI.Status()
    req = comm.Irecv([buf, MPI.BYTE], source=source, tag=tag)

    def finish() -> np.ndarray:
        n = status.Get_count(MPI.BYTE)
        return _decode_checked(memoryview(buf)[:n], o, spec)

    return Request(_MPIWork(comm, req, f"receive from rank {source}", finish, status))


def _usable(comm: MPI.Comm | None) -> MPI.Comm:
    comm = MPI.COMM_WORLD if comm is None else comm
    check_usable(comm)
    return comm


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
    """An MPI request seen as a future: result() waits and finishes.

    Without a timeout, result() waits up to pycomm's timeout and then raises CommTimeout (the
    communicator is broken); with one, it raises TimeoutError and the operation goes on.
    """

    def __init__(self, comm, req, what: str, finish, status=None, keep=None):
        self._comm, self._req, self._what = comm, req, what
        self._finish, self._status, self._keep = finish, status, keep
        self._done, self._result = False, None

    def done(self) -> bool:
        if not self._done and self._req.Test(self._status):
            self._complete()
        return self._done

    def result(self, timeout: float | None = None) -> Any:
        if self._done:
            return self._result
        if timeout is None:
            wait(self._comm, self._req, self._what, self._status)
        elif not poll(self.done, time.monotonic() + timeout):
            raise TimeoutError(f"{self._what} did not complete within {timeout:g} s")
        if not self._done:
            self._complete()
        return self._result

    def _complete(self) -> None:
        self._done, self._keep = True, None
        self._result = self._finish()
