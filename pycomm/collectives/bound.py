"""The error budget of the error-bounded allreduce.

Each rank quantizes x_i onto one grid of step 2e with |x_i - y_i| <= e for its decoded value
y_i = fl(q_i * step) (the codec verifies this element by element). The integer sum Q of the q_i
is exact; the result is fl(Q * step), divided by N for a mean. In exact arithmetic

    |sum x_i - Q*step| <= N*e + sum_i |y_i - q_i*step| <= N*e + N*u*(M + e)

where M bounds |x_i| and u is the unit roundoff of the dtype (plus the double product's). The
final rounding adds u*N*(M + e), the mean's division u*(M + E), and outliers (NaN, Inf, or an
element the grid cannot meet, sent exactly) are added in the dtype along the ring, at most N-1
roundings of at most u*N*(M + e) each. ``rank_bound`` picks the largest e that keeps the total
within the user's bound E, or returns None when the dtype cannot meet E at this magnitude, or
when the decoded sum N*(M + e) could overflow the dtype (a mean of values near its largest is
finite: ``plain`` computes it without overflow). None sends the data uncompressed, summed
wide (``plain``: float32 in float64, float64 split so its sums are exact), rounded once.

With the node hierarchy (``node_bound``) a node of k ranks first sums its inputs in float64 and
rounds the sum once to the dtype: off by at most k*M*(u + 2(k-1)*2^-53) (u the dtype's unit
roundoff; 2(k-1)*2^-53 covers the float64 summation with room for second-order terms), so all
nodes together by at most N*M*(u + 2*K*2^-53) for N ranks and K on the largest node. The L
leaders then run the flat arithmetic above on node sums of magnitude at most K*M*(1 + u), for
the budget that is left; a mean divides the final sum by N once, rounding by u*(M + E).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
from mpi4py import MPI

from pycomm.collectives.buffers import finite_min_max, finite_top_rms
from pycomm.collectives.engine import Engine
from pycomm.collectives.source import Source
from pycomm.collectives.spec import CodecSpec

DOUBLE_ROUNDOFF = 2.0**-53
# Index range kept well inside the codec's own limit (|q| < 2^24), so no element overflows.
MAX_INDEX = 2.0**22


@functools.lru_cache(maxsize=8)
def unit_roundoff(dtype: np.dtype) -> float:
    return float(np.finfo(dtype).eps) / 2 + DOUBLE_ROUNDOFF


def rank_bound(
    bound: float, ranks: int, magnitude: float, mean: bool, dtype: np.dtype
) -> float | None:
    """Per-rank bound e for a final bound ``bound`` on the sum (or the mean, if ``mean``)."""
    u, n, magnitude, bound = unit_roundoff(dtype), float(ranks), float(magnitude), float(bound)
    target = bound * n if mean else bound  # the budget of the undivided sum
    rounding = (n * n + 2 * n) * u  # per-rank, final and ring roundings, per unit of (M + e)
    slack = target - rounding * magnitude - (n * u * (magnitude + bound) if mean else 0.0)
    e = slack / (n + rounding * n) * (1 - 2.0**-30)
    if not (e > 0 and np.isfinite(e)) or magnitude / e >= MAX_INDEX:
        return None
    if n * (magnitude + e) * (1 + 2 * u) > largest(dtype):  # the decoded sum could overflow
        return None
    return e


@functools.lru_cache(maxsize=8)
def largest(dtype: np.dtype) -> float:
    """The dtype's largest finite value."""
    return float(np.finfo(dtype).max)


def node_bound(
    bound: float, nodes: Sequence[int], magnitude: float, mean: bool, dtype: np.dtype
) -> float | None:
    """Per-leader bound e of the hierarchy (``nodes``: ranks of each node) for a final bound
    ``bound`` on the sum (or the mean, if ``mean``) of every rank's input; None if the dtype
    cannot meet it."""
    u, n, big = unit_roundoff(dtype), float(sum(nodes)), max(nodes)
    target = bound * n if mean else bound  # the budget of the undivided sum
    if mean:
        target -= n * u * (magnitude + bound)  # the division's rounding, in units of the sum
    target -= n * magnitude * (u + 2 * big * DOUBLE_ROUNDOFF)  # the nodes' sums
    return rank_bound(target, len(nodes), big * magnitude * (1 + u), False, dtype)


