"""The exact-sum allreduce of ebq: chunk frames summed by their owners in the index domain,
then the reduced chunks gathered. (Its algorithm name, "ring", is from when the partial sums
travelled around a ring.)

Step by step, for a part of ``count`` elements split into N chunks, chunk r owned by rank r:
1. ``first``: every chunk compressed once onto the agreed grid (error feedback per chunk).
2. ``exchange``: every rank sends its frame of chunk j to rank j (``frames.scatter_frames``),
   and the owner adds the N frames of its chunk in rank order: integer indices added exactly
   (``ebq_add``), so the sum needs no second compression; an allgather of the reduced frames
   gives every rank every chunk's frame (reduce_scatter stops before it). Only the reduced
   frames carry summed indices, about log2(N)/2 bits wider than one rank's (a ring's partial
   sums also carried wider ones on every step but its first). Quantizers, which cannot
   add frames, take ``twophase`` instead.
3. ``decode``: every rank decodes the same bytes, so every rank holds the same bits.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives.buffers import chunk_bounds
from pycomm.collectives.engine import Engine
from pycomm.collectives.frames import Expect, allgather_frames, scatter_frames
from pycomm.collectives.stats import CommStats


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
    """The exact-sum allreduce (and reduce-scatter) of one part on one communicator (ebq)."""

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
        """Step 2's first half: the frame of this rank's chunk summed over all ranks."""
        lo, hi = chunk_bounds(part.size, self.size)[self.rank]
        expect = Expect(self.kw, part.dtype.name, hi - lo)
        mine = scatter_frames(self.eng, self.comm, frames, expect, self.stats)
        total = mine[0]
        for f in mine[1:]:  # exact index sums; outliers' values added in rank order
            total = pycodecs.ebq_add(total, f)
        return total

    def exchange(self, frames: list, part: np.ndarray, offset: int = 0) -> list:
        """Step 2 whole: every chunk's reduced frame, in chunk order, on every rank (offset,
        where part starts in the buffer, matters to ``twophase`` only)."""
        bounds = chunk_bounds(part.size, self.size)
        expect = [Expect(self.kw, part.dtype.name, hi - lo) for lo, hi in bounds]
        reduced = self.reduce_scatter(frames, part)
        return allgather_frames(self.eng, self.comm, reduced, expect, self.stats)

    def decode(self, frames: list, out: np.ndarray) -> None:
        """Step 3: the chunks' frames into out."""
        for (lo, hi), f in zip(chunk_bounds(out.size, len(frames)), frames, strict=True):
            pycodecs.decompress(f, out=out[lo:hi])
