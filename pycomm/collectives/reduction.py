"""Compressed allreduce and reduce-scatter: every rank ends with the same bits, within the
bound for ebq.

An allreduce, in order: check the arguments (an error on any rank raises on every rank), agree on
the settings and, for ebq, on the per-rank bound (one allreduce), pick the algorithm
(``choose``), then compress, exchange and decode segment by segment (``ring``, ``twophase`` or
``gathered``), the compression of segment k+1 overlapping the exchange of segment k. A
reduce-scatter is the first half of the ring (ebq) or of the two-phase exchange (quantizers).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, replace

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives import auto, auto_state, hierarchy, hot, plain
from pycomm.collectives.bound import agreed_kwargs, call_label
from pycomm.collectives.buffers import (
    as_array,
    check_in_place,
    check_op,
    check_reducible,
    chunk_bounds,
    output_like,
)
from pycomm.collectives.cost import raw_proof
from pycomm.collectives.engine import Engine, engine_of
from pycomm.collectives.feedback import ErrorFeedback
from pycomm.collectives.plan import (
    SEGMENT_COUNT,
    Plan,
    check_algorithm,
    first_frames,
    make,
    run_segments,
)
from pycomm.collectives.requests import Request
from pycomm.collectives.ring import Ring, host_framer
from pycomm.collectives.source import Source
from pycomm.collectives.spec import CodecSpec, normal_spec
from pycomm.collectives.stats import CommStats, check_stats
from pycomm.collectives.twophase import TwoPhase


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
    and keeps in residual what its compression lost. An ``ErrorFeedback`` keeps, besides that
    residual, what the two-phase algorithm's second compression lost on this rank's chunks.
    ``stats`` (a CommStats) is added to. ``algorithm``: "auto" (``plan.choose``), "ring"
    (ebq), "twophase" (quantizers), "allgather" or "hierarchy" (ranks of a node sum
    uncompressed, node leaders compress; see ``hierarchy``; a source's values are then
    fetched to the host and, on a leader, its worker residual is not kept).

    ``source`` (a ``Source``): x's values live elsewhere (a device) and are compressed there;
    x is then the host buffer of their size and dtype that receives them only where the
    algorithm needs raw values, and ``out`` the result. The frames, and so the result, are the
    same as for x holding the values.
    """
    eng = engine_of(comm)
    if eng.settled and eng.try_begin():  # inline, nothing queued: the compiled path may take it
        try:
            done = _settled(eng, x, codec, op, out, algorithm, segment, residual, stats, source,
                            **params)  # fmt: skip
        finally:
            eng.exec_lock.release()
        if done is not None:
            return done

    def job(c: MPI.Comm) -> np.ndarray:
        return _allreduce(
            eng, c, x, codec, op=op, out=out, algorithm=algorithm, segment=segment,
            residual=residual, stats=stats, source=source, **params,
            settle=_eligible(residual, source),
        )  # fmt: skip

    return eng.run(job, "allreduce")


def iallreduce(
    x: object, comm: MPI.Comm | None = None, codec: str | CodecSpec | None = "none", **kwargs
) -> Request:
    """Non-blocking allreduce (keywords as ``allreduce``): runs on the communicator's engine
    thread, in call order."""
    eng = engine_of(comm)

    def job(c: MPI.Comm) -> np.ndarray:  # on the engine's thread, which holds the engine
        done = _settled(eng, x, codec, **kwargs) if eng.settled else None
        if done is not None:
            return done
        settle = _eligible(kwargs.get("residual"), kwargs.get("source"))
        return _allreduce(eng, c, x, codec, **kwargs, settle=settle)

    return eng.submit(job)


def _eligible(residual: object, source: object) -> bool:
    """The compiled path's one rule: a call without a source whose residual is none or an
    ``ErrorFeedback`` (an uncompressed call empties its worker residual, so the calls of a
    kind that settled on going raw find it holding zeros, and leave it so: ``hot.run``) may
    settle its kind, and take it once settled. Its kind names the normalised spec, so every
    spelling of one request takes the same path."""
    return source is None and (residual is None or type(residual) is ErrorFeedback)


