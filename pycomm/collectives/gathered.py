"""The gathered allreduce: every rank's whole frame to every rank, summed in rank order.

Few rounds (one allgather), so it wins for small messages, and for quantizers on 2 ranks.
1. ``first``: one frame of the part (error feedback into the residual).
2. ``exchange``: an allgather of the frames; exact-sum codecs (ebq) add them in the index
domain in rank order into one frame. 3. ``decode``: that frame, or the frames decoded and
added in rank order (the same float additions on every rank, so the same bits).
"""

from __future__ import annotations

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives.engine import Engine
from pycomm.collectives.frames import Expect, allgather_frames
from pycomm.collectives.ring import Framer
from pycomm.collectives.stats import CommStats


class Gathered:
    """The allgather algorithm of one part on one communicator."""

    def __init__(
        self, eng: Engine, comm: MPI.Comm, kw: dict, exact: bool, stats: CommStats | None = None
    ) -> None:
        self.eng, self.comm, self.kw, self.exact = eng, comm, kw, exact
        self.stats = CommStats() if stats is None else stats

    def first(self, count: int, frame: Framer) -> list:
        return [frame(0, count, True)]

    def exchange(self, frames: list, part: np.ndarray, offset: int = 0) -> list:
        """Every rank's frame (ebq: their exact sum); offset matters to ``twophase`` only."""
        expect = [Expect(self.kw, part.dtype.name, part.size)] * self.comm.Get_size()
        gathered = allgather_frames(self.eng, self.comm, frames[0], expect, self.stats)
        if not self.exact:
            return gathered
        total = gathered[0]
        for f in gathered[1:]:  # exact index sums, in rank order
            total = pycodecs.ebq_add(total, f)
        return [total]

    def decode(self, frames: list, out: np.ndarray) -> None:
        if self.exact:
            pycodecs.decompress(frames[0], out=out)
            return
        out[...] = 0
        for f in frames:  # rank order
            pycodecs.decompress_add(f, out=out)
