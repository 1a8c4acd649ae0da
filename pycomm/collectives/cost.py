"""codec="auto"'s cost model: predicted times of the candidates, and the proofs that a cast
keeps the user's bound. Pure functions of their arguments (``auto`` feeds them agreed values,
so every rank computes the same choice)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from pycomm.chooser import KNOBS
from pycomm.collectives.bound import largest, unit_roundoff
from pycomm.collectives.link import exchange_rounds, moved_bytes
from pycomm.collectives.spec import AUTO_CODECS

CANDIDATES = ("raw", "fp16", "bf16", "ebq_fast", "ebq_dense")
#: A compressed codec is chosen only if predicted faster than raw by this factor (the
#: chooser's own margin for measured times).
MARGIN = KNOBS["codec"].margin
#: Unit roundoff of each cast, and half the spacing of its subnormals (the absolute floor).
CAST_ROUNDOFF = {"fp16": 2.0**-11, "bf16": 2.0**-8}
CAST_FLOOR = {"fp16": 2.0**-25, "bf16": 2.0**-134}
assert set(CAST_ROUNDOFF) <= set(AUTO_CODECS), "a receiver would refuse a cast auto sends"
#: Largest value each cast may meet, a little inside its largest finite one (65504 for fp16,
#: (2 - 2^-7) * 2^127 for bf16), so that its rounding stays finite.
CAST_LARGEST = {"fp16": 65000.0, "bf16": 3.38e38}
HEADER_BYTES = 64
LEVELS = ("ebq_fast", "ebq_dense")


class Figures(NamedTuple):
    """What a choice weighs: link (s per round, s per byte), codec s per input byte (encode
    and decode), a dense frame's size over a fast one's, the frame size over the input of
    each ebq level (0: unknown yet), and each kind's measured time per call beyond that."""

    latency_s: float
    per_byte: float
    ebq_fast: float
    ebq_dense: float
    cast: float
    dense_share: float
    ratio_fast: float = 0.0
    ratio_dense: float = 0.0
    #: seconds a call of each kind took beyond what the figures above explain (measured)
    over_raw: float = 0.0
    over_ebq: float = 0.0
    over_cast: float = 0.0
    #: seconds per byte the link is at least as fast as (``Link.per_byte_bound``; 0: none)
    per_byte_bound: float = 0.0

    def agreed_vector(self) -> tuple[float, ...]:
        """The figures as the agreement's MAX reduces them: the link's negated, so that the
        agreed link is the fastest any rank measured (a rank that came early also timed its
        wait for the last one, which is no cost of the link), the rest the slowest. (The
        bound's 0.0, none, then wins: no bound unless every rank has one.)"""
        return (-self[0], -self[1], *self[2:-1], -self[-1])

    @classmethod
    def from_agreed(cls, v) -> Figures:
        return cls(-float(v[0]), -float(v[1]), *map(float, v[2:-1]), -float(v[-1]))


def choose_frame(
    fig: Figures, *, count: int, dtype: np.dtype, ranks: int, top: float, bound: float
) -> str:
    """The candidate of least predicted time for frames decoded as sent (allgather, bcast,
    send: ``ranks`` - 1 copies move), where every |x| <= top and every frame's bound is at
    least ``bound`` (a pure function)."""
    itemsize = np.dtype(dtype).itemsize

    def allowed(name: str) -> bool:
        if name not in CAST_ROUNDOFF:
            return True
        err = CAST_ROUNDOFF[name] * top + CAST_FLOOR[name]
        return dtype == np.float32 and err <= bound and top <= CAST_LARGEST[name]

    raw_t = predict(fig, "raw", count, itemsize, ranks, "allgather")
    timed = (
        (name, predict(fig, name, count, itemsize, ranks, "allgather", bound, top))
        for name in CANDIDATES[1:]
        if allowed(name)
    )
    return _fastest(raw_t, timed)


def choose(fig: Figures, **kw: Any) -> str:
    """The candidate of least predicted time that keeps the bound (``ranked``'s keywords; a
    pure function): raw, or the fastest other if it beats raw by ``MARGIN``."""
    if kw["ranks"] < 2:
        return "raw"
    ranking = ranked(fig, **kw)
    raw_t = dict(ranking)["raw"]
    return _fastest(raw_t, ((name, t) for name, t in ranking if name != "raw"))


