"""Which algorithm a compressed allreduce takes (``choose``), and how it runs segment by segment.

The one place of the selection rule. ``Plan`` resolves it after the agreement (every rank then
holds the same arguments), finding the communicator's node layout first when the hierarchy may
apply, and gives ebq's bound arithmetic the shape it needs (flat, or nodes then leaders).
"""

from __future__ import annotations

import functools
import time

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives.bound import node_bound, rank_bound
from pycomm.collectives.cost import cost_name
from pycomm.collectives.engine import Engine
from pycomm.collectives.gathered import Gathered
from pycomm.collectives.nodes import Layout, layout_of, spans_nodes
from pycomm.collectives.ring import Framer, Ring, host_framer
from pycomm.collectives.spec import CodecSpec
from pycomm.collectives.stats import CommStats
from pycomm.collectives.twophase import TwoPhase

ALGORITHMS = ("auto", "ring", "twophase", "allgather", "hierarchy")
#: Below this many elements in each rank's chunk the gathered algorithm wins on latency (ebq,
#: whose frame bytes depend on the data, and the hierarchy), while its bytes allow (below).
MIN_CHUNK_COUNT = 1 << 14
#: ebq's frames before the call: its input over this (its ratios run 3-18 on gradients).
GUESSED_EBQ_RATIO = 8
#: Pipeline segment: compression of one segment overlaps the exchange of the previous one.
SEGMENT_COUNT = 1 << 21
#: What one message costs, counted in bytes on the wire: about a link's latency times its
#: bandwidth. A cluster link (5 µs at 100 Gbit/s: 62 KB) and this project's emulator (0.74 ms
#: per round at 0.64 Gbit/s, BENCHMARKS "The performance model": 59 KB) both come near 64 KiB.
MESSAGE_BYTES = 1 << 16


def choose(
    spec: CodecSpec,
    size: int,
    count: int,
    algorithm: str = "auto",
    layout: Layout | None = None,
    dtype: np.dtype | str = "float32",
    segment: int = SEGMENT_COUNT,
) -> str:
    """The algorithm of a compressed allreduce of count elements of dtype on size ranks, run in
    pipeline segments of ``segment`` elements. Every input is agreed (the layout is found by
    all ranks together), so every rank takes the same algorithm.

    "auto": the node ``hierarchy`` when ``layout`` spans several nodes, some node holds
    several ranks, and each node's chunk holds at least ``MIN_CHUNK_COUNT`` elements (the
    leaders then follow the rest of this rule among themselves); else, for ebq, the ``ring``
    from 2 ranks when each rank's chunk holds at least ``MIN_CHUNK_COUNT`` elements (exact
    index sums: no second compression, 1/N of the gathered path's index additions; its frame
    bytes depend on the data, unknown before the call), or when the gathered path's N-1 whole
    frames would cost more than the ring's extra messages (``gathered_bytes_too_many``: on many
    ranks a chunk is small while the frames are not); for codecs whose frames have a fixed
    size (the quantizers), whichever of ``twophase`` and ``allgather`` costs less in
    ``exchange_cost`` (bytes sent plus ``MESSAGE_BYTES`` per message; a tie takes
    ``allgather``); else ``allgather`` (one allgather of whole frames: fewest rounds).
    """
    if algorithm != "auto":
        return algorithm
    if layout is not None and layout.worth_it and count >= MIN_CHUNK_COUNT * len(layout.sizes):
        return "hierarchy"
    if spec.caps.fixed_size and size >= 3:
        return _cheaper(spec, size, count, dtype, segment, MESSAGE_BYTES)
    if spec.caps.exact_sum and size >= 2:
        if count < MIN_CHUNK_COUNT * size:
            return "ring" if gathered_bytes_too_many(size, count, dtype, segment) else "allgather"
        return "ring"
    return "allgather"


