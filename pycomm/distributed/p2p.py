"""Point-to-point of the torch backend: checked messages, posted on the caller's thread.

Posting at call time keeps the matching order the user wrote and lets both ranks post irecv
before isend without deadlock. Each message carries a 16-byte trailer (magic, dtype, byte
count) sent in the same MPI message through a struct datatype, so the sender makes no copy. A
receive waits in the group's inbox (``pycomm.collectives.inbox``: matched by probe in MPI's
order, progressed by the engine's thread) and takes its message whole into scratch of the
message's size, so that a longer message than the tensor never lands past a buffer (Open MPI 5
over UCX writes it there). The sender's dtype and size are checked, and only then is the
scratch copied into the tensor: on a mismatch it raises ``SettingsMismatchError`` and the
tensor keeps what it held. That copy costs a memcpy (on 2 ranks of a 2-core machine nothing
measurable at 4 KiB, about 0.3 ms on a 1 ms 4 MiB message). Completion, deadlines, the broken
mark and the buffers' lifetime are the group engine's (``pycomm.collectives.requests.Posted``):
a receive that times out is cancelled and the group refuses further use.
"""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from mpi4py import MPI

from pycomm.collectives.engine import Engine
from pycomm.collectives.requests import Posted
from pycomm.collectives.waits import SettingsMismatchError
from pycomm.distributed._buffers import host, is_plain
from pycomm.distributed.work import timeout_seconds

_MAGIC = 0x6D75_6370  # "mucp"
_TRAILER = struct.Struct("<IIQ")  # magic, dtype code, byte count
_from_address = MPI.buffer.fromaddress


@functools.cache
def _dtype_code(dtype: torch.dtype) -> int:
    return zlib.crc32(str(dtype).encode())


def _message(t: torch.Tensor, trailer: np.ndarray) -> MPI.Datatype:
    """A datatype over t's bytes then the trailer's, by absolute address (with MPI.BOTTOM)."""
    nbytes = t.numel() * t.element_size()
    blocks = [(nbytes, t.data_ptr())] if nbytes else []
    blocks.append((_TRAILER.size, trailer.ctypes.data))
    lengths, addresses = zip(*blocks, strict=True)
    dt = MPI.BYTE.Create_struct(list(lengths), list(addresses), [MPI.BYTE] * len(blocks))
    return dt.Commit()


def _post(t: torch.Tensor, trailer: np.ndarray, call: Callable[[list], MPI.Request]) -> MPI.Request:
    dt = _message(t, trailer)
    try:
        return call([MPI.BOTTOM, 1, dt])
    finally:
        dt.Free()  # MPI keeps it until the operation completes


def isend(engine: Engine, comm: MPI.Comm, t: torch.Tensor, dst: int, tag: int) -> Posted:
    src = host(t)
    trailer = np.empty(_TRAILER.size, np.uint8)
    _TRAILER.pack_into(trailer, 0, _MAGIC, _dtype_code(t.dtype), src.numel() * src.element_size())
    req = _post(src, trailer, lambda m: comm.Isend(m, dst, tag))
    return Posted(engine, [req], lambda: None, f"send to {dst}", keep=(src, trailer))


def irecv(engine: Engine, comm: MPI.Comm, t: torch.Tensor, src: int, tag: int) -> Posted:
    """Post a receive into t in the group's inbox (``comm`` is the engine's own): matched by
    probe and taken whole, so that no message is ever longer than its buffer."""
    nbytes = t.numel() * t.element_size()
    status = MPI.Status()
    slot = engine.inbox.post(src, tag)

    def finish() -> None:
        scratch = np.frombuffer(slot.message(), np.uint8)
        got = scratch.nbytes - _TRAILER.size
        if got != nbytes:
            raise SettingsMismatchError(
                f"mpiucc: recv from rank {status.Get_source()} got {max(got, 0)} bytes where "
                f"the tensor holds {nbytes} ({t.numel()} x {t.dtype}): sender and receiver "
                "disagree on the size"
            )
        magic, code, sent = _TRAILER.unpack_from(scratch, nbytes)
        if magic != _MAGIC or sent != nbytes:
            raise SettingsMismatchError(
                f"mpiucc: recv from rank {status.Get_source()}: a message of {nbytes} bytes "
                "that no mpiucc send made"
            )
        if code != _dtype_code(t.dtype):
            raise SettingsMismatchError(
                f"mpiucc: recv from rank {status.Get_source()}: the sender's tensor is not "
                f"{t.dtype}, the receiver's is"
            )
        _land(t, scratch[:nbytes])

    what = f"recv from {'any source' if src == MPI.ANY_SOURCE else src}"
    posted = Posted(engine, [slot], finish, what, status=status, keep=slot)
    if not posted.progress():  # the engine's thread matches it when nobody waits
        engine.watch(posted)
    return posted


def _land(t: torch.Tensor, data: np.ndarray) -> None:
    """Copy checked bytes into t: a memcpy into a contiguous CPU tensor, else torch's copy."""
    if is_plain(t):
        memoryview(_from_address(t.data_ptr(), data.nbytes))[:] = data
    else:
        t.copy_(torch.from_numpy(data).view(t.dtype).view(t.shape))


class P2PWork(dist.Work):
    """One checked send or receive as a torch Work."""

    def __init__(self, posted: Posted, result: list[torch.Tensor], timeout_s: float) -> None:
        super().__init__()
        self._posted = posted
        self._result = result
        self._timeout_s = timeout_s
        self._future: torch.futures.Future | None = None

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Wait; an error (mismatch, timeout) raises here, every time. A timeout cancels the
        operation and leaves the group unusable, as a collective's does."""
        self._posted.drive(timeout_seconds(timeout, self._timeout_s), give_up=True)
        self._posted.future.result()
        return True

    def is_completed(self) -> bool:
        return self._posted.progress()

    def is_success(self) -> bool:
        f = self._posted.future
        return self.is_completed() and f.exception() is None

    def exception(self) -> BaseException | None:
        return self._posted.future.exception() if self.is_completed() else None

    def result(self) -> list[torch.Tensor]:
        self.wait()
        return self._result

    def synchronize(self) -> None:
        pass

    def __del__(self) -> None:
        self._posted.dropped()

    def _source_rank(self) -> int:
        self.wait()
        return self._posted._status.Get_source()

    source_rank = _source_rank

    def get_future(self) -> torch.futures.Future:
        if self._future is None:
            fut: torch.futures.Future = torch.futures.Future()
            self._future = fut

            def settle(done: Any) -> None:
                error = done.exception()
                if error is None:
                    fut.set_result(self._result)
                else:
                    fut.set_exception(error)

            self._posted.future.add_done_callback(settle)
            if not self._posted.progress():
                self._posted.engine.watch(self._posted)
        return self._future
