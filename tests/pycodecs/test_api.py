"""The functional API on the raw codec (always built): variants, out=, headers, errors."""

import pickle
import threading

import numpy as np
import pycodecs
import pytest
from pycodecs import CodecError
from pycodecs_support import (
    NUMPY_OF,
    bits,
    f32_to_bf16_bits,
    from_f64,
    roundtrip_all,
    sample,
    to_f64,
)

DTYPES = ("float32", "float64", "float16", "bfloat16")


def specials(dtype):
    v = [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e-40, 3.0e38, -65504.0]
    return from_f64(v, dtype)


def test_names():
    assert pycodecs.CODECS == ("raw", "ebq", "fp16", "bf16", "int8", "int4", "sign", "qsgd", "topk")
    assert pycodecs.DTYPES == DTYPES


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 33, 1000])
def test_raw_roundtrip_is_bit_exact(codec_roundtrip, dtype, n):
    x = np.concatenate([specials(dtype), sample(dtype, n, seed=n)])[:n]
    frame, y = codec_roundtrip(x, "raw", dtype=dtype)
    assert np.array_equal(bits(y, dtype), bits(x, dtype))
    assert len(frame) == 64 + n * x.itemsize


@pytest.mark.parametrize("dtype", DTYPES)
def test_variants_agree(dtype):
    roundtrip_all(specials(dtype), "raw", dtype=dtype)


def test_compress_returns_exact_bytearray():
    frame = pycodecs.compress(np.ones(5, np.float32), "raw")
    assert type(frame) is bytearray and len(frame) == 64 + 20
    assert frame[:4] == b"\x89MUC"


def test_out_returns_view_of_out():
    buf = bytearray(1000)
    view = pycodecs.compress(np.ones(5, np.float64), "raw", out=buf)
    assert isinstance(view, memoryview) and len(view) == 64 + 40
    assert bytes(view) == bytes(buf[: len(view)])
    buf[70] ^= 0xFF  # the view is buf's memory
    assert view[70] == buf[70]


def test_out_too_small_is_capacity_error():
    with pytest.raises(CodecError) as e:
        pycodecs.compress(np.ones(100, np.float32), "raw", out=bytearray(200))
    assert e.value.status_name == "MPIUCC_ERR_CAPACITY"
    with pytest.raises(CodecError):
        pycodecs.compress(np.ones(1, np.float32), "raw", out=bytearray())


def test_header_fields():
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    frame = pycodecs.compress(x, "raw", checksum=True)
    h = pycodecs.header(frame)
    assert (h.version, h.codec, h.dtype, h.count) == (1, "raw", "float64", 12)
    assert (h.flags, h.bound, h.param, h.block, h.aux) == (1, 0.0, 0.0, 0, 0)
    assert h.payload_size == 96 and h.frame_size == len(frame) == 160
    assert pycodecs.header(bytes(frame) + b"trailing") == h


def test_any_shape_decodes_flat():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    y = pycodecs.decompress(pycodecs.compress(x, "raw"))
    assert y.shape == (24,) and np.array_equal(y, x.ravel())
    out = np.empty((4, 6), np.float32)
    assert pycodecs.decompress(pycodecs.compress(x, "raw"), out=out) is out
    assert np.array_equal(out.ravel(), x.ravel())
    scalar = np.float64(2.5)
    assert pycodecs.decompress(pycodecs.compress(np.asarray(scalar), "raw"))[0] == 2.5


