"""ebq: the error-bound contract over adversarial data, SIMD identity, the integer domain."""

import numpy as np
import pycodecs
import pytest
from ebq_strategies import (
    LEVELS,
    MODES,
    PREDICTORS,
    adversarial,
    check_contract,
    error_bounds,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from pycodecs import CodecError
from pycodecs_support import has_avx2, hsettings, requires_codec, simd

FLOATS = ("float32", "float64")
COMBOS = [(m, lv, p) for m in MODES for lv in LEVELS for p in PREDICTORS]
pytestmark = requires_codec("ebq")


def ebq(x, error_bound, mode="abs", level="fast", predictor="none", **kw):
    return pycodecs.compress(
        x, "ebq", error_bound=error_bound, mode=mode, level=level, predictor=predictor, **kw
    )


@hsettings(max_examples=150)
@given(data=st.data())
def test_error_bound_contract(data):
    dtype = data.draw(st.sampled_from(FLOATS), "dtype")
    mode, level, predictor = data.draw(st.sampled_from(COMBOS), "combo")
    x = data.draw(adversarial(dtype), "x")
    eb = data.draw(error_bounds(dtype, mode), "error_bound")
    frame = ebq(x, eb, mode, level, predictor)
    assert len(frame) <= pycodecs.compress_bound(
        x.size, dtype, "ebq", error_bound=eb, mode=mode, level=level, predictor=predictor
    )
    check_contract(x, pycodecs.decompress(frame), mode, eb, pycodecs.header(frame))


def fixed_cases(dtype):
    info = np.finfo(dtype)
    rng = np.random.default_rng(5)
    tiny = float(info.smallest_subnormal)
    cases = {
        "empty": [],
        "one": [1.5],
        "constant": np.full(1000, 3.25),
        "largest": [info.max, -info.max, info.max, 0.0, 1.0, -info.max],
        "denormals": tiny * np.arange(-50, 51),
        "signed zeros": [0.0, -0.0] * 17,
        "non-finite": [np.nan, np.inf, -np.inf, 1.0, 2.0, np.nan, -np.nan],
        "all nan": [np.nan] * 33,
        "huge range": rng.standard_normal(257) * 10.0 ** rng.integers(-30, 30, 257),
        "ramp": np.linspace(-1e3, 1e3, 4097),
        "runs": np.repeat(rng.standard_normal(40), rng.integers(1, 70, 40)),
    }
    return {k: np.asarray(v, np.float64).astype(dtype) for k, v in cases.items()}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode, level, predictor", COMBOS)
@pytest.mark.parametrize("eb", [1e-3, 1e-7, 1e-30, 10.0])
def test_fixed_adversarial_cases(dtype, mode, level, predictor, eb):
    if mode != "abs" and eb > 1:
        eb = 0.5
    for name, x in fixed_cases(dtype).items():
        frame = ebq(x, eb, mode, level, predictor)
        try:
            check_contract(x, pycodecs.decompress(frame), mode, eb, pycodecs.header(frame))
        except AssertionError as e:
            raise AssertionError(f"case {name!r}: {e}") from None


@pytest.mark.parametrize("dtype", FLOATS)
def test_header_of_abs_frames(dtype):
    x = np.linspace(-1, 1, 100).astype(dtype)
    h = pycodecs.header(ebq(x, 0.01))
    assert (h.codec, h.dtype, h.count) == ("ebq", dtype, 100)
    assert h.param == pytest.approx(0.02, rel=1e-6)  # the grid step is 2 * bound
    assert 0 < h.bound <= 0.01


@pytest.mark.skipif(not has_avx2(), reason="CPU without AVX2")
@hsettings(max_examples=60)
@given(data=st.data())
def test_generic_and_avx2_frames_identical(data):
    dtype = data.draw(st.sampled_from(FLOATS), "dtype")
    mode, level, predictor = data.draw(st.sampled_from(COMBOS), "combo")
    x = data.draw(adversarial(dtype), "x")
    eb = data.draw(error_bounds(dtype, mode), "error_bound")
    out = {}
    for lvl in ("generic", "avx2"):
        with simd(lvl):
            frame = bytes(ebq(x, eb, mode, level, predictor))
            out[lvl] = frame, pycodecs.decompress(frame).tobytes()
    assert out["generic"][0] == out["avx2"][0], "frames differ between generic and avx2"
    assert out["generic"][1] == out["avx2"][1], "decoded values differ"


@pytest.mark.skipif(not has_avx2(), reason="CPU without AVX2")
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode, level, predictor", COMBOS)
def test_generic_and_avx2_identical_on_large_input(dtype, mode, level, predictor):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(100_003) * np.exp(rng.standard_normal(100_003))).astype(dtype)
    x[::997] = np.nan
    frames = []
    for lvl in ("generic", "avx2"):
        with simd(lvl):
            frames.append(bytes(ebq(x, 1e-3, mode, level, predictor)))
    assert frames[0] == frames[1]


