"""Quantizers at the Python level: shapes and dtypes, and each codec's error property."""

import numcodecs
import numpy as np
import pycodecs
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from pycodecs.capabilities import CAPABILITIES
from pycodecs_support import (
    NUMPY_OF,
    OPTIONS,
    bits,
    codec_params,
    compress_or_skip,
    from_f64,
    half_ulp,
    has_avx2,
    hsettings,
    requires_codec,
    roundtrip_all,
    sample,
    simd,
    to_f64,
)

QUANTIZERS = ("fp16", "bf16", "int8", "int4", "sign", "qsgd", "topk")
DTYPES = ("float32", "float64", "float16", "bfloat16")
FLOATS = ("float32", "float64")


def carrier(dtype):
    return "bfloat16" if dtype == "bfloat16" else None


def finite_arrays(dtype, max_size=300, magnitude=1e4):
    """Finite data, with zeros, runs, tiny and mixed-scale values."""
    m = float(np.float32(magnitude))
    tiny = float(np.float32(1e-30))
    elements = st.floats(-m, m, width=32) | st.sampled_from([0.0, -0.0, tiny, -tiny])
    return hnp.arrays(
        NUMPY_OF[dtype], st.integers(0, max_size) | st.sampled_from([1, 33, 257]), elements=elements
    )


def blocks(n, block):
    return [slice(i, min(i + block, n)) for i in range(0, n, block)]


# ---- every quantizer: shapes, dtypes, variants ----


@pytest.mark.parametrize("codec", codec_params(QUANTIZERS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 31, 1000])
def test_roundtrip_shape_and_dtype(codec, dtype, n):
    x = sample(dtype, n, seed=n)
    frame = compress_or_skip(x, codec, dtype=carrier(dtype), **OPTIONS[codec])
    h = pycodecs.header(frame)
    assert (h.codec, h.dtype, h.count, h.frame_size) == (codec, dtype, n, len(frame))
    y = pycodecs.decompress(frame)
    assert y.shape == (n,) and y.dtype == NUMPY_OF[dtype]
    assert len(frame) <= pycodecs.compress_bound(n, dtype, codec, **OPTIONS[codec])


@pytest.mark.parametrize("codec", codec_params(QUANTIZERS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_all_input_kinds_agree(codec, dtype):
    x = sample(dtype, 100, seed=1)
    compress_or_skip(x, codec, dtype=carrier(dtype), **OPTIONS[codec])
    roundtrip_all(x, codec, dtype=dtype, **OPTIONS[codec])


@pytest.mark.parametrize("codec", codec_params(QUANTIZERS))
def test_decompress_add_adds_the_decoded_values(codec):
    x = sample("float32", 300, seed=2)
    frame = pycodecs.compress(x, codec, **OPTIONS[codec])
    acc = sample("float32", 300, seed=3)
    want = acc + pycodecs.decompress(frame)
    assert np.array_equal(pycodecs.decompress_add(frame, acc.copy()), want)


@pytest.mark.parametrize("codec", codec_params(QUANTIZERS))
def test_deterministic_for_a_seed(codec):
    x = sample("float32", 500, seed=4)
    opts = {**OPTIONS[codec], "seed": 99}
    assert pycodecs.compress(x, codec, **opts) == pycodecs.compress(x, codec, **opts)


@pytest.mark.skipif(not has_avx2(), reason="CPU without AVX2")
@pytest.mark.parametrize("codec", codec_params(("raw", *QUANTIZERS)))
@pytest.mark.parametrize("dtype", DTYPES)
def test_generic_and_avx2_identical(codec, dtype):
    """Frames, decoded values, sums and residuals are bit-identical on both kernel paths."""
    for n in (1, 31, 1000, 4099):
        x = sample(dtype, n, seed=n)
        got = []
        for level in ("generic", "avx2"):
            with simd(level):
                frame = bytes(compress_or_skip(x, codec, dtype=carrier(dtype), **OPTIONS[codec]))
                acc = sample(dtype, n, seed=7)
                pycodecs.decompress_add(frame, acc)
                r = sample(dtype, n, seed=8)
                ef = pycodecs.compress_ef(x, r, codec, dtype=carrier(dtype), **OPTIONS[codec])
                got.append(
                    (
                        frame,
                        pycodecs.decompress(frame).tobytes(),
                        acc.tobytes(),
                        bytes(ef),
                        r.tobytes(),
                    )
                )
        for what, a, b in zip(
            ("frame", "decoded", "sum", "ef frame", "residual"), *got, strict=True
        ):
            assert a == b, f"{what} differs between generic and avx2 (n={n})"


# ---- fp16 and bf16: round to nearest even, within half an ulp ----


@requires_codec("fp16")
@pytest.mark.parametrize("dtype", FLOATS)
@hsettings(max_examples=50)
@given(data=st.data())
def test_fp16_within_half_ulp(dtype, data):
    x = data.draw(finite_arrays(dtype, magnitude=65504.0))
    y = pycodecs.decompress(compress_or_skip(x, "fp16"))
    ref = x.astype(np.float16)  # numpy rounds to nearest even
    if dtype == "float32":
        assert np.array_equal(y, ref.astype(np.float32))
    err = np.abs(y.astype(np.float64) - x.astype(np.float64))
    slack = half_ulp(ref, "float16") + half_ulp(x, "float32")  # f64 may round via f32
    assert np.all(err <= slack)
    assert np.all(np.signbit(y[x != 0]) == np.signbit(x[x != 0]))


@requires_codec("fp16")
def test_fp16_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 6.1e-5, 6e-8, 65504.0], np.float32)
    y = pycodecs.decompress(pycodecs.compress(x, "fp16"))
    assert np.isnan(y[0]) and y[1] == np.inf and y[2] == -np.inf
    assert np.array_equal(y[3:], x[3:].astype(np.float16).astype(np.float32))
    big = pycodecs.decompress(pycodecs.compress(np.array([1e6, -1e6], np.float32), "fp16"))
    assert big[0] >= 65504 and big[1] <= -65504  # saturated or Inf, never wrapped


