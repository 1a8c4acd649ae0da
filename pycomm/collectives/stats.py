"""What a sequence of collectives cost: bytes before and after compression, bytes really moved,
and time."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CommStats:
    """Running totals; pass one as ``stats=`` to a collective and it is added to.

    ``sent_bytes`` and ``recv_bytes`` count what this rank handed to MPI and got from it, at
    the level of the collective's messages: an allgather of frames sends this rank's frame to
    each of the N-1 others and receives theirs; an uncompressed allreduce counts a ring's
    2(N-1)/N of the buffer each way. ``local_bytes`` counts what the node hierarchy moved
    between ranks of one node (shared memory), apart from those two.
    """

    calls: int = 0
    raw_bytes: int = 0  #: bytes of this rank's input
    frame_bytes: int = 0  #: bytes of the frames this rank made of its own input
    sent_bytes: int = 0  #: bytes this rank sent to other ranks
    recv_bytes: int = 0  #: bytes this rank received from other ranks
    local_bytes: int = 0  #: bytes moved within this rank's node (the hierarchy's node steps)
    compress_seconds: float = 0.0  #: time spent compressing this rank's input
    total_seconds: float = 0.0  #: wall time of the collectives, compression included
    #: results that held NaN or ±Inf (counted by the DDP hooks, per bucket; the same on
    #: every rank, so every rank can skip the step alike)
    nonfinite: int = 0
    #: allreduces that sent lossy frames (not raw, not a lossless codec; with codec="auto",
    #: those it resolved so): the same on every rank. An error monitor has nothing to measure
    #: in the others.
    lossy_calls: int = 0

    @property
    def ratio(self) -> float:
        """Compression ratio: raw bytes over the bytes of the frames made of them."""
        return self.raw_bytes / self.frame_bytes if self.frame_bytes else 1.0

    @property
    def comm_seconds(self) -> float:
        """Time not spent in the first compression: the exchange, sums and decoding."""
        return self.total_seconds - self.compress_seconds

    def moved(self, sent: int, received: int) -> None:
        """Count bytes sent to and received from other ranks."""
        self.sent_bytes += int(sent)
        self.recv_bytes += int(received)

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


def check_stats(stats: object) -> None:
    """A call's ``stats`` argument: a CommStats or None (checked with its other arguments, so
    a wrong one raises on every rank)."""
    if stats is not None and not isinstance(stats, CommStats):
        raise TypeError(f"stats must be a pycomm.CommStats or None, not {type(stats).__name__}")
