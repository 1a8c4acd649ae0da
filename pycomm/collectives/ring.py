"""The ring of exact-sum codecs (ebq): chunk frames summed around the ranks in the index domain,
then the reduced chunks gathered.

Step by step, for a part of ``count`` elements split into N chunks (one per rank):
1. ``first``: every chunk compressed once onto the agreed grid (error feedback per chunk).
2. ``exchange``: N-1 ring steps. At step s a rank sends its partial sum of chunk (rank - s) to
   the right and adds what comes from the left to its frame of chunk (rank - s - 1): integer
   indices added exactly (``ebq_add``), so the partial sums need no second compression (their
   indices grow by about log2(N) bits at most). Rank r ends with the finished frame of chunk
   r + 1; an allgather of those frames gives every rank every chunk's frame (reduce_scatter
   stops before it). Quantizers, which cannot add frames, take ``twophase`` instead.
3. ``decode``: every rank decodes the same bytes, so every rank holds the same bits.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives.buffers import chunk_bounds
from pycomm.collectives.engine import Engine
from pycomm.collectives.frames import Expect, allgather_frames, recv_frame
from pycomm.collectives.stats import CommStats

RING_TAG = 0x5C0


def compress(x: np.ndarray, kw: dict, residual: np.ndarray | None = None) -> bytearray:
    """One frame of x, with error feedback into residual when one is given."""
    if residual is None:
        return pycodecs.compress(x, **kw)
    return pycodecs.compress_ef(x, residual, **kw)


#: ``frame(lo, hi, ef)``: the frame of a part's elements [lo, hi), with error feedback into
#: the part's residual (if it has one) when ef. The algorithms' ``first`` compresses through it,
#: so the values may live elsewhere (a device: ``reduction``'s ``source``).
Framer = Callable[[int, int, bool], bytearray]


def host_framer(part: np.ndarray, residual: np.ndarray | None, kw: dict) -> Framer:
    """The framer of a host array (and its residual)."""

    def frame(lo: int, hi: int, ef: bool) -> bytearray:
        return compress(part[lo:hi], kw, residual[lo:hi] if ef and residual is not None else None)

    return frame


class Ring:
    """The ring allreduce (and reduce-scatter) of one part on one communicator (ebq)."""

    def __init__(
        self, eng: Engine, comm: MPI.Comm, kw: dict, stats: CommStats | None = None
    ) -> None:
        self.eng, self.comm, self.kw = eng, comm, kw
        self.size, self.rank = comm.Get_size(), comm.Get_rank()
        self.stats = CommStats() if stats is None else stats

    def first(self, count: int, frame: Framer) -> list:
        """Step 1: the frames of a part of count elements, one per chunk, with error feedback."""
        return [frame(lo, hi, True) for lo, hi in chunk_bounds(count, self.size)]

    def reduce_scatter(self, frames: list, part: np.ndarray) -> object:
        """Step 2's ring: the reduced frame of chunk (rank + 1) % N."""
        size, rank, comm, eng = self.size, self.rank, self.comm, self.eng
        bounds = chunk_bounds(part.size, size)
        right, left = (rank + 1) % size, (rank - 1) % size
        for step in range(size - 1):
            send_idx, recv_idx = (rank - step) % size, (rank - step - 1) % size
            req = comm.Isend([frames[send_idx], MPI.BYTE], dest=right, tag=RING_TAG)
            self.stats.moved(len(frames[send_idx]), 0)
            lo, hi = bounds[recv_idx]
            expect = Expect(self.kw, part.dtype.name, hi - lo)
            received = recv_frame(eng, comm, left, RING_TAG, expect, self.stats)
            eng.wait([req], f"ring step {step} (send to rank {right})")
            frames[recv_idx] = pycodecs.ebq_add(received, frames[recv_idx])
        return frames[(rank + 1) % size]

    def exchange(self, frames: list, part: np.ndarray, offset: int = 0) -> list:
        """Step 2 whole: every chunk's reduced frame, in chunk order, on every rank (offset,
        where part starts in the buffer, matters to ``twophase`` only)."""
        size = self.size
        bounds = chunk_bounds(part.size, size)
        owned = [bounds[(r + 1) % size] for r in range(size)]  # rank r holds chunk r + 1
        expect = [Expect(self.kw, part.dtype.name, hi - lo) for lo, hi in owned]
        reduced = self.reduce_scatter(frames, part)
        gathered = allgather_frames(self.eng, self.comm, reduced, expect, self.stats)
        return [gathered[(c - 1) % size] for c in range(size)]

    def decode(self, frames: list, out: np.ndarray) -> None:
        """Step 3: the chunks' frames into out."""
        for (lo, hi), f in zip(chunk_bounds(out.size, len(frames)), frames, strict=True):
            pycodecs.decompress(f, out=out[lo:hi])
