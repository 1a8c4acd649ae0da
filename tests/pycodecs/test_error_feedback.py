"""compress_ef: the residual becomes v - decoded, with v = x + residual, for every codec."""

import numpy as np
import pycodecs
import pytest
from pycodecs_support import OPTIONS, codec_params, half_ulp, sample

FLOATS = ("float32", "float64")


@pytest.mark.parametrize("codec", codec_params())
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [0, 1, 1001])
def test_residual_is_v_minus_decoded(codec, dtype, n):
    x = sample(dtype, n, seed=1)
    r0 = sample(dtype, n, seed=2, scale=1e-2)
    r = r0.copy()
    frame = pycodecs.compress_ef(x, r, codec, **OPTIONS[codec])
    y = pycodecs.decompress(frame).astype(np.float64)
    v = x.astype(np.float64) + r0.astype(np.float64)
    want = v - y
    # v may be rounded to the dtype before encoding, and the residual is stored in it
    tol = half_ulp(v, dtype) + half_ulp(want, dtype)
    assert np.all(np.abs(r.astype(np.float64) - want) <= tol)


@pytest.mark.parametrize("codec", codec_params())
def test_zero_residual_gives_the_plain_frame(codec):
    x = sample("float32", 500, seed=3)
    r = np.zeros_like(x)
    assert pycodecs.compress_ef(x, r, codec, **OPTIONS[codec]) == pycodecs.compress(
        x, codec, **OPTIONS[codec]
    )


@pytest.mark.parametrize("codec", codec_params())
@pytest.mark.parametrize("dtype", FLOATS)
def test_error_feedback_telescopes(codec, dtype):
    """Sent values plus the final residual add up to everything fed in: nothing is lost."""
    steps = 6
    x = sample(dtype, 700, seed=4)
    r = np.zeros_like(x)
    sent = np.zeros(x.size)
    for t in range(steps):
        opts = {**OPTIONS[codec], "seed": t} if "seed" in OPTIONS[codec] else OPTIONS[codec]
        sent += pycodecs.decompress(pycodecs.compress_ef(x, r, codec, **opts))
    total = steps * x.astype(np.float64)
    eps = 1e-5 if dtype == "float32" else 1e-13
    assert np.allclose(sent + r, total, rtol=0, atol=eps * steps * np.abs(total).max())


def test_residual_of_other_dtype_or_size_is_refused():
    x = np.ones(10, np.float32)
    with pytest.raises(TypeError):
        pycodecs.compress_ef(x, np.zeros(10, np.float64), "raw")
    with pytest.raises(ValueError):
        pycodecs.compress_ef(x, np.zeros(11, np.float32), "raw")
    with pytest.raises(ValueError):
        pycodecs.compress_ef(x, np.zeros(20, np.float32)[::2], "raw")