def ranked(
    fig: Figures,
    *,
    count: int,
    dtype: np.dtype,
    ranks: int,
    mean: bool,
    bound: float,
    top: float,
    rank_bound: float | None,
    casts: bool,
    algorithm_of: Callable[[str], str],
) -> list[tuple[str, float]]:
    """The candidates that keep the bound with their predicted seconds, fastest first (raw
    always among them; a pure function).

    ``bound`` and ``top``: the user's bound on the result and the largest |x| (agreed);
    ``rank_bound``: ebq's per-rank bound (None: ebq cannot keep the bound at this magnitude);
    ``casts``: whether fp16/bf16 may be weighed at all; ``algorithm_of(name)``: the
    algorithm the collective would run for candidate ``name`` (the cast's proof is that
    algorithm's).
    """
    itemsize = np.dtype(dtype).itemsize
    limit = budget(bound, top, ranks, mean, dtype)
    wide = raw_error(top, ranks, dtype) > limit

    def allowed(name: str) -> bool:
        if name not in CAST_ROUNDOFF:
            return rank_bound is not None
        return casts and cast_proven(name, top, ranks, dtype, algorithm_of(name), limit)

    timed = [("raw", predict(fig, "raw", count, itemsize, ranks, "raw", wide=wide))]
    for name in CANDIDATES[1:]:
        if allowed(name):
            algorithm = cost_name(algorithm_of(name))
            timed.append(
                (name, predict(fig, name, count, itemsize, ranks, algorithm, rank_bound, top))
            )
    return sorted(timed, key=lambda pair: pair[1])


def _fastest(raw_t: float, timed) -> str:
    """raw, or the fastest (name, seconds) of ``timed`` if it beats raw's ``raw_t`` by
    ``MARGIN`` (the one selection rule of ``choose`` and ``choose_frame``)."""
    best, best_t = "raw", raw_t
    for name, t in timed:
        if t < raw_t * MARGIN and (best == "raw" or t < best_t):
            best, best_t = name, t
    return best


def predict(
    fig: Figures,
    name: str,
    count: int,
    itemsize: int,
    ranks: int,
    algorithm: str,
    rank_bound: float = 0.0,
    top: float = 0.0,
    *,
    wide: bool = False,
) -> float:
    """Predicted seconds of an allreduce of count elements through candidate ``name``."""
    nbytes = count * itemsize
    if name == "raw":
        frame, codec = nbytes * (2 if wide else 1), 0.0
    elif name in CAST_ROUNDOFF:
        frame = count * 2 + HEADER_BYTES
        codec = nbytes * fig.cast * (ranks + 1) / 2  # a ring or a gather decodes ~N/2 more
    else:
        share = ratios(fig, rank_bound, top, itemsize)[name == "ebq_dense"]
        frame = nbytes * share + HEADER_BYTES
        codec = nbytes * (fig.ebq_dense if name == "ebq_dense" else fig.ebq_fast)
    return codec + wire_time(fig, algorithm, ranks, frame) + overhead(fig, name)


def wire_time(fig: Figures, algorithm: str, ranks: int, frame_bytes: float) -> float:
    """Rounds x latency + bytes moved x seconds per byte of an exchange."""
    moved = moved_bytes(algorithm, ranks, frame_bytes)
    return exchange_rounds(algorithm, ranks) * fig.latency_s + moved * fig.per_byte


def overhead(fig: Figures, name: str) -> float:
    """What calls of candidate ``name`` measurably took beyond the model (waits, probes,
    threads): a time per call, so that it weighs most where messages are small."""
    if name == "raw":
        return fig.over_raw
    return fig.over_cast if name in CAST_ROUNDOFF else fig.over_ebq


def ratios(fig: Figures, rank_bound: float, top: float, itemsize: int) -> tuple[float, float]:
    """Frame over input size of ebq (fast, dense): from history, else a first guess from the
    bound (the fast level packs each index in about log2(top / 2e) + 2 bits)."""
    fast = fig.ratio_fast
    if not fast:
        bits = math.log2(top / (2 * rank_bound) + 1) + 2 if rank_bound > 0 else 8 * itemsize
        fast = min(1.0, bits / (8 * itemsize))
    return fast, fig.ratio_dense or fast * fig.dense_share


#: The algorithms ``cast_error`` has a proof for.
CAST_ALGORITHMS = ("allgather", "twophase")