@requires_codec("bf16")
@pytest.mark.parametrize("dtype", FLOATS)
@hsettings(max_examples=50)
@given(data=st.data())
def test_bf16_within_half_ulp(dtype, data):
    x = data.draw(finite_arrays(dtype, magnitude=1e30))
    y = pycodecs.decompress(pycodecs.compress(x, "bf16"))
    ref = to_f64(from_f64(x.astype(np.float32), "bfloat16"), "bfloat16")
    if dtype == "float32":
        assert np.array_equal(y.astype(np.float64), ref)
    err = np.abs(y.astype(np.float64) - x.astype(np.float64))
    assert np.all(err <= half_ulp(ref, "bfloat16") + half_ulp(x, "float32"))


@pytest.mark.parametrize(
    "codec, same",
    [
        pytest.param("fp16", "float16", marks=requires_codec("fp16")),
        pytest.param("bf16", "bfloat16", marks=requires_codec("bf16")),
    ],
)
def test_half_codecs_are_lossless_on_their_own_dtype(codec, same):
    x = sample(same, 500, seed=5)
    frame = compress_or_skip(x, codec, dtype=carrier(same))
    assert np.array_equal(bits(pycodecs.decompress(frame), same), bits(x, same))


# ---- int8 / int4: blockwise absmax, error at most half a step ----


def check_absmax(x, frame, qmax, stochastic):
    y = pycodecs.decompress(frame)
    block = pycodecs.header(frame).block or max(x.size, 1)
    v = x.astype(np.float64)
    for s in blocks(x.size, block):
        absmax = np.max(np.abs(v[s]))
        step = absmax / qmax
        # The scale is stored as float32: below 2^-126 it is subnormal and carries an absolute
        # error of up to 2^-150, which each code multiplies (at most qmax times).
        scale_rounding = qmax * 2.0**-150
        limit = (step if stochastic else step / 2) + 4e-7 * absmax + half_ulp(y[s], str(x.dtype))
        limit = limit + scale_rounding
        err = np.abs(y[s].astype(np.float64) - v[s])
        assert np.all(err <= limit), (s, err.max(), limit)


