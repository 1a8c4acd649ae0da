"""Hostile frames: small, valid frames whose headers ask for huge outputs.

Each is refused with CodecError before anything is allocated, unless the caller's limit
(out=, count=, max_count=, max_bytes=) allows it. Allocations are measured with tracemalloc,
which sees numpy's buffers and Python's bytearrays; the C decoders allocate nothing
(tests/c/test_limits.c counts their mallocs).
"""

import subprocess
import sys
import textwrap
import tracemalloc

import numcodecs
import numpy as np
import pycodecs
import pytest
from pycodecs import CodecError, _ext

KIB = 1 << 10
MIB = 1 << 20


def reseal(frame: bytearray) -> bytes:
    """Recompute the header checksum after editing header fields."""
    frame[60:64] = _ext.crc32c(bytes(frame[:60])).to_bytes(4, "little")
    return bytes(frame)


def with_count(frame: bytes, count: int, payload: bytes | None = None) -> bytes:
    """frame with its header's count (and payload) replaced, checksums made right."""
    f = bytearray(frame[:64] + (payload if payload is not None else frame[64:]))
    f[8:16] = count.to_bytes(8, "little")
    f[32:40] = (len(f) - 64).to_bytes(8, "little")
    return reseal(f)


def dense_zeros(count: int, dtype=np.float32) -> bytes:
    """A valid ebq dense frame of count zeros: about 90 bytes whatever the count. Format v1
    (which still decodes): a v2 frame needs 8 bytes per 2^20 elements, and one of a single
    segment is the v1 frame with another version byte."""
    small = bytearray(
        pycodecs.compress(np.zeros(64, dtype), "ebq", error_bound=1e-3, level="dense")
    )
    small[4] = 1
    return with_count(bytes(small), count)


def test_a_v2_dense_frame_cannot_claim_a_larger_count():
    v2 = bytes(pycodecs.compress(np.zeros(64, np.float32), "ebq", error_bound=1e-3, level="dense"))
    with pytest.raises(CodecError) as e:
        pycodecs.header(with_count(v2, 1 << 26))
    assert e.value.status_name == "MPIUCC_ERR_CORRUPT"


def topk_sparse(blocks: int) -> bytes:
    """A valid topk frame, k = 1 in blocks of 65536 float64: 6 payload bytes per block."""
    x = np.zeros(65536, np.float64)
    x[7] = 1.0
    one = bytes(pycodecs.compress(x, "topk", levels=1, block_size=65536))
    return with_count(one, 65536 * blocks, one[64:] * blocks)


def peak_bytes(fn) -> int:
    """Peak traced allocation while fn runs (its exception, if any, is swallowed)."""
    tracemalloc.start()
    try:
        fn()
    except (CodecError, ValueError, MemoryError):
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def refused(fn, status="MPIUCC_ERR_CAPACITY"):
    with pytest.raises(CodecError) as e:
        fn()
    assert e.value.status_name == status
    assert peak_bytes(fn) < 256 * KIB
    return e.value


def test_the_hostile_frames_are_small_and_valid():
    for frame, count in (
        (dense_zeros(1 << 26), 1 << 26),
        (dense_zeros(1 << 59), 1 << 59),
        (topk_sparse(256), 1 << 24),
    ):
        assert len(frame) < 2 * KIB
        assert pycodecs.header(frame).count == count
    assert len(dense_zeros(1 << 26)) <= 90
    y = pycodecs.decompress(dense_zeros(5000))  # within the default limit: decodes
    assert y.shape == (5000,) and not y.any()


def test_dense_frame_of_256_mib_is_refused_without_a_limit():
    frame = dense_zeros(1 << 26)
    e = refused(lambda: pycodecs.decompress(frame))
    assert "max_bytes" in str(e)
    refused(lambda: pycodecs.decompress(frame, max_count=1 << 20))
    refused(lambda: pycodecs.decompress(frame, max_bytes=MIB))
    refused(lambda: pycodecs.decompress(frame, count=1000), "MPIUCC_ERR_MISMATCH")
    refused(lambda: pycodecs.decompress(frame, codec="topk"), "MPIUCC_ERR_MISMATCH")
    refused(lambda: pycodecs.decompress(frame, dtype="float64"), "MPIUCC_ERR_MISMATCH")


def test_a_header_count_of_2_to_59_never_reaches_the_allocator():
    frame = dense_zeros(1 << 59)
    refused(lambda: pycodecs.decompress(frame))
    refused(lambda: pycodecs.decompress(frame, max_count=1 << 30))
    with pytest.raises(ValueError):
        pycodecs.decompress(frame, out=np.empty(64, np.float32))


