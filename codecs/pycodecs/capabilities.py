"""What each codec can do: the one table the collectives and the hooks read.

``bounded``: every decoded value is within the frame's error bound (error-bounded codecs);
``exact_sum``: frames on one grid add exactly in the index domain (``ebq_add``), so a ring
reduces without compressing again and the bound of a sum is the sum of the bounds;
``lossless``: decoding gives the input back bit for bit; ``error_feedback``: ``compress_ef``
takes a residual; ``fixed_size``: every frame of n > 0 elements is exactly ``compress_bound``
bytes (the payload size follows from the count and the options, FORMAT.md), so a receiver
knows it beforehand; ``threaded``: it may run on several threads (the ``threads`` option).
``OPTIONS`` are the keyword options every compressing call takes, with their defaults
(``pycodecs.compress``), and ``CODEC_OPTIONS`` those each codec takes, written once here for
every layer above (the numcodecs classes are made from them).
"""

from __future__ import annotations

from dataclasses import dataclass

from pycodecs._params import CODECS, DEFAULTS


@dataclass(frozen=True)
class Capabilities:
    bounded: bool
    exact_sum: bool
    lossless: bool
    error_feedback: bool = True
    fixed_size: bool = False
    threaded: bool = False


_QUANTIZER = Capabilities(bounded=False, exact_sum=False, lossless=False, fixed_size=True)

CAPABILITIES: dict[str, Capabilities] = {
    "raw": Capabilities(bounded=True, exact_sum=False, lossless=True),
    "ebq": Capabilities(bounded=True, exact_sum=True, lossless=False, threaded=True),
    **{name: _QUANTIZER for name in CODECS if name not in ("raw", "ebq")},
}

#: Codec options and their defaults (``checksum`` is a frame option, not the codec's).
OPTIONS: dict[str, object] = {k: v for k, v in DEFAULTS.items() if k != "checksum"}

REQUIRED = object()  # an option without a default

#: The options each codec takes, in order, with the values it applies by default (where
#: OPTIONS has None or 0, the codec's own: qsgd 16 levels, stochastic rounding; nearest for
#: the others). topk calls its levels ``k``, 16 for any block size.
CODEC_OPTIONS: dict[str, dict[str, object]] = {
    "raw": {},
    "ebq": {"error_bound": REQUIRED, "mode": "abs", "level": "fast", "predictor": "none"},
    "fp16": {},
    "bf16": {},
    "int8": {"block_size": 0, "rounding": "nearest", "seed": 0},
    "int4": {"block_size": 0, "rounding": "nearest", "seed": 0},
    "sign": {"block_size": 0},
    "qsgd": {"levels": 16, "block_size": 0, "rounding": "stochastic", "seed": 0},
    "topk": {"k": 16, "block_size": 0},
}
#: A name in CODEC_OPTIONS -> the option's name in OPTIONS, where they differ.
ALIASES = {"k": "levels"}
#: Options kept converted, so a configuration stays plain JSON (numpy scalars become these).
TYPES = {"error_bound": float, "checksum": bool}

assert set(CAPABILITIES) == set(CODEC_OPTIONS) == set(CODECS), "every codec needs its rows"
assert all(ALIASES.get(k, k) in OPTIONS for row in CODEC_OPTIONS.values() for k in row)
