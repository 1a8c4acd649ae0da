"""What a decoder checks a frame's header against before it allocates or decodes anything.

Frames come from other ranks and from files: untrusted. A header may name any codec, dtype and
a count up to 2**60, and a frame of a few bytes may validly decode to gigabytes (a constant
array, or topk with k = 1 in blocks of 65536). So every decoding call takes the caller's
limit: an ``out=`` buffer (its size), an expected ``count``, or ``max_count`` / ``max_bytes``;
with none of them, ``decompress`` allows DEFAULT_MAX_DECODE_BYTES (64 MiB) of output, or the
value of the environment variable MPIUCC_MAX_DECODE_BYTES.
"""

from __future__ import annotations

import os

from pycodecs import _ext
from pycodecs._params import CODECS, DTYPES, ITEMSIZE

DEFAULT_MAX_DECODE_BYTES = 1 << 26
MAX_DECODE_ENV = "MPIUCC_MAX_DECODE_BYTES"


def default_max_bytes() -> int:
    """The output allowed to a decode without an explicit limit (bytes)."""
    text = os.environ.get(MAX_DECODE_ENV, "")
    if not text:
        return DEFAULT_MAX_DECODE_BYTES
    try:
        value = int(text, 0)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"{MAX_DECODE_ENV} must be a byte count; got {text!r}")
    return value


def check_expected(h: tuple, codec: str | None, dtype: str | None, count: int | None) -> None:
    """CodecError (MISMATCH) unless the header h (from _ext.read_header) has the expected
    codec, dtype and element count (None: anything)."""
    got = (CODECS[h[1]], DTYPES[h[2] - 1], h[4])
    for name, want, have in zip(
        ("codec", "dtype", "count"), (codec, dtype, count), got, strict=True
    ):
        if want is not None and want != have:
            raise _ext.CodecError(
                _ext.ERR_MISMATCH, f"frame has {name} {have!r}, expected {want!r}"
            )


def check_size(h: tuple, max_count: int | None, max_bytes: int | None) -> None:
    """CodecError (CAPACITY) when the frame decodes to more than max_count elements or
    max_bytes bytes; with neither given, the default byte limit applies."""
    count, nbytes = h[4], h[4] * ITEMSIZE[DTYPES[h[2] - 1]]
    if max_count is None and max_bytes is None:
        max_bytes = default_max_bytes()
    if max_count is not None and count > max_count:
        raise _ext.CodecError(
            _ext.ERR_CAPACITY, f"frame holds {count} elements, above max_count={max_count}"
        )
    if max_bytes is not None and nbytes > max_bytes:
        raise _ext.CodecError(
            _ext.ERR_CAPACITY,
            f"frame decodes to {nbytes} bytes, above max_bytes={max_bytes} "
            f"(pass out=, count=, max_count= or max_bytes=, or set {MAX_DECODE_ENV})",
        )