def _settled(
    eng: Engine, x: object, codec: object, op: str = "sum", out: object = None,
    algorithm: str = "auto", segment: int = SEGMENT_COUNT, residual: object = None,
    stats: CommStats | None = None, source: object = None, **params: object,
) -> np.ndarray | None:  # fmt: skip
    """A call through its kind's compiled plan, the caller holding the engine: the result,
    or None where it is not taken (nothing was sent). One the compiled path hands back, with
    the agreement made, finishes on the Python path (``hot.HandBack``)."""
    if not _eligible(residual, source):
        return None
    try:
        spec = normal_spec(codec, params)
    except (TypeError, ValueError):  # the Python path raises, on every rank
        return None
    got = hot.run(eng, x, spec, op, out, algorithm, segment, stats, feedback=residual)
    if type(got) is hot.HandBack:
        return _allreduce(
            eng, eng.comm, x, spec, op=op, out=out, algorithm=algorithm, segment=segment,
            residual=residual, stats=stats, settle=True, agreed=got.agreed,
        )  # fmt: skip
    return got


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
    settle: bool = False,
    agreed: np.void | None = None,
    **params: object,
) -> np.ndarray:
    """The Python path of ``allreduce``, step by step: the arguments, the choice (in the
    agreement), the exchange, what the call teaches. ``settle``: a call that goes uncompressed
    and needs no statistics keeps its kind for the compiled path (``hot``); ``agreed``: the
    compiled path made the first agreement (``auto.agreed_choice``)."""
    t0, agreeing = time.perf_counter(), eng.agreed_s
    call = _checked(eng, x, codec, op, out, algorithm, residual, stats, source, params)
    stats = CommStats() if stats is None else stats
    choice, spec, kw, plan = _resolved(eng, comm, call, op, algorithm, segment, agreed)
    if call.feedback is not None:  # known zero after this call only where it empties it
        call.feedback.worker_zero = False
    if call.source is not None and (kw is None or plan.name == "hierarchy"):
        call.err = call.source.fetch(call.a)  # the raw values are needed here
        call.source = None
    t1 = time.perf_counter()
    if kw is None:
        reduced = _uncompressed(eng, comm, call, spec, op, stats)
        if choice is None:
            eng.link.add_transfer("raw", reduced, time.perf_counter() - t1)
        else:  # the link's sample and auto's overhead, from some of a key's many calls
            auto_state.record_raw(eng, reduced, time.perf_counter() - t1)
        if settle and (call.err is None or call.host_worker) and reduced == call.a.nbytes:
            _settle(eng, comm, call, op, algorithm, segment, choice)
    else:
        framed, compressing = stats.frame_bytes, stats.compress_seconds
        _compressed(eng, comm, call, spec, kw, plan, op, segment, stats)
        if choice is not None:  # what this call teaches auto: ratio, codec cost, overhead
            framed, compressing = stats.frame_bytes - framed, stats.compress_seconds - compressing
            elapsed = time.perf_counter() - t1
            auto_state.record(
                eng, choice, call.a.nbytes, framed, compressing, elapsed, plan.cost_name
            )
    _accounted(eng, choice, call, stats, t0, agreeing)
    return call.res


def _accounted(
    eng: Engine, choice: auto_state.Choice | None, call: _Call, stats: CommStats, t0: float,
    agreeing: float,
) -> None:  # fmt: skip
    """A finished call's time: auto's (its own work, all but waiting in its agreements for
    the others) and the statistics'."""
    if choice is not None:
        auto_state.ran(eng, choice, time.perf_counter() - t0 - (eng.agreed_s - agreeing))
    stats.calls += 1
    stats.raw_bytes += call.a.nbytes
    stats.total_seconds += time.perf_counter() - t0


@dataclass(slots=True)
class _Call:
    """An allreduce's checked arguments: x and out as flat arrays, the host residual (``err``:
    the worker's, with a ``feedback``), the device ``source``, whether a residual is sent along
    (``ef``), whether ``err`` is the feedback's worker residual on the host (``host_worker``)
    and known to hold zeros (``known_zero``)."""

    spec: CodecSpec
    a: np.ndarray
    res: np.ndarray
    err: np.ndarray | None
    feedback: ErrorFeedback | None
    source: Source | None
    ef: bool
    host_worker: bool
    known_zero: bool


