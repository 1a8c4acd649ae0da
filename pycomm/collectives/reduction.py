"""Compressed allreduce and reduce-scatter: every rank ends with the same bits, within the
bound for ebq.

An allreduce, in order: check the arguments (an error on any rank raises on every rank), agree on
the settings and, for ebq, on the per-rank bound (one allreduce), pick the algorithm, then
compress, exchange and decode segment by segment (``ring`` or ``gathered``), the compression of
segment k+1 overlapping the exchange of segment k. A reduce-scatter is the ring's first half.
"""

from __future__ import annotations

import time

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives import auto
from pycomm.collectives.bound import agreed_kwargs
from pycomm.collectives.buffers import (
    as_array,
    check_in_place,
    check_op,
    check_reducible,
    chunk_bounds,
    output_like,
    same_buffer,
)
from pycomm.collectives.engine import Engine, engine_of
from pycomm.collectives.gathered import Gathered
from pycomm.collectives.requests import Request
from pycomm.collectives.ring import Framer, Ring, host_framer
from pycomm.collectives.source import Source
from pycomm.collectives.spec import CodecSpec, make_spec
from pycomm.collectives.stats import CommStats

ALGORITHMS = ("auto", "ring", "allgather")
#: Below this many elements per rank the allgather algorithm wins on latency.
RING_MIN_COUNT = 1 << 14
#: Pipeline segment: compression of one segment overlaps the exchange of the previous one.
SEGMENT_COUNT = 1 << 21


def allreduce(
    x: object,
    comm: MPI.Comm | None = None,
    codec: str | CodecSpec | None = "none",
    *,
    op: str = "sum",
    out: object | None = None,
    algorithm: str = "auto",
    segment: int = SEGMENT_COUNT,
    residual: object | None = None,
    stats: CommStats | None = None,
    source: Source | None = None,
    **params: object,
) -> np.ndarray:
    """Sum (or average) x over the ranks of comm through a codec; identical bits on every rank.

    With ``codec="ebq"`` the result is within ``error_bound`` of the exact sum (op="sum") or
    mean (op="mean") of the inputs, for any number of ranks; with ``mode="rel"`` the bound is
    ``error_bound * (max - min)`` over the finite inputs of all ranks, with ``mode="rms"``
    ``error_bound`` times the largest root-mean-square of a rank's finite inputs. Where the
    dtype cannot hold the result that closely, the data go uncompressed, summed in float64 and
    rounded once (see ``bound``). Quantizing codecs promise no bound; their frames are decoded
    and summed in one fixed order. Returns ``out`` (or a new flat array) as a numpy view.

    ``residual`` (x's size and dtype) turns on error feedback: this rank sends x + residual
    and keeps in residual what its compression lost. ``stats`` (a CommStats) is added to.

    ``source`` (a ``Source``): x's values live elsewhere (a device) and are compressed there;
    x is then the host buffer of their size and dtype that receives them only where the
    algorithm needs raw values, and ``out`` the result. The frames, and so the result, are the
    same as for x holding the values.
    """
    eng = engine_of(comm)
    kw = dict(op=op, out=out, algorithm=algorithm, segment=segment, residual=residual)
    kw.update(stats=stats, source=source)
    return eng.run(lambda c: _allreduce(eng, c, x, codec, **kw, **params), "allreduce")


def iallreduce(
    x: object, comm: MPI.Comm | None = None, codec: str | CodecSpec | None = "none", **kwargs
) -> Request:
    """Non-blocking allreduce (keywords as ``allreduce``): runs on the communicator's engine
    thread, in call order."""
    eng = engine_of(comm)
    return eng.submit(lambda c: _allreduce(eng, c, x, codec, **kwargs))


