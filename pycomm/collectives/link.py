"""What a communicator's link costs, measured from its own traffic as the job runs.

Two figures, each a low quantile of its last samples (so a descheduled rank or a late peer,
which only ever make a sample slower, do not move it):
- latency per round, from the timings of the agreement (one small MAX allreduce, ceil(log2 N)
  rounds) that every collective makes;
- seconds per byte, from the uncompressed transfers: the bytes one rank moves
  (``moved_bytes``) over the time MPI's allreduce took, less its rounds of latency. (Compressed
  exchanges are not sampled: their time holds waits for peers still compressing and, when
  segments are pipelined, a core shared with the next segment's compression; sampled, they
  made a shared-memory link look like 0.5 Gbit/s and auto compress there.)

Before any sample the link is taken to be fast (``FIRST_*``): codec="auto" then starts
uncompressed, and the uncompressed transfers measure the link. Transfers too small to measure
the bandwidth still bound it: their fixed costs only ever make it look slower, so
``per_byte_bound`` (the same quantile of them) is at least the true seconds per byte. auto
keeps a raw decision for a key whose transfers are all small only if raw would also win on a
link that slow.
"""

from __future__ import annotations

import math
from collections import deque

WINDOW = 32  #: samples kept per figure
QUANTILE = 0.25  #: of the kept samples: the fast end, where noise has not added time
FIRST_LATENCY_S = 20e-6
FIRST_SECONDS_PER_BYTE = 1 / 10e9
#: Transfers smaller than this (bytes moved) say more about a call's fixed costs than about
#: bandwidth: not sampled (128 KiB allreduces on shared memory, 1 ms each on a busy machine,
#: read as 130 MB/s and made auto compress them).
MIN_SAMPLE_BYTES = 1 << 20
#: One call in this many of a settled kind smaller than ``MIN_SAMPLE_BYTES`` is the link's
#: sample (the compiled path's and auto's raw calls): such calls are many and alike.
SAMPLING = 8


def rounds(ranks: int) -> int:
    """Rounds of a small allreduce (recursive doubling): ceil(log2 N)."""
    return max(1, math.ceil(math.log2(ranks))) if ranks > 1 else 0


def moved_bytes(algorithm: str, ranks: int, frame_bytes: float) -> float:
    """Bytes one rank sends in an allreduce of a part whose frames total ``frame_bytes``:
    the ring (and MPI's own allreduce, "raw") 2(N-1)/N of them, the gathered algorithm (N-1)
    copies of its one frame."""
    if algorithm == "allgather":
        return (ranks - 1) * frame_bytes
    return 2 * (ranks - 1) / ranks * frame_bytes


def exchange_rounds(algorithm: str, ranks: int) -> int:
    """Message rounds of an exchange: MPI's allreduce ceil(log2 N) (recursive doubling; its
    large-message algorithms are counted by their bytes), the ring N-1 steps and its allgather
    (1 round on 2 ranks, sizes then frames beyond), the gathered algorithm the allgather alone."""
    gather = 1 if ranks == 2 else 2
    if algorithm == "raw":
        return rounds(ranks)
    return gather + (ranks - 1 if algorithm == "ring" else 0)


class Link:
    """Latency and seconds per byte of one communicator (an ``Engine`` holds one)."""

    __slots__ = ("ranks", "_latency", "_per_byte", "_small", "_figures", "_pinned")

    def __init__(self, ranks: int) -> None:
        self.ranks = ranks
        self._latency: deque[float] = deque(maxlen=WINDOW)
        self._per_byte: deque[float] = deque(maxlen=WINDOW)
        self._small: deque[float] = deque(maxlen=WINDOW)  # per byte of small transfers
        self._figures: tuple[float, float] | None = None  # cached until the next sample
        self._pinned: tuple[float, float] | None = None

    def add_latency(self, seconds: float) -> None:
        """One agreement took ``seconds``."""
        if self.ranks > 1:
            self._latency.append(seconds / rounds(self.ranks))
            self._figures = None

    def add_transfer(self, algorithm: str, frame_bytes: float, seconds: float) -> None:
        """An exchange of frames totalling ``frame_bytes`` took ``seconds``."""
        moved = moved_bytes(algorithm, self.ranks, frame_bytes)
        if self.ranks < 2 or moved <= 0:
            return
        latency = self.figures()[0]
        busy = seconds - exchange_rounds(algorithm, self.ranks) * latency
        sample = max(busy, 0.05 * seconds) / moved
        if moved < MIN_SAMPLE_BYTES:
            self._small.append(sample)
        else:
            self._per_byte.append(sample)
            self._figures = None

    def per_byte_bound(self) -> float:
        """Seconds per byte that the link is at least as fast as: the measured figure once
        there is one, else what the small transfers allow (0.0 before any: no bound)."""
        if self._pinned is not None or self._per_byte:
            return self.figures()[1]
        return quantile(self._small, 0.0)

    def figures(self) -> tuple[float, float]:
        """(latency per round in s, seconds per byte), pinned ones if ``pin`` set them."""
        if self._pinned is not None:
            return self._pinned
        got = self._figures
        if got is None:
            got = self._figures = (
                quantile(self._latency, FIRST_LATENCY_S),
                quantile(self._per_byte, FIRST_SECONDS_PER_BYTE),
            )
        return got

    def pin(self, latency_s: float | None, bytes_per_s: float | None = None) -> None:
        """Fix the figures (tests, or a user who knows the link); ``pin(None)`` measures again."""
        if latency_s is None:
            self._pinned = None
        else:
            if not (latency_s >= 0 and bytes_per_s and bytes_per_s > 0):
                raise ValueError("pin a latency >= 0 s and a bandwidth > 0 bytes/s")
            self._pinned = (float(latency_s), 1.0 / bytes_per_s)

    def describe(self) -> dict[str, float | int]:
        latency, per_byte = self.figures()
        return {
            "latency_us": latency * 1e6,
            "bandwidth_gbit_s": 8e-9 / per_byte,
            "latency_samples": len(self._latency),
            "bandwidth_samples": len(self._per_byte),
        }


def quantile(samples: deque[float], first: float) -> float:
    """The ``QUANTILE`` of the samples, ``first`` while there are none."""
    if not samples:
        return first
    ordered = sorted(samples)
    return ordered[int(QUANTILE * (len(ordered) - 1))]
