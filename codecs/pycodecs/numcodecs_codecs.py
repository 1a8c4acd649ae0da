"""numcodecs classes over the mpiucc codecs (codec ids "mpiucc.<codec>").

Registered through the `numcodecs.codecs` entry point, so `numcodecs.get_codec({"id":
"mpiucc.ebq", "error_bound": 1e-3})` finds them without importing this module first.
encode() takes float32/float64/float16 arrays (or bfloat16 tensors) and returns a frame;
untyped buffers (bytes, array.array('b')) need the codec's dtype parameter, which typed inputs
must then match. decode() returns a flat array of the frame's dtype, or fills out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_ndarray_like, ndarray_copy

from pycodecs import api
from pycodecs._params import ITEMSIZE, params_from

__all__ = ["BF16", "EBQ", "FP16", "QSGD", "Int4", "Int8", "Raw", "Sign", "TopK"]


class _MpiuccCodec(Codec):
    """Common encode/decode; subclasses set codec_id, _codec and their parameters."""

    _codec = ""

    def _options(self) -> dict[str, Any]:
        return {"checksum": self.checksum}

    def _validate(self) -> None:  # bad parameters fail here, not at the first encode
        params_from(self._codec, self.dtype or "float32", self._options())

    def encode(self, buf: Any) -> bytes:
        if isinstance(buf, np.ndarray) and not buf.flags.c_contiguous:
            buf = buf.ravel(order="A") if buf.flags.f_contiguous else np.ascontiguousarray(buf)
        return bytes(api.compress(buf, self._codec, dtype=self.dtype, **self._options()))

    def decode(self, buf: Any, out: Any = None) -> Any:
        threads = getattr(self, "threads", None)  # EBQ's; the others run on one thread
        if out is None:  # the default limit of pycodecs.decompress applies
            return api.decompress(buf, threads=threads)
        try:
            return api.decompress(buf, out=out, threads=threads)
        except (TypeError, ValueError):  # another layout or a byte buffer: copy into it
            pass
        h = api.header(buf)  # out's size is the limit: nothing larger is ever allocated
        want = ensure_ndarray_like(out).nbytes
        if h.count * ITEMSIZE[h.dtype] != want:
            raise ValueError(
                f"out has {want} bytes; the frame decodes to {h.count} {h.dtype} elements"
            )
        return ndarray_copy(api.decompress(buf, count=h.count), out)


class Raw(_MpiuccCodec):
    """Lossless copy (the baseline)."""

    codec_id = "mpiucc.raw"
    _codec = "raw"

    def __init__(self, checksum: bool = False, dtype: str | None = None):
        self.checksum = bool(checksum)
        self.dtype = dtype
        self._validate()


class EBQ(_MpiuccCodec):
    """Error-bounded quantization: ``|x - y| <= error_bound`` (mode "abs") or
    ``error_bound * (max - min)`` (mode "rel") or ``error_bound * sqrt(mean(x^2))`` (mode
    "rms"), each over the finite values; NaN and Inf are kept exactly."""

    codec_id = "mpiucc.ebq"
    _codec = "ebq"

    def __init__(
        self,
        error_bound: float,
        mode: str = "abs",
        level: str = "fast",
        predictor: str = "none",
        checksum: bool = False,
        dtype: str | None = None,
        threads: int | None = None,
    ):
        self.error_bound = float(error_bound)
        self.mode = mode
        self.level = level
        self.predictor = predictor
        self.checksum = bool(checksum)
        self.dtype = dtype
        self.threads = threads  # at most this many; None: the library's default
        self._validate()

    def _options(self) -> dict[str, Any]:
        return {
            "error_bound": self.error_bound,
            "mode": self.mode,
            "level": self.level,
            "predictor": self.predictor,
            "checksum": self.checksum,
            "threads": self.threads,
        }


class FP16(_MpiuccCodec):
    """IEEE half precision, round to nearest even."""

    codec_id = "mpiucc.fp16"
    _codec = "fp16"

    def __init__(self, checksum: bool = False, dtype: str | None = None):
        self.checksum = bool(checksum)
        self.dtype = dtype
        self._validate()


class BF16(_MpiuccCodec):
    """bfloat16, round to nearest even."""

    codec_id = "mpiucc.bf16"
    _codec = "bf16"

    def __init__(self, checksum: bool = False, dtype: str | None = None):
        self.checksum = bool(checksum)
        self.dtype = dtype
        self._validate()


class _Blockwise(_MpiuccCodec):
    def __init__(
        self,
        block_size: int = 0,
        rounding: str = "nearest",
        seed: int = 0,
        checksum: bool = False,
        dtype: str | None = None,
    ):
        self.block_size = block_size
        self.rounding = rounding
        self.seed = seed
        self.checksum = bool(checksum)
        self.dtype = dtype
        self._validate()

    def _options(self) -> dict[str, Any]:
        return {
            "block_size": self.block_size,
            "rounding": self.rounding,
            "seed": self.seed,
            "checksum": self.checksum,
        }


class Int8(_Blockwise):
    """Blockwise absmax int8 (block_size 0: the codec's default)."""

    codec_id = "mpiucc.int8"
    _codec = "int8"


class Int4(_Blockwise):
    """Blockwise absmax int4 (block_size 0: the codec's default)."""

    codec_id = "mpiucc.int4"
    _codec = "int4"


class Sign(_MpiuccCodec):
    """One bit per element with a per-block mean-absolute scale."""

    codec_id = "mpiucc.sign"
    _codec = "sign"

    def __init__(self, block_size: int = 0, checksum: bool = False, dtype: str | None = None):
        self.block_size = block_size
        self.checksum = bool(checksum)
        self.dtype = dtype
        self._validate()

    def _options(self) -> dict[str, Any]:
        return {"block_size": self.block_size, "checksum": self.checksum}


class QSGD(_MpiuccCodec):
    """s-level stochastic quantization (levels = s) with a per-block norm."""

    codec_id = "mpiucc.qsgd"
    _codec = "qsgd"

    def __init__(
        self,
        levels: int = 16,
        block_size: int = 0,
        rounding: str = "stochastic",
        seed: int = 0,
        checksum: bool = False,
        dtype: str | None = None,
    ):
        self.levels = levels
        self.block_size = block_size
        self.rounding = rounding
        self.seed = seed
        self.checksum = bool(checksum)
        self.dtype = dtype
        self._validate()

    def _options(self) -> dict[str, Any]:
        return {
            "levels": self.levels,
            "block_size": self.block_size,
            "rounding": self.rounding,
            "seed": self.seed,
            "checksum": self.checksum,
        }


class TopK(_MpiuccCodec):
    """The k largest-magnitude elements of each block, the rest zero."""

    codec_id = "mpiucc.topk"
    _codec = "topk"

    def __init__(
        self, k: int = 16, block_size: int = 0, checksum: bool = False, dtype: str | None = None
    ):
        self.k = k
        self.block_size = block_size
        self.checksum = bool(checksum)
        self.dtype = dtype
        self._validate()

    def _options(self) -> dict[str, Any]:
        return {"levels": self.k, "block_size": self.block_size, "checksum": self.checksum}