def _allreduce(
    eng: Engine,
    comm: MPI.Comm,
    x: object,
    codec: str | CodecSpec | None,
    *,
    op: str = "sum",
    out: object | None = None,
    algorithm: str = "auto",
    segment: int = SEGMENT_COUNT,
    residual: object | None = None,
    stats: CommStats | None = None,
    source: Source | None = None,
    **params: object,
) -> np.ndarray:
    t0 = time.perf_counter()
    try:
        spec = make_spec(codec, **params)
        a = as_array(x)
        check_reducible(a)
        check_op(op)
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, not {algorithm!r}")
        res = output_like(a, out)
        check_in_place(a, res)
        err = None if residual is None else output_like(a, residual)
        if source is not None and (err is not None or source.count != a.size):
            raise ValueError("a source stands for x's values and holds its own residual")
        ef = err is not None or (source is not None and source.has_residual)
        if ef and not spec.caps.error_feedback:
            raise ValueError(f"codec {spec.codec!r} takes no error-feedback residual")
    except (TypeError, ValueError) as exc:
        eng.agree_failed("allreduce", exc)
    stats = CommStats() if stats is None else stats
    choice, framed, compressing = None, stats.wire_bytes, stats.compress_seconds
    if spec.auto:  # resolved to a concrete codec here, in the agreement, before anything else
        choice = auto.agreed_choice(
            eng, comm, a, spec, op, "allreduce", algorithm, ef, ef=ef, source=source,
            algorithm_of=lambda s: _algorithm_name(eng, comm, s, algorithm, a.size, ef),
        )  # fmt: skip
        spec, kw = choice.spec, choice.kw
    else:
        kw = agreed_kwargs(eng, comm, a, spec, op, "allreduce", algorithm, ef, source=source)
    size = comm.Get_size()
    if kw is not None:
        alg = _algorithm(eng, comm, spec, algorithm, a.size, ef, kw)
    if source is not None and (kw is None or not alg.exact and isinstance(alg, Ring)):
        err = source.fetch(a)  # the raw values are needed here: a quantizer's ring adds them
        source = None
    if kw is None:
        if err is not None:  # the residual goes out now, exactly
            a = a + err
            err[...] = 0
        t1 = time.perf_counter()
        plain_allreduce(eng, comm, a, res, op, wide=spec.caps.exact_sum)
        wide = 2 if spec.caps.exact_sum and a.dtype == np.float32 else 1
        eng.link.add_transfer("raw", wide * a.nbytes, time.perf_counter() - t1)
        if choice is not None:
            auto.record_raw(eng, wide * a.nbytes, time.perf_counter() - t1)
        stats.wire_bytes += a.nbytes
    else:
        segments = chunk_bounds(a.size, -(-a.size // max(1, int(segment))))
        t1 = time.perf_counter()
        _run_segments(eng, alg, a, res, err, segments, stats, source)
        if op == "mean":
            np.divide(res, size, out=res)
        if choice is not None:  # what this call teaches auto: ratio, codec cost, overhead
            framed, compressing = stats.wire_bytes - framed, stats.compress_seconds - compressing
            ring = isinstance(alg, Ring)
            part = size if ring and not alg.exact else 1  # a quantizer's ring: 1/N compressed
            elapsed = time.perf_counter() - t1
            how = "ring" if ring else "allgather"
            auto.record(eng, choice, a.nbytes, framed * part, compressing * part, elapsed, how)
    stats.calls += 1
    stats.raw_bytes += a.nbytes
    stats.total_seconds += time.perf_counter() - t0
    return res


def _algorithm_name(eng, comm, spec: CodecSpec, algorithm: str, count: int, ef: bool) -> str:
    """The algorithm ``_algorithm`` picks for spec: "ring" or "allgather" (codec="auto"
    weighs each candidate's)."""
    ring = isinstance(_algorithm(eng, comm, spec, algorithm, count, ef, {}), Ring)
    return "ring" if ring else "allgather"


def _algorithm(eng, comm, spec: CodecSpec, algorithm: str, count: int, ef: bool, kw: dict):
    """The ring for large parts (ebq from 2 ranks: it halves the index additions; quantizers
    from 3, since their ring compresses again, and never with error feedback), else gathered."""
    exact, size = spec.caps.exact_sum, comm.Get_size()
    if algorithm == "auto":
        big = count >= RING_MIN_COUNT * size and (size > 2 or exact)
        algorithm = "ring" if big else "allgather"
    if algorithm == "ring" and ef and not exact:
        algorithm = "allgather"  # a quantizer's ring compresses again: no residual to keep
    return (Ring if algorithm == "ring" else Gathered)(eng, comm, kw, exact)


def _run_segments(eng, alg, a, res, err, segments, stats: CommStats, source) -> None:
    """Compress, exchange and decode each segment; with several, compression of segment k+1
    (this thread) overlaps the exchange of segment k (the engine's wire thread)."""

    def framer(lo: int, hi: int) -> Framer:
        if source is None:
            return host_framer(a[lo:hi], None if err is None else err[lo:hi], alg.kw)
        return lambda clo, chi, ef: source.frame(lo + clo, lo + chi, alg.kw, ef)

    def first(lo: int, hi: int) -> list:
        t0 = time.perf_counter()
        frames = alg.first(hi - lo, framer(lo, hi))
        stats.compress_seconds += time.perf_counter() - t0
        stats.wire_bytes += sum(len(f) for f in frames if f is not None)
        return frames

    if len(segments) == 1:
        alg.decode(alg.exchange(first(0, a.size), a), res)
        return
    pending = [eng.wire().submit(alg.exchange, first(lo, hi), a[lo:hi]) for lo, hi in segments]
    for (lo, hi), fut in zip(segments, pending, strict=True):
        alg.decode(fut.result(), res[lo:hi])


def reduce_scatter(
    x: object,
    comm: MPI.Comm | None = None,
    codec: str | CodecSpec | None = "none",
    *,
    op: str = "sum",
    out: object | None = None,
    residual: object | None = None,
    **params: object,
) -> np.ndarray:
    """Reduce x (size N*m) over the N ranks; rank r gets elements [r*m, (r+1)*m) of the result.

    The bound of ``allreduce`` holds for each block. Returns ``out`` or a new array of m.
    ``residual`` (x's size and dtype; exact-sum codecs, ebq) turns on error feedback as in
    ``allreduce``: this rank sends x + residual and keeps what its compression lost.
    """
    eng = engine_of(comm)
    kw = dict(op=op, out=out, residual=residual)
    job = lambda c: _reduce_scatter(eng, c, x, codec, **kw, **params)  # noqa: E731
    return eng.run(job, "reduce_scatter")


def ireduce_scatter(
    x: object, comm: MPI.Comm | None = None, codec: str | CodecSpec | None = "none", **kwargs
) -> Request:
    """Non-blocking reduce_scatter (keywords as ``reduce_scatter``) on the engine thread."""
    eng = engine_of(comm)
    return eng.submit(lambda c: _reduce_scatter(eng, c, x, codec, **kwargs))


def _reduce_scatter(
    eng: Engine,
    comm: MPI.Comm,
    x: object,
    codec: str | CodecSpec | None,
    *,
    op: str = "sum",
    out: object | None = None,
    residual: object | None = None,
    **params: object,
) -> np.ndarray:
    size, rank = comm.Get_size(), comm.Get_rank()
    try:
        spec = make_spec(codec, **params)
        a = as_array(x)
        check_reducible(a)
        check_op(op)
        if a.size % size:
            raise ValueError(f"reduce_scatter needs a size divisible by {size} ranks, got {a.size}")
        m = a.size // size
        res = output_like(a, out, m)
        err = None if residual is None else output_like(a, residual)
        if err is not None and not (spec.caps.exact_sum or not spec.compressed or spec.auto):
            raise ValueError(f"reduce_scatter with codec {spec.codec!r} takes no residual")
    except (TypeError, ValueError) as exc:
        eng.agree_failed("reduce_scatter", exc)
    ef = err is not None
    if spec.auto:  # casts are left out with a residual: auto then picks raw or ebq
        choice = auto.agreed_choice(
            eng, comm, a, spec, op, "reduce_scatter", ef, ef=ef, algorithm_of=lambda s: "ring"
        )
        spec, kw = choice.spec, choice.kw
    else:
        kw = agreed_kwargs(eng, comm, a, spec, op, "reduce_scatter", ef)
    if kw is None:
        if err is not None:  # the residual goes out now, exactly
            a = a + err
            err[...] = 0
        full = np.empty_like(a)
        plain_allreduce(eng, comm, a, full, op, wide=spec.caps.exact_sum)
        res[...] = full[rank * m : (rank + 1) * m]
        return res
    # The ring leaves chunk (r + 1) % N on rank r: rotate the blocks so that it is block r.
    rotated, rotated_err = _rotate(a, m), None if err is None else _rotate(err, m)
    ring = Ring(eng, comm, kw, spec.caps.exact_sum)
    frames = ring.first(rotated.size, host_framer(rotated, rotated_err, kw))
    if err is not None:
        err[...] = np.roll(rotated_err, -m)
    pycodecs.decompress(ring.reduce_scatter(frames, rotated), out=res)
    if op == "mean":
        np.divide(res, size, out=res)
    return res


def _rotate(a: np.ndarray, m: int) -> np.ndarray:
    """Blocks of m moved one place on (a copy): the ring leaves block r + 1 on rank r."""
    return np.roll(a, m) if a.size > m else a


def plain_allreduce(
    eng: Engine, comm: MPI.Comm, a: np.ndarray, res: np.ndarray, op: str, wide: bool
) -> None:
    """Uncompressed allreduce into res; ``wide`` sums float32 in float64 and rounds once."""
    size = comm.Get_size()
    if wide and a.dtype == np.float32:
        acc = a.astype(np.float64)
        eng.wait([comm.Iallreduce(MPI.IN_PLACE, acc, op=MPI.SUM)], "allreduce")
        if op == "mean":
            acc /= size
        res[...] = acc
        return
    req = comm.Iallreduce(MPI.IN_PLACE if same_buffer(a, res) else a, res, op=MPI.SUM)
    eng.wait([req], "allreduce")
    if op == "mean":
        np.divide(res, size, out=res)
