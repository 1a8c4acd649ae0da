"""The 64-byte frame header of a device-made payload, written on the host (codecs/FORMAT.md).

Only the payload comes from the device; the header and both CRC-32C checksums are computed
here with the C library's crc32c, so a device frame is byte for byte the C encoder's frame.
"""

from __future__ import annotations

import math
import struct

from pycodecs import _ext
from pycodecs._params import CODECS

MAGIC = b"\x89MUC"
VERSION = 1
HEADER_SIZE = 64
DTYPE_F32 = 1
ROUND_NEAREST = 0
# magic, version, codec, dtype, flags, count, bound, param, payload_size, block, aux, reserved,
# payload_checksum (the header checksum follows, over these 60 bytes).
_LAYOUT = struct.Struct("<4sBBBBQddQIIQI")


def header_bytes(
    codec: str,
    count: int,
    payload: memoryview | bytes,
    *,
    block: int,
    aux: int,
    nonfinite: bool,
    checksum: bool,
    bound: float = math.inf,
    param: float = 0.0,
) -> bytes:
    """The header the C encoder writes for this payload of f32 elements (the quantizers
    promise no absolute bound: inf; ebq gives its bound and its grid step as param)."""
    flags = (_ext.FLAG_PAYLOAD_CHECKSUM if checksum else 0) | (
        _ext.FLAG_NONFINITE if nonfinite else 0
    )
    payload_crc = _ext.crc32c(payload) if checksum else 0
    head = _LAYOUT.pack(
        MAGIC,
        VERSION,
        CODECS.index(codec),
        DTYPE_F32,
        flags,
        count,
        bound,
        param,
        len(payload),
        block,
        aux,
        0,
        payload_crc,
    )
    return head + struct.pack("<I", _ext.crc32c(head))