@pytest.mark.parametrize(
    "codec, qmax",
    [
        pytest.param("int8", 127, marks=requires_codec("int8")),
        pytest.param("int4", 7, marks=requires_codec("int4")),
    ],
)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rounding", ["nearest", "stochastic"])
@hsettings(max_examples=40)
@given(data=st.data())
def test_absmax_quantizers_error(codec, qmax, dtype, rounding, data):
    x = data.draw(finite_arrays(dtype))
    block = data.draw(st.sampled_from([0, 32, 64, 256]))
    seed = data.draw(st.integers(0, 2**64 - 1))
    frame = pycodecs.compress(x, codec, block_size=block, rounding=rounding, seed=seed)
    check_absmax(x, frame, qmax, rounding == "stochastic")


@pytest.mark.parametrize(
    "codec, qmax",
    [
        pytest.param("int8", 127, marks=requires_codec("int8")),
        pytest.param("int4", 7, marks=requires_codec("int4")),
    ],
)
@pytest.mark.parametrize("magnitude", [1.1754944e-38, 3e-39, 1e-30, 5.4e-20, 1e-45])
def test_absmax_quantizers_on_tiny_blocks(codec, qmax, magnitude):
    # Regression: levels / absmax overflowed float32 for blocks below ~4e-37 and was capped,
    # which coded FLT_MIN as 4 steps instead of 127.
    x = (np.linspace(-1, 1, 64) * magnitude).astype(np.float32)
    for level in ("generic", "avx2"):
        pycodecs.set_simd_level(level)
        check_absmax(x, pycodecs.compress(x, codec), qmax, stochastic=False)


@requires_codec("qsgd")
def test_qsgd_on_tiny_blocks():
    x = (np.linspace(-1, 1, 64) * 1e-40).astype(np.float32)
    y = pycodecs.decompress(pycodecs.compress(x, "qsgd", levels=16))
    norm = np.linalg.norm(x.astype(np.float64))
    assert np.all(np.abs(y.astype(np.float64) - x) <= norm / 16 * (1 + 1e-5) + 2.0**-149 * 16)


@pytest.mark.parametrize("codec", codec_params(("int8", "int4", "qsgd")))
def test_stochastic_rounding_is_unbiased(codec):
    x = sample("float32", 64, seed=6)
    opts = {**OPTIONS[codec], "rounding": "stochastic", "block_size": 64}
    ys = np.stack(
        [
            pycodecs.decompress(pycodecs.compress(x, codec, **{**opts, "seed": s}))
            for s in range(400)
        ]
    ).astype(np.float64)
    v = x.astype(np.float64)
    step = {
        "int8": np.abs(v).max() / 127,
        "int4": np.abs(v).max() / 7,
        "qsgd": np.linalg.norm(v) / OPTIONS["qsgd"]["levels"],
    }[codec]
    # each estimate has a standard deviation of at most step / 2: the mean of 400 is
    # within 6 of its standard deviations, 0.15 step
    assert np.all(np.abs(ys.mean(0) - v) <= 0.15 * step)
    assert len({y.tobytes() for y in ys[:10]}) > 1, "seeds must change the rounding"


# ---- sign: signs kept, per-block mean-absolute magnitude ----


@requires_codec("sign")
@pytest.mark.parametrize("dtype", FLOATS)
@hsettings(max_examples=40)
@given(data=st.data())
def test_sign_keeps_signs_and_block_mean(dtype, data):
    x = data.draw(finite_arrays(dtype))
    block = data.draw(st.sampled_from([0, 32, 128]))
    frame = pycodecs.compress(x, "sign", block_size=block)
    y = pycodecs.decompress(frame).astype(np.float64)
    v = x.astype(np.float64)
    nz = v != 0
    assert np.all((np.sign(y) == np.sign(v))[nz & (y != 0)])
    for s in blocks(x.size, pycodecs.header(frame).block or max(x.size, 1)):
        scale = np.mean(np.abs(v[s]))
        assert np.allclose(np.abs(y[s]), scale, rtol=1e-4, atol=1e-30 + half_ulp(scale, dtype))


# ---- qsgd: error below norm / s per block, never a flipped sign ----


