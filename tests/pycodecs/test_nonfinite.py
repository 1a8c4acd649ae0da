"""NaN and ±Inf: carried exactly or the block decodes to NaN, never finite garbage; the header
flag says so; error feedback leaves a finite residual (codecs/FORMAT.md, "Non-finite values")."""

import numpy as np
import pycodecs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pycodecs_support import (
    OPTIONS,
    codec_params,
    from_f64,
    has_avx2,
    hsettings,
    simd,
    to_f64,
)
from test_corrupt import reseal

EXACT = ("raw", "ebq", "fp16", "bf16")  # carry NaN and ±Inf at their positions
BLOCKWISE = ("int8", "int4", "sign", "qsgd")  # a block holding one decodes to NaN
BLOCK = 16
SPECIALS = (np.nan, np.inf, -np.inf)


def options(codec: str) -> dict:
    o = dict(OPTIONS[codec])
    if codec in BLOCKWISE or codec == "topk":
        o["block_size"] = BLOCK
    return o


def dtypes_of(codec: str) -> tuple[str, ...]:
    return (
        ("float32", "float64") if codec == "ebq" else ("float32", "float64", "float16", "bfloat16")
    )


@st.composite
def inputs(draw, codec: str):
    """(dtype, values as f64, positions of NaN/Inf): specials anywhere, in runs or filling a
    block; sizes from 0, odd ones included."""
    dtype = draw(st.sampled_from(dtypes_of(codec)))
    n = draw(st.integers(0, 80))
    constant = draw(st.booleans())
    v = (
        np.full(n, 0.5)
        if constant
        else np.random.default_rng(draw(st.integers(0, 99))).normal(size=n)
    )
    bad = np.zeros(n, bool)
    if n:
        for _ in range(draw(st.integers(0, 4))):
            lo = draw(st.integers(0, n - 1))
            hi = draw(st.integers(lo + 1, min(n, lo + BLOCK)))
            v[lo:hi] = draw(st.sampled_from(SPECIALS))
            bad[lo:hi] = True
    return dtype, v, bad


def check_decoded(codec: str, v: np.ndarray, bad: np.ndarray, y: np.ndarray) -> None:
    """The policy of codec for decoded values y (f64) of inputs v with non-finite at bad."""
    n = v.size
    if codec in EXACT:
        assert np.array_equal(np.isnan(y[bad]), np.isnan(v[bad]))
        assert np.array_equal(y[bad & ~np.isnan(v)], v[bad & ~np.isnan(v)])
        assert np.isfinite(y[~bad]).all()
    elif codec in BLOCKWISE:
        for lo in range(0, n, BLOCK):
            if bad[lo : lo + BLOCK].any():
                assert np.isnan(y[lo : lo + BLOCK]).all(), lo
            else:
                assert np.isfinite(y[lo : lo + BLOCK]).all(), lo
    else:  # topk: finite stays finite; each block with a special keeps one, exactly
        assert np.isfinite(y[~bad]).all()
        for lo in range(0, n, BLOCK):
            kept = bad[lo : lo + BLOCK] & (y[lo : lo + BLOCK] != 0)
            assert kept.any() or not bad[lo : lo + BLOCK].any()
            yb, vb = y[lo : lo + BLOCK][kept], v[lo : lo + BLOCK][kept]
            assert np.array_equal(np.isnan(yb), np.isnan(vb))
            assert np.array_equal(yb[~np.isnan(vb)], vb[~np.isnan(vb)])


@pytest.mark.parametrize("codec", codec_params())
@hsettings(max_examples=60)
@given(data=st.data())
def test_nonfinite_policy(codec, data):
    dtype, v, bad = data.draw(inputs(codec))
    x = from_f64(v, dtype)
    kw = dict(options(codec), dtype="bfloat16" if dtype == "bfloat16" else None)
    frame = pycodecs.compress(x, codec, **kw)
    y = to_f64(pycodecs.decompress(frame), dtype)
    check_decoded(codec, v, bad, y)
    assert pycodecs.header(frame).nonfinite == bool(bad.any())
    assert pycodecs.header(frame).nonfinite == (not np.isfinite(y).all())


