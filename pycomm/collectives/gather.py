"""Compressed allgather and broadcast: every rank decodes the same frames."""

from __future__ import annotations

import time

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives import auto_frames
from pycomm.collectives.buffers import as_array
from pycomm.collectives.engine import Engine, engine_of
from pycomm.collectives.frames import Expect, allgather_frames
from pycomm.collectives.requests import Request
from pycomm.collectives.spec import CodecSpec, make_spec
from pycomm.collectives.stats import CommStats, check_stats
from pycomm.collectives.waits import SettingsMismatchError


def allgather(
    x: object,
    comm: MPI.Comm | None = None,
    codec: str | CodecSpec | None = "none",
    *,
    out: object | None = None,
    stats: CommStats | None = None,
    **params: object,
) -> np.ndarray:
    """Every rank's x, decoded, as an array of shape (N, x.size), identical on every rank.

    A rank's own row is its decoded frame too, not its input. For ebq with mode="rel" each
    row's bound is relative to that rank's own range. ``stats`` is added to: this rank's frame
    sent to each other rank, theirs received, and the time.
    """
    eng = engine_of(comm)
    job = lambda c: _allgather(eng, c, x, codec, out=out, stats=stats, **params)  # noqa: E731
    return eng.run(job, "allgather")


def iallgather(x: object, comm: MPI.Comm | None = None, codec="none", **kwargs) -> Request:
    """Non-blocking allgather (keywords as ``allgather``) on the engine thread."""
    eng = engine_of(comm)
    return eng.submit(lambda c: _allgather(eng, c, x, codec, **kwargs))


def bcast(
    x: object,
    root: int = 0,
    comm: MPI.Comm | None = None,
    codec: str | CodecSpec | None = "none",
    *,
    stats: CommStats | None = None,
    **params: object,
) -> np.ndarray:
    """Broadcast root's x into x on every rank, through a codec; returns x's flat view.

    Root's x is overwritten by the decoded frame too, so every rank holds the same bits.
    ``stats`` is added to: the root sends its frame to each other rank, they receive it.
    """
    eng = engine_of(comm)
    return eng.run(lambda c: _bcast(eng, c, x, root, codec, stats=stats, **params), "bcast")


def ibcast(x: object, root: int = 0, comm: MPI.Comm | None = None, codec="none", **kw) -> Request:
    """Non-blocking broadcast on the communicator's engine thread."""
    eng = engine_of(comm)
    return eng.submit(lambda c: _bcast(eng, c, x, root, codec, **kw))


def _allgather(
    eng: Engine,
    comm: MPI.Comm,
    x: object,
    codec,
    *,
    out: object | None = None,
    stats: CommStats | None = None,
    **params: object,
) -> np.ndarray:
    t0 = time.perf_counter()
    size = comm.Get_size()
    try:
        check_stats(stats)
        spec = make_spec(codec, **params)
        a = as_array(x)
        res = np.empty((size, a.size), a.dtype) if out is None else as_array(out, writable=True)
        if res.dtype != a.dtype or res.size != size * a.size:
            raise ValueError(f"out must hold {size}x{a.size} elements of {a.dtype}")
        res = res.reshape(size, a.size)
    except (TypeError, ValueError) as exc:
        eng.agree_failed("allgather", exc)
    stats = CommStats() if stats is None else stats
    if spec.auto:
        spec = auto_frames.agreed_gather_choice(eng, comm, a, spec, "allgather").spec
    else:
        eng.agree(f"allgather {spec.codec}", spec.signature("allgather", a.dtype.str, a.size))
    stats.calls += 1
    stats.raw_bytes += a.nbytes
    if not spec.compressed:
        eng.wait([comm.Iallgather(a, res)], "allgather")
        stats.frame_bytes += a.nbytes
        stats.moved(a.nbytes * (size - 1), a.nbytes * (size - 1))
        stats.total_seconds += time.perf_counter() - t0
        return res
    expect = [Expect(spec.codec_kwargs(), a.dtype.name, a.size)] * size
    t1 = time.perf_counter()
    frame = pycodecs.compress(a, **spec.codec_kwargs())
    stats.compress_seconds += time.perf_counter() - t1
    stats.frame_bytes += len(frame)
    frames = allgather_frames(eng, comm, frame, expect, stats)
    for row, frame in zip(res, frames, strict=True):
        pycodecs.decompress(frame, out=row)
    stats.total_seconds += time.perf_counter() - t0
    return res


def _bcast(
    eng: Engine,
    comm: MPI.Comm,
    x: object,
    root: int,
    codec,
    stats: CommStats | None = None,
    **params: object,
) -> np.ndarray:
    try:
        check_stats(stats)
        spec = make_spec(codec, **params)
        a = as_array(x, writable=True)
        if not 0 <= root < comm.Get_size():
            raise ValueError(f"root {root} is not a rank of a communicator of {comm.Get_size()}")
    except (TypeError, ValueError) as exc:
        eng.agree_failed("bcast", exc)
    stats = CommStats() if stats is None else stats
    if spec.auto:
        spec = auto_frames.agreed_gather_choice(eng, comm, a, spec, "bcast", root=root).spec
    else:
        eng.agree(f"bcast {spec.codec}", spec.signature("bcast", a.dtype.str, a.size, root))
    stats.calls += 1
    stats.raw_bytes += a.nbytes
    others, is_root = comm.Get_size() - 1, comm.Get_rank() == root
    if not spec.compressed:
        eng.wait([comm.Ibcast(a, root=root)], "bcast")
        stats.frame_bytes += a.nbytes
        stats.moved(a.nbytes * others if is_root else 0, 0 if is_root else a.nbytes)
        return a
    kw = spec.codec_kwargs()
    frame = pycodecs.compress(a, **kw) if comm.Get_rank() == root else None
    n = np.array([len(frame) if frame is not None else 0], dtype=np.int64)
    eng.wait([comm.Ibcast(n, root=root)], "bcast of the frame size")
    expect = Expect(kw, a.dtype.name, a.size)
    if not 0 <= n[0] <= expect.max_size():  # the agreement makes this a corrupt sender
        raise SettingsMismatchError(f"pycomm: root {root} announced a frame of {n[0]} bytes")
    if frame is None:
        frame = bytearray(int(n[0]))
    eng.wait([comm.Ibcast([frame, MPI.BYTE], root=root)], "bcast")
    stats.frame_bytes += len(frame)
    stats.moved(len(frame) * others if is_root else 0, 0 if is_root else len(frame))
    pycodecs.decompress(expect.check(frame, f"root {root}"), out=a)
    return a
