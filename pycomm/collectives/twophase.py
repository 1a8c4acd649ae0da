"""The two-phase allreduce of quantizing codecs: about 2·B/ratio bytes per rank at any N.

For a part of ``count`` elements split into N chunks, chunk r owned by rank r:
1. ``first``: every chunk compressed with the worker's error feedback.
2. ``exchange``: a compressed reduce-scatter (chunk j's frame to rank j; each rank decodes the
   N frames of its chunk and adds them in rank order, so the sum has one value); the owner
   compresses its sum again, with the server's error feedback kept per chunk
   (``ErrorFeedback.server``); an allgather of those frames.
3. ``decode``: every rank decodes the same frames, so every rank holds the same bits.
An allgather of whole frames costs (N-1)·B/ratio per rank instead: more than an uncompressed
ring from N ≈ 2·ratio on.
"""

from __future__ import annotations

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives.buffers import chunk_bounds
from pycomm.collectives.engine import Engine
from pycomm.collectives.feedback import ErrorFeedback
from pycomm.collectives.frames import Expect, allgather_frames, scatter_frames
from pycomm.collectives.ring import Framer, compress
from pycomm.collectives.stats import CommStats


class TwoPhase:
    """The two-phase allreduce (and reduce-scatter) of one part on one communicator."""

    def __init__(
        self,
        eng: Engine,
        comm: MPI.Comm,
        kw: dict,
        stats: CommStats | None = None,
        feedback: ErrorFeedback | None = None,
    ) -> None:
        self.eng, self.comm, self.kw, self.feedback = eng, comm, kw, feedback
        self.size, self.rank = comm.Get_size(), comm.Get_rank()
        self.stats = CommStats() if stats is None else stats

    def first(self, count: int, frame: Framer) -> list:
        """Step 1: every chunk's frame, with the worker's error feedback."""
        return [frame(lo, hi, True) for lo, hi in chunk_bounds(count, self.size)]

    def reduce_scatter(
        self, frames: list, part: np.ndarray, out: np.ndarray | None = None
    ) -> np.ndarray:
        """Step 2's first half: the sum of this rank's chunk over all ranks, decoded (into
        ``out`` when given)."""
        lo, hi = chunk_bounds(part.size, self.size)[self.rank]
        expect = Expect(self.kw, part.dtype.name, hi - lo)
        mine = scatter_frames(self.eng, self.comm, frames, expect, self.stats)
        total = np.zeros(hi - lo, part.dtype) if out is None else out
        total[...] = 0
        with np.errstate(invalid="ignore", over="ignore"):  # NaN/Inf propagate, by policy
            for f in mine:  # rank order: one sum on whichever rank computes it
                pycodecs.decompress_add(f, out=total)
        return total

    def exchange(self, frames: list, part: np.ndarray, offset: int = 0) -> list:
        """Step 2 whole: every chunk's reduced frame, in chunk order, on every rank. ``offset``
        is where part starts in the buffer (the server residuals are kept by position)."""
        bounds = chunk_bounds(part.size, self.size)
        total = self.reduce_scatter(frames, part)
        lo, hi = bounds[self.rank]
        fb = self.feedback
        server = None if fb is None else fb.server_residual(offset + lo, offset + hi, part.dtype)
        expect = [Expect(self.kw, part.dtype.name, b - a) for a, b in bounds]
        return allgather_frames(
            self.eng, self.comm, compress(total, self.kw, server), expect, self.stats
        )

    def decode(self, frames: list, out: np.ndarray) -> None:
        """Step 3: the chunks' frames into out."""
        for (lo, hi), f in zip(chunk_bounds(out.size, len(frames)), frames, strict=True):
            pycodecs.decompress(f, out=out[lo:hi])
