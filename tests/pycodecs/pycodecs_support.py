"""Helpers shared by the pycodecs tests (imported by conftest.py and the test modules).

Codecs that the C library was built without report MPIUCC_ERR_UNSUPPORTED; their tests are
skipped with that reason, so the suite is green on a partial build and complete on a full one.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np
import pycodecs
import pytest
from hypothesis import HealthCheck, settings

# Options that make a valid frame for each codec (for the checks that are not about options).
OPTIONS = {
    "raw": {},
    "ebq": {"error_bound": 1e-3},
    "fp16": {},
    "bf16": {},
    "int8": {},
    "int4": {},
    "sign": {},
    "qsgd": {"levels": 8, "rounding": "stochastic", "seed": 7},
    "topk": {"levels": 4},
}
assert tuple(OPTIONS) == pycodecs.CODECS

VARIANTS = ("numpy", "bytes", "bytearray", "torch", "out")
NUMPY_OF = {
    "float32": np.float32,
    "float64": np.float64,
    "float16": np.float16,
    "bfloat16": np.int16,
}
BITS_OF = {"float32": np.uint32, "float64": np.uint64, "float16": np.uint16, "bfloat16": np.uint16}


def hsettings(max_examples: int = 40, **kw) -> settings:
    """Hypothesis settings of this suite: no deadline (2 shared cores), moderate sizes."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
        **kw,
    )


@functools.cache
def codec_status(codec: str) -> str:
    """'ok', or the status name with which compressing one float32 element fails."""
    try:
        pycodecs.compress(np.zeros(1, np.float32), codec, **OPTIONS[codec])
    except pycodecs.CodecError as e:
        return e.status_name
    return "ok"


def codec_available(codec: str) -> bool:
    return codec_status(codec) != "MPIUCC_ERR_UNSUPPORTED"


def requires_codec(*codecs: str) -> pytest.MarkDecorator:
    """Skip unless the C library has every codec named (probe: compress one element)."""
    missing = [c for c in codecs if not codec_available(c)]
    return pytest.mark.skipif(
        bool(missing),
        reason=f"codec {', '.join(missing)} not in this C library "
        "(compress reports MPIUCC_ERR_UNSUPPORTED)",
    )


def codec_params(codecs=pycodecs.CODECS) -> list:
    """pytest.param per codec, each skipped when its codec is missing."""
    return [pytest.param(c, marks=requires_codec(c), id=c) for c in codecs]


@functools.cache
def has_avx2() -> bool:
    before = pycodecs.simd_level()
    try:
        return pycodecs.set_simd_level("avx2") == "avx2"
    finally:
        pycodecs.set_simd_level(before)


@contextlib.contextmanager
def simd(level: str):
    """Run the body with the kernels forced to level, then restore the previous level."""
    before = pycodecs.simd_level()
    got = pycodecs.set_simd_level(level)
    try:
        assert got == level, f"CPU lacks {level}"
        yield
    finally:
        pycodecs.set_simd_level(before)


def compress_or_skip(x, codec: str, **options):
    """compress, skipping the test when the codec refuses the input's dtype."""
    try:
        return pycodecs.compress(x, codec, **options)
    except pycodecs.CodecError as e:
        if e.status_name == "MPIUCC_ERR_UNSUPPORTED":
            pytest.skip(f"codec {codec} does not take this dtype ({e})")
        raise


# ---- bfloat16 as int16 bit patterns (numpy has no bfloat16) ----


def f32_to_bf16_bits(x) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest even; NaN stays NaN), as int16 bits."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, (u >> 16) | 0x40, rounded).astype(np.uint16).view(np.int16)


