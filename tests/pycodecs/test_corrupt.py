"""Damaged frames: every decoder refuses them with CodecError and never crashes."""

import numpy as np
import pycodecs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pycodecs import CodecError, _ext
from pycodecs_support import OPTIONS, codec_params, hsettings, sample

HEADER = 64


def make_frame(codec, checksum=False, n=300, dtype="float32"):
    x = sample(dtype, n, seed=11)
    x[5] = 0.0
    return bytes(pycodecs.compress(x, codec, checksum=checksum, **OPTIONS[codec]))


def reseal(frame: bytearray) -> bytearray:
    """Recompute the header checksum after editing header fields."""
    frame[60:64] = _ext.crc32c(bytes(frame[:60])).to_bytes(4, "little")
    return frame


def decode_or_refuse(frame, count):
    """Decode a damaged frame: it succeeds or raises CodecError (never crashes). Headers
    that now claim far more elements than the original are only read, not decoded."""
    try:
        h = pycodecs.header(frame)
        if h.count > 4 * count:
            return None
        return pycodecs.decompress(frame)
    except CodecError:
        return None


@pytest.mark.parametrize("codec", codec_params())
def test_every_truncation_is_refused(codec):
    frame = make_frame(codec, n=100)
    for cut in range(len(frame)):
        with pytest.raises(CodecError) as e:
            pycodecs.decompress(frame[:cut])
        assert e.value.status_name == "MPIUCC_ERR_TRUNCATED", cut
        with pytest.raises(CodecError):
            pycodecs.decompress_add(frame[:cut], np.zeros(100, np.float32))


@pytest.mark.parametrize("codec", codec_params())
def test_header_bit_flips_are_refused(codec):
    frame = make_frame(codec, n=50)
    for i in range(HEADER):
        for bit in range(8):
            bad = bytearray(frame)
            bad[i] ^= 1 << bit
            with pytest.raises(CodecError) as e:
                pycodecs.header(bad)
            expected = "MPIUCC_ERR_MAGIC" if i < 4 else "MPIUCC_ERR_HEADER_CHECKSUM"
            assert e.value.status_name == expected, (i, bit)


@pytest.mark.parametrize("codec", codec_params())
def test_payload_damage_caught_by_checksum(codec):
    frame = make_frame(codec, checksum=True)
    step = max(1, (len(frame) - HEADER) // 40)
    for i in range(HEADER, len(frame), step):
        bad = bytearray(frame)
        bad[i] ^= 0x10
        with pytest.raises(CodecError) as e:
            pycodecs.decompress(bad)
        assert e.value.status_name == "MPIUCC_ERR_PAYLOAD_CHECKSUM"


@pytest.mark.parametrize("codec", codec_params())
@pytest.mark.parametrize(
    "offset, value, status",
    [
        (4, 4, "MPIUCC_ERR_VERSION"),
        (4, 0, "MPIUCC_ERR_VERSION"),
        (5, 200, "MPIUCC_ERR_CORRUPT"),  # no such codec
        (6, 0, "MPIUCC_ERR_CORRUPT"),  # no such dtype
        (6, 9, "MPIUCC_ERR_CORRUPT"),
        (7, 0x80, "MPIUCC_ERR_CORRUPT"),  # reserved flag bit
        (50, 1, "MPIUCC_ERR_CORRUPT"),  # reserved header bytes
        (56, 1, "MPIUCC_ERR_CORRUPT"),  # payload checksum without its flag
    ],
)
def test_invalid_header_fields(codec, offset, value, status):
    bad = bytearray(make_frame(codec, n=20))
    bad[offset] = value
    with pytest.raises(CodecError) as e:
        pycodecs.decompress(reseal(bad))
    assert e.value.status_name == status


@pytest.mark.parametrize("codec", codec_params())
def test_versions_2_and_3_are_only_for_ebq_dense(codec):
    """Formats v2 and v3 changed the ebq dense payload alone: other frames are written as v1,
    and v2 or v3 on one of them is refused; a dense frame of one segment without extra bits
    (no index of 128 or more) reads the same as v1, v2 and v3."""
    frame = make_frame(codec, n=20)
    h = pycodecs.header(frame)
    dense = h.codec == "ebq" and h.aux & 0xFF == 1
    assert frame[4] == (3 if dense else 1)
    if dense:
        assert int.from_bytes(frame[72:80], "little") == 0  # no extra bits
    for version in (1, 2) if dense else (2, 3):
        bad = bytearray(frame)
        bad[4] = version
        if dense:
            assert np.array_equal(pycodecs.decompress(reseal(bad)), pycodecs.decompress(frame))
        else:
            with pytest.raises(CodecError) as e:
                pycodecs.decompress(reseal(bad))
            assert e.value.status_name == "MPIUCC_ERR_CORRUPT"


@pytest.mark.parametrize("codec", codec_params())
def test_payload_size_beyond_buffer_is_truncated(codec):
    bad = bytearray(make_frame(codec, n=20))
    size = int.from_bytes(bad[32:40], "little")
    bad[32:40] = (size + 1).to_bytes(8, "little")
    with pytest.raises(CodecError) as e:
        pycodecs.decompress(reseal(bad))
    assert e.value.status_name == "MPIUCC_ERR_TRUNCATED"


@pytest.mark.parametrize("codec", codec_params())
def test_trailing_bytes_are_ignored(codec):
    frame = make_frame(codec, n=40)
    y = pycodecs.decompress(frame)
    assert np.array_equal(pycodecs.decompress(frame + b"\xff" * 100), y, equal_nan=True)


@pytest.mark.parametrize("codec", codec_params())
@hsettings(max_examples=60)
@given(data=st.data())
def test_resealed_header_mutations_never_crash(codec, data):
    frame = bytearray(make_frame(codec, n=64))
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(4, 59))
        frame[i] = data.draw(st.integers(0, 255))
    decode_or_refuse(reseal(frame), 64)


@pytest.mark.parametrize("codec", codec_params())
@hsettings(max_examples=60)
@given(data=st.data())
def test_payload_mutations_never_crash(codec, data):
    frame = bytearray(make_frame(codec, n=200))
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(HEADER, len(frame) - 1))
        frame[i] = data.draw(st.integers(0, 255))
    y = decode_or_refuse(frame, 200)
    if codec == "raw":
        assert y is not None  # raw has no structure to damage


@hsettings(max_examples=60)
@given(st.binary(max_size=200))
def test_garbage_is_refused(junk):
    with pytest.raises(CodecError):
        pycodecs.decompress(junk)
    with pytest.raises(CodecError):
        pycodecs.header(b"\x89MUC" + junk)
