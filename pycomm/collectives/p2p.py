"""Compressed point-to-point: a frame per message, checked against what the receiver expects.

Messages go on the communicator given (they are the user's messages, matched by the user's
tags); its engine supplies the deadline and the broken mark. A receive caps the message at the
largest frame the expected codec makes of ``out``'s size, and checks the frame's codec, dtype
and count before decoding into ``out``. With codec="auto" the sender chooses alone
(``auto.sender_choice``) and the receiver takes any frame the contract allows.
"""

from __future__ import annotations

import time

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives.auto_frames import sender_choice
from pycomm.collectives.buffers import as_array
from pycomm.collectives.engine import Engine, engine_of
from pycomm.collectives.frames import AnyFrame, Expect, refuse_oversize
from pycomm.collectives.requests import Posted, Request
from pycomm.collectives.spec import CodecSpec, make_spec
from pycomm.collectives.stats import CommStats


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

    ``stats`` (a CommStats) is added to: this rank's bytes, frame bytes (also counted as sent)
    and compression time.
    """
    t0 = time.perf_counter()
    comm, eng = _usable(comm)
    frame = _frame(eng, x, make_spec(codec, **params), stats)
    eng.wait([comm.Isend([frame, MPI.BYTE], dest=dest, tag=tag)], f"send to rank {dest}")
    if stats is not None:
        stats.total_seconds += time.perf_counter() - t0


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
    comm, eng = _usable(comm)
    frame = _frame(eng, x, make_spec(codec, **params), stats)
    req = comm.Isend([frame, MPI.BYTE], dest=dest, tag=tag)
    if stats is not None:
        stats.total_seconds += time.perf_counter() - t0
    return Posted(eng, [req], lambda: None, f"send to rank {dest}", keep=frame).request()


def recv(
    out: object,
    source: int,
    tag: int = 0,
    comm: MPI.Comm | None = None,
    codec: str | CodecSpec | None = "none",
    *,
    stats: CommStats | None = None,
    **params: object,
) -> np.ndarray:
    """Receive a frame from source and decode it into out (size, dtype and codec checked);
    ``stats`` counts the frame's bytes as received."""
    comm, eng = _usable(comm)
    posted = _receive(eng, out, source, tag, make_spec(codec, **params), stats)
    posted.drive(None)
    return posted.future.result()


def irecv(
    out: object,
    source: int,
    tag: int = 0,
    comm: MPI.Comm | None = None,
    codec: str | CodecSpec | None = "none",
    *,
    stats: CommStats | None = None,
    **params: object,
) -> Request:
    """Non-blocking receive into out; wait() decodes and returns out's flat view (and counts
    its bytes as received in ``stats``).

    A frame that is not what out expects fails the request: every wait() raises the error.
    It progresses on its own (the engine's thread), in MPI's matching order.
    """
    comm, eng = _usable(comm)
    posted = _receive(eng, out, source, tag, make_spec(codec, **params), stats)
    if not posted.progress():
        eng.watch(posted)
    return posted.request()


def _receive(
    eng: Engine, out: object, source: int, tag: int, spec: CodecSpec, stats: CommStats | None
) -> Posted:
    """Post a receive in the engine's inbox (matched by probe, taken whole: a message longer
    than any frame out can take is refused, ``SettingsMismatchError``, and out is untouched)."""
    o = as_array(out, writable=True)
    expect = _expect(spec, o)
    status = MPI.Status()
    slot = eng.inbox.post(source, tag)

    def finish() -> np.ndarray:
        frame = memoryview(slot.message())
        sender = f"rank {status.Get_source()}"
        refuse_oversize(frame.nbytes, expect, sender)
        if stats is not None:
            stats.moved(0, frame.nbytes)
        return pycodecs.decompress(expect.check(frame, sender), out=o)

    what = f"receive from {'any rank' if source == MPI.ANY_SOURCE else f'rank {source}'}"
    return Posted(eng, [slot], finish, what, status=status, keep=slot)


def _usable(comm: MPI.Comm | None):
    comm = MPI.COMM_WORLD if comm is None else comm
    eng = engine_of(comm)
    eng.check_usable()
    return comm, eng


def _expect(spec: CodecSpec, out: np.ndarray) -> Expect | AnyFrame:
    """What a received frame must be; with codec="auto", any codec its contract allows."""
    if spec.auto:
        return AnyFrame(spec, out.dtype.name, out.size)
    return Expect(spec.codec_kwargs(), out.dtype.name, out.size)


def _frame(eng: Engine, x: object, spec: CodecSpec, stats: CommStats | None) -> bytearray:
    t0 = time.perf_counter()
    a = as_array(x)
    if spec.auto:  # the sender decides alone: the frame says what it is
        spec = sender_choice(eng, a, spec)
    frame = pycodecs.compress(a, **spec.codec_kwargs())
    if stats is not None:
        stats.calls += 1
        stats.raw_bytes += a.nbytes
        stats.frame_bytes += len(frame)
        stats.moved(len(frame), 0)
        stats.compress_seconds += time.perf_counter() - t0
    return frame
