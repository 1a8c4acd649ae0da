"""ebq over threads: frames, residuals and decoded values are byte for byte those of one
thread, for every thread count, over adversarial data and sizes around the segment edges
(segments are whole kernel chunks of 256 elements); the bound holds on the threaded path."""

import numpy as np
import pycodecs
import pytest
from ebq_strategies import LEVELS, MODES, PREDICTORS, adversarial, check_contract, error_bounds
from hypothesis import given
from hypothesis import strategies as st
from pycodecs_support import hsettings, requires_codec

pytestmark = requires_codec("ebq")
EDGES = [0, 1, 255, 256, 257, 511, 512, 513, 767, 1023, 1025, 1537, 4099]
THREADS = (2, 3, 5)


@st.composite
def arrays(draw, dtype):
    """An adversarial pattern tiled to a size around the segment edges, so that NaN, Inf,
    runs and huge values fall on both sides of a segment boundary."""
    x = draw(adversarial(dtype))
    n = draw(st.sampled_from(EDGES) | st.integers(0, 3000))
    if x.size == 0:
        x = np.zeros(1, dtype)
    return np.resize(x, n)


def bits(y):
    return y.view(np.uint32 if y.dtype == np.float32 else np.uint64)


@hsettings(max_examples=120)
@given(data=st.data())
def test_frames_and_values_do_not_depend_on_threads(data):
    dtype = data.draw(st.sampled_from(("float32", "float64")), "dtype")
    mode = data.draw(st.sampled_from(MODES), "mode")
    level = data.draw(st.sampled_from(LEVELS), "level")
    predictor = data.draw(st.sampled_from(PREDICTORS), "predictor")
    x = data.draw(arrays(dtype), "x")
    eb = data.draw(error_bounds(dtype, mode), "error_bound")
    kw = dict(error_bound=eb, mode=mode, level=level, predictor=predictor)
    one = pycodecs.compress(x, "ebq", threads=1, **kw)
    y1 = pycodecs.decompress(one, threads=1)
    for t in THREADS:
        assert pycodecs.compress(x, "ebq", threads=t, **kw) == one, f"threads={t}"
        yt = pycodecs.decompress(one, threads=t)
        assert np.array_equal(bits(yt), bits(y1)), f"threads={t}"
        acc1, acct = np.full(x.size, 0.5, dtype), np.full(x.size, 0.5, dtype)
        pycodecs.decompress_add(one, acc1, threads=1)
        pycodecs.decompress_add(one, acct, threads=t)
        assert np.array_equal(bits(acct), bits(acc1))
    check_contract(
        x,
        pycodecs.decompress(pycodecs.compress(x, "ebq", threads=4, **kw)),
        mode,
        eb,
        pycodecs.header(one),
    )


@hsettings(max_examples=60)
@given(data=st.data())
def test_error_feedback_does_not_depend_on_threads(data):
    dtype = data.draw(st.sampled_from(("float32", "float64")), "dtype")
    level = data.draw(st.sampled_from(LEVELS), "level")
    predictor = data.draw(st.sampled_from(PREDICTORS), "predictor")
    x = data.draw(arrays(dtype), "x")
    kw = dict(error_bound=1e-3, mode="rel", level=level, predictor=predictor)
    r1 = np.linspace(-1e-3, 1e-3, x.size).astype(dtype)
    one = pycodecs.compress_ef(x, r1, "ebq", threads=1, **kw)
    for t in THREADS:
        rt = np.linspace(-1e-3, 1e-3, x.size).astype(dtype)
        assert pycodecs.compress_ef(x, rt, "ebq", threads=t, **kw) == one
        assert np.array_equal(bits(rt), bits(r1))


@hsettings(max_examples=60)
@given(data=st.data())
def test_ebq_add_does_not_depend_on_threads(data):
    level_a = data.draw(st.sampled_from(LEVELS), "level_a")
    level_b = data.draw(st.sampled_from(LEVELS), "level_b")
    pa = data.draw(st.sampled_from(PREDICTORS), "predictor_a")
    x = data.draw(arrays("float32"), "x")
    y = np.roll(x, 7) * np.float32(0.5)
    fa = pycodecs.compress(x, "ebq", error_bound=1e-2, level=level_a, predictor=pa)
    fb = pycodecs.compress(y, "ebq", error_bound=1e-2, level=level_b)
    one = pycodecs.ebq_add(fa, fb, threads=1)
    for t in THREADS:
        assert pycodecs.ebq_add(fa, fb, threads=t) == one


def test_default_threads_follow_the_environment(monkeypatch):
    assert pycodecs.default_threads() >= 1
    monkeypatch.setenv("MPIUCC_THREADS", "3")
    assert pycodecs.default_threads() == 3


def test_large_array_default_threads_give_the_same_frame(monkeypatch):
    x = np.random.default_rng(3).laplace(size=(1 << 19) + 77).astype(np.float32)
    x[::4093] = np.nan
    monkeypatch.setenv("MPIUCC_THREADS", "1")
    one = pycodecs.compress(x, "ebq", error_bound=1e-3, level="dense")
    monkeypatch.setenv("MPIUCC_THREADS", "4")
    assert pycodecs.compress(x, "ebq", error_bound=1e-3, level="dense") == one


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_thread_counts_raise(bad):
    x = np.zeros(4, np.float32)
    with pytest.raises((TypeError, ValueError)):
        pycodecs.compress(x, "ebq", error_bound=1.0, threads=bad)
    with pytest.raises((TypeError, ValueError)):
        pycodecs.decompress(pycodecs.compress(x, "ebq", error_bound=1.0), threads=bad)


@hsettings(max_examples=80)
@given(data=st.data())
def test_dense_wide_indices_keep_the_bound_on_threads(data):
    """Format v3's wide symbols: indices of every bit length up to 2^24 steps (their low bits
    in the extra-bit stream, chunks ending on partial bytes) give one frame for every thread
    count and decode within the bound on any number of threads."""
    dtype = data.draw(st.sampled_from(("float32", "float64")), "dtype")
    n = data.draw(st.sampled_from(EDGES) | st.integers(0, 3000), "n")
    seed = data.draw(st.integers(0, 2**32 - 1), "seed")
    top = data.draw(st.integers(1, 24), "top bit")
    rng = np.random.default_rng(seed)
    eb = 0.5 ** data.draw(st.integers(0, 20), "eb exponent")
    mag = np.ldexp(rng.uniform(0.5, 1.0, n), rng.integers(0, top + 1, n)) * eb
    x = (mag * rng.choice((-1.0, 1.0), n)).astype(dtype)
    one = pycodecs.compress(x, "ebq", threads=1, error_bound=eb, level="dense")
    assert one[4] == 3
    for t in THREADS:
        assert pycodecs.compress(x, "ebq", threads=t, error_bound=eb, level="dense") == one
    y = pycodecs.decompress(one, threads=3)
    assert np.array_equal(bits(y), bits(pycodecs.decompress(one, threads=1)))
    check_contract(x, y, "abs", eb, pycodecs.header(one))
