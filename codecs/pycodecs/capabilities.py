"""What each codec can do: the one table the collectives and the hooks read.

``bounded``: every decoded value is within the frame's error bound (error-bounded codecs);
``exact_sum``: frames on one grid add exactly in the index domain (``ebq_add``), so a ring
reduces without compressing again and the bound of a sum is the sum of the bounds;
``lossless``: decoding gives the input back bit for bit; ``error_feedback``: ``compress_ef``
takes a residual; ``fixed_size``: every frame of n > 0 elements is exactly ``compress_bound``
bytes (the payload size follows from the count and the options, FORMAT.md), so a receiver
knows it beforehand. ``OPTIONS`` are the keyword options every compressing call takes, with
their defaults (``pycodecs.compress``), written once here for every layer above.
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


_QUANTIZER = Capabilities(bounded=False, exact_sum=False, lossless=False, fixed_size=True)

CAPABILITIES: dict[str, Capabilities] = {
    "raw": Capabilities(bounded=True, exact_sum=False, lossless=True),
    "ebq": Capabilities(bounded=True, exact_sum=True, lossless=False, fixed_size=False),
    **{name: _QUANTIZER for name in CODECS if name not in ("raw", "ebq")},
}

#: Codec options and their defaults (``checksum`` is a frame option, not the codec's).
OPTIONS: dict[str, object] = {k: v for k, v in DEFAULTS.items() if k != "checksum"}

assert set(CAPABILITIES) == set(CODECS), "every codec needs a row in CAPABILITIES"