def test_topk_frame_of_1600_bytes_expanding_to_128_mib_is_refused():
    frame = topk_sparse(256)
    refused(lambda: pycodecs.decompress(frame))
    refused(lambda: pycodecs.decompress(frame, max_count=65536))
    y = pycodecs.decompress(topk_sparse(2), max_count=2 * 65536)
    assert y[7] == 1.0 and y[65536 + 7] == 1.0 and np.count_nonzero(y) == 2


def test_an_explicit_limit_allows_a_large_frame(monkeypatch):
    frame = dense_zeros(1 << 20)  # 4 MiB
    refused(lambda: pycodecs.decompress(frame, max_bytes=MIB))
    assert pycodecs.decompress(frame, max_bytes=4 * MIB).size == 1 << 20
    monkeypatch.setenv("MPIUCC_MAX_DECODE_BYTES", str(MIB))
    refused(lambda: pycodecs.decompress(frame))
    monkeypatch.setenv("MPIUCC_MAX_DECODE_BYTES", "lots")
    with pytest.raises(ValueError, match="MPIUCC_MAX_DECODE_BYTES"):
        pycodecs.decompress(frame)


def test_ebq_add_of_two_tiny_frames_with_huge_counts_is_refused():
    a = b = dense_zeros(1 << 34)
    assert len(a) + len(b) < 200
    refused(lambda: pycodecs.ebq_add(a, b))
    refused(lambda: pycodecs.ebq_add(a, b, max_count=1 << 20))
    # into a small buffer, the C library refuses at once (no scratch, no pass over 2^34)
    with pytest.raises(CodecError) as e:
        pycodecs.ebq_add(a, b, out=bytearray(4096))
    assert e.value.status_name == "MPIUCC_ERR_CAPACITY"


def test_ebq_add_refuses_frames_whose_counts_differ():
    a, b = dense_zeros(1000), dense_zeros(1001)
    refused(lambda: pycodecs.ebq_add(a, b), "MPIUCC_ERR_MISMATCH")
    refused(lambda: pycodecs.ebq_add(a, a, count=999), "MPIUCC_ERR_MISMATCH")
    assert _ext.ebq_add_bound(a, b) == 0
    s = pycodecs.ebq_add(a, a, count=1000)
    assert pycodecs.header(s).count == 1000


def test_decompress_add_checks_the_expected_codec():
    frame = dense_zeros(64)
    acc = np.ones(64, np.float32)
    refused(lambda: pycodecs.decompress_add(frame, acc, codec="int8"), "MPIUCC_ERR_MISMATCH")
    pycodecs.decompress_add(frame, acc, codec="ebq", dtype="float32")
    assert (acc == 1).all()


@pytest.mark.parametrize("out", [np.empty(10, np.float32), np.empty((4, 4), np.float64)])
def test_numcodecs_decode_with_a_wrong_sized_out_raises(out):
    codec = numcodecs.get_codec({"id": "mpiucc.ebq", "error_bound": 1e-3, "level": "dense"})
    frame = dense_zeros(1 << 26)
    with pytest.raises(ValueError, match="out has"):
        codec.decode(frame, out=out)
    assert peak_bytes(lambda: codec.decode(frame, out=out)) < 256 * KIB
    with pytest.raises(CodecError):
        codec.decode(frame)
    right = np.empty((8, 8), np.float32)  # another layout of the right size still works
    codec.decode(dense_zeros(64), out=right)
    assert not right.any()


def test_hostile_frames_under_an_address_space_limit():
    """In a process limited to 1 GiB of address space, every hostile frame is refused with
    CodecError (never MemoryError, never a crash)."""
    script = textwrap.dedent(
        """
        import resource, sys
        sys.path.insert(0, sys.argv[1])
        import numpy as np, pycodecs
        from test_limits import dense_zeros, topk_sparse
        frames = [dense_zeros(1 << 26), dense_zeros(1 << 59), topk_sparse(256)]
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        for f in frames:
            try:
                pycodecs.decompress(f)
            except pycodecs.CodecError:
                pass
            else:
                sys.exit("decoded")
        try:
            pycodecs.ebq_add(dense_zeros(1 << 34), dense_zeros(1 << 34))
        except pycodecs.CodecError:
            print("ok")
        """
    )
    here = str(__import__("pathlib").Path(__file__).parent)
    r = subprocess.run(
        [sys.executable, "-c", script, here], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
