"""Compressed allreduce: exact integer sums for ebq, fixed-order sums for quantizers."""

from __future__ import annotations

import time
from concurrent.futures import Executor, ThreadPoolExecutor

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives._arrays import as_array, check_reducible, chunk_bounds, output_like
from pycomm.collectives._channel import Private, Request, channel, private_comm, submit
from pycomm.collectives._frames import allgather_frames
from pycomm.collectives._reduce import (
    compress,
    first_frames,
    plain_allreduce,
    reduction_kwargs,
    ring_reduce,
)
from pycomm.collectives._spec import CodecSpec, make_spec
from pycomm.collectives._stats import CommStats

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
    residual: object | None = None,
    stats: CommStats | None = None,
    **params: object,
) -> np.ndarray:
    """Sum (or average) x over the ranks of comm through a codec; identical bits on every rank.

    With ``codec="ebq"`` the result is within ``error_bound`` of the exact sum (op="sum") or
    mean (op="mean") of the inputs, for any number of ranks; with ``mode="rel"`` the bound is
    ``error_bound * (max - min)`` over the finite inputs of all ranks. Where the dtype cannot
    hold the result that closely, the data go uncompressed, summed in float64 and rounded once
    (see ``_bound``). Quantizing codecs promise no bound; their frames are decoded and summed in
    one fixed order. Returns ``out`` (or a new flat array) as a numpy view.

    ``residual`` (x's size and dtype) turns on error feedback: this rank sends x + residual
    and keeps in residual what its compression lost. ``stats`` (a CommStats) is added to.
    """
    t0 = time.perf_counter()
    spec = make_spec(codec, **params)
    a = as_array(x)
    check_reducible(a)
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, not {algorithm!r}")
    res = output_like(a, out)
    err = None if residual is None else output_like(a, residual)
    comm = private_comm(comm)
    size = comm.Get_size()
    stats = CommStats() if stats is None else stats
    kw = reduction_kwargs(a, comm, spec, op, "allreduce", algorithm, err is not None)
    if kw is None:
        if err is not None:  # the residual goes out now, exactly
            a = a + err
            err[...] = 0
        plain_allreduce(a, res, comm, op, wide=spec.codec == "ebq")
        stats.wire_bytes += a.nbytes
    else:
        if algorithm == "auto" or (err is not None and kw["codec"] != "ebq"):
            # ebq: the ring from 2 ranks (half the ebq_add work; 0.65 against 1.05 ms for
            # 512 KiB on 2 ranks); quantizers: from 3 (their ring compresses again)
            many = size > 2 or kw["codec"] == "ebq"
            ring = many and a.size >= RING_MIN_COUNT * size
            algorithm = "ring" if ring and (err is None or kw["codec"] == "ebq") else "allgather"
        segments = chunk_bounds(a.size, -(-a.size // max(1, int(segment))))
        job = _Job(comm, kw, algorithm, err, stats)
        if len(segments) == 1:
            job.segment(a, res)
        else:
            with ThreadPoolExecutor(1, thread_name_prefix="pycomm-pipe") as wire:
                job.pipeline(a, res, segments, wire)
        if op == "mean":
            np.divide(res, size, out=res)
    stats.calls += 1
    stats.raw_bytes += a.nbytes
    stats.total_seconds += time.perf_counter() - t0
    return res


def iallreduce(
    x: object, comm: MPI.Comm | None = None, codec: str | CodecSpec | None = "none", **kwargs
) -> Request:
    """Non-blocking allreduce: runs on the communicator's communication thread."""
    return submit(channel(comm), lambda c: allreduce(x, Private(c), codec, **kwargs))


class _Job:
    """One compressed allreduce: compression on the caller's thread, the exchange on ``wire``."""

    def __init__(self, comm: MPI.Comm, kw: dict, algorithm: str, err, stats: CommStats):
        self.comm, self.kw, self.algorithm, self.err, self.stats = comm, kw, algorithm, err, stats

    def pipeline(self, a, res, segments, wire: Executor) -> None:
        """Compression of segment k+1 (this thread) overlaps the exchange of segment k."""
        pending = []
        for lo, hi in segments:
            frames = self.first(a, lo, hi)
            pending.append(
                wire.submit(_exchange, self.comm, frames, a[lo:hi], self.kw, self.algorithm)
            )
        for (lo, hi), fut in zip(segments, pending, strict=True):
            _decode_into(fut.result(), res[lo:hi], self.algorithm, self.kw["codec"])

    def segment(self, a, res) -> None:
        frames = self.first(a, 0, a.size)
        got = _exchange(self.comm, frames, a, self.kw, self.algorithm)
        _decode_into(got, res, self.algorithm, self.kw["codec"])

    def first(self, a: np.ndarray, lo: int, hi: int) -> list:
        t0 = time.perf_counter()
        err = None if self.err is None else self.err[lo:hi]
        if self.algorithm == "allgather":
            frames = [compress(a[lo:hi], self.kw, err)]
        else:
            frames = first_frames(
                a[lo:hi], self.kw, self.comm.Get_size(), self.comm.Get_rank(), err
            )
        self.stats.compress_seconds += time.perf_counter() - t0
        self.stats.wire_bytes += sum(len(f) for f in frames if f is not None)
        return frames


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
