"""Baselines a user would otherwise pick, measured on the same data in the same run.

torch's own casts and quantization, and error-bounded compressors from PyPI at the same absolute
bound as ebq (zfpy's fixed-accuracy mode, SZ3 through pysz, numcodecs' Quantize + Blosc). Each
one is optional: a missing package gives a "not installed" row and the bench goes on.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from importlib import metadata

import numpy as np
from _common import Row, measure

GROUP = "baselines"


def _version(dist: str) -> str:
    try:
        return f"{dist} {metadata.version(dist)}"
    except metadata.PackageNotFoundError:
        return dist


def _missing(engine: str, dist: str, err: Exception) -> Row:
    return Row(engine, group=GROUP, note=f"not installed (pip install {dist}): {err}")


def torch_rows(x: np.ndarray, reps: int) -> list[Row]:
    try:
        import torch
    except ImportError as e:
        return [_missing("torch casts", "torch", e)]
    xt = torch.from_numpy(x)
    n, note = x.size, _version("torch")
    rows = []

    def cast(dtype: torch.dtype) -> Callable[[], torch.Tensor]:
        return lambda: xt.to(dtype)

    for name, dtype in (("torch x.half()", torch.float16), ("torch x.bfloat16()", torch.bfloat16)):
        rows.append(
            measure(
                name,
                x,
                cast(dtype),
                lambda h: h.float().numpy(),
                lambda h: 2 * n,
                reps,
                group=GROUP,
                note=note,
            )
        )

    # Deprecated in torch 2.13 but still the stock way; warn once here, not in every call.
    warnings.filterwarnings("ignore", message="torch.quantize_per_tensor", category=UserWarning)
    scale = max(float(xt.abs().max()) / 127.0, 1e-30)
    rows.append(
        measure(
            "torch quantize_per_tensor qint8",
            x,
            lambda: torch.quantize_per_tensor(xt, float(xt.abs().max()) / 127.0, 0, torch.qint8),
            lambda q: q.dequantize().numpy(),
            lambda q: n + 12,  # int8 values, a float64 scale and an int32 zero point
            reps,
            bound=scale / 2,
            group=GROUP,
            note=note,
        )
    )

    def sign_compress() -> tuple[np.ndarray, float]:
        return np.packbits(torch.sign(xt).numpy() > 0), float(xt.abs().mean())

    def sign_decompress(c: tuple[np.ndarray, float]) -> np.ndarray:
        bits, s = c
        return (np.unpackbits(bits, count=n).astype(np.float32) * 2 - 1) * np.float32(s)

    rows.append(
        measure(
            "torch.sign + mean|x| (packbits)",
            x,
            sign_compress,
            sign_decompress,
            lambda c: c[0].nbytes + 4,
            reps,
            group=GROUP,
            note=note,
        )
    )
    return rows


def zfp_row(x: np.ndarray, bound: float, reps: int) -> Row:
    name = "zfp fixed-accuracy (zfpy)"
    try:
        import zfpy
    except ImportError as e:
        return _missing(name, "zfpy", e)
    return measure(
        name,
        x,
        lambda: zfpy.compress_numpy(x, tolerance=bound),
        zfpy.decompress_numpy,
        len,
        reps,
        bound=bound,
        group=GROUP,
        note=_version("zfpy"),
    )


def sz3_rows(x: np.ndarray, bound: float, reps: int) -> list[Row]:
    """SZ3 through pysz, absolute bound, one thread: its default predictor (interpolation +
    Lorenzo) and Lorenzo + regression."""
    try:
        import pysz
    except ImportError as e:
        return [_missing("SZ3 abs (pysz)", "pysz", e)]
    rows = []
    for algo, label in (("INTERP_LORENZO", "interp+lorenzo"), ("LORENZO_REG", "lorenzo+reg")):
        cfg = pysz.szConfig(x.shape)
        cfg.errorBoundMode = pysz.szErrorBoundMode.ABS
        cfg.absErrorBound = bound
        cfg.cmprAlgo = getattr(pysz.szAlgorithm, algo)
        cfg.openmp = False
        rows.append(
            measure(
                f"SZ3 abs {label} (pysz)",
                x,
                lambda cfg=cfg: pysz.sz.compress(x, cfg)[0],
                lambda z: pysz.sz.decompress(z, np.float32, x.shape)[0],
                lambda z: z.nbytes,
                reps,
                bound=bound,
                group=GROUP,
                note=_version("pysz"),
            )
        )
    return rows


def numcodecs_rows(x: np.ndarray, bound: float, reps: int) -> list[Row]:
    try:
        import numcodecs
        from numcodecs import Blosc, Quantize
    except Exception as e:  # ImportError, or numcodecs 0.16 choking on zfpy 1.0.1.post0's version
        return [_missing("numcodecs Quantize + Blosc", "numcodecs", e)]
    numcodecs.blosc.set_nthreads(1)
    note = _version("numcodecs")
    blosc = Blosc(cname="zstd", clevel=3, shuffle=Blosc.SHUFFLE)
    # Quantize keeps `digits` decimal digits: a grid step of at most 10**-digits <= 2 * bound.
    digits = max(0, math.ceil(-math.log10(2 * bound)))
    quant = Quantize(digits=digits, dtype="<f4")
    return [
        measure(
            "numcodecs Blosc zstd (lossless)",
            x,
            lambda: blosc.encode(x),
            lambda c: np.frombuffer(blosc.decode(c), dtype=np.float32),
            len,
            reps,
            bound=0.0,
            group=GROUP,
            note=note,
        ),
        measure(
            f"numcodecs Quantize({digits}) + Blosc",
            x,
            lambda: blosc.encode(quant.encode(x)),
            lambda c: quant.decode(blosc.decode(c)),
            len,
            reps,
            bound=bound,
            group=GROUP,
            note=note,
        ),
    ]


def all_rows(x: np.ndarray, bound: float, reps: int, fixed_rate: bool = True) -> list[Row]:
    """Every baseline; bound is the absolute error bound for the error-bounded ones; torch's
    fixed-rate conversions only with fixed_rate (they do not depend on the bound)."""
    return [
        *(torch_rows(x, reps) if fixed_rate else []),
        zfp_row(x, bound, reps),
        *sz3_rows(x, bound, reps),
        *numcodecs_rows(x, bound, reps),
    ]