@requires_codec("qsgd")
@pytest.mark.parametrize("dtype", FLOATS)
@hsettings(max_examples=40)
@given(data=st.data())
def test_qsgd_error_and_sign(dtype, data):
    x = data.draw(finite_arrays(dtype))
    s_levels = data.draw(st.sampled_from([1, 4, 16, 127]))
    block = data.draw(st.sampled_from([0, 64, 256]))
    frame = pycodecs.compress(
        x,
        "qsgd",
        levels=s_levels,
        block_size=block,
        rounding="stochastic",
        seed=data.draw(st.integers(0, 2**32)),
    )
    y = pycodecs.decompress(frame).astype(np.float64)
    v = x.astype(np.float64)
    assert np.all((y == 0) | (np.sign(y) == np.sign(v)))
    for s in blocks(x.size, pycodecs.header(frame).block or max(x.size, 1)):
        norm = np.linalg.norm(v[s])
        assert np.all(np.abs(y[s] - v[s]) <= norm / s_levels * (1 + 1e-5) + 1e-30)


# ---- topk: the k largest magnitudes of each block, exactly; the rest zero ----


@requires_codec("topk")
@pytest.mark.parametrize("dtype", FLOATS)
@hsettings(max_examples=40)
@given(data=st.data())
def test_topk_keeps_largest_exactly(dtype, data):
    x = data.draw(finite_arrays(dtype))
    block = data.draw(st.sampled_from([0, 64, 256]))
    k = 1 if block == 0 else data.draw(st.sampled_from([1, 3, 16, 64]))  # k <= any block
    frame = pycodecs.compress(x, "topk", levels=k, block_size=block)
    y = pycodecs.decompress(frame)
    kept = y != 0
    assert np.array_equal(y[kept], x[kept]), "kept values must be exact"
    for s in blocks(x.size, pycodecs.header(frame).block or max(x.size, 1)):
        a, m = np.abs(x[s]), kept[s]
        assert m.sum() <= k
        if m.any() and (~m).any():
            assert a[m].min() >= a[~m].max()
        assert m.sum() == min(k, np.count_nonzero(x[s]))


@pytest.mark.parametrize("codec", QUANTIZERS)
def test_every_quantizer_works_with_its_defaults(codec):
    """No codec parameter with a conventional value is required: qsgd s = 16 with stochastic
    rounding, topk k = 16 of 256, block 256; the numcodecs classes' defaults agree."""
    x = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    frame = pycodecs.compress(x, codec)
    h = pycodecs.header(frame)
    assert pycodecs.decompress(frame).shape == x.shape
    if codec == "qsgd":
        assert h.aux == 16 | 1 << 8  # s | stochastic << 8
        explicit = pycodecs.compress(x, "qsgd", levels=16, rounding="stochastic")
        assert bytes(frame) == bytes(explicit)
    if codec == "topk":
        assert h.aux == 16 and h.block == 256
        assert bytes(frame) == bytes(pycodecs.compress(x, "topk", levels=16))
    nc = numcodecs.get_codec({"id": f"mpiucc.{codec}"})
    assert bytes(nc.encode(x)) == bytes(frame)


@pytest.mark.parametrize("codec", codec_params(QUANTIZERS))
@pytest.mark.parametrize("dtype", FLOATS)
@hsettings()
@given(data=st.data())
def test_a_fixed_size_frame_is_exactly_compress_bound(codec, dtype, data):
    # pycomm's allgather sends no sizes for these codecs: the receiver computes them.
    assert CAPABILITIES[codec].fixed_size
    x = data.draw(finite_arrays(dtype) | hnp.arrays(NUMPY_OF[dtype], st.integers(1, 40)))
    assume(x.size > 0)  # an empty frame is the header alone, below compress_bound
    opts = dict(OPTIONS[codec], checksum=data.draw(st.booleans()))
    if codec in ("int8", "int4", "sign", "qsgd", "topk"):
        opts["block_size"] = data.draw(st.sampled_from([0, 8, 64, 264]))
    frame = compress_or_skip(x, codec, **opts)
    assert len(frame) == pycodecs.compress_bound(x.size, dtype=dtype, codec=codec, **opts)