def _checked(
    eng: Engine, x: object, codec: object, op: str, out: object, algorithm: str,
    residual: object, stats: object, source: Source | None, params: dict,
) -> _Call:  # fmt: skip
    """The arguments, checked; an invalid one raises here and on every other rank."""
    try:
        check_stats(stats)
        spec = normal_spec(codec, params)  # the compiled path's kind names this object
        a = as_array(x)
        check_reducible(a)
        check_op(op)
        res = output_like(a, out)
        check_in_place(a, res)
        feedback = residual if isinstance(residual, ErrorFeedback) else None
        if feedback is not None:  # a source holds the worker residual itself
            residual = None if source is not None else feedback.worker
        err = None if residual is None else output_like(a, residual)
        if source is not None and (err is not None or source.count != a.size):
            raise ValueError("a source stands for x's values and holds its own residual")
        ef = err is not None or (source is not None and source.has_residual)
        if ef and not spec.caps.error_feedback:
            raise ValueError(f"codec {spec.codec!r} takes no error-feedback residual")
        check_algorithm(spec, algorithm)
    except (TypeError, ValueError) as exc:
        eng.agree_failed("allreduce", exc)
    host_worker = feedback is not None and source is None
    known_zero = host_worker and feedback.worker_zero
    return _Call(spec, a, res, err, feedback, source, ef, host_worker, known_zero)


def _resolved(
    eng: Engine, comm: MPI.Comm, call: _Call, op: str, algorithm: str, segment: int,
    agreed: np.void | None,
) -> tuple[auto_state.Choice | None, CodecSpec, dict | None, Plan | None]:  # fmt: skip
    """The agreement and what it decides: auto's choice (None for a given codec), the codec
    that runs, its pycodecs keywords (None: uncompressed) and the plan."""
    spec, a, ef = call.spec, call.a, call.ef
    sent_residual = None if call.known_zero else call.err  # the bound is on a + residual
    if not spec.auto:
        plan = Plan(eng, comm, spec, algorithm, a.size, dtype=a.dtype, segment=segment)
        kw = agreed_kwargs(
            eng, comm, a, spec, op, "allreduce", algorithm, ef, segment, source=call.source,
            budget=plan.budget, residual=sent_residual,
        )  # fmt: skip
        return None, spec, kw, plan
    choice = auto.agreed_choice(
        eng, comm, a, spec, op, "allreduce", algorithm, ef, segment, ef=ef, source=call.source,
        residual=sent_residual, agreed=agreed,
        algorithm_of=lambda s: _flat_plan(eng, comm, s, algorithm, a, segment).name,
    )  # fmt: skip
    spec, kw = choice.spec, choice.kw
    plan = None if kw is None else _flat_plan(eng, comm, spec, algorithm, a, segment)
    return choice, spec, kw, plan


def _uncompressed(
    eng: Engine, comm: MPI.Comm, call: _Call, spec: CodecSpec, op: str, stats: CommStats
) -> int:
    """The data go raw (``plain``), the residual with them, exactly; the bytes MPI reduced."""
    a, err = call.a, call.err
    if err is not None and not call.known_zero:  # the residual goes out now, exactly
        a = a + err
        err[...] = 0
    if call.host_worker:
        call.feedback.worker_zero = True
    stats.frame_bytes += a.nbytes
    return plain.allreduce(eng, comm, a, call.res, op, wide=spec.caps.exact_sum, stats=stats)


