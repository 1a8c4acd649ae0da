"""Values that live elsewhere (a device), compressed where they are: what ``allreduce``'s
``source`` takes. Only frames cross to the host, unless the algorithm needs the raw values
(``fetch``). ``pycomm.distributed.device_source`` is the CUDA one."""

from __future__ import annotations

from typing import Protocol

import numpy as np


class Source(Protocol):
    count: int  #: elements
    has_residual: bool  #: an error-feedback residual beside the values, kept there

    def finite_min_max(self) -> tuple[float, float]:
        """Min and max over the finite values; (0, 0) if none (as ``finite_min_max``)."""

    def finite_rms(self, top: float) -> float:
        """Root-mean-square over the finite values, whose largest magnitude is top (as
        ``buffers.finite_top_rms``)."""

    def frame(self, lo: int, hi: int, kw: dict, ef: bool) -> bytearray:
        """The frame ``pycodecs.compress(**kw)`` makes of values [lo, hi) (``compress_ef``
        with the residual's [lo, hi) when ef and there is a residual): the same bytes."""

    def fetch(self, out: np.ndarray) -> np.ndarray | None:
        """The values into out; returns a host copy of the residual (None without one) and
        empties the residual: the caller sends it along."""
