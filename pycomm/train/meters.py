"""What each communicating operator cost this run: calls, bytes, codec time, exposed time.

Times are those of the rank's main (training) thread unless named otherwise: ``codec_s`` is
compression and decoding done there, ``comm_s`` the rest of the time the thread was blocked on
the operator (the wire, the peers, sums), ``wait_s`` (pipeline only) the time spent waiting for
the peer stage to *produce* the data (the pipeline bubble, not communication), and
``background_s`` the operator's time on a communication thread, overlapped with computation
(DDP's buckets).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

#: The operators of the summary table, in its order.
OPERATORS = ("tp_fwd", "tp_bwd", "pp", "dp", "fsdp_rs", "fsdp_ag")
LABELS = {
    "tp_fwd": "TP all_reduce (fwd)",
    "tp_bwd": "TP all_reduce (bwd)",
    "pp": "PP send/recv",
    "dp": "DP all_reduce",
    "fsdp_rs": "FSDP reduce-scatter",
    "fsdp_ag": "FSDP all-gather",
}


@dataclass
class OpMeter:
    """Running totals for one operator on one rank."""

    calls: int = 0
    raw_bytes: int = 0  #: bytes of this rank's outgoing data before compression
    frame_bytes: int = 0  #: bytes this rank put on the wire for them
    codec_s: float = 0.0
    comm_s: float = 0.0
    wait_s: float = 0.0
    background_s: float = 0.0

    def add(self, other: OpMeter) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    @property
    def exposed_s(self) -> float:
        """Time the training thread lost to this operator (the bubble excluded)."""
        return self.codec_s + self.comm_s


@dataclass
class Meters:
    """One OpMeter per operator, and a switch that stops recording (evaluation passes)."""

    ops: dict[str, OpMeter] = field(default_factory=lambda: {k: OpMeter() for k in OPERATORS})
    recording: bool = True

    def __getitem__(self, name: str) -> OpMeter:
        return self.ops[name] if self.recording else OpMeter()

    def snapshot(self) -> dict[str, dict]:
        return {k: asdict(v) for k, v in self.ops.items()}

    def delta(self, before: dict[str, dict]) -> dict[str, OpMeter]:
        """What was added since ``snapshot()`` returned ``before``."""
        out = {}
        for k, v in self.ops.items():
            now = asdict(v)
            out[k] = OpMeter(**{f: now[f] - before[k][f] for f in now})
        return out