def _compressed(
    eng: Engine, comm: MPI.Comm, call: _Call, spec: CodecSpec, kw: dict, plan: Plan, op: str,
    segment: int, stats: CommStats,
) -> None:  # fmt: skip
    """Compress, exchange and decode segment by segment (or the node hierarchy)."""
    a, res, err = call.a, call.res, call.err
    if plan.name == "hierarchy":
        hierarchy.allreduce(eng, plan.layout, a, res, err, spec, kw, segment, stats, call.feedback)
    else:
        alg = make(plan.name, eng, comm, kw, spec.caps.exact_sum, stats, call.feedback)
        segments = chunk_bounds(a.size, -(-a.size // max(1, int(segment))))
        run_segments(eng, alg, a, res, err, segments, stats, call.source)
    if op == "mean":
        np.divide(res, comm.Get_size(), out=res)
    stats.lossy_calls += not spec.lossless


def _settle(
    eng: Engine, comm: MPI.Comm, call: _Call, op: str, algorithm: str, segment: int,
    choice: auto_state.Choice | None,
) -> None:  # fmt: skip
    """After an uncompressed call summed in the dtype (``plain``): keep its kind for the
    compiled path, codec="none" always, codec="auto" where the key keeps raw summed in the
    dtype (its entry's own ``raw`` choice), with the test of the bound on the agreed range
    (``cost.raw_proof``; for rms, the test against overflow). The kind names the call's
    spec (every spelling of a request alike); a call with an ``ErrorFeedback`` is a kind of
    its own (auto's key counts the residual too)."""
    a, spec = call.a, call.spec
    key = (spec, op, algorithm, segment, a.dtype, a.size, call.host_worker)
    what = ("allreduce", a.dtype.str, a.size, op, algorithm, call.ef, segment)  # as agreed
    if choice is None:
        label = call_label("allreduce", spec.codec, a.dtype, a.size, op)
        record = functools.partial(hot.record_link, eng, a.nbytes)
        hot.settle(eng, key, a, op == "mean", spec.signature(*what), label, record)
        return
    entry = auto_state.observed(eng).keys.get(choice.key)
    if entry is None or choice is not entry.raw:
        return
    label = call_label("allreduce", "auto", a.dtype, a.size, op)
    record = functools.partial(auto_state.record_settled, eng, a.nbytes)
    proof = raw_proof(spec.mode, spec.error_bound, comm.Get_size(), op == "mean", a.dtype)
    hot.settle(eng, key, a, op == "mean", choice.key, label, record, entry, proof)


def _flat_plan(eng, comm, spec: CodecSpec, algorithm: str, a: np.ndarray, segment: int) -> Plan:
    """The plan of a codec="auto" call for the codec it weighs or chose: the flat algorithms
    only (auto's bound and cost arithmetic are flat), the caller's if the codec takes it."""
    try:
        check_algorithm(spec, algorithm)
    except ValueError:
        algorithm = "auto"
    return Plan(eng, comm, spec, algorithm, a.size, False, a.dtype, segment)


def reduce_scatter(
    x: object,
    comm: MPI.Comm | None = None,
    codec: str | CodecSpec | None = "none",
    *,
    op: str = "sum",
    out: object | None = None,
    residual: object | None = None,
    stats: CommStats | None = None,
    **params: object,
) -> np.ndarray:
    """Reduce x (size N*m) over the N ranks; rank r gets elements [r*m, (r+1)*m) of the result.

    The bound of ``allreduce`` holds for each block. Returns ``out`` or a new array of m.
    ``residual`` (x's size and dtype) turns on error feedback as in ``allreduce``: this rank
    sends x + residual and keeps what its compression lost. ebq takes the first half of ``ring``,
    quantizers the two-phase exchange's (their block is decoded, not compressed again).
    ``stats`` (a CommStats) is added to as by ``allreduce``.
    """
    eng = engine_of(comm)
    kw = dict(op=op, out=out, residual=residual, stats=stats)
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
    stats: CommStats | None = None,
    **params: object,
) -> np.ndarray:
    """The Python path of ``reduce_scatter``, in ``_allreduce``'s steps: the arguments, the
    choice (in the agreement), the exchange, the statistics."""
    t0, agreeing = time.perf_counter(), eng.agreed_s
    call = _scatter_checked(eng, comm, x, codec, op, out, residual, stats, params)
    stats = CommStats() if stats is None else stats
    choice, spec, kw = _scatter_resolved(eng, comm, call, op)
    if kw is None:
        _scatter_uncompressed(eng, comm, call, spec, op, stats)
    else:
        _scatter_compressed(eng, comm, call, spec, kw, op, stats)
    _accounted(eng, choice, call, stats, t0, agreeing)
    return call.res


def _scatter_checked(
    eng: Engine, comm: MPI.Comm, x: object, codec: object, op: str, out: object,
    residual: object, stats: object, params: dict,
) -> _Call:  # fmt: skip
    """A reduce_scatter's arguments, checked (an invalid one raises here and on every other
    rank): ``res`` is this rank's block, the residual a plain array (no ``ErrorFeedback``)."""
    size = comm.Get_size()
    try:
        check_stats(stats)
        spec = normal_spec(codec, params)  # the compiled path's kind names this object
        a = as_array(x)
        check_reducible(a)
        check_op(op)
        if a.size % size:
            raise ValueError(f"reduce_scatter needs a size divisible by {size} ranks, got {a.size}")
        res = output_like(a, out, a.size // size)
        err = None if residual is None else output_like(a, residual)
        if err is not None and not spec.caps.error_feedback:
            raise ValueError(f"reduce_scatter with codec {spec.codec!r} takes no residual")
    except (TypeError, ValueError) as exc:
        eng.agree_failed("reduce_scatter", exc)
    ef = err is not None
    return _Call(
        spec, a, res, err, feedback=None, source=None, ef=ef, host_worker=False, known_zero=False
    )


def _scatter_resolved(
    eng: Engine, comm: MPI.Comm, call: _Call, op: str
) -> tuple[auto_state.Choice | None, CodecSpec, dict | None]:
    """The agreement and what it decides, as ``_resolved``: auto's choice (None for a given
    codec), the codec that runs and its pycodecs keywords (None: uncompressed). The codec
    fixes the algorithm (``_scatter_algorithm``)."""
    spec, a, ef, err = call.spec, call.a, call.ef, call.err
    if not spec.auto:
        return None, spec, agreed_kwargs(eng, comm, a, spec, op, "reduce_scatter", ef, residual=err)
    # casts are left out with a residual: auto then picks raw or ebq
    choice = auto.agreed_choice(
        eng, comm, a, spec, op, "reduce_scatter", ef, ef=ef, residual=err,
        algorithm_of=_scatter_algorithm,
    )  # fmt: skip
    return choice, choice.spec, choice.kw


def _scatter_algorithm(spec: CodecSpec) -> str:
    """A compressed reduce_scatter's algorithm: the ring's first half for exact sums (ebq),
    the two-phase exchange's for quantizers."""
    return "ring" if spec.caps.exact_sum else "twophase"


def _scatter_uncompressed(
    eng: Engine, comm: MPI.Comm, call: _Call, spec: CodecSpec, op: str, stats: CommStats
) -> None:
    """All of x goes raw, as an allreduce's (``_uncompressed``); this rank keeps its block."""
    whole = replace(call, res=np.empty_like(call.a))
    _uncompressed(eng, comm, whole, spec, op, stats)
    m, rank = call.res.size, comm.Get_rank()
    call.res[...] = whole.res[rank * m : (rank + 1) * m]


def _scatter_compressed(
    eng: Engine, comm: MPI.Comm, call: _Call, spec: CodecSpec, kw: dict, op: str,
    stats: CommStats,
) -> None:  # fmt: skip
    """Compress and exchange once (no segments): this rank's block of the sum, decoded."""
    a, res, err = call.a, call.res, call.err
    if _scatter_algorithm(spec) == "ring":
        ring = Ring(eng, comm, kw, stats)
        frames = first_frames(ring, a.size, host_framer(a, err, kw), stats)
        pycodecs.decompress(ring.reduce_scatter(frames, a), out=res)
    else:  # this rank's block is decoded, not compressed again
        two = TwoPhase(eng, comm, kw, stats)
        frames = first_frames(two, a.size, host_framer(a, err, kw), stats)
        two.reduce_scatter(frames, a, out=res)
    if op == "mean":
        np.divide(res, comm.Get_size(), out=res)
