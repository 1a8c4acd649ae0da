"""What a collective compresses with: a codec name and its parameters, checked up front."""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass

import pycodecs

#: Codecs whose integer indices add exactly (the error-bounded allreduce).
EXACT_SUM_CODECS = ("ebq",)


@dataclass(frozen=True)
class CodecSpec:
    """A codec and its parameters; ``codec="none"`` sends the data uncompressed."""

    codec: str = "none"
    error_bound: float | None = None
    mode: str = "abs"
    level: str = "fast"
    predictor: str = "none"
    block_size: int = 0
    levels: int = 0
    rounding: str = "nearest"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.codec != "none" and self.codec not in pycodecs.CODECS:
            raise ValueError(f"unknown codec {self.codec!r}; choose from none, {pycodecs.CODECS}")
        if self.codec == "ebq":
            if self.error_bound is None or not self.error_bound > 0:
                raise ValueError("codec 'ebq' needs error_bound > 0")
            if self.mode not in ("abs", "rel"):
                raise ValueError(f"mode must be 'abs' or 'rel', not {self.mode!r}")

    @property
    def compressed(self) -> bool:
        return self.codec != "none"

    def codec_kwargs(self) -> dict:
        """Keywords for pycodecs.compress (the bound is set by the caller for ebq)."""
        kw = asdict(self)
        kw.pop("error_bound")
        kw.pop("mode")
        return kw

    def signature(self, *extra: object) -> int:
        """A 31-bit digest of the settings (and extra context) that all ranks must share."""
        text = repr((sorted(asdict(self).items()), extra)).encode()
        return zlib.crc32(text) & 0x7FFFFFFF


def make_spec(codec: str | CodecSpec | None, **params: object) -> CodecSpec:
    """A CodecSpec from a name and keywords, or the spec itself."""
    if isinstance(codec, CodecSpec):
        if params:
            raise TypeError("pass codec parameters inside the CodecSpec, not beside it")
        return codec
    return CodecSpec(codec=codec or "none", **params)  # type: ignore[arg-type]
