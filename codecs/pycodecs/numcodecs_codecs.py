"""numcodecs classes over the mpiucc codecs (codec ids "mpiucc.<codec>").

Registered through the `numcodecs.codecs` entry point, so `numcodecs.get_codec({"id":
"mpiucc.ebq", "error_bound": 1e-3})` finds them without importing this module first.
encode() takes float32/float64/float16 arrays (or bfloat16 tensors) and returns a frame;
untyped buffers (bytes, array.array('b')) need the codec's dtype parameter, which typed inputs
must then match. decode() returns a flat array of the frame's dtype, or fills out.

Each class is made from its codec's row of ``pycodecs.capabilities.CODEC_OPTIONS``: it takes
those options with their defaults, then checksum and dtype (and threads where the codec is
threaded), and its configuration is exactly these.
"""

from __future__ import annotations

from inspect import Parameter, Signature
from typing import Any

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_ndarray_like, ndarray_copy

from pycodecs import api
from pycodecs._params import ITEMSIZE, params_from
from pycodecs.capabilities import ALIASES, CAPABILITIES, CODEC_OPTIONS, REQUIRED, TYPES

__all__ = ["BF16", "EBQ", "FP16", "QSGD", "Int4", "Int8", "Raw", "Sign", "TopK"]

# What every class takes after its codec's options.
_COMMON = {"checksum": False, "dtype": None}


class _MpiuccCodec(Codec):
    """Construction from the class's signature, encode and decode; see _codec_class."""

    _codec = ""
    __signature__ = Signature()
    dtype: str | None  # set by __init__, as each option

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        bound = self.__signature__.bind(*args, **kwargs)
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            setattr(self, name, TYPES[name](value) if name in TYPES else value)
        # Bad parameters fail here, not at the first encode.
        params_from(self._codec, self.dtype or "float32", self._options())

    def _options(self) -> dict[str, Any]:
        """The keyword options of pycodecs.compress: the configuration less id and dtype."""
        config = self.get_config()
        return {ALIASES.get(k, k): v for k, v in config.items() if k not in ("id", "dtype")}

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


def _parameter(name: str, default: object) -> Parameter:
    default = Parameter.empty if default is REQUIRED else default
    return Parameter(name, Parameter.POSITIONAL_OR_KEYWORD, default=default)


def _codec_class(name: str, codec: str, doc: str) -> type[_MpiuccCodec]:
    """The numcodecs class of codec: its options from CODEC_OPTIONS, then the common ones."""
    options = {**CODEC_OPTIONS[codec], **_COMMON}
    if CAPABILITIES[codec].threaded:
        options["threads"] = None  # at most this many; None: the library's default
    signature = Signature([_parameter(k, v) for k, v in options.items()])
    namespace = {
        "__module__": __name__,  # else abc's, where ABCMeta makes it; pickle looks here
        "__doc__": doc,
        "__signature__": signature,
        "codec_id": f"mpiucc.{codec}",
        "_codec": codec,
    }
    return type(name, (_MpiuccCodec,), namespace)


Raw = _codec_class("Raw", "raw", "Lossless copy (the baseline).")
EBQ = _codec_class(
    "EBQ",
    "ebq",
    """Error-bounded quantization: ``|x - y| <= error_bound`` (mode "abs") or
    ``error_bound * (max - min)`` (mode "rel") or ``error_bound * sqrt(mean(x^2))`` (mode
    "rms"), each over the finite values; NaN and Inf are kept exactly.""",
)
FP16 = _codec_class("FP16", "fp16", "IEEE half precision, round to nearest even.")
BF16 = _codec_class("BF16", "bf16", "bfloat16, round to nearest even.")
Int8 = _codec_class("Int8", "int8", "Blockwise absmax int8 (block_size 0: the codec's default).")
Int4 = _codec_class("Int4", "int4", "Blockwise absmax int4 (block_size 0: the codec's default).")
Sign = _codec_class("Sign", "sign", "One bit per element with a per-block mean-absolute scale.")
QSGD = _codec_class(
    "QSGD", "qsgd", "s-level stochastic quantization (levels = s) with a per-block norm."
)
TopK = _codec_class(
    "TopK", "topk", "The k largest-magnitude elements of each block, the rest zero."
)
