"""Compressed allreduce: exact integer sums for ebq, fixed-order sums for quantizers."""

from __future__ import annotations

from concurrent.futures import Executor, ThreadPoolExecutor

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives._arrays import as_array, check_reducible, chunk_bounds, output_like
from pycomm.collectives._channel import Private, Request, channel, private_comm, submit
from pycomm.collectives._frames import allgather_frames
from pycomm.collectives._reduce import first_frames, plain_allreduce, reduction_kwargs, ring_reduce
from pycomm.collectives._spec import CodecSpec, make_spec

ALGORITHMS = ("auto", "ring", "allgather")
#: Below this many elements per rank the allgather algorithm wins on latency.
RING_MIN_COUNT = 1 << 14
#: Pipeline segment: compression of one segment overlaps the exchange of the previous one.
SEGMENT_COUNT = 1 << 21


def allreduce(
    x: object,
    comm: MPI.Comm | Private | None = None,
    codec: str | CodecSpec | None = "none",
    *,
    op: str = "sum",
    out: object | None = None,
    algorithm: str = "auto",
    segment: int = SEGMENT_COUNT,
    **params: object,
) -> np.ndarray:
    """Sum (or average) x over the ranks of comm through a codec; identical bits on every rank.

    With ``codec="ebq"`` the result is within ``error_bound`` of the exact sum (op="sum") or
    mean (op="mean") of the inputs, for any number of ranks; with ``mode="rel"`` the bound is
    ``error_bound * (max - min)`` over the finite inputs of all ranks. Where the dtype cannot
    hold the result that closely, the data go uncompressed, summed in float64 and rounded once
    (see ``_bound``). Quantizing codecs promise no bound; their frames are decoded and summed in
    one fixed order. Returns ``out`` (or a new flat array) as a numpy view.
    """
    spec = make_spec(codec, **params)
    a = as_array(x)
    check_reducible(a)
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, not {algorithm!r}")
    res = output_like(a, out)
    comm = private_comm(comm)
    size = comm.Get_size()
    kw = reduction_kwargs(a, comm, spec, op, "allreduce", algorithm)
    if kw is None:
        plain_allreduce(a, res, comm, op, wide=spec.codec == "ebq")
        return res
    if algorithm == "auto":
        algorithm = "ring" if size > 2 and a.size >= RING_MIN_COUNT * size else "allgather"
    segments = chunk_bounds(a.size, -(-a.size // max(1, int(segment))))
    if len(segments) == 1:
        _segment(comm, a, res, kw, algorithm)
    else:
        with ThreadPoolExecutor(1, thread_name_prefix="pycomm-pipe") as wire:
            _pipeline(comm, a, res, kw, algorithm, segments, wire)
    if op == "mean":
        np.divide(res, size, out=res)
    return res


def iallreduce(
    x: object, comm: MPI.Comm | None = None, codec: str | CodecSpec | None = "none", **kwargs
) -> Request:
    """Non-blocking allreduce: runs on the communicator's communication thread."""
    return submit(channel(comm), lambda c: allreduce(x, Private(c), codec, **kwargs))


def _pipeline(comm, a, res, kw, algorithm, segments, wire: Executor) -> None:
    """Compression of segment k+1 (this thread) overlaps the exchange of segment k (wire)."""
    pending = []
    for lo, hi in segments:
        frames = _first(a[lo:hi], kw, comm, algorithm)
        pending.append(wire.submit(_exchange, comm, frames, a[lo:hi], kw, algorithm))
    for (lo, hi), fut in zip(segments, pending, strict=True):
        _decode_into(fut.result(), res[lo:hi], algorithm, kw["codec"])


def _segment(comm, part, res, kw, algorithm) -> None:
    frames = _first(part, kw, comm, algorithm)
    _decode_into(_exchange(comm, frames, part, kw, algorithm), res, algorithm, kw["codec"])


def _first(part: np.ndarray, kw: dict, comm: MPI.Comm, algorithm: str) -> list:
    if algorithm == "allgather":
        return [pycodecs.compress(part, **kw)]
    return first_frames(part, kw, comm.Get_size(), comm.Get_rank())


def _exchange(comm: MPI.Comm, frames: list, part: np.ndarray, kw: dict, algorithm: str) -> list:
    """The wire side of one segment: the frames every rank decodes, in chunk order."""
    if algorithm == "allgather":
        gathered = allgather_frames(comm, frames[0])
        if kw["codec"] != "ebq":
            return gathered
        total = gathered[0]
        for f in gathered[1:]:  # exact index sums, in rank order
            total = pycodecs.ebq_add(total, f)
        return [total]
    size = comm.Get_size()
    gathered = allgather_frames(comm, ring_reduce(comm, frames, part, kw))
    return [gathered[(c - 1) % size] for c in range(size)]  # rank r owns chunk r + 1


def _decode_into(frames: list, res: np.ndarray, algorithm: str, codec: str) -> None:
    if algorithm == "allgather" and codec != "ebq":
        res[...] = 0
        for f in frames:  # rank order: the same float additions on every rank
            pycodecs.decompress_add(f, out=res)
        return
    for (lo, hi), f in zip(chunk_bounds(res.size, len(frames)), frames, strict=True):
        pycodecs.decompress(f, out=res[lo:hi])
