"""What a sequence of collectives cost: bytes before and after compression, and time."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CommStats:
    """Running totals; pass one as ``stats=`` to a collective and it is added to."""

    calls: int = 0
    raw_bytes: int = 0  #: bytes of this rank's input
    wire_bytes: int = 0  #: bytes of the frames this rank made of its own input
    compress_seconds: float = 0.0  #: time spent compressing this rank's input
    total_seconds: float = 0.0  #: wall time of the collectives, compression included
    #: results that held NaN or ±Inf (counted by the DDP hooks, per bucket; the same on
    #: every rank, so every rank can skip the step alike)
    nonfinite: int = 0

    @property
    def ratio(self) -> float:
        return self.raw_bytes / self.wire_bytes if self.wire_bytes else 1.0

    @property
    def comm_seconds(self) -> float:
        """Time not spent in the first compression: the exchange, sums and decoding."""
        return self.total_seconds - self.compress_seconds

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]