def agreed_kwargs(
    eng: Engine,
    comm: MPI.Comm,
    a: np.ndarray,
    spec: CodecSpec,
    op: str,
    what: str,
    *extra: object,
    source: Source | None = None,
    budget: Callable[[float, float, bool, np.dtype], float | None] | None = None,
    residual: np.ndarray | None = None,
) -> dict | None:
    """Agree on the settings across ranks; the pycodecs keywords, or None to go uncompressed.

    For bounded exact-sum codecs (ebq) the per-rank bound comes from the error budget, so that
    the reduced result keeps the user's bound (``mode="rel"``: relative to the range of all
    ranks' finite inputs; ``mode="rms"``: relative to the largest root-mean-square of a rank's
    finite inputs; either agreed in the same allreduce); None also when the dtype cannot meet
    that bound at this magnitude. ``source`` (a ``Source``) gives these statistics when a's
    values live elsewhere; ``residual`` (error feedback) is added to a before compression, so
    the statistics, and the bound, are those of a + residual (what is sent).
    ``budget(bound, magnitude, mean, dtype)`` gives the per-rank bound once the ranks agree
    (``rank_bound`` on comm's ranks by default; the hierarchy's ``node_bound``).
    """
    sig = spec.signature(what, a.dtype.str, a.size, op, *extra)
    label = call_label(what, spec.codec, a.dtype, a.size, op)
    if not (spec.caps.exact_sum and spec.caps.bounded):
        eng.agree(label, sig)
        return spec.codec_kwargs() if spec.compressed and a.size else None
    agreed = eng.agree(label, sig, statistics=local_statistics(a, spec, source, residual))
    return final_kwargs(spec, agreed["statistics"], comm.Get_size(), op, a, budget)


@functools.lru_cache(maxsize=256)
def call_label(what: str, codec: str, dtype: np.dtype, count: int, op: str) -> str:
    """The agreement's name of a kind of call (for its errors), made once per kind."""
    return f"{what} {codec} {dtype} x{count} {op}"


def local_statistics(
    a: np.ndarray,
    spec: CodecSpec,
    source: Source | None = None,
    residual: np.ndarray | None = None,
) -> tuple:
    """This rank's two maxima for spec's bound: (max |x|, rms) for ``mode="rms"``, else
    (max, -min) of the finite values sent: a + residual (as the codec adds them, in the
    dtype), or ``source``'s; one pass over a (and the residual)."""
    if residual is not None:
        a = a + residual
    if source is None:
        if spec.mode == "rms":
            return finite_top_rms(a)
        lo, hi = finite_min_max(a)
        return hi, -lo
    lo, hi = source.finite_min_max()
    if spec.mode == "rms":
        top = max(hi, -lo)
        return top, source.finite_rms(top)
    return hi, -lo


def local_range(
    a: np.ndarray, source: Source | None = None, residual: np.ndarray | None = None
) -> tuple[float, float]:
    """(max, -min) of the finite values sent (a + residual, or ``source``'s), whatever the
    mode: what a proof against overflow needs."""
    if source is not None:
        lo, hi = source.finite_min_max()
    else:
        lo, hi = finite_min_max(a if residual is None else a + residual)
    return hi, -lo


def contract(spec: CodecSpec, agreed: tuple) -> tuple[float, float]:
    """(E, M) from the agreed maxima: the user's bound on the result and the largest |x|."""
    if spec.mode == "rms":
        top, rms = agreed[0], agreed[1]
        return spec.error_bound * rms, top
    hi, neg_lo = agreed[0], agreed[1]
    bound = spec.error_bound * (hi + neg_lo) if spec.mode == "rel" else spec.error_bound
    return bound, max(abs(hi), abs(neg_lo))


def final_kwargs(
    spec: CodecSpec,
    agreed: tuple,
    ranks: int,
    op: str,
    a: np.ndarray,
    budget: Callable[[float, float, bool, np.dtype], float | None] | None = None,
) -> dict | None:
    """ebq's keywords with the per-rank bound that keeps the result within the user's, from
    the agreed maxima (``budget`` as in ``agreed_kwargs``); None to go uncompressed (the dtype
    cannot meet it, or a is empty)."""
    bound, top = contract(spec, agreed)
    if a.size == 0:
        return None
    if budget is None:
        e = rank_bound(bound, ranks, top, op == "mean", a.dtype)
    else:
        e = budget(bound, top, op == "mean", a.dtype)
    if e is None:
        return None
    return spec.codec_kwargs(error_bound=e, mode="abs")