def cast_error(name: str, top: float, ranks: int, dtype: np.dtype, algorithm: str) -> float | None:
    """Worst |result - exact sum| of a cast allreduce run by ``algorithm`` on N ranks with
    |x| <= top; None where there is no proof (a partial sum could overflow the cast or the
    dtype the decoded values are summed in, or an algorithm this proof does not model).

    Each cast rounds a value v by at most u*|v| + floor, and the float additions in the dtype
    add at most N^2 units of roundoff of top (N-1 additions of partial sums of at most N*top),
    every value grown by (1+u)^N for earlier roundings:
    - "allgather": every rank casts its input once (N casts of at most top), and the decoded
      frames are added in rank order;
    - "twophase": the same N casts and additions by each chunk's owner, then the owner casts
      the sum (at most N*top) once more before the allgather.
    """
    u, n = CAST_ROUNDOFF[name], float(ranks)
    grow = (1 + u) ** n
    if not n * top * grow <= min(CAST_LARGEST[name], largest(dtype)):
        return None
    if algorithm not in CAST_ALGORITHMS:
        return None
    casts = n * (u * top * grow + CAST_FLOOR[name])
    if algorithm == "twophase":
        casts += u * n * top * grow + CAST_FLOOR[name]
    return casts + n * n * unit_roundoff(dtype) * top * grow


def cast_proven(
    name: str, top: float, ranks: int, dtype: np.dtype, algorithm: str, limit: float
) -> bool:
    """Whether cast ``name`` run by ``algorithm`` keeps a sum's error within ``limit``
    (``budget``) for |x| <= top: ``cast_error`` exists and is at most the limit."""
    err = cast_error(name, top, ranks, dtype, algorithm)
    return err is not None and err <= limit


def cost_name(algorithm: str) -> str:
    """The name the cost model knows an algorithm by: "ring" for the exchanges that move
    2(N-1)/N of the frames (ring, two-phase), else "allgather"."""
    return "ring" if algorithm in ("ring", "twophase") else "allgather"


def raw_error(top: float, ranks: int, dtype: np.dtype) -> float:
    """Worst error of MPI's own sum in the dtype: N-1 additions of at most N*top each."""
    return ranks * ranks * unit_roundoff(dtype) * top


@functools.lru_cache(maxsize=1024)
def raw_within_rms(error_bound: float, count: int, ranks: int, mean: bool, dtype: np.dtype) -> bool:
    """Whether a sum in the dtype keeps a bound of ``error_bound`` times the largest rms
    whatever the data: every |x| <= sqrt(count) * rms (a pure function, no statistics). A
    proof for any data, so it needs no margin for the data of later calls."""
    top = math.sqrt(count)  # in units of the largest rms
    return raw_error(top, ranks, dtype) <= budget(error_bound, top, ranks, mean, dtype)


#: How much stricter ``raw_proof``'s test is than the exact one (its floating-point slack).
PROOF_SLACK = 1e-9


@functools.lru_cache(maxsize=1024)
def raw_proof(
    mode: str, error_bound: float, ranks: int, mean: bool, dtype: np.dtype
) -> tuple[float, float, float] | None:
    """A sum in the dtype's test (``auto._raw``: raw_error(top) <= budget, ranks * top <=
    largest) for a bound relative to the range or absolute, as three numbers (per_range,
    per_const, largest): the sum keeps the bound where the agreed largest |x| (top) and range
    (max - min) give top <= per_range * range + per_const and ranks * top <= largest. Both
    sides of the test grow linearly with top and, for a relative bound, the range, so the
    largest top per unit of range (or of the absolute bound) is found once, by bisection,
    and taken ``PROOF_SLACK`` smaller: never looser than the exact test. For rms, where the
    compiled path keeps raw only on a proof for any data (``raw_within_rms``), the overflow
    test alone: (0, inf, largest)."""
    if mode == "rms":
        return 0.0, math.inf, largest(dtype)

    def holds(top: float) -> bool:  # the bound per unit of range (rel), or itself (abs)
        return raw_error(top, ranks, dtype) <= budget(error_bound, top, ranks, mean, dtype)

    lo, hi = 0.0, error_bound if error_bound > 0 else 0.0
    while hi and holds(hi):
        lo, hi = hi, 2 * hi
    for _ in range(200 if hi else 0):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if holds(mid) else (lo, mid)
    cap = lo * (1 - PROOF_SLACK)
    per_range, per_const = (cap, 0.0) if mode == "rel" else (0.0, cap)
    return per_range, per_const, largest(dtype)


def budget(bound: float, top: float, ranks: int, mean: bool, dtype: np.dtype) -> float:
    """What the sum's error may be for the result to keep ``bound`` (a mean divides by N and
    rounds once more)."""
    if not mean:
        return bound
    return (bound - unit_roundoff(dtype) * (top + bound)) * ranks