def bf16_bits_to_f32(b) -> np.ndarray:
    return (np.asarray(b).view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def to_f64(a: np.ndarray, dtype: str) -> np.ndarray:
    """Values of an array of dtype (bfloat16 given as int16 bits), widened exactly to f64."""
    if dtype == "bfloat16":
        return bf16_bits_to_f32(a).astype(np.float64)
    return np.asarray(a).astype(np.float64)


def from_f64(v, dtype: str) -> np.ndarray:
    v = np.asarray(v, np.float64)
    with np.errstate(over="ignore"):
        if dtype == "bfloat16":
            return f32_to_bf16_bits(v.astype(np.float32))
        return v.astype(NUMPY_OF[dtype])


def bits(a: np.ndarray, dtype: str) -> np.ndarray:
    return np.ascontiguousarray(a).view(BITS_OF[dtype])


def half_ulp(v, dtype: str) -> np.ndarray:
    """Half the spacing of dtype at |v| (the error of rounding v to dtype)."""
    a = np.abs(np.asarray(v, np.float64))
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "float64":
            s = np.spacing(a)
        elif dtype == "float16":
            s = np.spacing(a.astype(np.float16)).astype(np.float64)
        else:
            s = np.spacing(a.astype(np.float32)).astype(np.float64)
            if dtype == "bfloat16":
                s = s * 65536.0
    return s / 2


def sample(dtype: str, n: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    """Deterministic normal data of dtype (bfloat16 as int16 bits)."""
    v = np.random.default_rng(seed).standard_normal(n) * scale
    return from_f64(v, dtype)


# ---- the helper that runs a codec check over every kind of input and output ----


def _tensor_of(x: np.ndarray, dtype: str):
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(np.array(x))  # a copy: the check must not depend on x's memory
    return t.view(torch.bfloat16) if dtype == "bfloat16" else t


def roundtrip(x: np.ndarray, codec: str, variant: str, dtype: str | None = None, **options):
    """Compress x and decode the frame through one variant of inputs and outputs.

    x is a numpy array (bfloat16 as int16 bits with dtype="bfloat16"). Variants: "numpy",
    "bytes" and "bytearray" (x and the frame as those), "torch" (a tensor in, decoded into a
    tensor), "out" (frame and decoded values written into caller buffers).
    Returns (frame as bytes, decoded values as a numpy array of x's dtype).
    """
    name = (
        dtype or {np.float32: "float32", np.float64: "float64", np.float16: "float16"}[x.dtype.type]
    )
    carrier = dtype if x.dtype.type == np.int16 else None
    if variant == "numpy":
        frame = pycodecs.compress(x, codec, dtype=carrier, **options)
        y = pycodecs.decompress(frame)
    elif variant in ("bytes", "bytearray"):
        kind = bytes if variant == "bytes" else bytearray
        frame = pycodecs.compress(kind(x.tobytes()), codec, dtype=name, **options)
        y = pycodecs.decompress(kind(frame))
    elif variant == "torch":
        t = _tensor_of(x, name)
        frame = pycodecs.compress(t, codec, **options)
        out = _tensor_of(np.zeros(x.size, NUMPY_OF[name]), name)
        assert pycodecs.decompress(frame, out=out) is out
        torch = pytest.importorskip("torch")
        y = (out.view(torch.int16) if name == "bfloat16" else out).numpy()
    elif variant == "out":
        size = pycodecs.compress_bound(x.size, name, codec, **options)
        buf = np.full(size + 16, 0xA5, np.uint8)
        frame = pycodecs.compress(x, codec, dtype=carrier, out=buf, **options)
        assert isinstance(frame, memoryview) and np.shares_memory(np.asarray(frame), buf)
        assert np.all(buf[len(frame) :] == 0xA5), "compress wrote past the frame"
        y = np.full(x.size, 7, NUMPY_OF[name])
        assert pycodecs.decompress(frame, out=y) is y
    else:
        raise ValueError(variant)
    y = np.asarray(y).reshape(-1)
    assert y.dtype == NUMPY_OF[name] and y.size == x.size
    return bytes(frame), y


def roundtrip_all(x: np.ndarray, codec: str, dtype: str | None = None, **options):
    """roundtrip through every variant; all must give the same frame and the same values."""
    results = [roundtrip(x, codec, v, dtype, **options) for v in VARIANTS]
    frame, y = results[0]
    name = dtype or str(x.dtype)
    for v, (f, yv) in zip(VARIANTS, results, strict=True):
        assert f == frame, f"variant {v} gave another frame"
        assert np.array_equal(bits(yv, name), bits(y, name)), f"variant {v} decoded differently"
    return frame, y
