"""Names of codecs, dtypes and options; their validation into C params; the frame header."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from numbers import Integral, Real

from pycodecs import _ext

# Index = the C enum value (mpiucc_codec); dtypes start at 1 (mpiucc_dtype).
CODECS = ("raw", "ebq", "fp16", "bf16", "int8", "int4", "sign", "qsgd", "topk")
DTYPES = ("float32", "float64", "float16", "bfloat16")
ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
MODES = ("abs", "rel", "rms")
LEVELS = ("fast", "dense")
PREDICTORS = ("none", "delta")
ROUNDINGS = ("nearest", "stochastic")
SIMD_LEVELS = ("generic", "avx2")

# The keywords every compressing function takes, with their defaults.
DEFAULTS = {
    "error_bound": None,
    "mode": "abs",
    "level": "fast",
    "predictor": "none",
    "block_size": 0,
    "levels": 0,
    "rounding": None,
    "seed": 0,
    "checksum": False,
    "threads": None,
}


def thread_count(threads: object) -> int:
    """The C library's thread argument: None is 0 (its default: MPIUCC_THREADS, else the
    cores this process may use, only for arrays large enough); else a positive integer."""
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, Integral):
        raise TypeError(f"threads must be None or an integer; got {type(threads).__name__}")
    if not 1 <= threads <= 1024:
        raise ValueError(f"threads must be in [1, 1024] or None; got {threads}")
    return int(threads)


def choice(name: str, value: object, choices: tuple[str, ...]) -> int:
    """Index of value in choices, or ValueError naming the choices."""
    for i, c in enumerate(choices):
        if value == c:
            return i
    raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")


def uint(name: str, value: object, bits: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer; got {type(value).__name__}")
    if not 0 <= value < 1 << bits:
        raise ValueError(f"{name} must be in [0, 2**{bits}); got {value}")
    return int(value)


def bound_value(codec: str, error_bound: object) -> float:
    if error_bound is None:
        if codec == "ebq":
            raise ValueError("codec 'ebq' needs error_bound")
        return 0.0
    if isinstance(error_bound, bool) or not isinstance(error_bound, Real):
        raise TypeError(f"error_bound must be a real number; got {type(error_bound).__name__}")
    value = float(error_bound)
    if math.isnan(value) or value < 0 or (codec == "ebq" and value == 0):
        raise ValueError(f"error_bound must be positive; got {error_bound!r}")
    return value


@lru_cache(maxsize=512, typed=True)
def make_params(
    codec: str,
    dtype: str,
    error_bound: object,
    mode: str,
    level: str,
    predictor: str,
    block_size: int,
    levels: int,
    rounding: str | None,
    seed: int,
    checksum: bool,
    threads: object = None,
) -> _ext.Params:
    """Validated C params (cached: the same arguments give the same immutable object).
    rounding None is the codec's convention: "stochastic" for qsgd (QSGD proper, unbiased),
    "nearest" for the others; levels 0 is the C library's default (qsgd 16, topk block/16)."""
    code = choice("codec", codec, CODECS)
    if rounding is None:
        rounding = "stochastic" if codec == "qsgd" else "nearest"
    return _ext.Params(
        code,
        choice("dtype", dtype, DTYPES) + 1,
        bound_value(codec, error_bound),
        choice("mode", mode, MODES),
        choice("level", level, LEVELS),
        choice("predictor", predictor, PREDICTORS),
        uint("block_size", block_size, 32),
        uint("levels", levels, 32),
        choice("rounding", rounding, ROUNDINGS),
        uint("seed", seed, 64),
        1 if checksum else 0,
        thread_count(threads),
    )


def params_from(codec: str, dtype: str, options: dict) -> _ext.Params:
    """make_params from keyword options; unknown keywords are a TypeError."""
    unknown = options.keys() - DEFAULTS.keys()
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(unknown))}")
    o = {**DEFAULTS, **options}
    return make_params(
        codec,
        dtype,
        o["error_bound"],
        o["mode"],
        o["level"],
        o["predictor"],
        o["block_size"],
        o["levels"],
        o["rounding"],
        o["seed"],
        bool(o["checksum"]),
        o["threads"],
    )


@dataclass(frozen=True, slots=True)
class Header:
    """A validated frame header (codecs/FORMAT.md)."""

    version: int
    codec: str
    dtype: str
    flags: int
    count: int
    bound: float  # guaranteed max absolute error; 0 lossless; inf none
    param: float  # codec-specific (ebq: grid step)
    payload_size: int
    block: int  # codec-specific: elements per block
    aux: int  # codec-specific
    frame_size: int

    @property
    def nonfinite(self) -> bool:
        """Whether the frame decodes to at least one NaN or +-Inf (flag set by the encoder)."""
        return bool(self.flags & _ext.FLAG_NONFINITE)

    @classmethod
    def from_c(cls, t: tuple) -> Header:
        version, codec, dtype, flags, count, bound, param, payload_size, block, aux, _ = t
        return cls(
            version,
            CODECS[codec],
            DTYPES[dtype - 1],
            flags,
            count,
            bound,
            param,
            payload_size,
            block,
            aux,
            _ext.HEADER_SIZE + payload_size,
        )
