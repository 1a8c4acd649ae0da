"""The uncompressed allreduce: as MPI sums in the dtype, or wide enough to keep a bound.

- ``wide=False`` (codec="none", and raw where the dtype's sum keeps the bound and cannot
  overflow): MPI's own sum in the dtype (N-1 roundings, in MPI's order), then divided for a
  mean, as MPI, gloo and NCCL compute it: partial sums beyond the dtype's range give +-Inf.
- ``wide=True`` (a bound the dtype's own additions could break, ``bound.rank_bound``):
  float32 is summed in float64 and rounded once. float64 is split on an agreed grid of step s
  (a power of two, about N·max|x|·2^-52): x = hi + lo, hi a multiple of s, |lo| <= s/2, both
  exact. Every partial sum of the hi parts is a multiple of s below 2^53·s, so their sum is
  exact in any order; the lo parts' sum is off by at most N²·2^-53·s/2. The two sums are
  added, scaled and divided (a mean) in extended precision and rounded once to float64: the
  result is within one rounding of the exact sum or mean, plus N³·2^-105·max|x|. Inputs
  whose sum could overflow on the way (N·max|x| near the largest double) are scaled by a
  power of two first.
NaN and ±Inf go through as IEEE addition gives them, on every path.
"""

from __future__ import annotations

import math

import numpy as np
from mpi4py import MPI

from pycomm.collectives.buffers import finite_min_max, same_buffer
from pycomm.collectives.engine import Engine
from pycomm.collectives.stats import CommStats

#: The smallest grid exponent: the step of float64's subnormals (every double is on it).
MIN_EXPONENT = -1074


def allreduce(
    eng: Engine,
    comm: MPI.Comm,
    a: np.ndarray,
    res: np.ndarray,
    op: str,
    wide: bool,
    stats: CommStats | None = None,
) -> int:
    """Uncompressed allreduce of a into res (see the module's docstring); returns the bytes
    MPI reduced (a's, twice that wide). stats counts a ring's 2(N-1)/N of them, sent and
    received."""
    size = comm.Get_size()
    reduced = a.nbytes * (2 if wide else 1)
    if stats is not None:
        ring = 2 * (size - 1) * reduced // size
        stats.moved(ring, ring)
    if not wide:
        req = comm.Iallreduce(MPI.IN_PLACE if same_buffer(a, res) else a, res, op=MPI.SUM)
        eng.wait([req], "allreduce")
        if op == "mean":
            np.divide(res, size, out=res)
    elif a.dtype == np.float32:
        acc = a.astype(np.float64)
        eng.wait([comm.Iallreduce(MPI.IN_PLACE, acc, op=MPI.SUM)], "allreduce")
        if op == "mean":
            acc /= size
        with np.errstate(over="ignore"):  # a sum beyond float32's range is +-Inf
            res[...] = acc
    else:
        _split_sum(eng, comm, a, res, op == "mean")
    return reduced


def _split_sum(eng: Engine, comm: MPI.Comm, a: np.ndarray, res: np.ndarray, mean: bool) -> None:
    """The float64 sum (or mean) of the module's docstring, into res."""
    size = comm.Get_size()
    lo_, hi_ = finite_min_max(a)
    top = np.array([max(hi_, -lo_)])
    eng.wait([comm.Iallreduce(MPI.IN_PLACE, top, op=MPI.MAX)], "allreduce (its magnitude)")
    # Scaled by 2^-p where N·max|x| could leave the doubles on the way (exact for normals).
    p = size.bit_length() + 1 if size * float(top[0]) >= 2.0**1022 else 0
    step = math.ldexp(1.0, max(math.frexp(size * math.ldexp(float(top[0]), -p))[1] - 52,
                               MIN_EXPONENT))  # fmt: skip
    parts = np.empty(2 * a.size)
    hi, lo = parts[: a.size], parts[a.size :]
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        scaled = np.ldexp(a, -p) if p else a
        np.multiply(np.rint(scaled / step), step, out=hi)
        np.subtract(scaled, hi, out=lo)
        lo[~np.isfinite(lo)] = 0.0  # NaN and +-Inf travel in hi alone
        eng.wait([comm.Iallreduce(MPI.IN_PLACE, parts, op=MPI.SUM)], "allreduce")
        total = hi.astype(np.longdouble)
        total += lo
        if p:
            total *= np.longdouble(2.0**p)
        if mean:
            total /= size
        res[...] = total
