"""Buffers in and out of the collectives: numpy arrays and CPU torch tensors, zero-copy."""

from __future__ import annotations

import math

import numpy as np
import pycodecs

REDUCIBLE = (np.dtype(np.float32), np.dtype(np.float64))


def as_array(x: object, *, writable: bool = False) -> np.ndarray:
    """A flat numpy view of x (numpy array or CPU torch tensor) without copying."""
    if not isinstance(x, np.ndarray):  # (every call makes two: each check is kept cheap)
        if not type(x).__module__.startswith("torch"):
            raise TypeError(f"expected a numpy array or a torch tensor, got {type(x).__name__}")
        if not x.is_cpu:  # type: ignore[attr-defined]
            raise ValueError("pycomm collectives take CPU tensors; stage device tensors first")
        x = (x.detach() if x.requires_grad else x).numpy()  # type: ignore[attr-defined]
    if not x.flags.c_contiguous:
        raise ValueError("the buffer must be C-contiguous")
    if writable and not x.flags.writeable:
        raise ValueError("the output buffer is read-only")
    return x if x.ndim == 1 else x.reshape(-1)


def check_reducible(a: np.ndarray) -> None:
    if a.dtype not in REDUCIBLE:
        raise TypeError(f"reductions take float32 or float64 arrays, not {a.dtype}")


def output_like(a: np.ndarray, out: object | None, count: int | None = None) -> np.ndarray:
    """The flat output view: out's (size and dtype checked) or a new array."""
    count = a.size if count is None else count
    if out is None:
        return np.empty(count, dtype=a.dtype)
    o = as_array(out, writable=True)
    if o.dtype != a.dtype or o.size != count:
        raise ValueError(f"out must hold {count} elements of {a.dtype}, not {o.size} of {o.dtype}")
    return o


def chunk_bounds(count: int, parts: int) -> list[tuple[int, int]]:
    """Split [0, count) into parts contiguous ranges whose sizes differ by at most one."""
    base, extra = divmod(count, parts)
    bounds, start = [], 0
    for i in range(parts):
        stop = start + base + (1 if i < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def finite_min_max(a: np.ndarray) -> tuple[float, float]:
    """Min and max over the finite values of a; (0, 0) if there are none (one C pass)."""
    got = pycodecs.finite_stats(a, 0.0)
    return got.min, got.max


def all_finite(a: np.ndarray) -> bool:
    """Whether a (float32 or float64) holds neither NaN nor +-Inf (one C pass)."""
    return pycodecs.finite_stats(a, 0.0).nonfinite == 0


def finite_top_rms(a: np.ndarray) -> tuple[float, float]:
    """(max |x|, sqrt(mean(x^2))) over the finite values of a, squares summed in float64; 0s
    if there are none. One C pass; a second, scaled by the largest |x|, only where the sum of
    squares of float64 data leaves the normal doubles (beyond 1e308, or below 2e-308)."""
    got = pycodecs.finite_stats(a)
    top, finite = max(got.max, -got.min), a.size - got.nonfinite
    if top == 0 or not finite:
        return top, 0.0
    if NORMAL_SUM <= got.sum_squares < math.inf:
        return top, math.sqrt(got.sum_squares / finite)
    scaled = pycodecs.finite_stats(a, min(1.0 / top, MAX_SCALE))
    return top, math.sqrt(scaled.sum_squares / finite) / min(1.0 / top, MAX_SCALE)


#: Below this a float64 sum of squares has lost precision to underflow (the smallest normal).
NORMAL_SUM = float(np.finfo(np.float64).tiny)
MAX_SCALE = 2.0**1000


OPS = ("sum", "mean")


def check_op(op: str) -> None:
    if op not in OPS:
        raise ValueError(f"op must be one of {OPS}, not {op!r}")


def same_buffer(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two flat views are the very same memory (in-place operation)."""
    if a is b:
        return True
    return np.may_share_memory(a, b) and a.ctypes.data == b.ctypes.data and a.nbytes == b.nbytes


def check_in_place(a: np.ndarray, out: np.ndarray) -> None:
    """out is a itself (in place) or apart from it."""
    if np.shares_memory(a, out) and not same_buffer(a, out):  # the cheap test first
        raise ValueError("out overlaps x without being x itself")