@hsettings(max_examples=60)
@given(data=st.data())
def test_levels_and_predictors_decode_alike(data):
    """Level and predictor only change how indices are stored, never the decoded values."""
    dtype = data.draw(st.sampled_from(FLOATS), "dtype")
    mode = data.draw(st.sampled_from(MODES), "mode")
    x = data.draw(adversarial(dtype), "x")
    eb = data.draw(error_bounds(dtype, mode), "error_bound")
    decoded = {
        (lv, p): pycodecs.decompress(ebq(x, eb, mode, lv, p)).tobytes()
        for lv in LEVELS
        for p in PREDICTORS
    }
    assert len(set(decoded.values())) == 1, sorted(decoded)


@pytest.mark.parametrize("dtype", FLOATS)
def test_delta_and_dense_are_smaller_where_they_should_be(dtype):
    # Smooth data: the delta predictor shrinks the indices, the entropy stage codes them.
    x = np.sin(np.linspace(0, 20, 50_000)).astype(dtype)
    fast = len(ebq(x, 1e-4, level="fast"))
    delta = len(ebq(x, 1e-4, level="fast", predictor="delta"))
    dense_delta = len(ebq(x, 1e-4, level="dense", predictor="delta"))
    assert dense_delta < delta < fast
    # Noise-like, peaked data (gradients): no predictor, and the entropy stage wins.
    g = (np.random.default_rng(0).standard_t(3, 50_000) * 1e-3).astype(dtype)
    assert len(ebq(g, 1e-4, level="dense")) < len(ebq(g, 1e-4, level="fast"))


def test_checksum_and_out():
    x = np.linspace(0, 1, 333, dtype=np.float32)
    frame = ebq(x, 1e-3, checksum=True)
    assert pycodecs.header(frame).flags & 1
    buf = bytearray(len(frame) + 10)
    view = ebq(x, 1e-3, checksum=True, out=buf)
    assert bytes(view) == bytes(frame)


# ---- the integer domain: ebq_add, ebq_quantize, pack/unpack ----


def pair(dtype, n, seed, eb=1e-3, **kw):
    rng = np.random.default_rng(seed)
    xa = rng.standard_normal(n).astype(dtype)
    xb = rng.standard_normal(n).astype(dtype)
    return xa, xb, ebq(xa, eb, **kw), ebq(xb, eb, **kw)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "la, pa, lb, pb",
    [
        ("fast", "none", "fast", "none"),
        ("dense", "delta", "fast", "none"),
        ("fast", "delta", "dense", "none"),
    ],
)
def test_ebq_add_sums_within_both_bounds(dtype, la, pa, lb, pb):
    rng = np.random.default_rng(2)
    xa = rng.standard_normal(1001).astype(dtype)
    xb = rng.standard_normal(1001).astype(dtype)
    xa[[3, 10]] = [np.nan, np.inf]
    xb[[10, 20]] = [1.0, -np.inf]
    fa, fb = ebq(xa, 1e-3, level=la, predictor=pa), ebq(xb, 2e-3, level=la, predictor=pa)
    fb = ebq(xb, 1e-3, level=lb, predictor=pb)
    s = pycodecs.ebq_add(fa, fb)
    h, ha, hb = pycodecs.header(s), pycodecs.header(fa), pycodecs.header(fb)
    assert h.bound == ha.bound + hb.bound and h.param == ha.param and h.count == 1001
    y = pycodecs.decompress(s)
    want = xa.astype(np.float64) + xb.astype(np.float64)
    finite = np.isfinite(want)
    from pycodecs_support import half_ulp

    slack = h.bound + half_ulp(y[finite], dtype)
    assert np.all(np.abs(y[finite] - want[finite]) <= slack)
    assert np.isnan(y[3]) and y[10] == np.inf and y[20] == -np.inf
    swapped = pycodecs.decompress(pycodecs.ebq_add(fb, fa))
    assert swapped.tobytes() == y.tobytes()
    view = pycodecs.ebq_add(fa, fb, out=np.zeros(len(s) + 8, np.uint8))
    assert bytes(view) == bytes(s)


EDGES = [0, 31, 32, 63, 64, 4095, 4096, 4097, 2 * 4096 + 4]  # blocks of 32, dense chunks of 4096


@pytest.mark.parametrize("level", ["fast", "dense"])
@pytest.mark.parametrize("edge", EDGES)
def test_ebq_add_keeps_outliers_at_every_block_edge(level, edge):
    """An outlier (Inf, or a value the grid cannot meet, carried exactly) at a block's or a
    chunk's first or last element, in one frame or both: the sum holds it exactly (IEEE), and
    its neighbours keep the bound."""
    n = EDGES[-1] + 1
    rng = np.random.default_rng(edge)
    xa, xb = rng.standard_normal(n), rng.standard_normal(n)
    xa[edge], xb[edge] = 1e30, -np.inf  # both frames carry one here
    other = EDGES[(EDGES.index(edge) + 1) % len(EDGES)]
    xb[other] = 3e29  # one frame only
    fa, fb = ebq(xa, 1e-3, level=level), ebq(xb, 1e-3, level=level)
    y = pycodecs.decompress(pycodecs.ebq_add(fa, fb))
    want = xa + xb
    assert y[edge] == -np.inf and y[other] == want[other]
    rest = np.ones(n, bool)
    rest[[edge, other]] = False
    assert np.all(np.abs(y[rest] - want[rest]) <= 2e-3 * (1 + 1e-12))


