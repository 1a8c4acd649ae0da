"""Buffers in and out of the collectives: numpy arrays and CPU torch tensors, zero-copy."""

from __future__ import annotations

import math

import numpy as np

REDUCIBLE = (np.dtype(np.float32), np.dtype(np.float64))


def as_array(x: object, *, writable: bool = False) -> np.ndarray:
    """A flat numpy view of x (numpy array or CPU torch tensor) without copying."""
    if type(x).__module__.startswith("torch"):
        if x.device.type != "cpu":  # type: ignore[attr-defined]
            raise ValueError("pycomm collectives take CPU tensors; stage device tensors first")
        x = x.detach().numpy()  # type: ignore[attr-defined]
    if not isinstance(x, np.ndarray):
        raise TypeError(f"expected a numpy array or a torch tensor, got {type(x).__name__}")
    if not x.flags.c_contiguous:
        raise ValueError("the buffer must be C-contiguous")
    if writable and not x.flags.writeable:
        raise ValueError("the output buffer is read-only")
    return x.reshape(-1)


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
    """Min and max over the finite values of a; (0, 0) if there are none."""
    if a.size == 0:
        return 0.0, 0.0
    lo, hi = float(np.min(a)), float(np.max(a))
    if np.isfinite(lo) and np.isfinite(hi):
        return lo, hi
    finite = a[np.isfinite(a)]
    return (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)


#: Elements per float64 slice when summing squares (a bounded scratch).
RMS_CHUNK = 1 << 16


def _sum_squares(x: np.ndarray) -> float:
    # einsum, not np.dot: BLAS runs a dot this size on a thread per core in every rank, and
    # 4 ranks on 2 cores took 96 ms for 3 MB instead of 3 (BENCHMARKS.md, FSDP2).
    return float(np.einsum("i,i->", x, x))


def finite_rms(a: np.ndarray, top: float) -> float:
    """sqrt(mean(a^2)) in float64 over the finite values of a, whose largest magnitude is
    top; 0 if there are none."""
    flat = a.reshape(-1)
    if flat.size == 0 or top == 0:
        return 0.0
    sum2 = 0.0
    for i in range(0, flat.size, RMS_CHUNK):
        part = flat[i : i + RMS_CHUNK].astype(np.float64)
        sum2 += _sum_squares(part)
    if np.isfinite(sum2):
        return math.sqrt(sum2 / flat.size)
    finite = flat[np.isfinite(flat)].astype(np.float64) / top  # NaN/Inf, or an overflow
    return top * math.sqrt(_sum_squares(finite) / max(finite.size, 1))


OPS = ("sum", "mean")


def check_op(op: str) -> None:
    if op not in OPS:
        raise ValueError(f"op must be one of {OPS}, not {op!r}")


def same_buffer(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two flat views are the very same memory (in-place operation)."""
    return a.ctypes.data == b.ctypes.data and a.nbytes == b.nbytes


def check_in_place(a: np.ndarray, out: np.ndarray) -> None:
    """out is a itself (in place) or apart from it."""
    if not same_buffer(a, out) and np.shares_memory(a, out):
        raise ValueError("out overlaps x without being x itself")
