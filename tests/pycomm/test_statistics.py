"""The statistics a bound is made from (``buffers.finite_min_max``, ``finite_top_rms``,
``all_finite``): one C pass, checked against float64 numpy, with float64 sums of squares that
overflow or underflow rescaled."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pycomm.collectives.buffers import all_finite, finite_min_max, finite_top_rms


def reference(x: np.ndarray) -> tuple[float, float, float, float]:
    finite = x[np.isfinite(x)].astype(np.float64)
    if not finite.size:
        return 0.0, 0.0, 0.0, 0.0
    top = float(np.abs(finite).max())
    rms = top * math.sqrt(math.fsum((finite / top) ** 2) / finite.size) if top else 0.0
    return float(finite.min()), float(finite.max()), top, rms


def arrays(dtype):
    width = 32 if dtype == np.float32 else 64
    return hnp.arrays(dtype, st.integers(0, 200), elements=st.floats(width=width))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_match_float64_numpy(dtype, data):
    x = data.draw(arrays(dtype))
    lo, hi, top, rms = reference(x)
    assert finite_min_max(x) == (lo, hi)
    got_top, got_rms = finite_top_rms(x)
    assert got_top == top
    assert got_rms == pytest.approx(rms, rel=1e-12, abs=0)
    assert all_finite(x) == bool(np.isfinite(x).all())


@pytest.mark.parametrize("value", [1e300, 1e-300, 5e-324, -1.7e308])
def test_float64_sums_beyond_the_normal_range_are_rescaled(value):
    x = np.full(1000, value)
    x[::7] = np.nan
    top, rms = finite_top_rms(x)
    assert top == abs(value) and rms == pytest.approx(abs(value), rel=1e-12)
