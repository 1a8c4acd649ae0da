"""The functional API: compress, decompress and the ebq integer-domain helpers.

Argument errors are raised here (ValueError, TypeError) before any C call; the C library's
own refusals come back as CodecError. Every C call runs with the GIL released.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from pycodecs import _ext
from pycodecs._buffers import NUMPY_DTYPES, bytes_of, int_array, source, target
from pycodecs._limits import check_expected, check_size
from pycodecs._params import (
    DTYPES,
    SIMD_LEVELS,
    Header,
    choice,
    make_params,
    params_from,
    thread_count,
    uint,
)

Buffer = Any  # numpy array, CPU torch tensor, or any object with the buffer protocol


def _finish(emit, bound: int, out: Buffer | None) -> bytearray | memoryview:
    """Run emit(dst) -> size into a new exact-size bytearray, or into out."""
    if out is None:
        buf = _ext.empty_bytearray(bound)
        del buf[emit(buf) :]
        return buf
    dst = bytes_of(out, "out", writable=True)
    return memoryview(dst)[: emit(dst)]


def compress(
    x: Buffer,
    codec: str = "ebq",
    *,
    error_bound: float | None = None,
    mode: str = "abs",
    level: str = "fast",
    predictor: str = "none",
    block_size: int = 0,
    levels: int = 0,
    rounding: str | None = None,
    seed: int = 0,
    checksum: bool = False,
    dtype: str | None = None,
    out: Buffer | None = None,
    threads: int | None = None,
) -> bytearray | memoryview:
    """Compress x into one frame.

    error_bound, mode ("abs"|"rel"|"rms"), level ("fast"|"dense") and predictor ("none"|"delta")
    are for ebq; block_size (0: 256), levels (qsgd: s, 0: 16; topk: k per block, 0: one
    sixteenth of the block), rounding ("nearest"|"stochastic"; None: stochastic for qsgd,
    nearest otherwise) and seed for the quantizers; checksum adds a payload
    CRC-32C. dtype names the element type of a raw byte buffer or of int16 bfloat16 bits.
    threads: at most this many threads for ebq (None: MPIUCC_THREADS, else the cores this
    process may use, for large arrays only); the frame's bytes never depend on it.
    Returns a bytearray of the frame's exact size, or with out= a memoryview of out[:size].
    """
    src, name, count = source(x, dtype)
    p = make_params(
        codec,
        name,
        error_bound,
        mode,
        level,
        predictor,
        block_size,
        levels,
        rounding,
        seed,
        bool(checksum),
        threads,
    )
    bound = _ext.compress_bound(p, count) if out is None else 0
    return _finish(lambda dst: _ext.compress(p, src, count, dst), bound, out)


def compress_ef(
    x: Buffer,
    residual: Buffer,
    codec: str = "ebq",
    *,
    error_bound: float | None = None,
    mode: str = "abs",
    level: str = "fast",
    predictor: str = "none",
    block_size: int = 0,
    levels: int = 0,
    rounding: str | None = None,
    seed: int = 0,
    checksum: bool = False,
    dtype: str | None = None,
    out: Buffer | None = None,
    threads: int | None = None,
) -> bytearray | memoryview:
    """Compress v = x + residual with error feedback; residual becomes v - decoded.

    residual has x's dtype and element count and is updated in place. Keywords and return
    value as for compress.
    """
    src, name, count = source(x, dtype)
    res, _, res_count = source(residual, name, "residual", writable=True)
    if res_count != count:
        raise ValueError(f"residual has {res_count} elements; x has {count}")
    p = make_params(
        codec,
        name,
        error_bound,
        mode,
        level,
        predictor,
        block_size,
        levels,
        rounding,
        seed,
        bool(checksum),
        threads,
    )
    bound = _ext.compress_bound(p, count) if out is None else 0
    return _finish(lambda dst: _ext.compress_ef(p, src, res, count, dst), bound, out)


def header(frame: Buffer) -> Header:
    """The validated header of a frame."""
    return Header.from_c(_ext.read_header(bytes_of(frame, "frame")))


def decompress(
    frame: Buffer,
    out: Buffer | None = None,
    *,
    codec: str | None = None,
    dtype: str | None = None,
    count: int | None = None,
    max_count: int | None = None,
    max_bytes: int | None = None,
    threads: int | None = None,
) -> Any:
    """Decode a frame: a new 1-D numpy array of the frame's dtype (bfloat16 as int16 bits),
    or into out (numpy array or CPU tensor of that dtype and element count), returning out.

    The frame is untrusted: its header is checked before anything is allocated. codec, dtype
    and count, when given, must match (else CodecError, status MISMATCH). Without out, the
    output is limited by count, max_count (elements) or max_bytes, else by
    pycodecs.DEFAULT_MAX_DECODE_BYTES (64 MiB; env MPIUCC_MAX_DECODE_BYTES): a frame above
    the limit raises CodecError (status CAPACITY) and allocates nothing. threads as for
    compress.
    """
    nt = thread_count(threads)
    src = bytes_of(frame, "frame")
    h = _ext.read_header(src)
    check_expected(h, codec, dtype, count)
    name, n = DTYPES[h[2] - 1], h[4]
    if out is None:
        if count is None:
            check_size(h, max_count, max_bytes)
        arr = np.empty(n, NUMPY_DTYPES[name])
        _ext.decompress(src, arr.view(np.uint8), nt)
        return arr
    _ext.decompress(src, target(out, name, n), nt)
    return out


def decompress_add(
    frame: Buffer,
    out: Buffer,
    *,
    codec: str | None = None,
    dtype: str | None = None,
    threads: int | None = None,
) -> Any:
    """out += decoded frame (in the frame's dtype); returns out. out's size is the limit;
    codec and dtype, when given, must match the frame's (CodecError, status MISMATCH)."""
    nt = thread_count(threads)
    src = bytes_of(frame, "frame")
    h = _ext.read_header(src)
    check_expected(h, codec, dtype, None)
    _ext.decompress_add(src, target(out, DTYPES[h[2] - 1], h[4]), nt)
    return out


def compress_bound(count: int, dtype: str = "float32", codec: str = "ebq", **options: Any) -> int:
    """Frame size in bytes that always suffices for count elements (options as compress)."""
    return _ext.compress_bound(params_from(codec, dtype, options), uint("count", count, 63))


def ebq_add(
    a: Buffer,
    b: Buffer,
    out: Buffer | None = None,
    *,
    count: int | None = None,
    max_count: int | None = None,
    max_bytes: int | None = None,
    threads: int | None = None,
) -> bytearray | memoryview:
    """The ebq frame whose indices are the exact sums of those of frames a and b.

    Both frames are untrusted: they must have the same element count (and count, when
    given), else CodecError (MISMATCH); without out, the frames' decoded size is limited as
    in decompress (count, max_count, max_bytes, else the 64 MiB default) before the output
    is sized, since the sum takes time and room in proportion to the count. threads as for
    compress.
    """
    nt = thread_count(threads)
    fa, fb = bytes_of(a, "a"), bytes_of(b, "b")
    ha, hb = _ext.read_header(fa), _ext.read_header(fb)
    check_expected(ha, "ebq", None, count)
    check_expected(hb, "ebq", DTYPES[ha[2] - 1], ha[4])
    bound = 0
    if out is None:
        if count is None:
            check_size(ha, max_count, max_bytes)
        bound = _ext.ebq_add_bound(fa, fb)
        if bound == 0:  # the frames cannot be added: let the C library say why
            _ext.ebq_add(fa, fb, bytearray())
    return _finish(lambda dst: _ext.ebq_add(fa, fb, dst, nt), bound, out)


def ebq_quantize(x: Buffer, error_bound: float, indices_out: Buffer) -> np.ndarray:
    """Grid indices of x (ebq, absolute bound) into indices_out (int32, x's element count);
    returns the positions of outliers (NaN, Inf, out of range), whose index is 0."""
    src, name, count = source(x)
    idx = int_array(indices_out, np.int32, "indices_out", writable=True)
    if idx.size != count:
        raise ValueError(f"indices_out has {idx.size} elements; x has {count}")
    p = params_from("ebq", name, {"error_bound": error_bound})
    positions = np.empty(count, np.uint64)
    n = _ext.ebq_quantize(p, src, count, idx, positions)
    return positions[:n].copy()


def pack_indices(indices: Buffer, out: Buffer | None = None) -> bytearray | memoryview:
    """Pack int32 indices into the ebq fast-level block stream."""
    idx = int_array(indices, np.int32, "indices")
    bound = 0
    if out is None:
        bound = _ext.pack_bound(idx.size)
        if bound == 0:
            _ext.pack_indices(idx, bytearray())
    return _finish(lambda dst: _ext.pack_indices(idx, dst), bound, out)


def unpack_indices(buf: Buffer, count: int, out: Buffer | None = None) -> Any:
    """count int32 indices from a block stream made by pack_indices (into out if given)."""
    count = uint("count", count, 62)
    if out is None:
        result = idx = np.empty(count, np.int32)
    else:
        result, idx = out, int_array(out, np.int32, "out", writable=True)
        if idx.size != count:
            raise ValueError(f"out has {idx.size} elements, not {count}")
    _ext.unpack_indices(bytes_of(buf, "buf"), idx)
    return result


class FiniteStats(NamedTuple):
    """What ``finite_stats`` measured: the finite min and max (0 when none is finite), the
    sum of (scale * x)^2 over the finite values in double (inf on overflow), and the number
    of NaN and +-Inf values."""

    min: float
    max: float
    sum_squares: float
    nonfinite: int


def finite_stats(x: Buffer, scale: float = 1.0) -> FiniteStats:
    """Finite min, finite max, sum of squares and non-finite count of a float32 or float64
    array in one pass of C (the GIL released); the same bits on every SIMD level.
    ``scale`` (finite, >= 0) multiplies each value before it is squared: 1 / max|x| keeps
    a float64 sum from overflowing; 0 skips the squares (about twice as fast)."""
    src, name, count = source(x)
    if name not in ("float32", "float64"):
        raise TypeError(f"finite_stats takes float32 or float64, not {name}")
    scale = float(scale)
    if not (0 <= scale < math.inf):
        raise ValueError(f"scale must be finite and >= 0, got {scale!r}")
    return FiniteStats(*_ext.finite_stats(src, count, DTYPES.index(name) + 1, scale))


def default_threads() -> int:
    """Threads an ebq call with threads=None may use on a large array: MPIUCC_THREADS, else
    the cores this process may run on (shared among the local ranks when unbound)."""
    return _ext.default_threads()


def simd_level() -> str:
    """The SIMD level the kernels use: "avx2" or "generic"."""
    return _ext.simd_level()


def set_simd_level(level: str) -> str:
    """Force a SIMD level (tests, benches); returns the level in force, lower if the CPU
    lacks the one asked. Not safe while codec calls run in other threads."""
    return _ext.set_simd_level(choice("level", level, SIMD_LEVELS))