@pytest.mark.parametrize("codec", codec_params())
@hsettings(max_examples=40)
@given(data=st.data())
def test_error_feedback_with_nonfinite_keeps_a_clean_residual(codec, data):
    """The frame is the plain frame of v = x + residual; the residual stays finite, is 0
    where v (the block, for block codecs) was not, and the next step is finite again."""
    dtype, v, bad = data.draw(inputs(codec))
    x = from_f64(v, dtype)
    r0 = from_f64(np.random.default_rng(1).normal(size=v.size) * 1e-3, dtype)
    kw = dict(options(codec), dtype="bfloat16" if dtype == "bfloat16" else None)
    res = r0.copy()
    frame = pycodecs.compress_ef(x, res, codec, **kw)
    r = to_f64(res, dtype)
    assert np.isfinite(r).all()
    zeroed = bad.copy()
    if codec in BLOCKWISE:
        for lo in range(0, v.size, BLOCK):
            zeroed[lo : lo + BLOCK] = bad[lo : lo + BLOCK].any()
    assert (r[zeroed] == 0).all()
    assert pycodecs.header(frame).nonfinite == bool(bad.any())
    clean = from_f64(np.where(bad, 0.0, v), dtype)  # the next step, finite
    nxt = pycodecs.decompress(pycodecs.compress_ef(clean, res, codec, **kw))
    assert np.isfinite(to_f64(nxt, dtype)).all()


@pytest.mark.parametrize("codec", codec_params())
@pytest.mark.parametrize("special", SPECIALS, ids=("nan", "inf", "-inf"))
@pytest.mark.parametrize("n", [1, 7, 33])
def test_every_simd_path_gives_the_same_frame(codec, special, n):
    x = np.linspace(-1, 1, n, dtype=np.float32)
    x[n // 2] = special
    frames, residuals = [], []
    for level in ("generic", "avx2") if has_avx2() else ("generic",):
        with simd(level):
            frames.append(bytes(pycodecs.compress(x, codec, **options(codec))))
            res = np.full(n, 1e-3, np.float32)
            frames.append(bytes(pycodecs.compress_ef(x, res, codec, **options(codec))))
            residuals.append(res)
    assert all(f == frames[0] for f in frames[::2]) and all(f == frames[1] for f in frames[1::2])
    assert all(np.array_equal(r, residuals[0]) for r in residuals)
    assert pycodecs.header(frames[0]).nonfinite


@pytest.mark.parametrize("codec", codec_params())
def test_the_flag_is_only_the_encoders(codec):
    """A frame with NaN but the flag clear (as written before the flag existed) still decodes
    the same; the empty frame may not claim non-finite values."""
    x = np.array([1.0, np.nan, 2.0], np.float32)
    frame = bytearray(pycodecs.compress(x, codec, **options(codec)))
    assert frame[7] & pycodecs.FLAG_NONFINITE
    old = reseal(bytearray(frame[:7]) + bytes([frame[7] & ~pycodecs.FLAG_NONFINITE]) + frame[8:])
    np.testing.assert_array_equal(pycodecs.decompress(old), pycodecs.decompress(frame))
    empty = bytearray(pycodecs.compress(np.zeros(0, np.float32), codec, **options(codec)))
    empty[7] |= pycodecs.FLAG_NONFINITE
    with pytest.raises(pycodecs.CodecError, match="corrupt"):
        pycodecs.header(reseal(empty))


def test_ebq_add_flags_nonfinite_sums():
    a = np.arange(40, dtype=np.float32)
    b = a.copy()
    a[3], b[9] = np.nan, np.inf
    fa, fb = (pycodecs.compress(v, "ebq", error_bound=1e-3) for v in (a, b))
    total = pycodecs.ebq_add(fa, fb)
    assert pycodecs.header(total).nonfinite
    y = pycodecs.decompress(total)
    assert np.isnan(y[3]) and y[9] == np.inf and np.isfinite(np.delete(y, [3, 9])).all()
    clean = pycodecs.compress(np.ones(40, np.float32), "ebq", error_bound=1e-3)
    assert not pycodecs.header(pycodecs.ebq_add(clean, clean)).nonfinite


@pytest.mark.parametrize("codec", codec_params(("int8", "int4", "qsgd", "sign", "topk")))
@pytest.mark.parametrize("levels", [1, 3, 127])
def test_finite_blocks_at_float32_max_stay_finite(codec, levels):
    """int8 (and qsgd with many levels) once decoded a block whose absmax is FLT_MAX to Inf."""
    big = np.finfo(np.float32).max
    x = (np.random.default_rng(levels).uniform(0.5, 1, 64) * big).astype(np.float32)
    x[::3] *= -1
    x[5] = big
    kw = dict(options(codec), levels=levels) if codec == "qsgd" else options(codec)
    for level in ("generic", "avx2") if has_avx2() else ("generic",):
        with simd(level):
            frame = pycodecs.compress(x, codec, **kw)
            assert np.isfinite(pycodecs.decompress(frame)).all()
            assert not pycodecs.header(frame).nonfinite
