"""Compressed allgather and broadcast: every rank decodes the same frames."""

from __future__ import annotations

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives._arrays import as_array
from pycomm.collectives._channel import Private, Request, agree, channel, private_comm, submit
from pycomm.collectives._frames import allgather_frames
from pycomm.collectives._spec import CodecSpec, make_spec
from pycomm.collectives._wait import wait


def allgather(
    x: object,
    comm: MPI.Comm | Private | None = None,
    codec: str | CodecSpec | None = "none",
    *,
    out: object | None = None,
    **params: object,
) -> np.ndarray:
    """Every rank's x, decoded, as an array of shape (N, x.size), identical on every rank.

    A rank's own row is its decoded frame too, not its input. For ebq with mode="rel" each
    row's bound is relative to that rank's own range.
    """
    spec = make_spec(codec, **params)
    a = as_array(x)
    comm = private_comm(comm)
    size = comm.Get_size()
    agree(comm, spec.signature("allgather", a.dtype.str, a.size), f"allgather {spec.codec}")
    res = np.empty((size, a.size), a.dtype) if out is None else as_array(out, writable=True)
    if res.dtype != a.dtype or res.size != size * a.size:
        raise ValueError(f"out must hold {size}x{a.size} elements of {a.dtype}")
    res = res.reshape(size, a.size)
    if not spec.compressed:
        wait(comm, comm.Iallgather(a, res), "allgather")
        return res
    for row, frame in zip(res, allgather_frames(comm, _compress(a, spec)), strict=True):
        pycodecs.decompress(frame, out=row)
    return res


def bcast(
    x: object,
    root: int = 0,
    comm: MPI.Comm | Private | None = None,
    codec: str | CodecSpec | None = "none",
    **params: object,
) -> np.ndarray:
    """Broadcast root's x into x on every rank, through a codec; returns x's flat view.

    Root's x is overwritten by the decoded frame too, so every rank holds the same bits.
    """
    spec = make_spec(codec, **params)
    a = as_array(x, writable=True)
    comm = private_comm(comm)
    if not 0 <= root < comm.Get_size():
        raise ValueError(f"root {root} is not a rank of a communicator of {comm.Get_size()}")
    agree(comm, spec.signature("bcast", a.dtype.str, a.size, root), f"bcast {spec.codec}")
    if not spec.compressed:
        wait(comm, comm.Ibcast(a, root=root), "bcast")
        return a
    frame = _compress(a, spec) if comm.Get_rank() == root else None
    n = np.array([len(frame) if frame is not None else 0], dtype=np.int64)
    wait(comm, comm.Ibcast(n, root=root), "bcast of the frame size")
    if frame is None:
        frame = bytearray(int(n[0]))
    wait(comm, comm.Ibcast([frame, MPI.BYTE], root=root), "bcast")
    pycodecs.decompress(frame, out=a)
    return a


def iallgather(x: object, comm: MPI.Comm | None = None, codec="none", **kwargs) -> Request:
    """Non-blocking allgather on the communicator's communication thread."""
    return submit(channel(comm), lambda c: allgather(x, Private(c), codec, **kwargs))


def ibcast(x: object, root: int = 0, comm: MPI.Comm | None = None, codec="none", **kw) -> Request:
    """Non-blocking broadcast on the communicator's communication thread."""
    return submit(channel(comm), lambda c: bcast(x, root, Private(c), codec, **kw))


def _compress(a: np.ndarray, spec: CodecSpec) -> bytearray:
    kw = spec.codec_kwargs()
    if spec.codec == "ebq":
        kw.update(error_bound=spec.error_bound, mode=spec.mode)
    return pycodecs.compress(a, **kw)