def gathered_bytes_too_many(size: int, count: int, dtype: np.dtype | str, segment: int) -> bool:
    """Whether ebq's gathered path sends more than the ring by over what the ring's extra
    messages cost: per segment of n elements, it sends (N-1)·F(n) against the ring's
    2(N-1)/N·F(n), in N-1 fewer messages; that is (N-2)/N·F(n) > ``MESSAGE_BYTES``, F(n)
    guessed at n elements over ``GUESSED_EBQ_RATIO``. Never on 2 ranks (equal bytes)."""
    _, n = segmented(count, segment)
    return (size - 2) / size * n * np.dtype(dtype).itemsize / GUESSED_EBQ_RATIO > MESSAGE_BYTES


def segmented(count: int, segment: int) -> tuple[int, int]:
    """(segments, elements of the largest) of an allreduce of count run in segments of at
    most ``segment`` elements."""
    segments = max(1, -(-count // max(1, int(segment))))
    return segments, -(-count // segments)


#: The algorithms ``exchange_cost`` weighs (codecs of fixed-size frames).
FIXED = ("twophase", "allgather")


def exchange_cost(
    name: str,
    spec: CodecSpec,
    size: int,
    count: int,
    dtype: np.dtype | str,
    segment: int,
    message_bytes: int | None = None,
) -> float:
    """What ``choose`` weighs: the bytes a rank sends in the allreduce ``name`` plus
    ``message_bytes`` (``MESSAGE_BYTES``) for each message it sends (``exchange``)."""
    sent, messages = exchange(name, spec, size, count, dtype, segment)
    return sent + (MESSAGE_BYTES if message_bytes is None else message_bytes) * messages


@functools.lru_cache(maxsize=1024)  # a training step asks the same few questions each time
def _cheaper(spec: CodecSpec, size: int, count: int, dtype, segment: int, message_bytes: int):
    """ "twophase" if it costs less than "allgather" (``exchange_cost``), else "allgather"."""
    twophase, gathered = (
        exchange_cost(name, spec, size, count, dtype, segment, message_bytes) for name in FIXED
    )
    return "twophase" if twophase < gathered else "allgather"


def exchange(
    name: str, spec: CodecSpec, size: int, count: int, dtype: np.dtype | str, segment: int
) -> tuple[float, int]:
    """(bytes sent, messages sent) by one rank, on average over the ranks, in the allreduce
    ``name`` ("twophase" or "allgather") of count elements of a fixed-size codec on size ranks,
    summed over the pipeline segments (each taken as large as the largest).

    Per segment of n elements, F(k) the frame of k elements (``pycodecs.compress_bound``, exact
    for these codecs), and ``allgather_frames`` sending N-1 messages of sizes before its N-1 of
    frames from 3 ranks on: allgather moves (N-1)·F(n) in 2(N-1) messages; twophase each rank's
    N-1 chunk frames to their owners, then each owner's reduced chunk to the N-1 others:
    2(N-1)/N·ΣF(chunk) in 3(N-1) messages. So twophase pays once its savings, about
    (N-1)(N-2)/N·F(n), outweigh N-1 more messages per segment.
    """
    dt = np.dtype(dtype).name
    kw = spec.codec_kwargs()
    segments, n = segmented(count, segment)

    def frame(k: int) -> int:
        return pycodecs.compress_bound(k, dtype=dt, **kw)

    gather_messages = (size - 1) * (1 if size == 2 else 2)
    if name == "allgather":
        sent, messages = (size - 1) * frame(n), gather_messages
    elif name == "twophase":
        base, extra = divmod(n, size)  # chunk_bounds: sizes base + 1 (extra of them) and base
        chunks = extra * frame(base + 1) + (size - extra) * frame(base)
        sent, messages = 2 * (size - 1) * chunks / size, size - 1 + gather_messages
    else:
        raise ValueError(f"exchange weighs {FIXED}, not {name!r}")
    return segments * sent, segments * messages


def check_algorithm(spec: CodecSpec, algorithm: str) -> None:
    """Raise ValueError for an unknown algorithm or one the codec cannot take."""
    if algorithm == "auto":  # any codec takes it (the common case: checked on every call)
        return
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, not {algorithm!r}")
    if spec.auto and algorithm == "hierarchy":
        raise ValueError("codec='auto' takes the flat algorithms, not the hierarchy")
    if spec.auto or not spec.compressed:
        return
    if algorithm == "ring" and not spec.caps.exact_sum:
        raise ValueError(f"the ring adds frames exactly: ebq only, not {spec.codec!r}")
    if algorithm == "twophase" and spec.caps.exact_sum:
        raise ValueError("the two-phase exchange is for quantizers; ebq takes the ring")


class Plan:
    """The algorithm of one allreduce, resolved after the agreement."""

    def __init__(
        self,
        eng: Engine,
        comm: MPI.Comm,
        spec: CodecSpec,
        algorithm: str,
        count: int,
        hierarchy: bool = True,
        dtype: np.dtype | str = "float32",
        segment: int = SEGMENT_COUNT,
    ) -> None:
        self.eng, self.comm, self.spec = eng, comm, spec
        self.algorithm, self.count, self.hierarchy = algorithm, count, hierarchy
        self.dtype, self.segment = dtype, segment
        self._name: str | None = None
        self.layout: Layout | None = None

    @property
    def name(self) -> str:
        if self._name is None:
            size = self.comm.Get_size()
            maybe = self.algorithm == "hierarchy" or (
                self.hierarchy
                and self.algorithm == "auto"
                and size >= 3
                and self.count >= MIN_CHUNK_COUNT * 2
            )
            if self.algorithm == "auto" and maybe:  # no split unless the hosts say it may pay
                maybe = spans_nodes(self.eng, self.comm)
            if maybe:  # the layout is found by every rank together, once per communicator
                self.layout = layout_of(self.eng, self.comm)
            self._name = choose(
                self.spec, size, self.count, self.algorithm, self.layout, self.dtype, self.segment
            )
        return self._name

    @property
    def cost_name(self) -> str:
        return cost_name(self.name)

    def budget(self, bound: float, magnitude: float, mean: bool, dtype: np.dtype) -> float | None:
        """ebq's per-rank bound for a final bound ``bound`` (see ``bound``)."""
        if self.name == "hierarchy":
            return node_bound(bound, self.layout.sizes, magnitude, mean, dtype)
        return rank_bound(bound, self.comm.Get_size(), magnitude, mean, dtype)


def make(name: str, eng, comm, kw: dict, exact: bool, stats: CommStats, feedback=None):
    """The flat algorithm object called name, on comm."""
    if name == "ring":
        return Ring(eng, comm, kw, stats)
    if name == "twophase":
        return TwoPhase(eng, comm, kw, stats, feedback)
    return Gathered(eng, comm, kw, exact, stats)


def first_frames(alg, count: int, framer: Framer, stats: CommStats) -> list:
    """alg's first frames of count elements, their compression time and bytes counted."""
    t0 = time.perf_counter()
    frames = alg.first(count, framer)
    stats.compress_seconds += time.perf_counter() - t0
    stats.frame_bytes += sum(len(f) for f in frames if f is not None)
    return frames


def run_segments(eng, alg, a, res, err, segments, stats: CommStats, source=None) -> None:
    """Compress, exchange and decode each segment; with several, compression of segment k+1
    (this thread) overlaps the exchange of segment k (the engine's wire thread)."""

    def framer(lo: int, hi: int) -> Framer:
        if source is None:
            return host_framer(a[lo:hi], None if err is None else err[lo:hi], alg.kw)
        return lambda clo, chi, ef: source.frame(lo + clo, lo + chi, alg.kw, ef)

    def first(lo: int, hi: int) -> list:
        return first_frames(alg, hi - lo, framer(lo, hi), stats)

    if len(segments) == 1:
        alg.decode(alg.exchange(first(0, a.size), a), res)
        return
    pending = [eng.wire().submit(alg.exchange, first(lo, hi), a[lo:hi], lo) for lo, hi in segments]
    for (lo, hi), fut in zip(segments, pending, strict=True):
        alg.decode(fut.result(), res[lo:hi])
