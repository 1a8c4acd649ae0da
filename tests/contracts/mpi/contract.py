"""The contract matrix's reference (issue 26): every rank's inputs from one seed, the exact
reduction, and the checks a collective's result must pass.

Exactness: an element's error is D = sum(terms) - k*result with k = 1 (sum) or N (mean) and
the terms every rank's x_i (and residual r_i), all exact in float64. D is first summed in
float64 with its own rounding bound, then, where that cannot decide against the bound E,
``math.fsum`` (correctly rounded, so monotone: |fsum| < E implies |D| <= E), and where even that
sits at E, ``fractions.Fraction``. No tolerance factor: E is the contract's, floored only by the
dtype's own resolution (one ulp of the exact value: no result can do better).
"""

from __future__ import annotations

import hashlib
import math
from fractions import Fraction

import numpy as np

FAMILIES = ("normal", "near_overflow", "tiny", "mixed", "constant", "zeros", "specials")
#: Relative accuracy of E computed in float64 (a few roundings): beyond it, decided exactly.
E_SLACK = 1e-9


def inputs(family: str, seed: int, rank: int, n: int, dtype: str) -> np.ndarray:
    """Rank ``rank``'s input of ``family``: every rank can make every rank's."""
    rng, shared = np.random.default_rng([seed, rank]), np.random.default_rng([seed, 99])
    f32 = np.dtype(dtype) == np.float32
    sign = rng.choice([-1.0, 1.0], n)
    if family == "normal":
        x = rng.standard_normal(n) * 10.0 ** shared.integers(-3, 4)
    elif family == "near_overflow":  # around 1e38 (float32) / 1e307 (float64)
        x = sign * rng.uniform(0.25, 3.0, n) * (1e38 if f32 else 1e307)
    elif family == "tiny":  # subnormal and just above
        lo, hi = (-150, -118) if f32 else (-1075, -1015)
        x = sign * np.ldexp(rng.uniform(1.0, 2.0, n), rng.integers(lo, hi, n))
    elif family == "mixed":  # 1e-30 beside 1e30
        x = sign * rng.uniform(1.0, 2.0, n) * np.where(rng.random(n) < 0.5, 1e-30, 1e30)
    elif family == "constant":  # blocks of one value, often the same value on every rank
        block = int(shared.integers(1, 600))
        blocks = -(-n // block)
        common = shared.standard_normal(blocks) * 10.0 ** shared.integers(-3, 4)
        use = shared.random(blocks) < 0.6
        x = np.repeat(np.where(use, common, rng.standard_normal(blocks)), block)[:n]
    elif family == "zeros":  # +0 and -0, a few values among them
        x = np.where(rng.random(n) < 0.9, sign * 0.0, rng.standard_normal(n))
    elif family == "specials":  # NaN and +-Inf sprinkled
        x, pick, p = rng.standard_normal(n), rng.random(n), shared.uniform(0.001, 0.05)
        x[pick < p] = np.nan
        x[(pick >= p) & (pick < 2 * p)] = np.inf
        x[(pick >= 2 * p) & (pick < 3 * p)] = -np.inf
    else:
        raise ValueError(family)
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(dtype)


def digest(a: np.ndarray) -> str:
    a = np.ascontiguousarray(a)
    return hashlib.sha256(f"{a.dtype.str}{a.shape}".encode() + a.tobytes()).hexdigest()[:16]


def unit_roundoff(dtype: str) -> float:
    return 2.0**-8 if dtype == "bfloat16" else float(np.finfo(dtype).eps) / 2


def ulp_floor(mag: np.ndarray, dtype: str) -> np.ndarray:
    """One ulp of |exact| in dtype (the smaller where it sits at a binade edge)."""
    f, scale = (np.float32, 2.0**16) if dtype == "bfloat16" else (np.dtype(dtype).type, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        m = np.minimum(np.abs(mag), float(np.finfo(f).max)).astype(f)
        s = np.minimum(np.spacing(m), np.spacing(np.nextafter(m, f(0))))
    return np.maximum(s.astype(np.float64) * scale, np.spacing(f(0)).astype(np.float64) * scale)


class Sent:
    """What the ranks send: x_i, plus r_i (their residuals before the call) with feedback."""

    def __init__(self, xs: list[np.ndarray], rs: list[np.ndarray] | None = None) -> None:
        self.xs, self.rs, self.n = xs, rs, len(xs)
        parts = xs if rs is None else [*xs, *rs]
        self.terms = np.stack([p.astype(np.float64) for p in parts]) if parts else None
        with np.errstate(invalid="ignore", over="ignore"):
            self.v = [x.astype(np.float64) + (0 if rs is None else r) for x, r in self._pairs()]

    def _pairs(self):
        return zip(self.xs, self.rs or [None] * self.n, strict=True)

    def exact_v(self, i: int) -> list[Fraction | None]:
        x, r = self.xs[i], None if self.rs is None else self.rs[i]
        return [
            Fraction(float(a)) + (0 if r is None else Fraction(float(r[j])))
            if np.isfinite(a) else None
            for j, a in enumerate(x)
        ]  # fmt: skip


class Bound:
    """E of a contract: ("abs"|"rel"|"rms", B) over the sent values, or ("float", None): a
    float sum's own rounding (codec="none"); per unit of the result (sum or mean)."""

    def __init__(self, kind: str, b: float | None, sent: Sent, op: str, dtype: str) -> None:
        self.kind, self.b, self.sent, self.op, self.dtype = kind, b, sent, op, dtype
        finite = [v[np.isfinite(v)] for v in sent.v]
        allf = np.concatenate(finite) if finite else np.zeros(0)
        n, u = sent.n, unit_roundoff(dtype)
        top = float(np.max(np.abs(allf), initial=0.0))
        if kind == "abs":
            self.e = b
        elif kind == "rel":
            self.e = b * (float(allf.max()) - float(allf.min())) if allf.size else 0.0
        elif kind == "rms":
            self.e = b * max((_rms(f) for f in finite), default=0.0)
        else:  # codec="none": n^2 u max|x| for a sum, that over n plus a rounding for a mean
            self.e = n * n * u * top if op == "sum" else n * u * top + u * top
        self._exact = None

    def exact_squared(self) -> Fraction:
        """E^2, exactly (rms needs no square root this way)."""
        if self._exact is None:
            b = Fraction(self.b) if self.b is not None else None
            if self.kind == "abs":
                e2 = b * b
            elif self.kind == "rel":
                vals = [
                    f for i in range(self.sent.n) for f in self.sent.exact_v(i) if f is not None
                ]
                e2 = (b * (max(vals) - min(vals))) ** 2 if vals else Fraction(0)
            elif self.kind == "rms":
                best = Fraction(0)
                for i in range(self.sent.n):
                    vals = [f for f in self.sent.exact_v(i) if f is not None]
                    if vals:
                        best = max(best, sum(f * f for f in vals) / len(vals))
                e2 = b * b * best
            else:
                e2 = Fraction(self.e) ** 2
            self._exact = e2
        return self._exact


def _rms(v: np.ndarray) -> float:
    s = float(np.max(np.abs(v), initial=0.0))
    return 0.0 if s == 0 else s * math.sqrt(float(np.mean((v / s) ** 2)))


def _ieee(col: np.ndarray) -> float:
    """What IEEE summation of a column holding a NaN or an Inf gives: NaN or the infinity."""
    if np.isnan(col).any() or (np.isposinf(col).any() and np.isneginf(col).any()):
        return math.nan
    return math.inf if np.isposinf(col).any() else -math.inf


def check_reduction(
    result: np.ndarray, sent: Sent, op: str, bound: Bound | None, dtype: str,
    lo: int = 0, hi: int | None = None, stored: str | None = None,
) -> str | None:  # fmt: skip
    """None if result[lo:hi] keeps the contract (``bound`` None: a quantizer's, finiteness
    only), else a description of the worst element. ``stored``: the result was reduced in
    ``dtype`` and then stored in this narrower one (bf16, fp16 tensors), which adds half an
    ulp of each element to what the contract allows (docs/collectives.md, "What the bound
    means")."""
    hi = result.size if hi is None else hi
    if sent.terms is None or hi <= lo:
        return None
    t = sent.terms[:, lo:hi]
    got = result[lo:hi].astype(np.float64)
    k, n = (1 if op == "sum" else sent.n), sent.n
    top = float(np.finfo(np.float32 if dtype == "bfloat16" else dtype).max)
    bad_in = ~np.isfinite(t).all(axis=0)
    with np.errstate(invalid="ignore", over="ignore"):
        s = t.sum(axis=0)
        d = s - k * got
        errb = (t.shape[0] + k) * 2.0**-52 * (np.abs(t).sum(axis=0) + k * np.abs(got))
    if bound is None:  # finite where all inputs are; a sum may overflow once n*max|x| does
        # FORMAT.md: the block codecs work in float32 (float64 beyond its range counts as
        # non-finite) and decoded values are summed in the dtype, a mean's too (IEEE: they may
        # overflow); a block's decoded |values| may reach its norm (qsgd: 16x).
        limit = float(np.finfo(np.float32).max) / 256 / n
        everywhere = sent.terms  # a NaN/Inf may spread over its block: all inputs finite only
        if not np.isfinite(everywhere).all() or np.abs(everywhere).max(initial=0) > limit:
            return None
        where = np.flatnonzero(~np.isfinite(got))
        return None if where.size == 0 else describe(sent, result, lo + where[0], "not finite")
    for j in np.flatnonzero(bad_in):  # NaN/Inf in: the IEEE sum's, never finite
        want = _ieee(t[:, j])
        if not (math.isnan(want) and math.isnan(got[j]) or want == got[j]):
            return describe(sent, result, lo + j, f"IEEE sum gives {want}")
    floor = ulp_floor(s / k, dtype)
    extra = np.zeros_like(floor) if stored is None else ulp_floor(got, stored) / 2
    e = bound.e
    with np.errstate(invalid="ignore"):
        allowed = k * (np.maximum(e, floor) + extra)  # stored: its rounding on top
        sure_ok = ~bad_in & np.isfinite(d) & (np.abs(d) + errb < allowed * (1 - E_SLACK))
    worst, worst_err = None, -1.0
    for j in np.flatnonzero(~bad_in & ~sure_ok):
        col = [float(c) for c in t[:, j]] + [-float(got[j])] * k
        if not math.isfinite(got[j]):  # only an overflowing exact sum may give +-Inf
            exact = sum(map(Fraction, col[:-k]), Fraction(0)) / k
            if op == "sum" and abs(exact) > top and (got[j] > 0) == (exact > 0):
                continue
            if bound.kind == "float" and n * float(np.abs(t[:, j]).max()) > top:
                continue  # codec="none": MPI's sum in the dtype, whose partial sums overflow
            return describe(sent, result, lo + j, f"{got[j]} for a finite exact {float(exact):.6g}")
        try:
            dj = abs(math.fsum(col))
        except OverflowError:
            dj = abs(float(sum(map(Fraction, col), Fraction(0))))
        room = max(e, float(floor[j])) + float(extra[j])
        lim = k * room
        if dj == 0 or dj < lim * (1 - E_SLACK):
            continue
        if dj <= lim * (1 + E_SLACK):  # at the bound: decide exactly
            dx = abs(sum(map(Fraction, col), Fraction(0)))
            if dx <= k * Fraction(float(floor[j]) + float(extra[j])):
                continue
            if stored is None and dx * dx <= k * k * bound.exact_squared():
                continue
            if stored is not None and dx <= k * Fraction(room):
                continue
        if dj / k / room > worst_err:
            worst, worst_err, err = j, dj / k / room, dj / k
    if worst is None:
        return None
    why = f"error {err:.6g} > E {e:.6g}, ulp {float(floor[worst]):.3g} ({worst_err:.4g}x)"
    return describe(sent, result, lo + worst, why)


def describe(sent: Sent, result: np.ndarray, j: int, why: str) -> str:
    xs = ", ".join(f"{float(x[j]):.9g}" for x in sent.xs)
    rs = "" if sent.rs is None else " r=[" + ", ".join(f"{float(r[j]):.3g}" for r in sent.rs) + "]"
    return f"element {j}: {why}; result {float(result[j]):.9g}, inputs [{xs}]{rs}"