def test_ebq_add_chain_matches_single_sum():
    xs = [np.random.default_rng(s).standard_normal(500) for s in range(4)]
    frames = [ebq(x, 1e-4) for x in xs]
    acc = frames[0]
    for f in frames[1:]:
        acc = pycodecs.ebq_add(acc, f)
    y = pycodecs.decompress(acc)
    assert np.all(np.abs(y - sum(xs)) <= 4e-4 * (1 + 1e-12))


@pytest.mark.parametrize(
    "other",
    [
        lambda: ebq(np.zeros(100, np.float32), 2e-3),  # another step
        lambda: ebq(np.zeros(101, np.float32), 1e-3),  # another count
        lambda: ebq(np.zeros(100, np.float64), 1e-3),  # another dtype
    ],
)
def test_mismatched_ebq_add_raises(other):
    a = ebq(np.ones(100, np.float32), 1e-3)
    with pytest.raises(CodecError) as e:
        pycodecs.ebq_add(a, other())
    assert e.value.status_name == "MPIUCC_ERR_MISMATCH"
    with pytest.raises(CodecError):
        pycodecs.ebq_add(a, other(), out=bytearray(10_000))


def test_ebq_add_refuses_other_codecs_and_rel_frames_of_other_ranges():
    a = ebq(np.ones(100, np.float32), 1e-3)
    with pytest.raises(CodecError):
        pycodecs.ebq_add(a, pycodecs.compress(np.ones(100, np.float32), "raw"))
    ra = ebq(np.linspace(0, 1, 100, dtype=np.float32), 1e-3, mode="rel")
    rb = ebq(np.linspace(0, 2, 100, dtype=np.float32), 1e-3, mode="rel")
    with pytest.raises(CodecError) as e:
        pycodecs.ebq_add(ra, rb)
    assert e.value.status_name == "MPIUCC_ERR_MISMATCH"
    with pytest.raises(CodecError):
        pycodecs.ebq_add(a[:-1], a)


@pytest.mark.parametrize("dtype", FLOATS)
@hsettings(max_examples=60)
@given(data=st.data())
def test_ebq_quantize_grid(dtype, data):
    x = data.draw(adversarial(dtype), "x")
    eb = data.draw(error_bounds(dtype, "abs"), "error_bound")
    idx = np.full(x.size, 12345, np.int32)
    pos = pycodecs.ebq_quantize(x, eb, idx)
    assert pos.dtype == np.uint64 and np.all(np.diff(pos.astype(np.int64)) > 0)
    outlier = np.zeros(x.size, bool)
    outlier[pos.astype(np.int64)] = True
    assert np.all(outlier[~np.isfinite(x)]), "NaN/Inf must be outliers"
    assert np.all(idx[outlier] == 0)
    keep = ~outlier
    step = pycodecs.header(ebq(np.zeros(1, dtype), eb)).param  # the grid of frames
    # The decoder's value: the double product rounded once to the dtype (FORMAT.md).
    y = (idx[keep].astype(np.float64) * step).astype(dtype).astype(np.float64)
    assert np.all(np.abs(x[keep].astype(np.float64) - y) <= eb)


def test_ebq_quantize_agrees_with_frames():
    x = np.random.default_rng(3).standard_normal(777).astype(np.float32)
    idx = np.empty(777, np.int32)
    assert pycodecs.ebq_quantize(x, 1e-3, idx).size == 0
    y = pycodecs.decompress(ebq(x, 1e-3))
    from pycodecs_support import half_ulp

    step = pycodecs.header(ebq(x, 1e-3)).param
    assert np.all(np.abs(y - idx * step) <= half_ulp(y, "float32") * 2)


@hsettings(max_examples=80)
@given(
    hnp.arrays(
        np.int32,
        st.integers(0, 600),
        elements=st.integers(-(2**31), 2**31 - 1) | st.integers(-3, 3),
    )
)
def test_pack_unpack_roundtrip(idx):
    packed = pycodecs.pack_indices(idx)
    assert pycodecs.unpack_indices(packed, idx.size).tolist() == idx.tolist()
    out = np.zeros(idx.size, np.int32)
    assert pycodecs.unpack_indices(bytes(packed) + b"\0" * 9, idx.size, out=out) is out
    assert np.array_equal(out, idx)
    if len(packed):
        with pytest.raises(CodecError):
            pycodecs.unpack_indices(packed[:-1], idx.size)