def test_bfloat16_in_numpy_is_int16_with_dtype():
    bits16 = f32_to_bf16_bits(np.array([1.0, -2.0, 3.5], np.float32))
    frame = pycodecs.compress(bits16, "raw", dtype="bfloat16")
    assert pycodecs.header(frame).dtype == "bfloat16"
    y = pycodecs.decompress(frame)
    assert y.dtype == np.int16 and np.array_equal(y, bits16)
    assert np.array_equal(
        pycodecs.decompress(frame, out=np.empty(3, np.uint16)).view(np.int16), bits16
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_compress_bound_suffices(dtype):
    for n in (0, 1, 7, 1000):
        x = sample(dtype, n)
        carrier = "bfloat16" if dtype == "bfloat16" else None
        assert len(pycodecs.compress(x, "raw", dtype=carrier)) <= pycodecs.compress_bound(
            n, dtype, "raw"
        )


def test_compress_bound_errors():
    with pytest.raises(ValueError):
        pycodecs.compress_bound(10, "int32", "raw")
    with pytest.raises(TypeError):
        pycodecs.compress_bound(10, "float32", "raw", nonsense=1)
    with pytest.raises(ValueError):
        pycodecs.compress_bound(-1, "float32", "raw")
    with pytest.raises((OverflowError, ValueError)):
        pycodecs.compress_bound(2**62, "float64", "raw")


@pytest.mark.parametrize("dtype", DTYPES)
def test_decompress_add_raw(dtype):
    x, acc = sample(dtype, 100, seed=1), sample(dtype, 100, seed=2)
    expected = from_f64(to_f64(acc, dtype) + to_f64(x, dtype), dtype)
    carrier = "bfloat16" if dtype == "bfloat16" else None
    out = acc.copy()
    assert pycodecs.decompress_add(pycodecs.compress(x, "raw", dtype=carrier), out) is out
    if dtype == "float64" or dtype == "float32":
        assert np.array_equal(out, expected)
    else:  # f16/bf16 sums are rounded once from f32
        assert np.array_equal(bits(out, dtype), bits(expected, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compress_ef_raw(dtype):
    x = sample(dtype, 50, seed=3)
    r = sample(dtype, 50, seed=4, scale=1e-3)
    v = x.astype(np.float64) + r.astype(np.float64)
    frame = pycodecs.compress_ef(x, r, "raw")
    y = pycodecs.decompress(frame)
    assert np.array_equal(y, v.astype(dtype))
    assert np.array_equal(r, (v - y.astype(np.float64)).astype(dtype))
    if dtype == "float64":
        assert not r.any()


def test_checksum_catches_payload_damage():
    frame = pycodecs.compress(np.arange(10, dtype=np.float32), "raw", checksum=True)
    frame[70] ^= 1
    with pytest.raises(CodecError) as e:
        pycodecs.decompress(frame)
    assert e.value.status_name == "MPIUCC_ERR_PAYLOAD_CHECKSUM"


def test_codec_error_carries_status():
    with pytest.raises(CodecError) as e:
        pycodecs.decompress(b"definitely not a frame, but longer than sixty-four bytes ......")
    err = e.value
    assert (err.status, err.status_name, str(err)) == (
        4,
        "MPIUCC_ERR_MAGIC",
        "not an mpiucc frame (bad magic)",
    )
    again = pickle.loads(pickle.dumps(err))
    assert (again.status, again.status_name, str(again)) == (err.status, err.status_name, str(err))
    with pytest.raises(CodecError) as e:
        pycodecs.decompress(b"")
    assert e.value.status_name == "MPIUCC_ERR_TRUNCATED"


@pytest.mark.parametrize(
    "call, exc",
    [
        (lambda x: pycodecs.compress(x, "nope"), ValueError),
        (lambda x: pycodecs.compress(x, "ebq"), ValueError),  # ebq needs error_bound
        (lambda x: pycodecs.compress(x, "ebq", error_bound=-1.0), ValueError),
        (lambda x: pycodecs.compress(x, "ebq", error_bound=float("nan")), ValueError),
        (lambda x: pycodecs.compress(x, "ebq", error_bound="big"), TypeError),
        (lambda x: pycodecs.compress(x, "ebq", error_bound=0.1, mode="relative"), ValueError),
        (lambda x: pycodecs.compress(x, "ebq", error_bound=0.1, level="max"), ValueError),
        (lambda x: pycodecs.compress(x, "ebq", error_bound=0.1, predictor="lorenzo"), ValueError),
        (lambda x: pycodecs.compress(x, "int8", rounding="up"), ValueError),
        (lambda x: pycodecs.compress(x, "int8", block_size=-1), ValueError),
        (lambda x: pycodecs.compress(x, "int8", block_size=2**32), ValueError),
        (lambda x: pycodecs.compress(x, "int8", block_size=1.5), TypeError),
        (lambda x: pycodecs.compress(x, "qsgd", seed=-1), ValueError),
        (lambda x: pycodecs.compress(x, "qsgd", levels=True), TypeError),
        (lambda x: pycodecs.compress(x, "raw", dtype="int8"), ValueError),
        (lambda x: pycodecs.compress(x, "raw", dtype="float64"), TypeError),
        (lambda x: pycodecs.compress(x, "raw", out=bytes(200)), ValueError),
        (lambda x: pycodecs.compress(x[::2], "raw"), ValueError),
        (lambda x: pycodecs.compress(x.astype(np.int32), "raw"), TypeError),
        (lambda x: pycodecs.compress(x.astype(">f4"), "raw"), TypeError),
        (lambda x: pycodecs.compress(x.tolist(), "raw"), TypeError),
        (lambda x: pycodecs.compress(x.tobytes(), "raw"), TypeError),  # bytes need dtype=
        (lambda x: pycodecs.compress(x.tobytes()[:-1], "raw", dtype="float32"), ValueError),
        (lambda x: pycodecs.compress_ef(x, x[:3].copy(), "raw"), ValueError),
        (lambda x: pycodecs.compress_ef(x, x.astype(np.float64), "raw"), TypeError),
        (
            lambda x: pycodecs.compress_ef(x, np.asarray(bytes(x)).view(np.float32), "raw"),
            ValueError,
        ),  # read-only residual
        (lambda x: pycodecs.set_simd_level("avx512"), ValueError),
    ],
)
def test_argument_errors_raise_before_c(call, exc):
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(exc):
        call(x)


@pytest.mark.parametrize(
    "out, exc",
    [
        (np.empty(9, np.float32), ValueError),
        (np.empty(8, np.float64), TypeError),
        (np.empty(8, np.int16), TypeError),
        (np.empty(16, np.float32)[::2], ValueError),
        (bytearray(31), ValueError),
        (bytes(32), ValueError),
        ([0.0] * 8, TypeError),
    ],
)
def test_decompress_out_is_checked(out, exc):
    frame = pycodecs.compress(np.arange(8, dtype=np.float32), "raw")
    with pytest.raises(exc):
        pycodecs.decompress(frame, out=out)
    with pytest.raises(exc):
        pycodecs.decompress_add(frame, out)


def test_decompress_into_bytes_buffer():
    x = np.arange(8, dtype=np.float32)
    buf = bytearray(32)
    assert pycodecs.decompress(pycodecs.compress(x, "raw"), out=buf) is buf
    assert np.array_equal(np.frombuffer(buf, np.float32), x)


def test_frame_kinds():
    x = np.arange(8, dtype=np.float64)
    frame = pycodecs.compress(x, "raw")
    for f in (
        bytes(frame),
        memoryview(frame),
        np.frombuffer(frame, np.uint8),
        np.frombuffer(bytes(frame) + b"\0" * 8, np.uint8),
    ):
        assert np.array_equal(pycodecs.decompress(f), x)


def test_simd_levels():
    level = pycodecs.simd_level()
    assert level in ("generic", "avx2")
    assert pycodecs.set_simd_level("generic") == "generic"
    assert pycodecs.simd_level() == "generic"
    assert pycodecs.set_simd_level("avx2") in ("generic", "avx2")
    pycodecs.set_simd_level(level)


def test_threads_share_nothing():
    """Calls from several threads at once (GIL released) give the same frames."""
    xs = [sample("float32", 1 << 16, seed=s) for s in range(4)]
    expected = [bytes(pycodecs.compress(x, "raw", checksum=True)) for x in xs]
    got = [None] * 4

    def work(i):
        for _ in range(20):
            f = pycodecs.compress(xs[i], "raw", checksum=True)
            assert np.array_equal(pycodecs.decompress(f), xs[i])
        got[i] = bytes(f)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == expected


def test_numpy_dtypes_of_decoded():
    for dtype in DTYPES:
        x = sample(dtype, 3)
        carrier = "bfloat16" if dtype == "bfloat16" else None
        assert (
            pycodecs.decompress(pycodecs.compress(x, "raw", dtype=carrier)).dtype == NUMPY_OF[dtype]
        )


def test_crc32c_check_value():
    from pycodecs import _ext

    assert _ext.crc32c(b"123456789") == 0xE3069283


def test_typed_buffers_carry_their_dtype():
    import array

    for code, dtype in (("f", "float32"), ("d", "float64")):
        buf = array.array(code, [1.0, -2.5, 3.25])
        frame = pycodecs.compress(buf, "raw")
        assert pycodecs.header(frame).dtype == dtype
        assert pycodecs.decompress(frame).tolist() == [1.0, -2.5, 3.25]
    with pytest.raises(TypeError):
        pycodecs.compress(array.array("i", [1, 2]), "raw")
