"""Hypothesis strategies and the error-bound check for the ebq tests."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

MODES = ("abs", "rel", "rms")
LEVELS = ("fast", "dense")
PREDICTORS = ("none", "delta")
SIZES = st.integers(0, 300) | st.sampled_from([1, 2, 31, 32, 33, 63, 65, 255, 257, 1000])


def floats_of(dtype: str, finite: bool = False):
    return st.floats(
        width=32 if dtype == "float32" else 64,
        allow_nan=not finite,
        allow_infinity=not finite,
        allow_subnormal=True,
    )


@st.composite
def adversarial(draw, dtype: str) -> np.ndarray:
    """Arrays that break naive quantizers: runs, huge ranges, denormals, +-0, NaN/Inf, the
    largest finite values, smooth ramps; any size including 0, 1 and odd ones."""
    npdt = np.dtype(dtype)
    info = np.finfo(npdt)
    n = draw(SIZES)
    kind = draw(st.sampled_from(["any", "runs", "smooth", "scaled", "extremes"]))
    if kind == "any":
        x = draw(hnp.arrays(npdt, n, elements=floats_of(dtype)))
    elif kind == "runs":
        x = draw(hnp.arrays(npdt, n, elements=floats_of(dtype), fill=floats_of(dtype)))
    elif kind == "smooth":
        start = draw(st.floats(-1e6, 1e6))
        step = draw(st.floats(-1e3, 1e3))
        x = (start + step * np.arange(n)).astype(npdt)
    elif kind == "scaled":
        top = 300 if dtype == "float64" else 37
        scale = 10.0 ** draw(st.integers(-top, top))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        with np.errstate(over="ignore"):
            x = (rng.standard_normal(n) * scale).astype(npdt)
    else:
        pool = [
            info.max,
            -info.max,
            info.smallest_subnormal,
            -info.smallest_subnormal,
            info.tiny,
            0.0,
            -0.0,
            np.nan,
            np.inf,
            -np.inf,
            1.0,
            -1.0,
            float(np.nextafter(info.max, 0, dtype=npdt)),
        ]
        x = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)), npdt)
    if n and kind in ("smooth", "scaled") and draw(st.booleans()):  # sprinkle NaN and Inf
        for v in (np.nan, np.inf, -np.inf):
            x[draw(st.integers(0, n - 1))] = v
    return x


@st.composite
def error_bounds(draw, dtype: str, mode: str) -> float:
    if mode != "abs":
        return 10.0 ** draw(st.floats(-9, 1))
    top = 300 if dtype == "float64" else 38
    return draw(st.sampled_from([1.0, 1.5, 3.7])) * 10.0 ** draw(st.integers(-top, top))


def requested_bound(x: np.ndarray, mode: str, error_bound: float) -> float:
    """The absolute bound the contract promises: error_bound, or error_bound * (max - min), or
    error_bound * sqrt(mean(x^2)), over the finite values (f64; the mean of squares up to
    its summation order's rounding)."""
    if mode == "abs":
        return error_bound
    v = x.astype(np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return 0.0
    with np.errstate(over="ignore"):
        if mode == "rel":
            return error_bound * (v.max() - v.min())
        top = np.abs(v).max()
        rms = top * np.sqrt(np.mean((v / top) ** 2)) if top else 0.0
        return error_bound * rms * (1 + 1e-12)


def check_contract(x: np.ndarray, y: np.ndarray, mode: str, error_bound: float, header):
    """|x - y| <= the bound for every finite element (checked in f64); NaN and Inf come back
    bit for bit; the header's bound covers the errors."""
    assert y.dtype == x.dtype and y.shape == (x.size,)
    x = x.reshape(-1)
    finite = np.isfinite(x)
    ux = x.view(np.uint32 if x.dtype == np.float32 else np.uint64)
    uy = y.view(ux.dtype)
    bad = np.flatnonzero(~finite & (ux != uy))
    assert bad.size == 0, f"non-finite values changed at {bad[:5]}: {x[bad[:5]]} -> {y[bad[:5]]}"
    bound = requested_bound(x, mode, error_bound)
    with np.errstate(over="ignore", invalid="ignore"):
        err = np.abs(x[finite].astype(np.float64) - y[finite].astype(np.float64))
    worst = int(np.argmax(err)) if err.size else 0
    idx = np.flatnonzero(finite)
    assert not (err > bound).any(), (
        f"|x-y| = {err[worst]!r} > bound {bound!r} at {idx[worst]}: "
        f"x={x[idx[worst]]!r} y={y[idx[worst]]!r}"
    )
    assert not (err > header.bound).any(), f"error {err.max()!r} > header bound {header.bound!r}"
    assert header.count == x.size and header.codec == "ebq"
