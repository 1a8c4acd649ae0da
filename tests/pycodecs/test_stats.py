"""pycodecs.finite_stats: one C pass for the finite min and max, the sum of squares and the
non-finite count, checked against numpy on adversarial data, on every SIMD level."""

import math

import numpy as np
import pycodecs
import pytest
from ebq_strategies import adversarial
from hypothesis import given, settings
from hypothesis import strategies as st
from pycodecs_support import has_avx2, simd

DTYPES = ("float32", "float64")


def expected(x: np.ndarray, scale: float = 1.0) -> tuple[float, float, float, int]:
    finite = x[np.isfinite(x)].astype(np.float64)
    lo, hi = (finite.min(), finite.max()) if finite.size else (0.0, 0.0)
    with np.errstate(over="ignore", under="ignore"):
        squares = (finite * scale) ** 2
    try:
        total = math.fsum(squares) if np.isfinite(squares).all() else math.inf
    except OverflowError:  # the exact sum is beyond the largest double
        total = math.inf
    return float(lo), float(hi), total, int(x.size - finite.size)


def check(x: np.ndarray, scale: float = 1.0) -> pycodecs.FiniteStats:
    got = pycodecs.finite_stats(x, scale)
    lo, hi, total, bad = expected(x, scale)
    assert (got.min, got.max, got.nonfinite) == (lo, hi, bad)
    if math.isinf(total):
        assert got.sum_squares == math.inf
    else:  # 16 lanes of sequential double sums, then a tree: within n ulps of the exact sum
        assert got.sum_squares == pytest.approx(total, rel=(x.size + 16) * 2.0**-52, abs=0)
    return got


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_matches_numpy_on_adversarial_data(dtype, data):
    check(data.draw(adversarial(dtype)))


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_scale_keeps_float64_sums_finite(dtype, data):
    x = data.draw(adversarial(dtype))
    top = float(np.abs(x[np.isfinite(x)]).max(initial=0.0))
    if top > 0 and 1.0 / top < math.inf:
        got = check(x, 1.0 / top)
        assert got.sum_squares <= x.size  # every (x / top)^2 <= 1


@pytest.mark.skipif(not has_avx2(), reason="the CPU lacks AVX2")
@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=150, deadline=None)
@given(data=st.data(), scale=st.sampled_from([1.0, 0.0, 0.5, 3e-7, 1e10]))
def test_every_simd_level_gives_the_same_bits(dtype, data, scale):
    x = data.draw(adversarial(dtype))
    with simd("generic"):
        generic = pycodecs.finite_stats(x, scale)
    with simd("avx2"):
        vector = pycodecs.finite_stats(x, scale)
    assert generic.sum_squares == vector.sum_squares or (
        math.isnan(generic.sum_squares) and math.isnan(vector.sum_squares)
    )
    assert generic == pytest.approx(vector, nan_ok=True)  # +-0 may differ in sign only


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 33, 1001])
def test_sizes_around_the_vector_width(n):
    rng = np.random.default_rng(n)
    for dtype in DTYPES:
        x = rng.standard_normal(n).astype(dtype)
        if n > 2:
            x[[0, n // 2, n - 1]] = [np.nan, np.inf, -np.inf]
        check(x)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_scale_zero_skips_the_squares(dtype, data):
    x = data.draw(adversarial(dtype))
    got = pycodecs.finite_stats(x, 0.0)
    assert got.sum_squares == 0.0
    assert got._replace(sum_squares=0.0) == pycodecs.finite_stats(x)._replace(sum_squares=0.0)


def test_signed_zeros_and_denormals():
    tiny = np.finfo(np.float32).smallest_subnormal
    got = check(np.array([-0.0, 0.0, tiny, -tiny], np.float32))
    assert (got.min, got.max) == (-tiny, tiny) and got.sum_squares > 0  # squared in double


def test_nothing_finite_gives_zeros():
    got = pycodecs.finite_stats(np.array([np.nan, np.inf, -np.inf], np.float64))
    assert got == (0.0, 0.0, 0.0, 3)


def test_torch_tensor():
    torch = pytest.importorskip("torch")
    got = pycodecs.finite_stats(torch.tensor([1.0, -3.0, float("nan")]))
    assert got == (-3.0, 1.0, 10.0, 1)


@pytest.mark.parametrize("dtype", ["float16", "int32", "int8"])
def test_other_dtypes_raise(dtype):
    with pytest.raises(TypeError):
        pycodecs.finite_stats(np.zeros(4, dtype))


@pytest.mark.parametrize("scale", [-1.0, -0.0 - 1e-300, math.inf, math.nan])
def test_bad_scale_raises(scale):
    with pytest.raises(ValueError, match="scale"):
        pycodecs.finite_stats(np.zeros(4, np.float32), scale)
