"""pycodecs: the Python face of the mpiucc codecs (error-bounded and quantizing float codecs).

Imports numpy only; torch tensors are accepted without importing torch, and the numcodecs
classes live in pycodecs.numcodecs_codecs.
"""

from pycodecs._ext import FLAG_NONFINITE, FLAG_PAYLOAD_CHECKSUM, CodecError
from pycodecs._limits import DEFAULT_MAX_DECODE_BYTES
from pycodecs._params import CODECS, DTYPES, Header
from pycodecs.api import (
    FiniteStats,
    compress,
    compress_bound,
    compress_ef,
    decompress,
    decompress_add,
    default_threads,
    ebq_add,
    ebq_quantize,
    finite_stats,
    header,
    pack_indices,
    set_simd_level,
    simd_level,
    unpack_indices,
)

__version__ = "0.1.0"
__all__ = [
    "CODECS",
    "DEFAULT_MAX_DECODE_BYTES",
    "DTYPES",
    "FLAG_NONFINITE",
    "FLAG_PAYLOAD_CHECKSUM",
    "CodecError",
    "FiniteStats",
    "Header",
    "compress",
    "compress_bound",
    "compress_ef",
    "decompress",
    "decompress_add",
    "default_threads",
    "ebq_add",
    "ebq_quantize",
    "finite_stats",
    "header",
    "pack_indices",
    "set_simd_level",
    "simd_level",
    "unpack_indices",
]
