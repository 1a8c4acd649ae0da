"""What a collective compresses with: a codec, its options, and what the codec can do."""

from __future__ import annotations

import functools
import zlib
from typing import Any

from pycodecs._params import params_from
from pycodecs.capabilities import CAPABILITIES, OPTIONS, Capabilities

# Uncompressed: a residual given is sent along and emptied.
NONE = Capabilities(bounded=True, exact_sum=False, lossless=True)
# codec="auto" (``pycomm.collectives.auto``): resolved to a concrete codec before it is used;
# what it promises is its contract, the bound given (lossless without one).
AUTO = "auto"
#: What codec="auto" may send: raw, ebq at either level, or a cast.
AUTO_CODECS = ("raw", "ebq", "fp16", "bf16")


class CodecSpec:
    """A codec and its options (those of ``pycodecs.compress``), checked when made.

    ``codec="none"`` sends the data uncompressed. Options not given take pycodecs' defaults;
    read them as attributes (``spec.error_bound``). Immutable, hashable and picklable.

    ``caps``: what the codec can do (``pycodecs.capabilities``; auto: what its contract allows).
    ``lossless``: whether what the receiver decodes is the input bit for bit (auto: no bound).
    """

    # The options are slots too: read on every call, as plain attributes.
    __slots__ = ("codec", "_options", "_hash", "caps", "lossless", *OPTIONS)

    def __init__(self, codec: str = "none", **options: Any) -> None:
        unknown = options.keys() - OPTIONS.keys()
        if unknown:
            raise TypeError(f"unknown codec option(s): {', '.join(sorted(unknown))}")
        merged = {**OPTIONS, **options}
        if codec == AUTO:
            if merged["error_bound"] is not None:  # the contract: checked as ebq's bound
                params_from("ebq", "float32", merged)
        elif codec != "none":
            if codec not in CAPABILITIES:
                choices = ", ".join(("none", *CAPABILITIES))
                raise ValueError(f"unknown codec {codec!r}; choose from {choices}")
            params_from(codec, "float32", merged)  # every option checked now, not mid-call
        # Read on every call: computed once here (the spec is immutable).
        if codec == AUTO:  # what auto promises is its contract: lossless without a bound
            lossless = merged["error_bound"] is None
            caps = Capabilities(bounded=True, exact_sum=False, lossless=lossless)
        else:
            caps = CAPABILITIES.get(codec, NONE)
        options = tuple(merged.items())
        fields = dict(merged, codec=codec, _options=options, caps=caps)
        fields.update(_hash=hash((codec, options)), lossless=caps.lossless)
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("CodecSpec is immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CodecSpec) and (self.codec, self._options) == (
            other.codec,
            other._options,
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        changed = ", ".join(f"{k}={v!r}" for k, v in self._options if OPTIONS[k] != v)
        return f"CodecSpec({self.codec!r}{', ' if changed else ''}{changed})"

    def __reduce__(self) -> tuple:
        return (_rebuild, (self.codec, self._options))

    @property
    def compressed(self) -> bool:
        return self.codec != "none"

    @property
    def auto(self) -> bool:
        """codec="auto": the codec is chosen per call (``pycomm.collectives.auto``)."""
        return self.codec == AUTO

    def replace(self, **changes: Any) -> CodecSpec:
        """This spec with some options (or ``codec``) changed, checked as a new one."""
        codec = changes.pop("codec", self.codec)
        return CodecSpec(codec, **{**self.options(), **changes})

    def options(self) -> dict[str, Any]:
        return dict(self._options)

    def codec_kwargs(self, **changes: Any) -> dict[str, Any]:
        """Keywords for pycodecs.compress: the codec ("raw" for none) and its options."""
        if self.auto:
            raise ValueError("codec 'auto' names no codec until it is resolved (collectives.auto)")
        return {"codec": self.codec if self.compressed else "raw", **self.options(), **changes}

    def signature(self, *extra: object) -> int:
        """A 31-bit digest of the settings (and extra context) that all ranks must share."""
        return _signature(self, extra)


@functools.lru_cache(maxsize=1024)
def _signature(spec: CodecSpec, extra: tuple) -> int:
    # Cached (on the spec's stored hash): a step asks for the same few thousands of times.
    return zlib.crc32(repr((spec.codec, spec._options, extra)).encode()) & 0x7FFFFFFF


def _rebuild(codec: str, options: tuple) -> CodecSpec:
    return CodecSpec(codec, **dict(options))


def make_spec(codec: str | CodecSpec | None, **options: Any) -> CodecSpec:
    """A CodecSpec from a name and keywords, or the spec itself.

    "auto" may carry its contract in the name: ``auto:rel:1e-3`` (``abs``, ``rel``, ``rms``)
    or ``auto:lossless`` (the same as plain ``auto``).
    """
    if isinstance(codec, CodecSpec):
        if options:
            raise TypeError("pass codec options inside the CodecSpec, not beside it")
        return codec
    if isinstance(codec, str) and codec.startswith(AUTO + ":"):
        return _auto_spec(codec) if not options else CodecSpec(AUTO, **parse_auto(codec), **options)
    return CodecSpec(codec or "none", **options)


def normal_spec(codec: str | CodecSpec | None, options: dict[str, Any]) -> CodecSpec:
    """``make_spec``, made once per spelling: every spelling of one request (a name and
    keywords, ``auto:MODE:BOUND``, a CodecSpec) gives one spec, and so one key and one path."""
    if type(codec) is CodecSpec and not options:
        return codec
    try:
        return _normal(codec, tuple(options.items()))
    except TypeError:  # an unhashable option value: made, not cached
        return make_spec(codec, **options)


@functools.lru_cache(maxsize=256)
def _normal(codec: str | None, options: tuple) -> CodecSpec:
    return make_spec(codec, **dict(options))


@functools.lru_cache(maxsize=64)
def _auto_spec(text: str) -> CodecSpec:
    return CodecSpec(AUTO, **parse_auto(text))  # cached: a job passes the same few strings


def parse_auto(text: str) -> dict[str, Any]:
    """The contract of ``auto:MODE:BOUND`` or ``auto:lossless`` as CodecSpec keywords."""
    parts = text.split(":")
    lossless = len(parts) == 2 and parts[1] == "lossless"
    if parts[0] != AUTO or not (lossless or len(parts) == 3):
        raise ValueError(f"{text!r}: write auto, auto:lossless or auto:MODE:BOUND (auto:rel:1e-3)")
    if lossless:
        return {}
    try:
        return {"mode": parts[1], "error_bound": float(parts[2])}
    except ValueError:
        raise ValueError(f"{text!r}: the bound {parts[2]!r} is not a number") from None


@functools.lru_cache(maxsize=256)
def ebq_spec(spec: CodecSpec, name: str) -> CodecSpec:
    """The ebq spec of an auto contract at level ``ebq_fast`` or ``ebq_dense``."""
    return CodecSpec("ebq", **{**spec.options(), "level": name.removeprefix("ebq_")})
