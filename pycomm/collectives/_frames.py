"""Moving variable-size frames: ring reduce-scatter and allgather of byte strings."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mpi4py import MPI

from pycomm.collectives._wait import probe, wait

RING_TAG = 0x5C0


def recv_frame(comm: MPI.Comm, source: int, tag: int) -> bytearray:
    """Receive one message of unknown size (matched probe, safe with threads)."""
    status = MPI.Status()
    msg = probe(comm, source, tag, status, f"receive from rank {source}")
    buf = bytearray(status.Get_count(MPI.BYTE))
    wait(comm, msg.Irecv([buf, MPI.BYTE]), f"receive from rank {source}")
    return buf


def ring_reduce_scatter(
    comm: MPI.Comm, frames: list, combine: Callable[[bytearray, int], object]
) -> object:
    """Reduce chunk frames around the ring; returns the reduced frame of chunk (rank+1) % N.

    ``frames[i]`` is this rank's frame of chunk i. At step s a rank sends its partial sum of
    chunk (rank - s) and combines what it receives, ``combine(received, chunk_index)``, into
    its partial sum of chunk (rank - s - 1). Each chunk is thus reduced in one fixed order.
    """
    size, rank = comm.Get_size(), comm.Get_rank()
    right, left = (rank + 1) % size, (rank - 1) % size
    for step in range(size - 1):
        send_idx, recv_idx = (rank - step) % size, (rank - step - 1) % size
        req = comm.Isend([frames[send_idx], MPI.BYTE], dest=right, tag=RING_TAG)
        received = recv_frame(comm, left, RING_TAG)
        wait(comm, req, f"ring step {step} (send to rank {right})")
        frames[recv_idx] = combine(received, recv_idx)
    return frames[(rank + 1) % size]


def allgather_frames(comm: MPI.Comm, frame: object) -> list[memoryview]:
    """Every rank's frame, in rank order, on every rank."""
    size = comm.Get_size()
    mine = memoryview(frame).cast("B")
    sizes = np.empty(size, dtype=np.int64)
    mine_size = np.array([mine.nbytes], dtype=np.int64)
    wait(comm, comm.Iallgather(mine_size, sizes), "allgather of frame sizes")
    displs = np.zeros(size, dtype=np.int64)
    np.cumsum(sizes[:-1], out=displs[1:])
    gathered = bytearray(int(sizes.sum()))
    req = comm.Iallgatherv([mine, MPI.BYTE], [gathered, (sizes, displs), MPI.BYTE])
    wait(comm, req, "allgather of frames")
    view = memoryview(gathered)
    return [view[int(d) : int(d + n)] for d, n in zip(displs, sizes, strict=True)]
